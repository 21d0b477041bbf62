// Package ledgertest is the Ledger port's contract: every rule the port's
// comments state, as a suite each store runs against itself (memory, SQLite,
// PostgreSQL with and without row-level security).
//
// Run takes a factory, never a shared store: each subtest builds its own.
// Times are the caller's, so the suite never waits for real time; it uses
// whole milliseconds, which every store keeps exactly.
package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
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
			c.run(t, newLedger(t))
		})
	}
}

type testCase struct {
	name string
	run  func(t *testing.T, l ledger.Ledger)
}

var cases []testCase

func add(name string, run func(t *testing.T, l ledger.Ledger)) bool {
	cases = append(cases, testCase{name, run})
	return true
}

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

// Claims.

var _ = add("FreshKeyIsClaimedWithANonce", func(t *testing.T, l ledger.Ledger) {
	c, o := claim(t, l, key("deploy/1"), "run-1", t0)
	mustOutcome(t, o, ledger.Fresh)
	if c.Nonce == "" || !c.ClaimedAt.Equal(t0) || c.Correlation != "run-1" || c.Recorded || c.Deleted || c.Key != key("deploy/1") {
		t.Fatalf("fresh claim %+v", c)
	}
	if got := lookup(t, l, key("deploy/1")); got.Nonce != c.Nonce || !got.ClaimedAt.Equal(t0) {
		t.Fatalf("Lookup %+v, want the claim %+v", got, c)
	}
})

var _ = add("HeldClaimIsNotTakenBeforeItLapses", func(t *testing.T, l ledger.Ledger) {
	first, _ := claim(t, l, key("k"), "run-1", t0)
	for _, at := range []time.Duration{0, time.Second, retakeAfter} {
		_, o := claim(t, l, key("k"), "run-2", t0.Add(at))
		mustOutcome(t, o, ledger.Held)
	}
	if got := lookup(t, l, key("k")); got.Nonce != first.Nonce {
		t.Fatal("a held claim changed hands")
	}
})

var _ = add("ClaimIsRetakenAfterItLapsesWithNothingRecorded", func(t *testing.T, l ledger.Ledger) {
	first, _ := claim(t, l, key("k"), "run-1", t0)
	now := t0.Add(retakeAfter + time.Millisecond)
	c, o := claim(t, l, key("k"), "run-2", now)
	mustOutcome(t, o, ledger.Retaken)
	if c.Nonce == "" || c.Nonce == first.Nonce || !c.ClaimedAt.Equal(now) {
		t.Fatalf("retaken claim %+v; first nonce %q", c, first.Nonce)
	}
	_, o = claim(t, l, key("k"), "run-3", now.Add(time.Second))
	mustOutcome(t, o, ledger.Held)
})

var _ = add("FirstClaimersCorrelationIsKept", func(t *testing.T, l ledger.Ledger) {
	claim(t, l, key("k"), "run-1", t0)
	c, o := claim(t, l, key("k"), "run-2", t0.Add(time.Minute))
	mustOutcome(t, o, ledger.Retaken)
	if c.Correlation != "run-1" {
		t.Fatalf("correlation %q after retake, want the first claimer's", c.Correlation)
	}
	c = record(t, l, c, ref("1"), t0.Add(time.Minute))
	if c.Correlation != "run-1" || lookup(t, l, key("k")).Correlation != "run-1" {
		t.Fatalf("correlation %q after record, want the first claimer's", c.Correlation)
	}
})

var _ = add("RecordedKeyAnswersRecordedAndIsNeverRetaken", func(t *testing.T, l ledger.Ledger) {
	c, _ := claim(t, l, key("k"), "run-1", t0)
	r := record(t, l, c, ref("item-1"), t0.Add(time.Second))
	if !r.Recorded || r.Ref != ref("item-1") || !r.RecordedAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("recorded row %+v", r)
	}
	got, o := claim(t, l, key("k"), "run-2", t0.Add(24*time.Hour))
	mustOutcome(t, o, ledger.Recorded)
	if got.Ref != ref("item-1") || got.Correlation != "run-1" {
		t.Fatalf("claim of a recorded key answered %+v", got)
	}
})

var _ = add("FirstRecordIsKept", func(t *testing.T, l ledger.Ledger) {
	c, _ := claim(t, l, key("k"), "", t0)
	record(t, l, c, ref("first"), t0)
	got, err := l.Record(t.Context(), ledger.RecordParams{Key: c.Key, Nonce: c.Nonce, Ref: ref("second"), Now: t0.Add(time.Second)})
	mustNil(t, err)
	if got.Ref != ref("first") || !got.RecordedAt.Equal(t0) {
		t.Fatalf("second record answered %+v, want the first kept", got)
	}
	if lookup(t, l, key("k")).Ref != ref("first") {
		t.Fatal("the second record replaced the first")
	}
})

var _ = add("RetakenClaimerCannotRecordOverTheNewOne", func(t *testing.T, l ledger.Ledger) {
	old, _ := claim(t, l, key("k"), "run-1", t0)
	cur, o := claim(t, l, key("k"), "run-2", t0.Add(time.Minute))
	mustOutcome(t, o, ledger.Retaken)
	_, err := l.Record(t.Context(), ledger.RecordParams{Key: old.Key, Nonce: old.Nonce, Ref: ref("stale"), Now: t0.Add(time.Minute)})
	mustIs(t, err, ledger.ErrNonce)
	if lookup(t, l, key("k")).Recorded {
		t.Fatal("a stale claimer's record landed")
	}
	if r := record(t, l, cur, ref("new"), t0.Add(time.Minute)); r.Ref != ref("new") {
		t.Fatalf("the new claimer recorded %+v", r.Ref)
	}
})

var _ = add("ReleaseFreesTheKeyAtOnce", func(t *testing.T, l ledger.Ledger) {
	c, _ := claim(t, l, key("k"), "run-1", t0)
	mustNil(t, l.Release(t.Context(), c.Key, c.Nonce))
	_, err := l.Lookup(t.Context(), key("k"))
	mustIs(t, err, ledger.ErrNotFound)
	again, o := claim(t, l, key("k"), "run-2", t0.Add(time.Second))
	mustOutcome(t, o, ledger.Fresh)
	if again.Correlation != "run-2" {
		t.Fatalf("correlation %q after release, want the new claimer's", again.Correlation)
	}
	_, err = l.Record(t.Context(), ledger.RecordParams{Key: c.Key, Nonce: c.Nonce, Ref: ref("x"), Now: t0})
	mustIs(t, err, ledger.ErrNonce)
})

