package ledgertest

import (
	"context"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/ledger"
)

// followerCases are the rules of the followers' leases and cursors: one
// holder per follower at a time, a cursor that only moves forward, and
// Followed, the one read across tenants (ADR-0015).
var followerCases = []testCase{
	{"LeaseIsTakenWhenNobodyHoldsIt", leaseTaken},
	{"HeldLeaseIsNotTaken", leaseHeld},
	{"LeaseIsRenewedByItsHolderOnly", leaseRenewed},
	{"LeaseLapsesAfterItsTTLAndIsTakenByAnother", leaseLapses},
	{"LapsedLeaseNobodyTookIsRenewed", lapsedLeaseRenewed},
	{"ReleasedLeaseIsTakenAtOnce", leaseReleased},
	{"ReleasingALeaseKeepsTheCursor", releaseKeepsCursor},
	{"LeaseReadsItsHolderAndExpiryButNeverItsNonce", leaseRead},
	{"CursorOfAFollowerNeverSavedIsZero", cursorZero},
	{"PolledAtOnlyMovesForwardAndLeavesThePositionAlone", polledAtForward},
	{"CursorOnlyMovesForward", cursorForward},
	{"CursorOrdersDecimalItemIDsByValue", cursorDecimalIDs},
	{"TrackerAndLogFollowersOfOneNameAreApart", followerKindsApart},
	{"FollowedListsLogFollowersAcrossTenants", followedAcrossTenants},
}

func leaseTaken(t *testing.T, l ledger.Ledger) {
	for _, kind := range []ledger.FollowerKind{ledger.TrackerFollower, ledger.LogFollower} {
		lease, err := take(l, t.Context(), follower(kind), "replica-1", t0)
		mustNil(t, err)
		if lease.Holder != "replica-1" || lease.Nonce == "" || !lease.Expires.Equal(t0.Add(leaseTTL)) || lease.Follower != follower(kind) {
			t.Fatalf("lease %+v", lease)
		}
	}
}

func leaseHeld(t *testing.T, l ledger.Ledger) {
	f := follower(ledger.TrackerFollower)
	_, err := take(l, t.Context(), f, "replica-1", t0)
	mustNil(t, err)
	_, err = take(l, t.Context(), f, "replica-2", t0.Add(leaseTTL-time.Millisecond))
	mustIs(t, err, ledger.ErrLeaseHeld)
	_, err = take(l, t.Context(), f, "replica-1", t0.Add(time.Second))
	mustIs(t, err, ledger.ErrLeaseHeld)
}

func leaseRenewed(t *testing.T, l ledger.Ledger) {
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
}

func leaseLapses(t *testing.T, l ledger.Ledger) {
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
}

func lapsedLeaseRenewed(t *testing.T, l ledger.Ledger) {
	lease, err := take(l, t.Context(), follower(ledger.LogFollower), "replica-1", t0)
	mustNil(t, err)
	renewed, err := renew(l, t.Context(), lease, t0.Add(5*leaseTTL))
	mustNil(t, err)
	if !renewed.Expires.Equal(t0.Add(6 * leaseTTL)) {
		t.Fatalf("renewed %+v", renewed)
	}
}

func leaseReleased(t *testing.T, l ledger.Ledger) {
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
}

func releaseKeepsCursor(t *testing.T, l ledger.Ledger) {
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
}

func leaseRead(t *testing.T, l ledger.Ledger) {
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
}

func cursorZero(t *testing.T, l ledger.Ledger) {
	c, err := l.Cursor(t.Context(), follower(ledger.TrackerFollower))
	mustNil(t, err)
	if c != (ledger.Cursor{}) {
		t.Fatalf("cursor %+v, want zero", c)
	}
}

func polledAtForward(t *testing.T, l ledger.Ledger) {
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
}

func cursorForward(t *testing.T, l ledger.Ledger) {
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
}

func cursorDecimalIDs(t *testing.T, l ledger.Ledger) {
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
}

func followerKindsApart(t *testing.T, l ledger.Ledger) {
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
}

func followedAcrossTenants(t *testing.T, l ledger.Ledger) {
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
}

func renew(l ledger.Ledger, ctx context.Context, lease ledger.Lease, now time.Time) (ledger.Lease, error) {
	return l.RenewLease(ctx, ledger.LeaseParams{Follower: lease.Follower, Holder: lease.Holder, Nonce: lease.Nonce, Now: now, TTL: leaseTTL})
}

func sameCursor(a, b ledger.Cursor) bool {
	return a.UpdatedAt.Equal(b.UpdatedAt) && a.ItemID == b.ItemID && a.Seq == b.Seq && a.Seeded == b.Seeded &&
		a.SweptAt.Equal(b.SweptAt) && a.PolledAt.Equal(b.PolledAt)
}
