// Package drivertest is the conformance suite of ledger.Driver: what each
// driver (memory, SQLite, PostgreSQL) must do for the portable ledger.Store
// to keep the port's promises. ledgertest checks the port through Store;
// this checks the driver beneath it, where a rule's atomicity lives: a
// claim taken once among racing callers, a nonce that conditions a write,
// the pending values and the cursor changed under a lock with nothing
// lost, and that a driver writes the cursor it is handed, so the forward
// rule has one home (Store).
//
// A driver runs it from its own package's tests:
//
//	func TestDriver(t *testing.T) {
//		drivertest.Run(t, func(t *testing.T) ledger.Driver { return newDriver(…) })
//	}
package drivertest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const retake = 30 * time.Second

// Run runs every case against a fresh driver newDriver makes, one per
// subtest, and closes it after.
func Run(t *testing.T, newDriver func(t *testing.T) ledger.Driver) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := newDriver(t)
			t.Cleanup(func() { _ = d.Close() })
			c.fn(t, d)
		})
	}
}

var cases = []struct {
	name string
	fn   func(t *testing.T, d ledger.Driver)
}{
	{"TakeClaimTakesANewKeyOnce", takeClaimTakesANewKeyOnce},
	{"TakeClaimRetakesOnlyALapsedUnrecordedClaim", takeClaimRetakesOnlyALapsedUnrecordedClaim},
	{"TakeClaimAnswersRecordedAndDeletedRowsAsTheyStand", takeClaimAnswersRecordedAndDeletedRows},
	{"OneOfManyRacingTakeClaimsTakesTheKey", racingTakeClaims},
	{"RecordClaimNeedsTheNonce", recordClaimNeedsTheNonce},
	{"ReleaseClaimNeedsTheNonceAndAnUnrecordedRow", releaseClaimNeedsTheNonce},
	{"LookupsAnswerErrNotFound", lookupsAnswerErrNotFound},
	{"ChangeValuesLosesNoConcurrentChange", changeValuesLosesNothing},
	{"ChangeCursorLosesNoConcurrentChange", changeCursorLosesNothing},
	{"ChangeCursorWritesWhatItIsHanded", changeCursorWritesWhatItIsHanded},
	{"CountWriteCountsWithinTheWindowOnly", countWriteCountsWithinTheWindow},
	{"LeasesAreConditionedOnExpiryAndNonce", leasesAreConditioned},
	{"SnapshotIDsPageInByteOrder", snapshotIDsPage},
	{"RecordClaimSavesTheFilingsSnapshotOnlyWhenItRecords", recordClaimSavesTheSnapshot},
	{"DeadLetterKeepsAnIDOnceAndResolvesOnce", deadLetterOnce},
	{"AppendAppendsAnIDOnceAmongRacingAppends", racingAppends},
	{"MapErrorAnswersAForeignErrorAsItIs", mapErrorKeepsForeignErrors},
}

func key(name string) ledger.Key {
	return ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindItem, Key: name}
}