var _ = add("ReleaseNeedsTheNonceHolder", func(t *testing.T, l ledger.Ledger) {
	old, _ := claim(t, l, key("k"), "", t0)
	cur, _ := claim(t, l, key("k"), "", t0.Add(time.Minute))
	mustIs(t, l.Release(t.Context(), old.Key, old.Nonce), ledger.ErrNonce)
	mustIs(t, l.Release(t.Context(), old.Key, "not-a-nonce"), ledger.ErrNonce)
	_, o := claim(t, l, key("k"), "", t0.Add(time.Minute+time.Second))
	mustOutcome(t, o, ledger.Held)
	mustNil(t, l.Release(t.Context(), cur.Key, cur.Nonce))
	mustIs(t, l.Release(t.Context(), cur.Key, cur.Nonce), ledger.ErrNonce)
})

var _ = add("ReleaseOfARecordedClaimChangesNothing", func(t *testing.T, l ledger.Ledger) {
	c, _ := claim(t, l, key("k"), "", t0)
	record(t, l, c, ref("1"), t0)
	mustNil(t, l.Release(t.Context(), c.Key, c.Nonce))
	_, o := claim(t, l, key("k"), "", t0.Add(time.Second))
	mustOutcome(t, o, ledger.Recorded)
})

var _ = add("DeletedKeyAnswersDeletedFromThenOn", func(t *testing.T, l ledger.Ledger) {
	c, _ := claim(t, l, key("k"), "run-1", t0)
	record(t, l, c, ref("1"), t0)
	mustNil(t, l.MarkDeleted(t.Context(), key("k")))
	for _, at := range []time.Duration{0, time.Hour} {
		got, o := claim(t, l, key("k"), "run-2", t0.Add(at))
		mustOutcome(t, o, ledger.Deleted)
		if !got.Deleted || got.Ref != ref("1") {
			t.Fatalf("deleted row %+v", got)
		}
	}
	mustNil(t, l.Release(t.Context(), c.Key, c.Nonce))
	if !lookup(t, l, key("k")).Deleted {
		t.Fatal("release cleared the deleted mark")
	}
})

var _ = add("MarkDeletedOnAKeyWithoutARowMarksIt", func(t *testing.T, l ledger.Ledger) {
	mustNil(t, l.MarkDeleted(t.Context(), key("never")))
	_, o := claim(t, l, key("never"), "", t0)
	mustOutcome(t, o, ledger.Deleted)
})

var _ = add("LookupOfAKeyWithoutARowIsNotFound", func(t *testing.T, l ledger.Ledger) {
	_, err := l.Lookup(t.Context(), key("nothing"))
	mustIs(t, err, ledger.ErrNotFound)
})

var _ = add("LookupItemFindsTheKeyThatRecordedTheItem", func(t *testing.T, l ledger.Ledger) {
	c, _ := claim(t, l, key("k"), "run-1", t0)
	record(t, l, c, ref("item-9"), t0)
	got, err := l.LookupItem(t.Context(), "acme", "ops", "item-9")
	mustNil(t, err)
	if got.Key != key("k") || got.Correlation != "run-1" {
		t.Fatalf("LookupItem answered %+v", got)
	}
	com := ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindComment, Key: "k/comment"}
	cc, _ := claim(t, l, com, "", t0)
	record(t, l, cc, tracker.ItemRef{ID: "comment-1", Key: "item-9"}, t0)
	for _, probe := range [][3]string{{"acme", "ops", "comment-1"}, {"acme", "other", "item-9"}, {"other", "ops", "item-9"}, {"acme", "ops", "item-0"}} {
		_, err := l.LookupItem(t.Context(), probe[0], probe[1], probe[2])
		mustIs(t, err, ledger.ErrNotFound)
	}
	_, err = l.LookupItem(t.Context(), "acme", "ops", "")
	mustIs(t, err, ledger.ErrInvalid)
})

var _ = add("ItemsAndCommentsOfOneKeyAreDifferentRows", func(t *testing.T, l ledger.Ledger) {
	item, o := claim(t, l, key("k"), "", t0)
	mustOutcome(t, o, ledger.Fresh)
	record(t, l, item, ref("1"), t0)
	com := key("k")
	com.Kind = ledger.KindComment
	_, o = claim(t, l, com, "", t0)
	mustOutcome(t, o, ledger.Fresh)
})

var _ = add("TenantBsKeyIsAnotherRow", func(t *testing.T, l ledger.Ledger) {
	a, _ := claim(t, l, key("k"), "run-a", t0)
	record(t, l, a, ref("a"), t0)
	b := key("k")
	b.Tenant = "globex"
	got, o := claim(t, l, b, "run-b", t0)
	mustOutcome(t, o, ledger.Fresh)
	if got.Correlation != "run-b" {
		t.Fatalf("tenant B's row %+v", got)
	}
	ws := key("k")
	ws.Workspace = "other"
	_, o = claim(t, l, ws, "", t0)
	mustOutcome(t, o, ledger.Fresh)
	_, err := l.LookupItem(t.Context(), "globex", "ops", "a")
	mustIs(t, err, ledger.ErrNotFound)
})

var _ = add("ConcurrentClaimsOfOneKeyHaveOneWinner", func(t *testing.T, l ledger.Ledger) {
	const n = 16
	var wg sync.WaitGroup
	outcomes := make([]ledger.Outcome, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, outcomes[i], errs[i] = l.Claim(t.Context(), ledger.ClaimParams{Key: key("contended"), Correlation: fmt.Sprint(i), Now: t0, RetakeAfter: retakeAfter})
		})
	}
	wg.Wait()
	fresh := 0
	for i := range n {
		mustNil(t, errs[i])
		switch outcomes[i] {
		case ledger.Fresh:
			fresh++
		case ledger.Held:
		default:
			t.Fatalf("outcome %v", outcomes[i])
		}
	}
	if fresh != 1 {
		t.Fatalf("%d fresh claims of one key, want 1", fresh)
	}
})

// Values.

var _ = add("SetValuesAnswersThePreviousValues", func(t *testing.T, l ledger.Ledger) {
	claim(t, l, key("k"), "", t0)
	prev, err := l.SetValues(t.Context(), key("k"), map[string]string{"title": `"One"`, "state": `"todo"`})
	mustNil(t, err)
	if len(prev) != 0 {
		t.Fatalf("previous %v, want none", prev)
	}
	prev, err = l.SetValues(t.Context(), key("k"), map[string]string{"title": `"Two"`, "labels": `["a"]`})
	mustNil(t, err)
	if !maps.Equal(prev, map[string]string{"title": `"One"`}) {
		t.Fatalf("previous %v", prev)
	}
	// A field keeps its values in order until one is read back: two edits
	// between polls are both relayr's.
	want := map[string]string{"title": "\"One\"\n\"Two\"", "state": `"todo"`, "labels": `["a"]`}
	if got := lookup(t, l, key("k")).Values; !maps.Equal(got, want) {
		t.Fatalf("values %v, want %v", got, want)
	}
	if !ledger.IsPending(want["title"], `"One"`) || !ledger.IsPending(want["title"], `"Two"`) {
		t.Fatal("both edits' values are not pending")
	}
})

