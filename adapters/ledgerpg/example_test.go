package ledgerpg_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/relayr-go/relayr/adapters/ledgerpg"
	"github.com/relayr-go/relayr/core/ledger"
)

// Migrations run once, as the tables' owner (`relayr migrate`); each replica
// then opens the ledger, here with row-level security off, as that owner.
func Example() {
	ctx := context.Background()
	url := os.Getenv("RELAYR_TEST_DATABASE_URL")
	if url == "" {
		url = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	schema := fmt.Sprintf("relayr_example_%d", time.Now().UnixNano())
	defer func() { _, _ = pool.Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`) }()

	if err := ledgerpg.MigrateSchema(ctx, pool, schema); err != nil {
		log.Fatal(err)
	}
	l := ledgerpg.New(pool, ledgerpg.Options{Schema: schema})
	if err := l.Ping(ctx); err != nil {
		log.Fatal(err)
	}

	now := time.Date(2026, 10, 17, 9, 0, 0, 0, time.UTC)
	k := ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindItem, Key: "deploy/42"}
	_, first, _ := l.Claim(ctx, ledger.ClaimParams{Key: k, Correlation: "run-1", Now: now, RetakeAfter: 30 * time.Second})
	_, second, _ := l.Claim(ctx, ledger.ClaimParams{Key: k, Correlation: "run-2", Now: now.Add(time.Second), RetakeAfter: 30 * time.Second})
	fmt.Println(first, second)
	// Output: fresh held
}
