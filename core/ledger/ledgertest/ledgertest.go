// Package ledgertest is the Ledger port's contract: every rule the port's
// comments state, as a suite each store runs against itself (memory, SQLite,
// PostgreSQL with and without row-level security).
//
// Run takes a factory, never a shared store: each subtest builds its own.
// Times are the caller's, so the suite never waits for real time; it uses
// whole milliseconds, which every store keeps exactly.
//
// Each area's cases are a table in a file of its own, which Run runs in
// turn:
//
//   - claims.go: claims and records of keys (ADR-0033);
//   - values.go: the pending values relayr wrote to a row's fields;
//   - loopcap.go: the loop cap's count of writes (ADR-0036);
//   - snapshots.go: the snapshots the tracker followers diff against;
//   - followers.go: the followers' leases and cursors (ADR-0015);
//   - deadletters.go: the followers' dead letters;
//   - holders.go: the replicas' heartbeat;
//   - faults.go: bad input and faults, across the port.
//
// The event log has its own contract (eventlogtest). RunOperator
// (operator.go) runs the Operator port's contract, and bench.go holds the
// benchmarks every store shares. This file holds Run and the fixtures the
// areas share.
package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
)

// The domain's timings the suite exercises (ADR-0033, ADR-0015, ADR-0036).
const (
	retakeAfter = 30 * time.Second
	leaseTTL    = 30 * time.Second
	capWindow   = time.Hour
	capLimit    = 20
)

// t0 is the suite's fixed "now".
var t0 = time.Date(2026, 10, 17, 9, 30, 0, 0, time.UTC)

// Run runs the whole contract against stores made by newLedger, one per
// subtest. The factory registers whatever cleanup its store needs.
func Run(t *testing.T, newLedger func(t *testing.T) ledger.Ledger) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Each case has a store of its own (a schema, a file, a
			// memory): the cases run side by side.
			t.Parallel()
			c.run(t, newLedger(t))
		})
	}
}

type testCase struct {
	name string
	run  func(t *testing.T, l ledger.Ledger)
}

// cases is the whole contract, area by area.
var cases = slices.Concat(
	claimCases,
	valueCases,
	loopCapCases,
	snapshotCases,
	followerCases,
	deadLetterCases,
	holderCases,
	faultCases,
)

// Keys and claims.

func key(k string) ledger.Key {
	return ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindItem, Key: k}
}

func claim(t *testing.T, l ledger.Ledger, k ledger.Key, corr string, now time.Time) (ledger.Claim, ledger.Outcome) {
	t.Helper()
	c, o, err := l.Claim(t.Context(), ledger.ClaimParams{Key: k, Correlation: corr, Now: now, RetakeAfter: retakeAfter})
	if err != nil {
		t.Fatalf("Claim(%q) at %v: %v", k.Key, now, err)
	}
	return c, o
}

func mustOutcome(t *testing.T, got, want ledger.Outcome) {
	t.Helper()
	if got != want {
		t.Fatalf("outcome %v, want %v", got, want)
	}
}

func mustIs(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want one matching %v", err, target)
	}
}

func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func ref(id string) tracker.ItemRef {
	return tracker.ItemRef{ID: id, Number: 12, Name: "OPS-12", Link: "https://tracker.example/OPS-12", Key: "k-" + id}
}

func record(t *testing.T, l ledger.Ledger, c ledger.Claim, r tracker.ItemRef, now time.Time) ledger.Claim {
	t.Helper()
	got, err := l.Record(t.Context(), ledger.RecordParams{Key: c.Key, Nonce: c.Nonce, Ref: r, Now: now})
	if err != nil {
		t.Fatalf("Record(%q): %v", c.Key.Key, err)
	}
	return got
}

func lookup(t *testing.T, l ledger.Ledger, k ledger.Key) ledger.Claim {
	t.Helper()
	c, err := l.Lookup(t.Context(), k)
	if err != nil {
		t.Fatalf("Lookup(%q): %v", k.Key, err)
	}
	return c
}

// The loop cap.

func countWrite(l ledger.Ledger, ctx context.Context, item string, now time.Time) (int, error) {
	return l.CountWrite(ctx, ledger.WriteParams{Tenant: "acme", Workspace: "ops", ItemID: item, Now: now, Window: capWindow, Limit: capLimit})
}

func uncountWrite(l ledger.Ledger, ctx context.Context, item string, at time.Time) error {
	return l.UncountWrite(ctx, ledger.WriteParams{Tenant: "acme", Workspace: "ops", ItemID: item, Now: at})
}

// Snapshots.

func snap(ws, id string, n int) ledger.SnapshotRow {
	return ledger.SnapshotRow{
		Tenant: "acme", Workspace: ws, ItemID: id,
		Item:          []byte(fmt.Sprintf(`{"id":%q,"n":%d}`, id, n)),
		UpdatedAt:     t0.Add(time.Duration(n) * time.Second),
		CommentsUntil: t0.Add(time.Duration(n) * time.Millisecond),
	}
}

func sameSnapshot(a, b ledger.SnapshotRow) bool {
	return a.Tenant == b.Tenant && a.Workspace == b.Workspace && a.ItemID == b.ItemID &&
		string(a.Item) == string(b.Item) && a.UpdatedAt.Equal(b.UpdatedAt) && a.CommentsUntil.Equal(b.CommentsUntil) &&
		a.Removed == b.Removed
}

// Followers and their dead letters.

func follower(kind ledger.FollowerKind) ledger.Follower {
	return ledger.Follower{Kind: kind, Tenant: "acme", Workspace: "ops", Name: "plane"}
}

func take(l ledger.Ledger, ctx context.Context, f ledger.Follower, holder string, now time.Time) (ledger.Lease, error) {
	return l.TakeLease(ctx, ledger.LeaseParams{Follower: f, Holder: holder, Now: now, TTL: leaseTTL})
}

func deadLetter(kind ledger.FollowerKind, id string, at time.Time) ledger.DeadLetter {
	return ledger.DeadLetter{Follower: follower(kind), ID: id, Seq: 7, Event: []byte(`{"type":"tracker:item_changed"}`), Reason: "projection: boom", At: at}
}