var _ = add("ValuesSetBeforeTheRecordSurviveIt", func(t *testing.T, l ledger.Ledger) {
	c, _ := claim(t, l, key("k"), "", t0)
	_, err := l.SetValues(t.Context(), key("k"), map[string]string{"title": `"Filed"`})
	mustNil(t, err)
	r := record(t, l, c, ref("1"), t0)
	if r.Values["title"] != `"Filed"` {
		t.Fatalf("values %v after record", r.Values)
	}
})

var _ = add("RestoreValuesPutsBackTheEarlierValues", func(t *testing.T, l ledger.Ledger) {
	claim(t, l, key("k"), "", t0)
	_, err := l.SetValues(t.Context(), key("k"), map[string]string{"title": `"Old"`})
	mustNil(t, err)
	refused := map[string]string{"title": `"New"`, "state": `"done"`}
	_, err = l.SetValues(t.Context(), key("k"), refused)
	mustNil(t, err)
	mustNil(t, l.RestoreValues(t.Context(), key("k"), refused))
	want := map[string]string{"title": `"Old"`}
	if got := lookup(t, l, key("k")).Values; !maps.Equal(got, want) {
		t.Fatalf("values %v after restore, want %v", got, want)
	}
})

var _ = add("ConsumeValuesClearsTheFields", func(t *testing.T, l ledger.Ledger) {
	claim(t, l, key("k"), "", t0)
	_, err := l.SetValues(t.Context(), key("k"), map[string]string{"title": `"T"`, "state": `"done"`})
	mustNil(t, err)
	mustNil(t, l.ConsumeValues(t.Context(), key("k"), map[string]string{"title": `"T"`, "absent": `"x"`}))
	want := map[string]string{"state": `"done"`}
	if got := lookup(t, l, key("k")).Values; !maps.Equal(got, want) {
		t.Fatalf("values %v after consume, want %v", got, want)
	}
	mustNil(t, l.ConsumeValues(t.Context(), key("k"), map[string]string{"state": `"done"`}))
	if got := lookup(t, l, key("k")).Values; len(got) != 0 {
		t.Fatalf("values %v after consuming all", got)
	}
})

// The follower reads an echo of one edit while the next edit records its
// value: consuming the first must not clear the second, or its read-back
// would be published as a person's change.
var _ = add("ConsumeValuesKeepsAValueRecordedSinceTheRead", func(t *testing.T, l ledger.Ledger) {
	claim(t, l, key("k"), "", t0)
	_, err := l.SetValues(t.Context(), key("k"), map[string]string{"title": `"Filed"`})
	mustNil(t, err)
	_, err = l.SetValues(t.Context(), key("k"), map[string]string{"title": `"Edited"`})
	mustNil(t, err)
	mustNil(t, l.ConsumeValues(t.Context(), key("k"), map[string]string{"title": `"Filed"`}))
	want := map[string]string{"title": `"Edited"`}
	if got := lookup(t, l, key("k")).Values; !maps.Equal(got, want) {
		t.Fatalf("values %v after consuming the earlier echo, want %v", got, want)
	}
})

var _ = add("ConsumingALaterValueConsumesTheEarlierOnes", func(t *testing.T, l ledger.Ledger) {
	claim(t, l, key("k"), "", t0)
	for _, v := range []string{`"A"`, `"B"`, `"C"`} {
		_, err := l.SetValues(t.Context(), key("k"), map[string]string{"title": v})
		mustNil(t, err)
	}
	mustNil(t, l.ConsumeValues(t.Context(), key("k"), map[string]string{"title": `"B"`}))
	want := map[string]string{"title": `"C"`}
	if got := lookup(t, l, key("k")).Values; !maps.Equal(got, want) {
		t.Fatalf("values %v, want %v", got, want)
	}
})

var _ = add("AValueWithANewlineIsRefused", func(t *testing.T, l ledger.Ledger) {
	claim(t, l, key("k"), "", t0)
	_, err := l.SetValues(t.Context(), key("k"), map[string]string{"title": "\"a\"\n\"b\""})
	mustIs(t, err, ledger.ErrInvalid)
})

var _ = add("ValuesOfAKeyWithoutARowAreNotFound", func(t *testing.T, l ledger.Ledger) {
	_, err := l.SetValues(t.Context(), key("none"), map[string]string{"title": `"x"`})
	mustIs(t, err, ledger.ErrNotFound)
	mustIs(t, l.RestoreValues(t.Context(), key("none"), map[string]string{"title": `"x"`}), ledger.ErrNotFound)
	mustIs(t, l.ConsumeValues(t.Context(), key("none"), map[string]string{"title": `"x"`}), ledger.ErrNotFound)
})

// The loop cap.

func countWrite(l ledger.Ledger, ctx context.Context, item string, now time.Time) (int, error) {
	return l.CountWrite(ctx, ledger.WriteParams{Tenant: "acme", Workspace: "ops", ItemID: item, Now: now, Window: capWindow, Limit: capLimit})
}

var _ = add("CountWriteFailsWithErrLoopAtTheCap", func(t *testing.T, l ledger.Ledger) {
	for i := 1; i <= capLimit; i++ {
		n, err := countWrite(l, t.Context(), "item-1", t0.Add(time.Duration(i)*time.Second))
		mustNil(t, err)
		if n != i {
			t.Fatalf("write %d counted as %d", i, n)
		}
	}
	_, err := countWrite(l, t.Context(), "item-1", t0.Add(time.Minute))
	mustIs(t, err, ledger.ErrLoop)
	_, err = countWrite(l, t.Context(), "item-1", t0.Add(30*time.Minute))
	mustIs(t, err, ledger.ErrLoop)
	n, err := countWrite(l, t.Context(), "item-2", t0.Add(time.Minute))
	mustNil(t, err)
	if n != 1 {
		t.Fatalf("another item's first write counted as %d", n)
	}
})

var _ = add("CountWriteWindowSlides", func(t *testing.T, l ledger.Ledger) {
	for i := range capLimit {
		_, err := countWrite(l, t.Context(), "item", t0.Add(time.Duration(i)*time.Minute))
		mustNil(t, err)
	}
	_, err := countWrite(l, t.Context(), "item", t0.Add(capWindow-time.Millisecond))
	mustIs(t, err, ledger.ErrLoop)
	// The first write (at t0) leaves the window an hour later: one more fits.
	n, err := countWrite(l, t.Context(), "item", t0.Add(capWindow))
	mustNil(t, err)
	if n != capLimit {
		t.Fatalf("counted %d once the first write left the window, want %d", n, capLimit)
	}
	_, err = countWrite(l, t.Context(), "item", t0.Add(capWindow+time.Second))
	mustIs(t, err, ledger.ErrLoop)
	n, err = countWrite(l, t.Context(), "item", t0.Add(3*capWindow))
	mustNil(t, err)
	if n != 1 {
		t.Fatalf("counted %d after hours of quiet, want 1", n)
	}
})