func claimParams(k ledger.Key, now time.Time) ledger.ClaimParams {
	return ledger.ClaimParams{Key: k, Correlation: "corr-" + k.Key, Now: now, RetakeAfter: retake}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func take(t *testing.T, d ledger.Driver, k ledger.Key, now time.Time, nonce string) (ledger.Claim, ledger.Outcome) {
	t.Helper()
	c, o, err := d.TakeClaim(t.Context(), claimParams(k, now), nonce)
	must(t, err)
	return c, o
}

func takeClaimTakesANewKeyOnce(t *testing.T, d ledger.Driver) {
	k := key("new")
	c, o := take(t, d, k, t0, "n1")
	if o != ledger.Fresh || c.Nonce != "n1" || c.Key != k || !c.ClaimedAt.Equal(t0) || c.Correlation != "corr-new" || c.Recorded {
		t.Fatalf("first take = %+v, %v; want Fresh with nonce n1 at t0", c, o)
	}
	c, o = take(t, d, k, t0.Add(time.Second), "n2")
	if o != 0 || c.Nonce != "n1" || !c.ClaimedAt.Equal(t0) {
		t.Fatalf("take of a held key = %+v, %v; want outcome 0 and the row as it stands (nonce n1)", c, o)
	}
}

func takeClaimRetakesOnlyALapsedUnrecordedClaim(t *testing.T, d ledger.Driver) {
	k := key("lapsed")
	take(t, d, k, t0, "n1")
	if _, o := take(t, d, k, t0.Add(retake), "n2"); o != 0 {
		t.Fatalf("take at exactly RetakeAfter answered %v, want 0 (a claim lapses after RetakeAfter)", o)
	}
	c, o := take(t, d, k, t0.Add(retake+time.Second), "n3")
	if o != ledger.Retaken || c.Nonce != "n3" || !c.ClaimedAt.Equal(t0.Add(retake+time.Second)) {
		t.Fatalf("take after RetakeAfter = %+v, %v; want Retaken with nonce n3", c, o)
	}
	if c.Correlation != "corr-lapsed" {
		t.Fatalf("correlation %q: the first claimer's correlation stays (ADR-0033)", c.Correlation)
	}
}

func takeClaimAnswersRecordedAndDeletedRows(t *testing.T, d ledger.Driver) {
	ctx := t.Context()
	rec := key("recorded")
	take(t, d, rec, t0, "n1")
	_, ok, err := d.RecordClaim(ctx, ledger.RecordParams{Key: rec, Nonce: "n1", Ref: tracker.ItemRef{ID: "41"}, Now: t0}, "n2")
	must(t, err)
	if !ok {
		t.Fatal("record with the held nonce recorded nothing")
	}
	c, o := take(t, d, rec, t0.Add(time.Hour), "n3")
	if o != 0 || !c.Recorded || c.Ref.ID != "41" || c.Nonce != "n2" {
		t.Fatalf("take of a recorded key an hour on = %+v, %v; want the recorded row, untaken", c, o)
	}
	del := key("deleted")
	must(t, d.MarkDeleted(ctx, del, "n4"))
	c, o = take(t, d, del, t0.Add(time.Hour), "n5")
	if o != 0 || !c.Deleted || c.Nonce != "n4" {
		t.Fatalf("take of a deleted key = %+v, %v; want the deleted row, untaken", c, o)
	}
}

func racingTakeClaims(t *testing.T, d ledger.Driver) {
	k := key("raced")
	const n = 8
	outcomes := make([]ledger.Outcome, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, outcomes[i], errs[i] = d.TakeClaim(t.Context(), claimParams(k, t0), fmt.Sprintf("n%d", i))
		})
	}
	wg.Wait()
	fresh := 0
	for i := range n {
		if errs[i] != nil && !errors.Is(errs[i], ledger.ErrNotFound) {
			t.Fatalf("take %d: %v", i, errs[i])
		}
		if outcomes[i] == ledger.Fresh {
			fresh++
		}
	}
	if fresh != 1 {
		t.Fatalf("%d racing takes answered Fresh, want exactly 1", fresh)
	}
}

func recordClaimNeedsTheNonce(t *testing.T, d ledger.Driver) {
	ctx := t.Context()
	k := key("record")
	take(t, d, k, t0, "n1")
	p := ledger.RecordParams{Key: k, Nonce: "other", Ref: tracker.ItemRef{ID: "7", Name: "OPS-7"}, Now: t0}
	c, ok, err := d.RecordClaim(ctx, p, "n2")
	must(t, err)
	if ok || c.Recorded || c.Nonce != "n1" {
		t.Fatalf("record with a nonce not held = %+v, %v; want the row unchanged and false", c, ok)
	}
	p.Nonce = "n1"
	c, ok, err = d.RecordClaim(ctx, p, "n2")
	must(t, err)
	if !ok || !c.Recorded || c.Ref.ID != "7" || c.Ref.Name != "OPS-7" || c.Nonce != "n2" || !c.RecordedAt.Equal(t0) {
		t.Fatalf("record with the nonce = %+v, %v; want recorded with nonce n2", c, ok)
	}
	p.Nonce, p.Ref = "n2", tracker.ItemRef{ID: "8"}
	c, ok, err = d.RecordClaim(ctx, p, "n3")
	must(t, err)
	if ok || c.Ref.ID != "7" {
		t.Fatalf("a second record = %+v, %v; want the first record as it stands and false", c, ok)
	}
	if _, _, err := d.RecordClaim(ctx, ledger.RecordParams{Key: key("none"), Nonce: "n1", Now: t0}, "n2"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("record of a key with no row: %v, want ErrNotFound", err)
	}
}

