package ledgerpg

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
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

// migrateSchema applies migrations, the first ones of the embedded set, as
// MigrateSchema does.
func migrateSchema(ctx context.Context, pool *pgxpool.Pool, schema string, migrations []ledger.Migration) error {
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
	steps := []string{`SET LOCAL search_path TO ` + quoted + `, pg_temp`}
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
	for v, name := range applied {
		if v > len(migrations) {
			return fmt.Errorf("ledgerpg: schema %q has migration %03d_%s, newer than this relayr's", schema, v, name)
		}
		if migrations[v-1].Name != name {
			return fmt.Errorf("ledgerpg: schema %q applied %03d_%s where this relayr has %03d_%s", schema, v, name, v, migrations[v-1].Name)
		}
	}
	for _, m := range migrations {
		if _, ok := applied[m.Version]; ok {
			continue
		}
		// Simple protocol: a migration file may hold many statements.
		if _, err := tx.Exec(ctx, m.SQL, pgx.QueryExecModeSimpleProtocol); err != nil {
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