var _ = add("ForgetWritesStartsTheCountAgain", func(t *testing.T, l ledger.Ledger) {
	for range capLimit {
		_, err := countWrite(l, t.Context(), "item", t0)
		mustNil(t, err)
	}
	mustNil(t, l.ForgetWrites(t.Context(), "acme", "ops", "item"))
	n, err := countWrite(l, t.Context(), "item", t0)
	mustNil(t, err)
	if n != 1 {
		t.Fatalf("counted %d after forgetting, want 1", n)
	}
})

var _ = add("ConcurrentCountWritesNeverPassTheCap", func(t *testing.T, l ledger.Ledger) {
	const goroutines, each = 8, 6
	var (
		wg            sync.WaitGroup
		mu            sync.Mutex
		counted, loop int
		seen          = map[int]bool{}
	)
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				n, err := countWrite(l, t.Context(), "hot", t0.Add(time.Duration(g*each+i)*time.Millisecond))
				mu.Lock()
				switch {
				case err == nil:
					counted++
					if seen[n] {
						t.Errorf("count %d answered twice", n)
					}
					seen[n] = true
				case errors.Is(err, ledger.ErrLoop):
					loop++
				default:
					t.Errorf("CountWrite: %v", err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if counted != capLimit || loop != goroutines*each-capLimit {
		t.Fatalf("%d counted and %d refused, want %d and %d", counted, loop, capLimit, goroutines*each-capLimit)
	}
})

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
		string(a.Item) == string(b.Item) && a.UpdatedAt.Equal(b.UpdatedAt) && a.CommentsUntil.Equal(b.CommentsUntil)
}

var _ = add("SnapshotIsSavedAndRead", func(t *testing.T, l ledger.Ledger) {
	want := snap("ops", "item-1", 1)
	mustNil(t, l.SaveSnapshots(t.Context(), []ledger.SnapshotRow{want, snap("ops", "item-2", 2)}))
	got, err := l.Snapshot(t.Context(), "acme", "ops", "item-1")
	mustNil(t, err)
	if !sameSnapshot(got, want) {
		t.Fatalf("snapshot %+v, want %+v", got, want)
	}
	_, err = l.Snapshot(t.Context(), "acme", "ops", "item-3")
	mustIs(t, err, ledger.ErrNotFound)
	_, err = l.Snapshot(t.Context(), "globex", "ops", "item-1")
	mustIs(t, err, ledger.ErrNotFound)
	mustNil(t, l.SaveSnapshots(t.Context(), nil))
})

var _ = add("SnapshotIsReplaced", func(t *testing.T, l ledger.Ledger) {
	mustNil(t, l.SaveSnapshots(t.Context(), []ledger.SnapshotRow{snap("ops", "item-1", 1)}))
	want := snap("ops", "item-1", 7)
	want.CommentsUntil = time.Time{}
	mustNil(t, l.SaveSnapshots(t.Context(), []ledger.SnapshotRow{want}))
	got, err := l.Snapshot(t.Context(), "acme", "ops", "item-1")
	mustNil(t, err)
	if !sameSnapshot(got, want) || !got.CommentsUntil.IsZero() {
		t.Fatalf("snapshot %+v, want %+v", got, want)
	}
})

var _ = add("SnapshotIsDeleted", func(t *testing.T, l ledger.Ledger) {
	mustNil(t, l.SaveSnapshots(t.Context(), []ledger.SnapshotRow{snap("ops", "item-1", 1), snap("ops", "item-2", 2)}))
	mustNil(t, l.DeleteSnapshot(t.Context(), "acme", "ops", "item-1"))
	_, err := l.Snapshot(t.Context(), "acme", "ops", "item-1")
	mustIs(t, err, ledger.ErrNotFound)
	_, err = l.Snapshot(t.Context(), "acme", "ops", "item-2")
	mustNil(t, err)
	mustNil(t, l.DeleteSnapshot(t.Context(), "acme", "ops", "item-1"))
})

func snapshotIDs(t *testing.T, l ledger.Ledger, ws string, stopAfter int) []string {
	t.Helper()
	var ids []string
	err := l.SnapshotIDs(t.Context(), "acme", ws, func(id string) bool {
		ids = append(ids, id)
		return stopAfter == 0 || len(ids) < stopAfter
	})
	mustNil(t, err)
	return ids
}

var _ = add("SnapshotIDsListsAWorkspaceInByteOrder", func(t *testing.T, l ledger.Ledger) {
	rows := []ledger.SnapshotRow{snap("ops", "b", 1), snap("ops", "a", 2), snap("ops", "B", 3), snap("ops", "é", 4), snap("ops", "a1", 5), snap("other", "c", 6)}
	mustNil(t, l.SaveSnapshots(t.Context(), rows))
	if got, want := strings.Join(snapshotIDs(t, l, "ops", 0), ","), "B,a,a1,b,é"; got != want {
		t.Fatalf("ids %s, want %s", got, want)
	}
	if got := snapshotIDs(t, l, "ops", 2); len(got) != 2 {
		t.Fatalf("walk went on after fn said stop: %v", got)
	}
	if got := snapshotIDs(t, l, "empty", 0); len(got) != 0 {
		t.Fatalf("empty workspace listed %v", got)
	}
})

var _ = add("SnapshotIDsWalksALargeWorkspaceAndLetsFnCallTheLedger", func(t *testing.T, l ledger.Ledger) {
	const n = 1234
	rows := make([]ledger.SnapshotRow, n)
	for i := range rows {
		rows[i] = snap("ops", fmt.Sprintf("item-%05d", i), i)
	}
	mustNil(t, l.SaveSnapshots(t.Context(), rows))
	count := 0
	err := l.SnapshotIDs(t.Context(), "acme", "ops", func(id string) bool {
		if want := fmt.Sprintf("item-%05d", count); id != want {
			t.Fatalf("id %s at %d, want %s", id, count, want)
		}
		count++
		if count%400 == 0 {
			// The follower deletes removed items while it walks.
			if err := l.DeleteSnapshot(t.Context(), "acme", "ops", id); err != nil {
				t.Fatal(err)
			}
		}
		return true
	})
	mustNil(t, err)
	if count != n {
		t.Fatalf("walked %d ids, want %d", count, n)
	}
})

// Leases.

func follower(kind ledger.FollowerKind) ledger.Follower {
	return ledger.Follower{Kind: kind, Tenant: "acme", Workspace: "ops", Name: "plane"}
}

func take(l ledger.Ledger, ctx context.Context, f ledger.Follower, holder string, now time.Time) (ledger.Lease, error) {
	return l.TakeLease(ctx, ledger.LeaseParams{Follower: f, Holder: holder, Now: now, TTL: leaseTTL})
}

func renew(l ledger.Ledger, ctx context.Context, lease ledger.Lease, now time.Time) (ledger.Lease, error) {
	return l.RenewLease(ctx, ledger.LeaseParams{Follower: lease.Follower, Holder: lease.Holder, Nonce: lease.Nonce, Now: now, TTL: leaseTTL})
}

var _ = add("LeaseIsTakenWhenNobodyHoldsIt", func(t *testing.T, l ledger.Ledger) {
	for _, kind := range []ledger.FollowerKind{ledger.TrackerFollower, ledger.LogFollower} {
		lease, err := take(l, t.Context(), follower(kind), "replica-1", t0)
		mustNil(t, err)
		if lease.Holder != "replica-1" || lease.Nonce == "" || !lease.Expires.Equal(t0.Add(leaseTTL)) || lease.Follower != follower(kind) {
			t.Fatalf("lease %+v", lease)
		}
	}
})

var _ = add("HeldLeaseIsNotTaken", func(t *testing.T, l ledger.Ledger) {
	f := follower(ledger.TrackerFollower)
	_, err := take(l, t.Context(), f, "replica-1", t0)
	mustNil(t, err)
	_, err = take(l, t.Context(), f, "replica-2", t0.Add(leaseTTL-time.Millisecond))
	mustIs(t, err, ledger.ErrLeaseHeld)
	_, err = take(l, t.Context(), f, "replica-1", t0.Add(time.Second))
	mustIs(t, err, ledger.ErrLeaseHeld)
})

var _ = add("LeaseIsRenewedByItsHolderOnly", func(t *testing.T, l ledger.Ledger) {
	f := follower(ledger.LogFollower)
	lease, err := take(l, t.Context(), f, "replica-1", t0)
	mustNil(t, err)
	renewed, err := renew(l, t.Context(), lease, t0.Add(10*time.Second))
	mustNil(t, err)
	if renewed.Holder != "replica-1" || renewed.Nonce == lease.Nonce || !renewed.Expires.Equal(t0.Add(10*time.Second+leaseTTL)) {
		t.Fatalf("renewed %+v from %+v", renewed, lease)
	}
	// The old nonce no longer holds: every change writes a new one.
	_, err = renew(l, t.Context(), lease, t0.Add(11*time.Second))
	mustIs(t, err, ledger.ErrNonce)
	forged := renewed
	forged.Nonce, forged.Holder = "forged", "replica-2"
	_, err = renew(l, t.Context(), forged, t0.Add(11*time.Second))
	mustIs(t, err, ledger.ErrNonce)
	// Held until the renewed expiry, not the first.
	_, err = take(l, t.Context(), f, "replica-2", t0.Add(leaseTTL+time.Second))
	mustIs(t, err, ledger.ErrLeaseHeld)
})

var _ = add("LeaseLapsesAfterItsTTLAndIsTakenByAnother", func(t *testing.T, l ledger.Ledger) {
	f := follower(ledger.TrackerFollower)
	first, err := take(l, t.Context(), f, "replica-1", t0)
	mustNil(t, err)
	second, err := take(l, t.Context(), f, "replica-2", t0.Add(leaseTTL))
	mustNil(t, err)
	if second.Holder != "replica-2" || second.Nonce == first.Nonce {
		t.Fatalf("lease %+v after lapse", second)
	}
	_, err = renew(l, t.Context(), first, t0.Add(leaseTTL+time.Second))
	mustIs(t, err, ledger.ErrNonce)
	mustIs(t, l.ReleaseLease(t.Context(), f, first.Nonce), ledger.ErrNonce)
	_, err = renew(l, t.Context(), second, t0.Add(leaseTTL+time.Second))
	mustNil(t, err)
})

var _ = add("LapsedLeaseNobodyTookIsRenewed", func(t *testing.T, l ledger.Ledger) {
	lease, err := take(l, t.Context(), follower(ledger.LogFollower), "replica-1", t0)
	mustNil(t, err)
	renewed, err := renew(l, t.Context(), lease, t0.Add(5*leaseTTL))
	mustNil(t, err)
	if !renewed.Expires.Equal(t0.Add(6 * leaseTTL)) {
		t.Fatalf("renewed %+v", renewed)
	}
})

var _ = add("ReleasedLeaseIsTakenAtOnce", func(t *testing.T, l ledger.Ledger) {
	f := follower(ledger.TrackerFollower)
	lease, err := take(l, t.Context(), f, "replica-1", t0)
	mustNil(t, err)
	mustIs(t, l.ReleaseLease(t.Context(), f, "forged"), ledger.ErrNonce)
	mustNil(t, l.ReleaseLease(t.Context(), f, lease.Nonce))
	_, err = renew(l, t.Context(), lease, t0.Add(time.Second))
	mustIs(t, err, ledger.ErrNonce)
	mustIs(t, l.ReleaseLease(t.Context(), f, lease.Nonce), ledger.ErrNonce)
	_, err = take(l, t.Context(), f, "replica-2", t0.Add(time.Second))
	mustNil(t, err)
})

var _ = add("ReleasingALeaseKeepsTheCursor", func(t *testing.T, l ledger.Ledger) {
	f := follower(ledger.LogFollower)
	lease, err := take(l, t.Context(), f, "replica-1", t0)
	mustNil(t, err)
	mustNil(t, l.SaveCursor(t.Context(), f, ledger.Cursor{Seq: 42}))
	mustNil(t, l.ReleaseLease(t.Context(), f, lease.Nonce))
	c, err := l.Cursor(t.Context(), f)
	mustNil(t, err)
	if c.Seq != 42 {
		t.Fatalf("cursor %+v after release", c)
	}
})

// Cursors.

var _ = add("CursorOfAFollowerNeverSavedIsZero", func(t *testing.T, l ledger.Ledger) {
	c, err := l.Cursor(t.Context(), follower(ledger.TrackerFollower))
	mustNil(t, err)
	if c != (ledger.Cursor{}) {
		t.Fatalf("cursor %+v, want zero", c)
	}
})

func sameCursor(a, b ledger.Cursor) bool {
	return a.UpdatedAt.Equal(b.UpdatedAt) && a.ItemID == b.ItemID && a.Seq == b.Seq && a.Seeded == b.Seeded &&
		a.SweptAt.Equal(b.SweptAt) && a.PolledAt.Equal(b.PolledAt)
}

var _ = add("PolledAtOnlyMovesForwardAndLeavesThePositionAlone", func(t *testing.T, l ledger.Ledger) {
	f := follower(ledger.TrackerFollower)
	mustNil(t, l.SaveCursor(t.Context(), f, ledger.Cursor{UpdatedAt: t0, ItemID: "b", Seeded: true}))
	for _, at := range []time.Time{t0.Add(time.Minute), t0, t0.Add(2 * time.Minute), {}} {
		mustNil(t, l.SaveCursor(t.Context(), f, ledger.Cursor{PolledAt: at}))
	}
	got, err := l.Cursor(t.Context(), f)
	mustNil(t, err)
	if want := (ledger.Cursor{UpdatedAt: t0, ItemID: "b", Seeded: true, PolledAt: t0.Add(2 * time.Minute)}); !sameCursor(got, want) {
		t.Fatalf("cursor %+v, want %+v", got, want)
	}
})

var _ = add("LeaseReadsItsHolderAndExpiryButNeverItsNonce", func(t *testing.T, l ledger.Ledger) {
	f := follower(ledger.TrackerFollower)
	none, err := l.Lease(t.Context(), f)
	mustNil(t, err)
	if none.Holder != "" || !none.Expires.IsZero() || none.Follower != f {
		t.Fatalf("a lease never taken reads %+v", none)
	}
	taken, err := take(l, t.Context(), f, "replica-1", t0)
	mustNil(t, err)
	read, err := l.Lease(t.Context(), f)
	mustNil(t, err)
	if read.Holder != "replica-1" || !read.Expires.Equal(t0.Add(leaseTTL)) || read.Nonce != "" {
		t.Fatalf("lease reads %+v, want replica-1 until %v and no nonce", read, t0.Add(leaseTTL))
	}
	mustNil(t, l.ReleaseLease(t.Context(), f, taken.Nonce))
	read, err = l.Lease(t.Context(), f)
	mustNil(t, err)
	if read.Holder != "" {
		t.Fatalf("a released lease reads %+v", read)
	}
	_, err = l.Lease(t.Context(), ledger.Follower{Kind: "bogus", Tenant: "acme", Workspace: "ops", Name: "x"})
	mustIs(t, err, ledger.ErrInvalid)
})

var _ = add("CursorOnlyMovesForward", func(t *testing.T, l ledger.Ledger) {
	f := follower(ledger.TrackerFollower)
	steps := []struct {
		save, want ledger.Cursor
	}{
		{ledger.Cursor{UpdatedAt: t0, ItemID: "b", Seeded: true, SweptAt: t0}, ledger.Cursor{UpdatedAt: t0, ItemID: "b", Seeded: true, SweptAt: t0}},
		{ledger.Cursor{UpdatedAt: t0, ItemID: "a"}, ledger.Cursor{UpdatedAt: t0, ItemID: "b", Seeded: true, SweptAt: t0}},
		{ledger.Cursor{UpdatedAt: t0.Add(-time.Second), ItemID: "z"}, ledger.Cursor{UpdatedAt: t0, ItemID: "b", Seeded: true, SweptAt: t0}},
		{ledger.Cursor{UpdatedAt: t0, ItemID: "c"}, ledger.Cursor{UpdatedAt: t0, ItemID: "c", Seeded: true, SweptAt: t0}},
		{ledger.Cursor{UpdatedAt: t0.Add(time.Second), ItemID: "a", SweptAt: t0.Add(time.Hour)}, ledger.Cursor{UpdatedAt: t0.Add(time.Second), ItemID: "a", Seeded: true, SweptAt: t0.Add(time.Hour)}},
		{ledger.Cursor{UpdatedAt: t0.Add(time.Second), ItemID: "a", SweptAt: t0}, ledger.Cursor{UpdatedAt: t0.Add(time.Second), ItemID: "a", Seeded: true, SweptAt: t0.Add(time.Hour)}},
	}
	for i, s := range steps {
		mustNil(t, l.SaveCursor(t.Context(), f, s.save))
		got, err := l.Cursor(t.Context(), f)
		mustNil(t, err)
		if !sameCursor(got, s.want) {
			t.Fatalf("step %d: cursor %+v, want %+v", i, got, s.want)
		}
	}
	lf := follower(ledger.LogFollower)
	for _, seq := range []int64{5, 3, 9, 0} {
		mustNil(t, l.SaveCursor(t.Context(), lf, ledger.Cursor{Seq: seq}))
	}
	got, err := l.Cursor(t.Context(), lf)
	mustNil(t, err)
	if got.Seq != 9 {
		t.Fatalf("log cursor %d, want 9", got.Seq)
	}
})

var _ = add("CursorOrdersDecimalItemIDsByValue", func(t *testing.T, l ledger.Ledger) {
	// Two Vikunja tasks changed in the same second: 100 comes after 99, as
	// tracker.Cursor.Before orders them, and "99" never moves it back.
	f := follower(ledger.TrackerFollower)
	for i, s := range []struct{ save, want string }{
		{"9", "9"}, {"10", "10"}, {"99", "99"}, {"100", "100"}, {"99", "100"}, {"0101", "0101"},
	} {
		mustNil(t, l.SaveCursor(t.Context(), f, ledger.Cursor{UpdatedAt: t0, ItemID: s.save}))
		got, err := l.Cursor(t.Context(), f)
		mustNil(t, err)
		if got.ItemID != s.want {
			t.Fatalf("step %d: saved %q, cursor at %q, want %q", i, s.save, got.ItemID, s.want)
		}
	}
})

var _ = add("TrackerAndLogFollowersOfOneNameAreApart", func(t *testing.T, l ledger.Ledger) {
	_, err := take(l, t.Context(), follower(ledger.TrackerFollower), "replica-1", t0)
	mustNil(t, err)
	_, err = take(l, t.Context(), follower(ledger.LogFollower), "replica-2", t0)
	mustNil(t, err)
	mustNil(t, l.SaveCursor(t.Context(), follower(ledger.LogFollower), ledger.Cursor{Seq: 3}))
	c, err := l.Cursor(t.Context(), follower(ledger.TrackerFollower))
	mustNil(t, err)
	if c.Seq != 0 {
		t.Fatalf("tracker follower's cursor %+v took the log follower's", c)
	}
})

// Dead letters.

func deadLetter(kind ledger.FollowerKind, id string, at time.Time) ledger.DeadLetter {
	return ledger.DeadLetter{Follower: follower(kind), ID: id, Seq: 7, Event: []byte(`{"type":"tracker:item_changed"}`), Reason: "projection: boom", At: at}
}

var _ = add("DeadLetterIsKeptOncePerID", func(t *testing.T, l ledger.Ledger) {
	added, err := l.DeadLetter(t.Context(), deadLetter(ledger.TrackerFollower, "trk_0123456789abcdef", t0))
	mustNil(t, err)
	if !added {
		t.Fatal("first dead letter not added")
	}
	again := deadLetter(ledger.TrackerFollower, "trk_0123456789abcdef", t0.Add(time.Minute))
	again.Reason = "second"
	added, err = l.DeadLetter(t.Context(), again)
	mustNil(t, err)
	if added {
		t.Fatal("second dead letter of one id added")
	}
	list, err := l.DeadLetters(t.Context(), follower(ledger.TrackerFollower))
	mustNil(t, err)
	if len(list) != 1 || list[0].Reason != "projection: boom" || !list[0].At.Equal(t0) || list[0].Seq != 7 ||
		string(list[0].Event) != `{"type":"tracker:item_changed"}` || list[0].Follower != follower(ledger.TrackerFollower) {
		t.Fatalf("dead letters %+v", list)
	}
	// The log follower of the same name keeps its own.
	added, err = l.DeadLetter(t.Context(), deadLetter(ledger.LogFollower, "trk_0123456789abcdef", t0))
	mustNil(t, err)
	if !added {
		t.Fatal("the log follower's dead letter was taken for the tracker follower's")
	}
})

var _ = add("DeadLettersAreListedOldestFirst", func(t *testing.T, l ledger.Ledger) {
	for i, at := range []time.Duration{3, 1, 2, 1} {
		_, err := l.DeadLetter(t.Context(), deadLetter(ledger.LogFollower, fmt.Sprint(i+1), t0.Add(at*time.Second)))
		mustNil(t, err)
	}
	list, err := l.DeadLetters(t.Context(), follower(ledger.LogFollower))
	mustNil(t, err)
	var ids []string
	for _, d := range list {
		ids = append(ids, d.ID)
	}
	if got := strings.Join(ids, ","); got != "2,4,3,1" {
		t.Fatalf("dead letters in order %s, want 2,4,3,1", got)
	}
	other, err := l.DeadLetters(t.Context(), ledger.Follower{Kind: ledger.LogFollower, Tenant: "globex", Workspace: "ops", Name: "plane"})
	mustNil(t, err)
	if len(other) != 0 {
		t.Fatalf("another tenant's follower lists %+v", other)
	}
})

var _ = add("FollowedListsLogFollowersAcrossTenants", func(t *testing.T, l ledger.Ledger) {
	a := ledger.Follower{Kind: ledger.LogFollower, Tenant: "acme", Workspace: "ops", Name: "hook-1"}
	b := ledger.Follower{Kind: ledger.LogFollower, Tenant: "globex", Workspace: "eng", Name: "hook-2"}
	_, err := take(l, t.Context(), b, "replica-1", t0)
	mustNil(t, err)
	mustNil(t, l.SaveCursor(t.Context(), a, ledger.Cursor{Seq: 1}))
	_, err = take(l, t.Context(), follower(ledger.TrackerFollower), "replica-1", t0)
	mustNil(t, err)
	got, err := l.Followed(t.Context())
	mustNil(t, err)
	if len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("Followed %+v, want %+v and %+v", got, a, b)
	}
})

