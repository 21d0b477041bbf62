// Package pgtest gives tests a PostgreSQL to run against: the one named by
// RELAYR_TEST_DATABASE_URL, else a failure saying how to get one (the
// machine's server, as make test starts it, or tools/testdb, which starts
// one in Docker through testcontainers and runs the tests against it; it is
// a module of its own, so that no module a user requires pulls in a
// container client). It never skips, so with RELAYR_REQUIRE_DB=1 (as CI
// sets it) no database test can pass by not running.
//
// Each test gets its own schema, dropped when it ends, so tests run in
// parallel on one server; and Restricted connects as a role row-level
// security binds (NOSUPERUSER, NOBYPASSRLS, owning nothing), since a
// superuser or the tables' owner skips every policy silently.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// EnvURL names the variable that points the tests at a server, e.g.
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable. Its user must
// be able to create schemas and roles.
const EnvURL = "RELAYR_TEST_DATABASE_URL"

// Mode is one way the ledger's tests open the database: as the tables'
// owner, or with row-level security, as the role Restricted connects as.
type Mode struct {
	// Name names the mode's subtests and benchmarks ("Postgres",
	// "PostgresRLS"); the README's figures are read by it.
	Name string
	RLS  bool
}

// Modes are both modes, the owner's first.
var Modes = []Mode{{"Postgres", false}, {"PostgresRLS", true}}

// RestrictedRole is the role Restricted connects as, and its password.
const (
	RestrictedRole     = "relayr_test_restricted"
	restrictedPassword = "relayr-test"
)

// URL answers the server's URL for the admin user, RELAYR_TEST_DATABASE_URL,
// or fails t saying how to get one.
func URL(t testing.TB) string {
	t.Helper()
	if url := os.Getenv(EnvURL); url != "" {
		return url
	}
	t.Fatalf("pgtest: no PostgreSQL: set %s (make test sets it to the machine's server on 127.0.0.1:5432), "+
		"or run the tests in one started with Docker: go run ./tools/testdb -- go test ./adapters/ledgerpg/...", EnvURL)
	return ""
}

// Admin answers a fresh pool configuration for the admin user.
func Admin(t testing.TB) *pgxpool.Config {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(URL(t))
	if err != nil {
		t.Fatalf("pgtest: %s: %v", EnvURL, err)
	}
	return cfg
}

// Open opens a pool on cfg, closed when t ends.
func Open(t testing.TB, cfg *pgxpool.Config) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, Admin(t).ConnConfig)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("pgtest: %s: %v", sql, err)
	}
}

// Schema creates an empty schema of t's own and answers its name; it is
// dropped, with everything in it, when t ends.
func Schema(t testing.TB) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "relayr_test_" + hex.EncodeToString(b[:])
	quoted := pgx.Identifier{name}.Sanitize()
	exec(t, `CREATE SCHEMA `+quoted)
	t.Cleanup(func() { exec(t, `DROP SCHEMA `+quoted+` CASCADE`) })
	return name
}

// Restricted answers a pool configuration for RestrictedRole, creating the
// role if need be (NOSUPERUSER NOBYPASSRLS, LOGIN, owning nothing) and
// granting it use of schema: its tables' rows, sequences and functions, as
// they stand, so call it after migrating.
func Restricted(t testing.TB, schema string) *pgxpool.Config {
	t.Helper()
	role := pgx.Identifier{RestrictedRole}.Sanitize()
	quoted := pgx.Identifier{schema}.Sanitize()
	// Under a lock: tests running at once create the role once.
	exec(t, `DO $$
		BEGIN
			PERFORM pg_advisory_xact_lock(hashtextextended('relayr.pgtest.role', 0));
			IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '`+RestrictedRole+`') THEN
				CREATE ROLE `+role+` LOGIN PASSWORD '`+restrictedPassword+`' NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
			END IF;
		END
		$$`)
	exec(t, `GRANT USAGE ON SCHEMA `+quoted+` TO `+role)
	exec(t, `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA `+quoted+` TO `+role)
	exec(t, `GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA `+quoted+` TO `+role)
	exec(t, `GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA `+quoted+` TO `+role)
	cfg := Admin(t)
	cfg.ConnConfig.User = RestrictedRole
	cfg.ConnConfig.Password = restrictedPassword
	return cfg
}
