package ledger_test

import (
	"errors"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/ledger"
)

func TestPendingValues(t *testing.T) {
	vs := map[string]string{}
	prev := ledger.SetPending(vs, map[string]string{"title": `"A"`})
	if len(prev) != 0 {
		t.Fatalf("previous %v", prev)
	}
	prev = ledger.SetPending(vs, map[string]string{"title": `"B"`})
	if prev["title"] != `"A"` {
		t.Fatalf("previous %v, want A", prev)
	}
	if got := ledger.Pending(vs["title"]); len(got) != 2 || got[0] != `"A"` || got[1] != `"B"` {
		t.Fatalf("pending %v", got)
	}

	t.Run("TwoEditsBetweenPollsAreBothEchoes", func(t *testing.T) {
		if !ledger.IsPending(vs["title"], `"A"`) || !ledger.IsPending(vs["title"], `"B"`) || ledger.IsPending(vs["title"], `"C"`) {
			t.Fatal("IsPending")
		}
	})
	t.Run("ReadingTheFirstKeepsTheSecond", func(t *testing.T) {
		c := clone(vs)
		ledger.ConsumePending(c, map[string]string{"title": `"A"`})
		if got := ledger.Pending(c["title"]); len(got) != 1 || got[0] != `"B"` {
			t.Fatalf("pending %v", got)
		}
	})
	t.Run("ReadingTheSecondDropsTheFirstToo", func(t *testing.T) {
		c := clone(vs)
		ledger.ConsumePending(c, map[string]string{"title": `"B"`})
		if _, ok := c["title"]; ok {
			t.Fatalf("left %q", c["title"])
		}
	})
	t.Run("AValueNotRecordedConsumesNothing", func(t *testing.T) {
		c := clone(vs)
		ledger.ConsumePending(c, map[string]string{"title": `"Z"`})
		if c["title"] != vs["title"] {
			t.Fatal("changed")
		}
	})
	t.Run("ARefusedEditPutsBackTheValueRecordedBeforeIt", func(t *testing.T) {
		c := clone(vs)
		ledger.RestorePending(c, map[string]string{"title": `"B"`, "state": `"done"`})
		if c["title"] != `"A"` {
			t.Fatalf("title %q", c["title"])
		}
		if _, ok := c["state"]; ok {
			t.Fatal("a field never recorded appeared")
		}
	})
	t.Run("AtMostMaxPendingAreKept", func(t *testing.T) {
		c := map[string]string{}
		for i := range ledger.MaxPending + 3 {
			ledger.SetPending(c, map[string]string{"title": string(rune('a' + i))})
		}
		if got := ledger.Pending(c["title"]); len(got) != ledger.MaxPending || got[0] != "d" {
			t.Fatalf("pending %v", got)
		}
	})
	t.Run("SettingTheLastValueAgainKeepsOne", func(t *testing.T) {
		c := clone(vs)
		ledger.SetPending(c, map[string]string{"title": `"B"`})
		if len(ledger.Pending(c["title"])) != 2 {
			t.Fatal("a repeated value was kept twice")
		}
	})
	t.Run("HeldBetweenAnswersTheNewestValueTheTrackerHeldBetweenTwoVersions", func(t *testing.T) {
		c := clone(vs)
		t0 := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
		if _, ok := ledger.HeldBetween(c["title"], t0, t0.Add(time.Hour)); ok {
			t.Fatal("a value no answer landed counted as held")
		}
		ledger.LandPending(c, map[string]string{"title": `"A"`}, t0, t0.Add(10*time.Second))
		ledger.LandPending(c, map[string]string{"title": `"B"`}, t0, t0.Add(20*time.Second))
		if got := ledger.Pending(c["title"]); len(got) != 2 || got[0] != `"A"` || got[1] != `"B"` {
			t.Fatalf("pending %v after landing, want A then B", got)
		}
		for _, tc := range []struct {
			after, before time.Duration
			want          string
			ok            bool
		}{
			{0, 10 * time.Second, "", false},                // A's version is no earlier than the read's
			{0, 11 * time.Second, `"A"`, true},              // A between
			{0, time.Minute, `"B"`, true},                   // both: the newest
			{10 * time.Second, 20 * time.Second, "", false}, // neither strictly between
			{15 * time.Second, time.Minute, `"B"`, true},
			{20 * time.Second, time.Minute, "", false}, // B is the snapshot's version: read already
		} {
			if got, ok := ledger.HeldBetween(c["title"], t0.Add(tc.after), t0.Add(tc.before)); got != tc.want || ok != tc.ok {
				t.Errorf("HeldBetween(%v, %v) = %q, %v; want %q, %v", tc.after, tc.before, got, ok, tc.want, tc.ok)
			}
		}
		// A value landed without a version (an older relayr's mark) is
		// read as landed and tells nothing of when the tracker held it.
		old := map[string]string{"title": `"C"` + "\t" + "1764838800000000000"}
		if !ledger.IsPending(old["title"], `"C"`) {
			t.Fatal("an older mark's value is not read")
		}
		if _, ok := ledger.HeldBetween(old["title"], time.Time{}, t0.Add(time.Hour)); ok {
			t.Fatal("a value landed with no version counted as held")
		}
		ledger.SupersedePending(old, []string{"title"}, t0)
		if _, ok := old["title"]; ok {
			t.Fatal("an older mark's landed value was not superseded")
		}
	})
	if err := ledger.CheckValues(map[string]string{"title": "a\nb"}); !errors.Is(err, ledger.ErrInvalid) {
		t.Fatalf("a newline in a value: %v", err)
	}
}

func clone(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	return out
}