func releaseClaimNeedsTheNonce(t *testing.T, d ledger.Driver) {
	ctx := t.Context()
	k := key("release")
	take(t, d, k, t0, "n1")
	if c, ok, err := d.ReleaseClaim(ctx, k, "other"); err != nil || ok || c.Nonce != "n1" {
		t.Fatalf("release with a nonce not held = %+v, %v, %v; want the row and false", c, ok, err)
	}
	if _, ok, err := d.ReleaseClaim(ctx, k, "n1"); err != nil || !ok {
		t.Fatalf("release with the nonce = %v, %v; want true", ok, err)
	}
	if _, err := d.LookupClaim(ctx, k); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("lookup after release: %v, want ErrNotFound (the row goes)", err)
	}
	if _, _, err := d.ReleaseClaim(ctx, k, "n1"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("release of a key with no row: %v, want ErrNotFound", err)
	}
	take(t, d, k, t0, "n2")
	_, _, err := d.RecordClaim(ctx, ledger.RecordParams{Key: k, Nonce: "n2", Ref: tracker.ItemRef{ID: "9"}, Now: t0}, "n3")
	must(t, err)
	if c, ok, err := d.ReleaseClaim(ctx, k, "n3"); err != nil || ok || !c.Recorded {
		t.Fatalf("release of a recorded row = %+v, %v, %v; want the recorded row and false", c, ok, err)
	}
}

func lookupsAnswerErrNotFound(t *testing.T, d ledger.Driver) {
	ctx := t.Context()
	if _, err := d.LookupClaim(ctx, key("nothing")); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("LookupClaim: %v", err)
	}
	if _, err := d.LookupItem(ctx, "acme", "ops", "404"); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("LookupItem: %v", err)
	}
	if _, err := d.Snapshot(ctx, "acme", "ops", "404"); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Snapshot: %v", err)
	}
	if err := d.ChangeValues(ctx, key("nothing"), func(map[string]string) {}); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("ChangeValues: %v", err)
	}
	f := ledger.Follower{Kind: ledger.TrackerFollower, Tenant: "acme", Workspace: "ops", Name: "plane"}
	if _, _, err := d.ResolveDeadLetter(ctx, f, "404", ledger.Skipped, t0); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("ResolveDeadLetter: %v", err)
	}
}

func changeValuesLosesNothing(t *testing.T, d ledger.Driver) {
	ctx := t.Context()
	k := key("values")
	take(t, d, k, t0, "n1")
	const n = 12
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			errs[i] = d.ChangeValues(ctx, k, func(vs map[string]string) {
				vs[fmt.Sprintf("f%02d", i)] = fmt.Sprintf(`"%d"`, i)
			})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("change %d: %v", i, err)
		}
	}
	var seen map[string]string
	must(t, d.ChangeValues(ctx, k, func(vs map[string]string) { seen = maps.Clone(vs) }))
	if len(seen) != n {
		t.Fatalf("%d of %d concurrent changes kept: %v", len(seen), n, seen)
	}
	c, err := d.LookupClaim(ctx, k)
	must(t, err)
	if c.Values["f03"] != `"3"` {
		t.Fatalf("the row reads values %v", c.Values)
	}
}

func changeCursorLosesNothing(t *testing.T, d ledger.Driver) {
	ctx := t.Context()
	for _, kind := range []ledger.FollowerKind{ledger.TrackerFollower, ledger.LogFollower} {
		f := ledger.Follower{Kind: kind, Tenant: "acme", Workspace: "ops", Name: "counted"}
		const n = 12
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				errs[i] = d.ChangeCursor(ctx, f, func(c ledger.Cursor) ledger.Cursor { c.Seq++; return c })
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("%s change %d: %v", kind, i, err)
			}
		}
		c, err := d.Cursor(ctx, f)
		must(t, err)
		if c.Seq != n {
			t.Fatalf("%s cursor at %d after %d concurrent increments: a change was lost", kind, c.Seq, n)
		}
	}
}

