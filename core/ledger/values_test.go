package ledger_test

import (
	"errors"
	"testing"

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
