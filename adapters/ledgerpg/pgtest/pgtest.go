// Package pgtest gives tests a PostgreSQL to run against: the one named by
// RELAYR_TEST_DATABASE_URL, else one started through testcontainers, else a
// failure naming both. It never skips, so with RELAYR_REQUIRE_DB=1 (as CI
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
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/testcontainers/testcontainers-go/modules/postgres"
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

var (
	containerOnce sync.Once
	containerURL  string
	containerErr  error
)

// URL answers the server's URL for the admin user: RELAYR_TEST_DATABASE_URL,
// else a testcontainers PostgreSQL started once per test binary (and reaped
// by testcontainers when it exits), else it fails t.
func URL(t testing.TB) string {
	t.Helper()
	if url := os.Getenv(EnvURL); url != "" {
		return url
	}
	containerOnce.Do(func() { containerURL, containerErr = startContainer() })
	if containerErr != nil {
		t.Fatalf("pgtest: no PostgreSQL: %s is not set, and starting one through testcontainers failed: %v", EnvURL, containerErr)
	}
	return containerURL
}

func startContainer() (url string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("testcontainers: %v", r)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := postgres.Run(ctx, "postgres:16-alpine",
		postgres.WithDatabase("relayr"), postgres.WithUsername("postgres"), postgres.WithPassword("postgres"),
		postgres.BasicWaitStrategies())
	if err != nil {
		return "", err
	}
	return c.ConnectionString(ctx, "sslmode=disable")
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
