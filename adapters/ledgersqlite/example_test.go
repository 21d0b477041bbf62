package ledgersqlite_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/relayr-go/relayr/adapters/ledgersqlite"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/ledger"
)

// A ledger lives in one file beside relayr's configuration; it claims keys
// and keeps the event log, and keeps both across restarts.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "relayr")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	l, err := ledgersqlite.Open(ctx, filepath.Join(dir, "relayr.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	now := time.Date(2026, 10, 17, 9, 0, 0, 0, time.UTC)
	k := ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindItem, Key: "deploy/42"}
	_, outcome, err := l.Claim(ctx, ledger.ClaimParams{Key: k, Correlation: "run-1", Now: now, RetakeAfter: 30 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(outcome)

	e := eventlog.Event{ID: "evt-1", Tenant: "acme", Workspace: "ops", Type: "deploy:finished", At: now}
	seq, appended, _ := l.Append(ctx, eventlog.AppendParams{Publisher: "rules", Event: e})
	fmt.Println(seq, appended)
	seq, appended, _ = l.Append(ctx, eventlog.AppendParams{Publisher: "rules", Event: e})
	fmt.Println(seq, appended)
	// Output:
	// fresh
	// 1 true
	// 1 false
}
