package ledgerpg

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/relayr-go/relayr/adapters/ledgerpg/pgtest"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
)

// loginRole creates a role of t's own that may log in and nothing more,
// and answers its name and a pool configuration for it; the role, and what
// it owns, is dropped when t ends.
func loginRole(t *testing.T, admin *pgxpool.Pool) (string, *pgxpool.Config) {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "relayr_test_role_" + hex.EncodeToString(b[:])
	id := pgx.Identifier{name}.Sanitize()
	q := `CREATE ROLE ` + id + ` LOGIN PASSWORD 'relayr-test' NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE`
	if _, err := admin.Exec(t.Context(), q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, q := range []string{`DROP OWNED BY ` + id, `DROP ROLE ` + id} {
			if _, err := admin.Exec(ctx, q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	})
	cfg := pgtest.Admin(t)
	cfg.ConnConfig.User, cfg.ConnConfig.Password = name, "relayr-test"
	return name, cfg
}

// role creates a login role that may use schema, granted what grants say
// on it, and answers a pool configuration for it.
func role(t *testing.T, admin *pgxpool.Pool, schema string, grants ...string) *pgxpool.Config {
	t.Helper()
	name, cfg := loginRole(t, admin)
	id, s := pgx.Identifier{name}.Sanitize(), pgx.Identifier{schema}.Sanitize()
	stmts := []string{`GRANT USAGE ON SCHEMA ` + s + ` TO ` + id}
	for _, g := range grants {
		stmts = append(stmts, `GRANT `+g+` IN SCHEMA `+s+` TO `+id)
	}
	for _, q := range stmts {
		if _, err := admin.Exec(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return cfg
}

// migrated makes a schema of t's own, migrated through the first upTo
// migrations (all of them when upTo is 0), and answers it, the admin's
// pool, and every migration, to migrate the rest with.
func migrated(t *testing.T, upTo int) (string, *pgxpool.Pool, []ledger.Migration) {
	t.Helper()
	all, err := loadMigrations(migrationFS, "migration")
	if err != nil {
		t.Fatal(err)
	}
	if upTo == 0 {
		upTo = len(all)
	}
	schema := pgtest.Schema(t)
	admin := pgtest.Open(t, pgtest.Admin(t))
	if err := migrateSchema(t.Context(), admin, schema, all[:upTo]); err != nil {
		t.Fatal(err)
	}
	return schema, admin, all
}

// mayFollow reports whether the role of cfg may call relayr_followed, and
// fails t on anything but a refused privilege.
func mayFollow(t *testing.T, cfg *pgxpool.Config, schema string) bool {
	t.Helper()
	pool := pgtest.Open(t, cfg)
	rows, err := pool.Query(t.Context(), `SELECT * FROM `+pgx.Identifier{schema, "relayr_followed"}.Sanitize()+`()`)
	if err == nil {
		rows.Close()
		err = rows.Err()
	}
	var pe *pgconn.PgError
	switch {
	case err == nil:
		return true
	case errors.As(err, &pe) && pe.Code == "42501": // insufficient_privilege
		return false
	}
	t.Fatalf("relayr_followed: %v", err)
	return false
}

// relayr_followed reads across tenants past row-level security: no role but
// relayr's may call it.
func TestFollowedIsForRelayrsRolesOnly(t *testing.T) {
	t.Parallel()
	t.Run("ARoleThatMayOnlyUseTheSchemaMayNot", func(t *testing.T) {
		t.Parallel()
		schema, admin, _ := migrated(t, 0)
		if mayFollow(t, role(t, admin, schema), schema) {
			t.Fatal("a role granted nothing but the schema's use lists every tenant's followers")
		}
		// The role a replica runs as, granted as the README says, may.
		if !mayFollow(t, role(t, admin, schema, "SELECT, INSERT, UPDATE, DELETE ON ALL TABLES", "EXECUTE ON ALL FUNCTIONS"), schema) {
			t.Fatal("the replicas' role may not call relayr_followed")
		}
	})
	t.Run("ARoleThatReadTheLedgerBeforeTheMigrationKeepsIt", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		schema, admin, all := migrated(t, 1)
		// Set up as the README said before: the tables, not the function.
		replica := role(t, admin, schema, "SELECT, INSERT, UPDATE, DELETE ON ALL TABLES")
		outsider := role(t, admin, schema)
		if err := migrateSchema(ctx, admin, schema, all); err != nil {
			t.Fatal(err)
		}
		if !mayFollow(t, replica, schema) {
			t.Fatal("a replica's role lost relayr_followed to the migration")
		}
		if mayFollow(t, outsider, schema) {
			t.Fatal("a role granted nothing but the schema's use kept relayr_followed")
		}
		// And through the ledger, as a replica under RLS reads it.
		l := New(pgtest.Open(t, replica), Options{Schema: schema, RLS: true})
		if _, err := l.Followed(ctx); err != nil {
			t.Fatalf("Followed as the replica's role: %v", err)
		}
	})
}

// A role that may only read the ledger (a report's) is not made a replica
// by an upgrade: neither relayr_followed nor the holders' rows.
func TestAnUpgradeGivesAReadOnlyRoleNothingMore(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema, admin, all := migrated(t, 1)
	reader := role(t, admin, schema, "SELECT ON ALL TABLES")
	replica := role(t, admin, schema, "SELECT, INSERT, UPDATE, DELETE ON ALL TABLES")
	if err := migrateSchema(ctx, admin, schema, all); err != nil {
		t.Fatal(err)
	}
	if mayFollow(t, reader, schema) {
		t.Fatal("a read-only role was granted relayr_followed, every tenant's followers")
	}
	if !mayFollow(t, replica, schema) {
		t.Fatal("the replica's role lost relayr_followed")
	}
	holders := pgx.Identifier{schema, "relayr_holders"}.Sanitize()
	_, err := pgtest.Open(t, reader).Exec(ctx, `INSERT INTO `+holders+` (holder, expires, spent) VALUES ('fake', now() + interval '100 years', '{}')`)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42501" {
		t.Fatalf("a read-only role writing a holder: %v, want insufficient_privilege", err)
	}
	if _, err := pgtest.Open(t, replica).Exec(ctx, `DELETE FROM `+holders+` WHERE holder = 'none'`); err != nil {
		t.Fatalf("the replica's role on the holders: %v", err)
	}
}

// A schema a DBA made for its owner (CREATE SCHEMA ... AUTHORIZATION), the
// owner holding no CREATE on the database, is migrated by its owner, and
// migrated again.
func TestTheSchemasOwnerMigratesWithoutCreateOnTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	admin := pgtest.Open(t, pgtest.Admin(t))
	name, cfg := loginRole(t, admin)
	// Dropped with what its owner owns (loginRole's cleanup).
	schema := strings.Replace(name, "_role_", "_owned_", 1)
	q := `CREATE SCHEMA ` + pgx.Identifier{schema}.Sanitize() + ` AUTHORIZATION ` + pgx.Identifier{name}.Sanitize()
	if _, err := admin.Exec(ctx, q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	owner := pgtest.Open(t, cfg)
	for range 2 {
		if err := MigrateSchema(ctx, owner, schema); err != nil {
			t.Fatalf("the schema's owner migrating it: %v", err)
		}
	}
}

// plan answers the plan of sql with args, the planner told to prefer an
// index, as it will once the tables are large.
func plan(t *testing.T, admin *pgxpool.Pool, sql string, args ...any) string {
	t.Helper()
	ctx := t.Context()
	tx, err := admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	rows, err := tx.Query(ctx, `EXPLAIN `+sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, line)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// A follower's latest dead letters are read through their index, newest
// first, with no sort of the whole backlog.
func TestRecentDeadLettersReadTheirIndex(t *testing.T) {
	t.Parallel()
	schema, admin, _ := migrated(t, 0)
	q := newQueries(pgx.Identifier{schema}.Sanitize())
	for _, sql := range []string{q.tracker.recentDeadLetters, q.log.recentDeadLetters} {
		if text := plan(t, admin, sql, "acme", "ops", "f", 50); !strings.Contains(text, "dead_letters_recent") || strings.Contains(text, "Sort") {
			t.Fatalf("plan:\n%s\nwant the recent index and no sort", text)
		}
	}
}

// The items at the loop cap are read through the recent writes' index,
// not by reading every counter the tenant keeps.
func TestItemsAtTheCapReadTheRecentWrites(t *testing.T) {
	t.Parallel()
	schema, admin, _ := migrated(t, 0)
	q := newQueries(pgx.Identifier{schema}.Sanitize())
	if text := plan(t, admin, q.atCap, "acme", groupT0, 20, 50); !strings.Contains(text, "writes_recent") || !strings.Contains(text, "Index Cond") {
		t.Fatalf("plan:\n%s\nwant the recent writes' index, its condition on the last write", text)
	}
}

// A migration that needs a table another transaction holds waits the
// lock wait, then gives up applying nothing, rather than stall every
// filing queued behind it; run again once the table is free, it applies.
func TestAMigrationGivesUpOnATableHeldTooLong(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema, admin, all := migrated(t, 6)
	items := pgx.Identifier{schema, "relayr_tracker_items"}.Sanitize()
	holder, err := admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Rollback(context.WithoutCancel(ctx)) }()
	// A reader's lock, as any transaction that read a claim holds until it
	// ends: 007's ALTER TABLE must wait for it.
	if _, err := holder.Exec(ctx, `SELECT count(*) FROM `+items); err != nil {
		t.Fatal(err)
	}
	err = migrateSchemaWaiting(ctx, admin, schema, all, 50*time.Millisecond)
	if !errors.Is(err, ledger.ErrUnavailable) || !strings.Contains(err.Error(), "007_") || !strings.Contains(err.Error(), "nothing was applied") {
		t.Fatalf("migrating past a held table answered %v, want ledger.ErrUnavailable naming 007", err)
	}
	version := func() (v int) {
		t.Helper()
		if err := admin.QueryRow(ctx, `SELECT max(version) FROM `+pgx.Identifier{schema, "relayr_migrations"}.Sanitize()).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := version(); v != 6 {
		t.Fatalf("the schema is at %d after the migration gave up, want 6", v)
	}
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := migrateSchemaWaiting(ctx, admin, schema, all, 50*time.Millisecond); err != nil {
		t.Fatalf("migrating the freed table: %v", err)
	}
	if v := version(); v != len(all) {
		t.Fatalf("the schema is at %d, want %d", v, len(all))
	}
}

// The replicas' role granted as the README says, the migrations' table
// read-only, files under RLS, is ready, and may not rewrite which
// migrations the schema holds.
func TestTheReadmesGrantsRunAReplicaThatCannotRewriteTheMigrations(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema, admin, _ := migrated(t, 0)
	cfg := role(t, admin, schema, "SELECT, INSERT, UPDATE, DELETE ON ALL TABLES", "USAGE, SELECT ON ALL SEQUENCES")
	migrations := pgx.Identifier{schema, "relayr_migrations"}.Sanitize()
	user := pgx.Identifier{cfg.ConnConfig.User}.Sanitize()
	for _, q := range []string{
		`GRANT EXECUTE ON FUNCTION ` + pgx.Identifier{schema, "relayr_followed"}.Sanitize() + `() TO ` + user,
		`REVOKE INSERT, UPDATE, DELETE ON ` + migrations + ` FROM ` + user,
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	pool := pgtest.Open(t, cfg)
	l := New(pool, Options{Schema: schema, RLS: true})
	if err := l.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	k := ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindItem, Key: "readme-grants"}
	c, _, err := l.Claim(ctx, ledger.ClaimParams{Key: k, Now: groupT0, RetakeAfter: time.Minute})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if _, err := l.Record(ctx, ledger.RecordParams{Key: k, Nonce: c.Nonce, Ref: tracker.ItemRef{ID: "1"}, Now: groupT0}); err != nil {
		t.Fatalf("Record: %v", err)
	}
	if _, err := l.Followed(ctx); err != nil {
		t.Fatalf("Followed: %v", err)
	}
	_, err = pool.Exec(ctx, `DELETE FROM `+migrations)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42501" {
		t.Fatalf("the replica's role deleting the migrations' rows: %v, want insufficient_privilege", err)
	}
}

// A schema whose migrations another build named (or a newer relayr's) is
// refused, naming the migration, with nothing applied on top of it.
func TestMigrateRefusesASchemaMigratedByAnotherBuild(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, change, want string }{
		{"renamed", `UPDATE %s SET name = 'someone_elses' WHERE version = 2`, "applied migration 002_someone_elses where this relayr has 002_"},
		{"newer", `INSERT INTO %s (version, name) VALUES (99, 'a_newer_relayrs')`, "has migration 099_a_newer_relayrs, newer than this relayr's"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			schema, admin, all := migrated(t, 0)
			if _, err := admin.Exec(ctx, fmt.Sprintf(c.change, pgx.Identifier{schema, "relayr_migrations"}.Sanitize())); err != nil {
				t.Fatal(err)
			}
			err := migrateSchema(ctx, admin, schema, all)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("migrating answered %v, want it to say %q", err, c.want)
			}
		})
	}
}
