package ledgertest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
)

// claimCases are the rules of claims and records: a key is claimed once,
// retaken only when its claim lapsed with nothing recorded, and a record
// or a deletion is kept for the row's life (ADR-0033).
var claimCases = []testCase{
	{"FreshKeyIsClaimedWithANonce", freshClaim},
	{"HeldClaimIsNotTakenBeforeItLapses", heldClaim},
	{"ClaimIsRetakenAfterItLapsesWithNothingRecorded", retakenClaim},
	{"FirstClaimersCorrelationIsKept", firstCorrelation},
	{"RecordedKeyAnswersRecordedAndIsNeverRetaken", recordedKey},
	{"FirstRecordIsKept", firstRecordKept},
	{"RetakenClaimerCannotRecordOverTheNewOne", staleRecord},
	{"ReleaseFreesTheKeyAtOnce", releaseFrees},
	{"ReleaseNeedsTheNonceHolder", releaseNeedsNonce},
	{"ReleaseOfARecordedClaimChangesNothing", releaseRecorded},
	{"DeletedKeyAnswersDeletedFromThenOn", deletedKey},
	{"MarkDeletedOnAKeyWithoutARowMarksIt", markDeletedWithoutRow},
	{"LookupOfAKeyWithoutARowIsNotFound", lookupWithoutRow},
	{"LookupItemFindsTheKeyThatRecordedTheItem", lookupItem},
	{"ItemsAndCommentsOfOneKeyAreDifferentRows", itemsAndComments},
	{"TenantBsKeyIsAnotherRow", tenantsApart},
	{"ConcurrentClaimsOfOneKeyHaveOneWinner", concurrentClaims},
}

func freshClaim(t *testing.T, l ledger.Ledger) {
	c, o := claim(t, l, key("deploy/1"), "run-1", t0)
	mustOutcome(t, o, ledger.Fresh)
	if c.Nonce == "" || !c.ClaimedAt.Equal(t0) || c.Correlation != "run-1" || c.Recorded || c.Deleted || c.Key != key("deploy/1") {
		t.Fatalf("fresh claim %+v", c)
	}
	if got := lookup(t, l, key("deploy/1")); got.Nonce != c.Nonce || !got.ClaimedAt.Equal(t0) {
		t.Fatalf("Lookup %+v, want the claim %+v", got, c)
	}
}

func heldClaim(t *testing.T, l ledger.Ledger) {
	first, _ := claim(t, l, key("k"), "run-1", t0)
	for _, at := range []time.Duration{0, time.Second, retakeAfter} {
		_, o := claim(t, l, key("k"), "run-2", t0.Add(at))
		mustOutcome(t, o, ledger.Held)
	}
	if got := lookup(t, l, key("k")); got.Nonce != first.Nonce {
		t.Fatal("a held claim changed hands")
	}
}

func retakenClaim(t *testing.T, l ledger.Ledger) {
	first, _ := claim(t, l, key("k"), "run-1", t0)
	now := t0.Add(retakeAfter + time.Millisecond)
	c, o := claim(t, l, key("k"), "run-2", now)
	mustOutcome(t, o, ledger.Retaken)
	if c.Nonce == "" || c.Nonce == first.Nonce || !c.ClaimedAt.Equal(now) {
		t.Fatalf("retaken claim %+v; first nonce %q", c, first.Nonce)
	}
	_, o = claim(t, l, key("k"), "run-3", now.Add(time.Second))
	mustOutcome(t, o, ledger.Held)
}

func firstCorrelation(t *testing.T, l ledger.Ledger) {
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
}

func recordedKey(t *testing.T, l ledger.Ledger) {
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
}

func firstRecordKept(t *testing.T, l ledger.Ledger) {
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
}

func staleRecord(t *testing.T, l ledger.Ledger) {
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
}

func releaseFrees(t *testing.T, l ledger.Ledger) {
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
}

func releaseNeedsNonce(t *testing.T, l ledger.Ledger) {
	old, _ := claim(t, l, key("k"), "", t0)
	cur, _ := claim(t, l, key("k"), "", t0.Add(time.Minute))
	mustIs(t, l.Release(t.Context(), old.Key, old.Nonce), ledger.ErrNonce)
	mustIs(t, l.Release(t.Context(), old.Key, "not-a-nonce"), ledger.ErrNonce)
	_, o := claim(t, l, key("k"), "", t0.Add(time.Minute+time.Second))
	mustOutcome(t, o, ledger.Held)
	mustNil(t, l.Release(t.Context(), cur.Key, cur.Nonce))
	mustIs(t, l.Release(t.Context(), cur.Key, cur.Nonce), ledger.ErrNonce)
}

func releaseRecorded(t *testing.T, l ledger.Ledger) {
	c, _ := claim(t, l, key("k"), "", t0)
	record(t, l, c, ref("1"), t0)
	mustNil(t, l.Release(t.Context(), c.Key, c.Nonce))
	_, o := claim(t, l, key("k"), "", t0.Add(time.Second))
	mustOutcome(t, o, ledger.Recorded)
}

func deletedKey(t *testing.T, l ledger.Ledger) {
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
}

func markDeletedWithoutRow(t *testing.T, l ledger.Ledger) {
	mustNil(t, l.MarkDeleted(t.Context(), key("never")))
	_, o := claim(t, l, key("never"), "", t0)
	mustOutcome(t, o, ledger.Deleted)
}

func lookupWithoutRow(t *testing.T, l ledger.Ledger) {
	_, err := l.Lookup(t.Context(), key("nothing"))
	mustIs(t, err, ledger.ErrNotFound)
}

func lookupItem(t *testing.T, l ledger.Ledger) {
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
}

func itemsAndComments(t *testing.T, l ledger.Ledger) {
	item, o := claim(t, l, key("k"), "", t0)
	mustOutcome(t, o, ledger.Fresh)
	record(t, l, item, ref("1"), t0)
	com := key("k")
	com.Kind = ledger.KindComment
	_, o = claim(t, l, com, "", t0)
	mustOutcome(t, o, ledger.Fresh)
}

func tenantsApart(t *testing.T, l ledger.Ledger) {
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
}

func concurrentClaims(t *testing.T, l ledger.Ledger) {
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
}