func changeCursorWritesWhatItIsHanded(t *testing.T, d ledger.Driver) {
	ctx := t.Context()
	f := ledger.Follower{Kind: ledger.TrackerFollower, Tenant: "acme", Workspace: "ops", Name: "plane"}
	var first ledger.Cursor
	must(t, d.ChangeCursor(ctx, f, func(c ledger.Cursor) ledger.Cursor {
		first = c
		return ledger.Cursor{UpdatedAt: t0, ItemID: "100", Seq: 5, Seeded: true, SweptAt: t0, PolledAt: t0.Add(time.Second)}
	}))
	if first != (ledger.Cursor{}) {
		t.Fatalf("a follower with no row handed %+v, want the zero Cursor", first)
	}
	// Backwards on purpose: the forward rule is Store's, and a driver that
	// applied one of its own would apply it twice, in two orders.
	back := ledger.Cursor{UpdatedAt: t0, ItemID: "99", Seq: 3}
	must(t, d.ChangeCursor(ctx, f, func(c ledger.Cursor) ledger.Cursor {
		if c.ItemID != "100" || c.Seq != 5 || !c.Seeded || !c.PolledAt.Equal(t0.Add(time.Second)) {
			t.Errorf("the saved cursor reads %+v", c)
		}
		return back
	}))
	got, err := d.Cursor(ctx, f)
	must(t, err)
	if got.ItemID != "99" || got.Seq != 3 || got.Seeded || !got.UpdatedAt.Equal(t0) || !got.SweptAt.IsZero() {
		t.Fatalf("cursor = %+v, want exactly what change answered, %+v", got, back)
	}
	if l, err := d.Lease(ctx, f); err != nil || l.Holder != "" {
		t.Fatalf("a cursor's row reads a lease %+v, %v; want none held", l, err)
	}
}

func countWriteCountsWithinTheWindow(t *testing.T, d ledger.Driver) {
	ctx := t.Context()
	p := ledger.WriteParams{Tenant: "acme", Workspace: "ops", ItemID: "5", Now: t0, Window: time.Hour, Limit: 2}
	for i, want := range []struct {
		at      time.Duration
		n       int
		counted bool
	}{{0, 1, true}, {time.Minute, 2, true}, {2 * time.Minute, 2, false}, {time.Hour, 2, true}, {time.Hour + time.Second, 2, false}} {
		p.Now = t0.Add(want.at)
		n, counted, err := d.CountWrite(ctx, p)
		must(t, err)
		if n != want.n || counted != want.counted {
			t.Fatalf("write %d at +%v = %d, %v; want %d, %v", i, want.at, n, counted, want.n, want.counted)
		}
	}
	// The write at +1h is given back: one fits again at +1h 1s.
	must(t, d.UncountWrite(ctx, ledger.WriteParams{Tenant: "acme", Workspace: "ops", ItemID: "5", Now: t0.Add(time.Hour)}))
	if n, counted, err := d.CountWrite(ctx, p); err != nil || n != 2 || !counted {
		t.Fatalf("after UncountWrite = %d, %v, %v; want 2, true", n, counted, err)
	}
	must(t, d.ForgetWrites(ctx, "acme", "ops", "5"))
	if n, counted, err := d.CountWrite(ctx, p); err != nil || n != 1 || !counted {
		t.Fatalf("after ForgetWrites = %d, %v, %v; want 1, true", n, counted, err)
	}
}