// Bad input and faults.

var _ = add("QuotesUnicodeAndLargeValuesRoundTrip", func(t *testing.T, l ledger.Ledger) {
	big := strings.Repeat("ü'\"\\%_", 10*1024/8)
	long := `key with 'quotes' and "doubles" \ 日本語 ` + strings.Repeat("ü'\"", 230)
	k := ledger.Key{Tenant: `t'"; drop table x; --`, Workspace: "wörk spáce 🚀", Kind: ledger.KindItem, Key: long}
	c, o := claim(t, l, k, `corr'"`, t0)
	mustOutcome(t, o, ledger.Fresh)
	r := tracker.ItemRef{ID: `id'"日本`, Number: 1 << 40, Name: "OPS-'1'", Link: "https://x.example/?q='a'&b=\"c\"", Key: k.Key}
	record(t, l, c, r, t0)
	values := map[string]string{`field "q"`: big, "title": `"日本語 'x'"`}
	_, err := l.SetValues(t.Context(), k, values)
	mustNil(t, err)
	got := lookup(t, l, k)
	if got.Key != k || got.Ref != r || got.Correlation != `corr'"` || !maps.Equal(got.Values, values) {
		t.Fatalf("row did not round-trip: key %v ref %v corr %q", got.Key == k, got.Ref == r, got.Correlation)
	}
	item, err := l.LookupItem(t.Context(), k.Tenant, k.Workspace, r.ID)
	mustNil(t, err)
	if item.Key != k {
		t.Fatal("LookupItem did not find the unicode item")
	}
	s := ledger.SnapshotRow{Tenant: k.Tenant, Workspace: k.Workspace, ItemID: `it'em "1" ü`, Item: []byte(big + "\x00\xff binary"), UpdatedAt: t0}
	mustNil(t, l.SaveSnapshots(t.Context(), []ledger.SnapshotRow{s}))
	gs, err := l.Snapshot(t.Context(), s.Tenant, s.Workspace, s.ItemID)
	mustNil(t, err)
	if !sameSnapshot(gs, s) {
		t.Fatal("snapshot did not round-trip")
	}
	f := ledger.Follower{Kind: ledger.LogFollower, Tenant: k.Tenant, Workspace: k.Workspace, Name: `hook "'ü'"`}
	_, err = l.DeadLetter(t.Context(), ledger.DeadLetter{Follower: f, ID: `id'"`, Event: []byte(big), Reason: big, At: t0})
	mustNil(t, err)
	dl, err := l.DeadLetters(t.Context(), f)
	mustNil(t, err)
	if len(dl) != 1 || dl[0].Reason != big || string(dl[0].Event) != big || dl[0].ID != `id'"` {
		t.Fatal("dead letter did not round-trip")
	}
	mustNil(t, l.SaveCursor(t.Context(), f, ledger.Cursor{ItemID: big, UpdatedAt: t0}))
	cur, err := l.Cursor(t.Context(), f)
	mustNil(t, err)
	if cur.ItemID != big {
		t.Fatal("cursor did not round-trip")
	}
})

