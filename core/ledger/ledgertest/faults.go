package ledgertest

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
)

// faultCases are the rules for bad input and faults, across the port's
// methods: what a store keeps reads back byte for byte, what no store can
// keep is refused as ErrInvalid, and a cancelled call changes nothing.
var faultCases = []testCase{
	{"QuotesUnicodeAndLargeValuesRoundTrip", roundTrip},
	{"KeysAndNamesTooLongForEveryStoreAreRefused", tooLong},
	{"NULBytesAreRefusedAsInvalid", nulBytes},
	{"CancelledContextFailsAndChangesNothing", cancelled},
	{"PingAnswers", ping},
}

func roundTrip(t *testing.T, l ledger.Ledger) {
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
}

func tooLong(t *testing.T, l ledger.Ledger) {
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
}

func nulBytes(t *testing.T, l ledger.Ledger) {
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
		"Claim correlation over its limit": func() error {
			_, _, err := l.Claim(ctx, ledger.ClaimParams{Key: key("chatty"), Correlation: strings.Repeat("c", ledger.MaxCorrelation+1), Now: t0, RetakeAfter: retakeAfter})
			return err
		},
		"Claim without its time": func() error {
			// A zero Now would leave the claim held for good where the
			// store keeps no time for it (ADR-0033: a lapsed claim is retaken).
			_, _, err := l.Claim(ctx, ledger.ClaimParams{Key: key("untimed"), RetakeAfter: retakeAfter})
			return err
		},
		"CountWrite without its time": func() error {
			_, err := l.CountWrite(ctx, ledger.WriteParams{Tenant: "acme", Workspace: "ops", ItemID: "untimed", Window: capWindow, Limit: capLimit})
			return err
		},
		"UncountWrite": func() error {
			return l.UncountWrite(ctx, ledger.WriteParams{Tenant: "acme", Workspace: "ops", ItemID: nul, Now: t0})
		},
		"UncountWrite without its time": func() error {
			return l.UncountWrite(ctx, ledger.WriteParams{Tenant: "acme", Workspace: "ops", ItemID: "untimed"})
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
}

func cancelled(t *testing.T, l ledger.Ledger) {
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
		"CountWrite":   func() error { _, err := countWrite(l, ctx, "item", t0); return err },
		"UncountWrite": func() error { return uncountWrite(l, ctx, "item", t0) },
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
}

func ping(t *testing.T, l ledger.Ledger) {
	mustNil(t, l.Ping(t.Context()))
}
