package ledgertest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/ledger"
)

// holderCases are the rules of the replicas' heartbeat (ADR-1002): a holder
// is alive until its beat lapses, and what it spent is kept a minute after.
var holderCases = []testCase{
	{"HoldersSeeEachOtherUntilTheirBeatLapses", holdersSeeEachOther},
	{"ABeatReplacesTheHoldersSpending", beatReplacesSpending},
	{"AHolderThatLeavesIsCountedOutAtOnce", holderLeaves},
	{"BadBeatsAreRefused", badBeats},
}

func holdersSeeEachOther(t *testing.T, l ledger.Ledger) {
	beat(t, l, "replica-b", t0, map[string]int{"acme/plane": 4})
	beat(t, l, "replica-c", t0.Add(10*time.Second), nil)
	now := t0.Add(20 * time.Second)
	hs := beat(t, l, "replica-a", now, map[string]int{"acme/plane": 7})
	if got := alive(hs, now); !slices.Equal(got, []string{"replica-a", "replica-b", "replica-c"}) {
		t.Fatalf("live holders %v", got)
	}
	if !hs[0].Expires.Equal(t0.Add(50*time.Second)) || hs[0].Spent["acme/plane"] != 7 {
		t.Fatalf("holder %+v", hs[0])
	}
	// replica-b beat at t0 with 30 s: at t0+30s it is out (a lease lapses
	// at its expiry alike), and kept a minute with what it spent.
	now = t0.Add(30 * time.Second)
	hs = beat(t, l, "replica-a", now, nil)
	if got := alive(hs, now); !slices.Equal(got, []string{"replica-a", "replica-c"}) {
		t.Fatalf("live holders after b's beat lapsed %v", got)
	}
	if got := names(hs); !slices.Equal(got, []string{"replica-a", "replica-b", "replica-c"}) || hs[1].Spent["acme/plane"] != 4 {
		t.Fatalf("holders kept after b's beat lapsed %v (%+v), want b kept with what it spent", got, hs)
	}
	// A minute after it lapsed, it is forgotten.
	now = t0.Add(30*time.Second + ledger.KeepLapsed)
	beat(t, l, "replica-c", now.Add(-time.Second), nil)
	hs = beat(t, l, "replica-a", now, nil)
	if got := names(hs); !slices.Equal(got, []string{"replica-a", "replica-c"}) {
		t.Fatalf("holders a minute after b lapsed %v", got)
	}
	// A holder that beats again after lapsing is back.
	hs = beat(t, l, "replica-b", now.Add(time.Second), nil)
	if got := alive(hs, now.Add(time.Second)); !slices.Equal(got, []string{"replica-a", "replica-b", "replica-c"}) {
		t.Fatalf("live holders after b beat again %v", got)
	}
}

func beatReplacesSpending(t *testing.T, l ledger.Ledger) {
	beat(t, l, "replica-a", t0, map[string]int{"acme/plane": 3, "beta/vikunja": 1})
	hs := beat(t, l, "replica-b", t0.Add(time.Second), nil)
	if len(hs) != 2 || hs[0].Spent["acme/plane"] != 3 || hs[0].Spent["beta/vikunja"] != 1 || len(hs[1].Spent) != 0 {
		t.Fatalf("holders %+v", hs)
	}
	beat(t, l, "replica-a", t0.Add(2*time.Second), map[string]int{"acme/plane": 9})
	hs = beat(t, l, "replica-b", t0.Add(3*time.Second), nil)
	if len(hs[0].Spent) != 1 || hs[0].Spent["acme/plane"] != 9 {
		t.Fatalf("replica-a's spending after its second beat %+v", hs[0].Spent)
	}
}

func holderLeaves(t *testing.T, l ledger.Ledger) {
	beat(t, l, "replica-a", t0, nil)
	beat(t, l, "replica-b", t0, map[string]int{"acme/plane": 5})
	mustNil(t, l.Leave(t.Context(), "replica-b", t0.Add(time.Second)))
	mustNil(t, l.Leave(t.Context(), "replica-b", t0.Add(2*time.Second))) // left already: no change
	mustNil(t, l.Leave(t.Context(), "never-beat", t0))
	now := t0.Add(2 * time.Second)
	hs := beat(t, l, "replica-a", now, nil)
	if got := alive(hs, now); !slices.Equal(got, []string{"replica-a"}) {
		t.Fatalf("live holders after b left %v", got)
	}
	// What it spent is kept a minute from when it left, for a replica
	// that starts to count.
	if len(hs) != 2 || hs[1].Name != "replica-b" || !hs[1].Expires.Equal(t0.Add(time.Second)) || hs[1].Spent["acme/plane"] != 5 {
		t.Fatalf("holders after b left %+v", hs)
	}
	hs = beat(t, l, "replica-a", t0.Add(time.Second+ledger.KeepLapsed), nil)
	if got := names(hs); !slices.Equal(got, []string{"replica-a"}) {
		t.Fatalf("holders a minute after b left %v", got)
	}
}

func badBeats(t *testing.T, l ledger.Ledger) {
	for _, p := range []ledger.BeatParams{
		{Holder: "", Now: t0, TTL: time.Second},
		{Holder: "a\x00b", Now: t0, TTL: time.Second},
		{Holder: "a", Now: t0, TTL: 0},
		{Holder: "a", Now: t0, TTL: time.Second, Spent: map[string]int{"k": -1}},
		{Holder: "a", Now: t0, TTL: time.Second, Spent: map[string]int{"\xff": 1}},
	} {
		_, err := l.Beat(t.Context(), p)
		mustIs(t, err, ledger.ErrInvalid)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := l.Beat(ctx, ledger.BeatParams{Holder: "a", Now: t0, TTL: time.Second}); err == nil {
		t.Fatal("a beat on a cancelled context succeeded")
	}
}

func beat(t *testing.T, l ledger.Ledger, holder string, now time.Time, spent map[string]int) []ledger.Holder {
	t.Helper()
	hs, err := l.Beat(t.Context(), ledger.BeatParams{Holder: holder, Now: now, TTL: 30 * time.Second, Spent: spent})
	if err != nil {
		t.Fatalf("Beat(%s): %v", holder, err)
	}
	return hs
}

func names(hs []ledger.Holder) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.Name
	}
	return out
}

// alive names the holders alive at now.
func alive(hs []ledger.Holder, now time.Time) []string {
	var out []string
	for _, h := range hs {
		if h.Alive(now) {
			out = append(out, h.Name)
		}
	}
	return out
}
