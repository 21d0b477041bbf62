package memledger_test

import (
	"context"
	"fmt"
	"time"

	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/ledger/memledger"
	"github.com/relayr-go/relayr/core/tracker"
)

// A key is claimed before anything is sent to the tracker, and what the
// claim made is recorded; the next attempt finds the record and files
// nothing.
func Example() {
	ctx := context.Background()
	l := memledger.New()
	now := time.Date(2026, 10, 17, 9, 0, 0, 0, time.UTC)
	k := ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindItem, Key: "deploy/42"}

	c, outcome, _ := l.Claim(ctx, ledger.ClaimParams{Key: k, Correlation: "run-1", Now: now, RetakeAfter: 30 * time.Second})
	fmt.Println(outcome)
	// ... the tracker creates OPS-12 ...
	_, _ = l.Record(ctx, ledger.RecordParams{Key: k, Nonce: c.Nonce, Ref: tracker.ItemRef{ID: "i-12", Name: "OPS-12"}, Now: now})

	again, outcome, _ := l.Claim(ctx, ledger.ClaimParams{Key: k, Correlation: "run-1-retry", Now: now.Add(time.Minute), RetakeAfter: 30 * time.Second})
	fmt.Println(outcome, again.Ref.Name, again.Correlation)
	// Output:
	// fresh
	// recorded OPS-12 run-1
}