var _ = add("KeysAndNamesTooLongForEveryStoreAreRefused", func(t *testing.T, l ledger.Ledger) {
	k := key(strings.Repeat("k", ledger.MaxKey+1))
	_, _, err := l.Claim(t.Context(), ledger.ClaimParams{Key: k, Now: t0, RetakeAfter: retakeAfter})
	mustIs(t, err, ledger.ErrInvalid)
	k = key(strings.Repeat("k", ledger.MaxKey))
	_, o := claim(t, l, k, "", t0)
	mustOutcome(t, o, ledger.Fresh)
	f := follower(ledger.LogFollower)
	f.Workspace = strings.Repeat("w", ledger.MaxName+1)
	_, err = l.TakeLease(t.Context(), ledger.LeaseParams{Follower: f, Holder: "h", Now: t0, TTL: leaseTTL})
	mustIs(t, err, ledger.ErrInvalid)
	_, err = l.Snapshot(t.Context(), "acme", "ops", strings.Repeat("i", ledger.MaxKey+1))
	mustIs(t, err, ledger.ErrInvalid)
})

var _ = add("NULBytesAreRefusedAsInvalid", func(t *testing.T, l ledger.Ledger) {
	ctx := t.Context()
	nul := "a\x00b"
	bad := key("k")
	bad.Key = nul
	good, _ := claim(t, l, key("good"), "", t0)
	f := follower(ledger.LogFollower)
	badF := f
	badF.Name = nul
	calls := map[string]func() error{
		"Claim key": func() error {
			_, _, err := l.Claim(ctx, ledger.ClaimParams{Key: bad, Now: t0, RetakeAfter: retakeAfter})
			return err
		},
		"Claim correlation": func() error {
			_, _, err := l.Claim(ctx, ledger.ClaimParams{Key: key("x"), Correlation: nul, Now: t0, RetakeAfter: retakeAfter})
			return err
		},
		"Claim tenant": func() error {
			k := key("x")
			k.Tenant = nul
			_, _, err := l.Claim(ctx, ledger.ClaimParams{Key: k, Now: t0, RetakeAfter: retakeAfter})
			return err
		},
		"Claim invalid UTF-8": func() error {
			k := key("\xff\xfe")
			_, _, err := l.Claim(ctx, ledger.ClaimParams{Key: k, Now: t0, RetakeAfter: retakeAfter})
			return err
		},
		"Record ref": func() error {
			_, err := l.Record(ctx, ledger.RecordParams{Key: good.Key, Nonce: good.Nonce, Ref: tracker.ItemRef{ID: nul}, Now: t0})
			return err
		},
		"Lookup":     func() error { _, err := l.Lookup(ctx, bad); return err },
		"LookupItem": func() error { _, err := l.LookupItem(ctx, "acme", "ops", nul); return err },
		"SetValues field": func() error {
			_, err := l.SetValues(ctx, good.Key, map[string]string{nul: "1"})
			return err
		},
		"SetValues value": func() error {
			_, err := l.SetValues(ctx, good.Key, map[string]string{"title": nul})
			return err
		},
		"RestoreValues": func() error { return l.RestoreValues(ctx, good.Key, map[string]string{nul: `"x"`}) },
		"ConsumeValues": func() error { return l.ConsumeValues(ctx, good.Key, map[string]string{nul: `"x"`}) },
		"MarkDeleted":   func() error { return l.MarkDeleted(ctx, bad) },
		"CountWrite": func() error {
			_, err := l.CountWrite(ctx, ledger.WriteParams{Tenant: "acme", Workspace: "ops", ItemID: nul, Now: t0, Window: capWindow, Limit: capLimit})
			return err
		},
		"SaveSnapshots": func() error {
			return l.SaveSnapshots(ctx, []ledger.SnapshotRow{snap("ops", "fine", 1), snap("ops", nul, 2)})
		},
		"Snapshot": func() error { _, err := l.Snapshot(ctx, "acme", nul, "x"); return err },
		"TakeLease": func() error {
			_, err := l.TakeLease(ctx, ledger.LeaseParams{Follower: f, Holder: nul, Now: t0, TTL: leaseTTL})
			return err
		},
		"SaveCursor": func() error { return l.SaveCursor(ctx, f, ledger.Cursor{ItemID: nul}) },
		"Cursor":     func() error { _, err := l.Cursor(ctx, badF); return err },
		"DeadLetter": func() error {
			_, err := l.DeadLetter(ctx, ledger.DeadLetter{Follower: f, ID: "1", Reason: nul, At: t0})
			return err
		},
		"Claim empty tenant": func() error {
			k := key("x")
			k.Tenant = ""
			_, _, err := l.Claim(ctx, ledger.ClaimParams{Key: k, Now: t0, RetakeAfter: retakeAfter})
			return err
		},
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("%s: error %v, want ErrInvalid", name, err)
		}
	}
	if _, err := l.Snapshot(ctx, "acme", "ops", "fine"); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("a refused SaveSnapshots kept part of its rows: %v", err)
	}
	if got := lookup(t, l, key("good")); got.Recorded || len(got.Values) != 0 {
		t.Errorf("a refused call changed the row: %+v", got)
	}
})

