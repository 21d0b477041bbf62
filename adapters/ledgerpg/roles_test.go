package ledgerpg

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/relayr-go/relayr/adapters/ledgerpg/pgtest"
)

// role creates a role of t's own that may log in and use schema, granted
// what grants say on it, and answers a pool configuration for it; the role
// is dropped when t ends.
func role(t *testing.T, admin *pgxpool.Pool, schema string, grants ...string) *pgxpool.Config {
	t.Helper()
	ctx := t.Context()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "relayr_test_role_" + hex.EncodeToString(b[:])
	id, s := pgx.Identifier{name}.Sanitize(), pgx.Identifier{schema}.Sanitize()
	stmts := []string{
		`CREATE ROLE ` + id + ` LOGIN PASSWORD 'relayr-test' NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE`,
		`GRANT USAGE ON SCHEMA ` + s + ` TO ` + id,
	}
	for _, g := range grants {
		stmts = append(stmts, `GRANT `+g+` IN SCHEMA `+s+` TO `+id)
	}
	for _, q := range stmts {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
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
	return cfg
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
	ctx := t.Context()
	all, err := loadMigrations(migrationFS, "migration")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("ARoleThatMayOnlyUseTheSchemaMayNot", func(t *testing.T) {
		t.Parallel()
		schema := pgtest.Schema(t)
		admin := pgtest.Open(t, pgtest.Admin(t))
		if err := migrateSchema(ctx, admin, schema, all); err != nil {
			t.Fatal(err)
		}
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
		schema := pgtest.Schema(t)
		admin := pgtest.Open(t, pgtest.Admin(t))
		if err := migrateSchema(ctx, admin, schema, all[:1]); err != nil {
			t.Fatal(err)
		}
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
