package ledgerpg

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/relayr-go/relayr/core/ledger"
)

//go:embed migration/*.up.sql
var migrationFS embed.FS

// loadMigrations reads the embedded migrations (ledger.LoadMigrations).
func loadMigrations(fsys fs.FS, dir string) ([]ledger.Migration, error) {
	ms, err := ledger.LoadMigrations(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("ledgerpg: %w", err)
	}
	return ms, nil
}

// Migrate applies the ledger's migrations to DefaultSchema (`relayr
// migrate` runs it); see MigrateSchema.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	return MigrateSchema(ctx, pool, DefaultSchema)
}

// MigrateSchema creates schema if need be and applies the migrations it
// lacks, each once, recorded in its relayr_migrations table. It runs in one
// transaction under an advisory lock on the schema's name, so processes
// that migrate at once apply each migration once between them; a schema
// newer than this relayr's migrations is refused. The role becomes the
// tables' owner.
func MigrateSchema(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	migrations, err := loadMigrations(migrationFS, "migration")
	if err != nil {
		return err
	}
	return migrateSchema(ctx, pool, schema, migrations)
}

// migrateLockWait is how long a migration waits for a lock on a table
// (lock_timeout) before it gives up, applying nothing. A migration that
// alters a table the replicas write (007 does) waits for every
// transaction on it to end, and every write queued behind it waits too: a
// long transaction on the ledger would stall every filing for as long.
const migrateLockWait = 5 * time.Second

// migrateSchema applies migrations, the first ones of the embedded set, as
// MigrateSchema does.
func migrateSchema(ctx context.Context, pool *pgxpool.Pool, schema string, migrations []ledger.Migration) error {
	return migrateSchemaWaiting(ctx, pool, schema, migrations, migrateLockWait)
}

// migrateSchemaWaiting is migrateSchema with the lock wait given: past
// lockWait on a table's lock, it answers ledger.ErrUnavailable and leaves
// the schema as it was.
func migrateSchemaWaiting(ctx context.Context, pool *pgxpool.Pool, schema string, migrations []ledger.Migration, lockWait time.Duration) error {
	if schema == "" {
		schema = DefaultSchema
	}
	quoted := pgx.Identifier{schema}.Sanitize()
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("ledgerpg: migrate: %w", mapError(ctx, err))
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('relayr.migrate/' || $1::text, 5370))`, schema); err != nil {
		return fmt.Errorf("ledgerpg: migrate: %w", mapError(ctx, err))
	}
	// CREATE SCHEMA IF NOT EXISTS needs CREATE on the database even when
	// the schema stands, which a schema's owner given it by a DBA
	// (CREATE SCHEMA ... AUTHORIZATION) usually lacks: asked only when the
	// schema is missing.
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&exists); err != nil {
		return fmt.Errorf("ledgerpg: migrate: %w", mapError(ctx, err))
	}
	// After the advisory lock: a second migrator waits for the first
	// however long it takes.
	steps := []string{`SET LOCAL search_path TO ` + quoted + `, pg_temp`,
		fmt.Sprintf(`SET LOCAL lock_timeout = %d`, max(lockWait.Milliseconds(), 1))}
	if !exists {
		steps = append([]string{`CREATE SCHEMA ` + quoted}, steps...)
	}
	steps = append(steps,
		`CREATE TABLE IF NOT EXISTS relayr_migrations (
			version    integer PRIMARY KEY,
			name       text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`)
	for _, sql := range steps {
		if _, err := tx.Exec(ctx, sql); err != nil {
			return fmt.Errorf("ledgerpg: migrate: %w", mapError(ctx, err))
		}
	}
	applied := map[int]string{}
	rows, err := tx.Query(ctx, `SELECT version, name FROM relayr_migrations`)
	if err != nil {
		return fmt.Errorf("ledgerpg: migrate: %w", mapError(ctx, err))
	}
	for rows.Next() {
		var (
			v    int
			name string
		)
		if err := rows.Scan(&v, &name); err != nil {
			rows.Close()
			return fmt.Errorf("ledgerpg: migrate: %w", err)
		}
		applied[v] = name
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("ledgerpg: migrate: %w", mapError(ctx, err))
	}
	if err := ledger.CheckApplied(applied, migrations); err != nil {
		return fmt.Errorf("ledgerpg: schema %q %w", schema, err)
	}
	for _, m := range migrations {
		if _, ok := applied[m.Version]; ok {
			continue
		}
		// Simple protocol: a migration file may hold many statements.
		if _, err := tx.Exec(ctx, m.SQL, pgx.QueryExecModeSimpleProtocol); err != nil {
			if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "55P03" {
				return fmt.Errorf("ledgerpg: migration %03d_%s waited %v for a lock on a table, held by another transaction (a long one on the ledger's tables?); nothing was applied, run it again: %w",
					m.Version, m.Name, lockWait, mapError(ctx, err))
			}
			return fmt.Errorf("ledgerpg: migration %03d_%s: %w", m.Version, m.Name, mapError(ctx, err))
		}
		if _, err := tx.Exec(ctx, `INSERT INTO relayr_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
			return fmt.Errorf("ledgerpg: migration %03d_%s: %w", m.Version, m.Name, mapError(ctx, err))
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("ledgerpg: migrate: %w", mapError(ctx, err))
	}
	return nil
}