var _ = add("CancelledContextFailsAndChangesNothing", func(t *testing.T, l ledger.Ledger) {
	good, _ := claim(t, l, key("held"), "", t0)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	f := follower(ledger.LogFollower)
	calls := map[string]func() error{
		"Claim": func() error {
			_, _, err := l.Claim(ctx, ledger.ClaimParams{Key: key("k"), Now: t0, RetakeAfter: retakeAfter})
			return err
		},
		"Record": func() error {
			_, err := l.Record(ctx, ledger.RecordParams{Key: good.Key, Nonce: good.Nonce, Ref: ref("1"), Now: t0})
			return err
		},
		"Release":     func() error { return l.Release(ctx, good.Key, good.Nonce) },
		"MarkDeleted": func() error { return l.MarkDeleted(ctx, good.Key) },
		"Lookup":      func() error { _, err := l.Lookup(ctx, good.Key); return err },
		"SetValues": func() error {
			_, err := l.SetValues(ctx, good.Key, map[string]string{"title": "1"})
			return err
		},
		"CountWrite": func() error { _, err := countWrite(l, ctx, "item", t0); return err },
		"SaveSnapshots": func() error {
			return l.SaveSnapshots(ctx, []ledger.SnapshotRow{snap("ops", "x", 1)})
		},
		"SnapshotIDs": func() error {
			return l.SnapshotIDs(ctx, "acme", "ops", func(string) bool { return true })
		},
		"TakeLease":  func() error { _, err := take(l, ctx, f, "replica-1", t0); return err },
		"Lease":      func() error { _, err := l.Lease(ctx, f); return err },
		"SaveCursor": func() error { return l.SaveCursor(ctx, f, ledger.Cursor{Seq: 1}) },
		"DeadLetter": func() error {
			_, err := l.DeadLetter(ctx, deadLetter(ledger.LogFollower, "1", t0))
			return err
		},
		"Followed": func() error { _, err := l.Followed(ctx); return err },
		"Ping":     func() error { return l.Ping(ctx) },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: error %v, want one wrapping context.Canceled", name, err)
		}
	}
	got := lookup(t, l, key("held"))
	if got.Recorded || got.Deleted || got.Nonce != good.Nonce || len(got.Values) != 0 {
		t.Fatalf("a cancelled call changed the row: %+v", got)
	}
	_, err := l.Lookup(t.Context(), key("k"))
	mustIs(t, err, ledger.ErrNotFound)
	if n, err := countWrite(l, t.Context(), "item", t0); err != nil || n != 1 {
		t.Fatalf("a cancelled CountWrite counted: %d, %v", n, err)
	}
	followed, err := l.Followed(t.Context())
	mustNil(t, err)
	if len(followed) != 0 {
		t.Fatalf("a cancelled call made a follower row: %+v", followed)
	}
})

var _ = add("PingAnswers", func(t *testing.T, l ledger.Ledger) {
	mustNil(t, l.Ping(t.Context()))
})