func leasesAreConditioned(t *testing.T, d ledger.Driver) {
	ctx := t.Context()
	f := ledger.Follower{Kind: ledger.LogFollower, Tenant: "acme", Workspace: "ops", Name: "sink"}
	p := ledger.LeaseParams{Follower: f, Holder: "a", Now: t0, TTL: time.Minute}
	if ok, err := d.TakeLease(ctx, p, "na"); err != nil || !ok {
		t.Fatalf("take of a free lease = %v, %v", ok, err)
	}
	p.Holder, p.Now = "b", t0.Add(59*time.Second)
	if ok, err := d.TakeLease(ctx, p, "nb"); err != nil || ok {
		t.Fatalf("take of a held lease = %v, %v; want false", ok, err)
	}
	p.Nonce = "wrong"
	if _, ok, err := d.RenewLease(ctx, p, "nx"); err != nil || ok {
		t.Fatalf("renew with a nonce not held = %v, %v; want false", ok, err)
	}
	p.Nonce = "na"
	if h, ok, err := d.RenewLease(ctx, p, "na2"); err != nil || !ok || h != "a" {
		t.Fatalf("renew with the nonce = %q, %v, %v; want a's lease", h, ok, err)
	}
	l, err := d.Lease(ctx, f)
	must(t, err)
	if l.Holder != "a" || !l.Expires.Equal(t0.Add(59*time.Second+time.Minute)) {
		t.Fatalf("lease = %+v", l)
	}
	p.Holder, p.Nonce, p.Now = "b", "", l.Expires
	if ok, err := d.TakeLease(ctx, p, "nb"); err != nil || !ok {
		t.Fatalf("take at the lease's expiry = %v, %v; want true", ok, err)
	}
	if ok, err := d.ReleaseLease(ctx, f, "na2"); err != nil || ok {
		t.Fatalf("release with a lapsed holder's nonce = %v, %v; want false", ok, err)
	}
	if ok, err := d.ReleaseLease(ctx, f, "nb"); err != nil || !ok {
		t.Fatalf("release with the nonce = %v, %v; want true", ok, err)
	}
	if l, err := d.Lease(ctx, f); err != nil || l.Holder != "" {
		t.Fatalf("lease after release = %+v, %v; want no holder", l, err)
	}
	followed, err := d.Followed(ctx)
	must(t, err)
	if !slices.Contains(followed, f) {
		t.Fatalf("Followed = %v, want the log follower with a row", followed)
	}
}

func snapshotIDsPage(t *testing.T, d ledger.Driver) {
	ctx := t.Context()
	var rows []ledger.SnapshotRow
	for _, id := range []string{"b", "10", "a", "9", "c"} {
		rows = append(rows, ledger.SnapshotRow{Tenant: "acme", Workspace: "ops", ItemID: id, Item: []byte(`{}`), UpdatedAt: t0})
	}
	rows = append(rows, ledger.SnapshotRow{Tenant: "acme", Workspace: "other", ItemID: "0", Item: []byte(`{}`), UpdatedAt: t0})
	must(t, d.SaveSnapshots(ctx, rows))
	first, err := d.SnapshotIDs(ctx, "acme", "ops", "", 2)
	must(t, err)
	rest, err := d.SnapshotIDs(ctx, "acme", "ops", "9", 10)
	must(t, err)
	if !slices.Equal(first, []string{"10", "9"}) || !slices.Equal(rest, []string{"a", "b", "c"}) {
		t.Fatalf("pages %v then %v; want [10 9] then [a b c] (byte order, after the last)", first, rest)
	}
}

// recordClaimSavesTheSnapshot: a record with a filing's snapshot writes
// it in the same transaction, once, never over a row that stands, and not
// at all when it records nothing.
func recordClaimSavesTheSnapshot(t *testing.T, d ledger.Driver) {
	ctx := t.Context()
	row := func(id string, n int) *ledger.SnapshotRow {
		return &ledger.SnapshotRow{Tenant: "acme", Workspace: "ops", ItemID: id, Item: []byte(fmt.Sprintf(`{"n":%d}`, n)), UpdatedAt: t0.Add(time.Duration(n) * time.Second)}
	}
	record := func(k ledger.Key, nonce string, snap *ledger.SnapshotRow) bool {
		t.Helper()
		_, recorded, err := d.RecordClaim(ctx, ledger.RecordParams{Key: k, Nonce: nonce, Ref: tracker.ItemRef{ID: snap.ItemID}, Now: t0, Snapshot: snap}, "n-"+k.Key+"-2")
		must(t, err)
		return recorded
	}
	wantItem := func(id, item string) {
		t.Helper()
		got, err := d.Snapshot(ctx, "acme", "ops", id)
		if err != nil || string(got.Item) != item {
			t.Fatalf("snapshot of %s: %s, %v; want %s", id, got.Item, err, item)
		}
	}
	_, _, err := d.TakeClaim(ctx, claimParams(key("a"), t0), "n-a")
	must(t, err)
	if !record(key("a"), "n-a", row("it-1", 1)) {
		t.Fatal("a's record did not record")
	}
	wantItem("it-1", `{"n":1}`)
	if record(key("a"), "n-a", row("it-1", 2)) {
		t.Fatal("a second record recorded")
	}
	wantItem("it-1", `{"n":1}`)
	// A snapshot that stands is kept.
	must(t, d.SaveSnapshots(ctx, []ledger.SnapshotRow{*row("it-2", 5)}))
	_, _, err = d.TakeClaim(ctx, claimParams(key("b"), t0), "n-b")
	must(t, err)
	if !record(key("b"), "n-b", row("it-2", 6)) {
		t.Fatal("b's record did not record")
	}
	wantItem("it-2", `{"n":5}`)
	// A record that does not hold the nonce writes no snapshot.
	_, _, err = d.TakeClaim(ctx, claimParams(key("c"), t0), "n-c")
	must(t, err)
	if record(key("c"), "not-n-c", row("it-3", 1)) {
		t.Fatal("a record without the nonce recorded")
	}
	if _, err := d.Snapshot(ctx, "acme", "ops", "it-3"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("a record that recorded nothing saved a snapshot: %v", err)
	}
}

func deadLetterOnce(t *testing.T, d ledger.Driver) {
	ctx := t.Context()
	f := ledger.Follower{Kind: ledger.TrackerFollower, Tenant: "acme", Workspace: "ops", Name: "plane"}
	dl := ledger.DeadLetter{Follower: f, ID: "evt-1", Event: []byte(`{"a":1}`), Reason: "refused", At: t0}
	for i, want := range []bool{true, false} {
		added, err := d.DeadLetter(ctx, dl)
		must(t, err)
		if added != want {
			t.Fatalf("dead letter %d added = %v, want %v", i, added, want)
		}
	}
	got, ok, err := d.ResolveDeadLetter(ctx, f, "evt-1", ledger.Replayed, t0.Add(time.Minute))
	must(t, err)
	if !ok || got.Resolution != ledger.Replayed || !got.ResolvedAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("first resolution = %+v, %v", got, ok)
	}
	got, ok, err = d.ResolveDeadLetter(ctx, f, "evt-1", ledger.Skipped, t0.Add(2*time.Minute))
	must(t, err)
	if ok || got.Resolution != ledger.Replayed {
		t.Fatalf("second resolution = %+v, %v; want the first kept and false", got, ok)
	}
}

func racingAppends(t *testing.T, d ledger.Driver) {
	ctx := t.Context()
	const n = 8
	seqs := make([]int64, n)
	appended := make([]bool, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprintf("evt-%d", i%2) // two ids, four appends each
			e := eventlog.Event{ID: id, Type: "tracker:item_changed", Tenant: "acme", Workspace: "ops", Data: []byte(`{}`), At: t0}
			seqs[i], appended[i], errs[i] = d.Append(ctx, eventlog.AppendParams{Event: e, Publisher: "tracker"})
		})
	}
	wg.Wait()
	count := 0
	for i := range n {
		must(t, errs[i])
		if appended[i] {
			count++
		}
		if seqs[i] != seqs[i%2] {
			t.Fatalf("appends of one id answered seqs %d and %d", seqs[i], seqs[i%2])
		}
	}
	head, err := d.Head(ctx, "acme", "ops")
	must(t, err)
	if count != 2 || head != 2 {
		t.Fatalf("%d appended, head %d; want 2 and 2 (each id once)", count, head)
	}
	events, err := d.Read(ctx, "acme", "ops", 0, 10)
	must(t, err)
	if len(events) != 2 || events[0].Seq != 1 || events[1].Seq != 2 {
		t.Fatalf("read %+v", events)
	}
}

func mapErrorKeepsForeignErrors(t *testing.T, d ledger.Driver) {
	foreign := errors.New("not the store's")
	if got := d.MapError(foreign); !errors.Is(got, foreign) ||
		errors.Is(got, ledger.ErrUnavailable) || errors.Is(got, ledger.ErrInvalid) || errors.Is(got, ledger.ErrClosed) {
		t.Fatalf("MapError(%v) = %v, want it as it is", foreign, got)
	}
	if err := d.Ping(context.WithoutCancel(t.Context())); err != nil {
		t.Fatalf("Ping of a ready store: %v", err)
	}
}
