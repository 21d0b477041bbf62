package budget_test

import (
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/budget"
	"github.com/relayr-go/relayr/core/clock"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func TestBudget(t *testing.T) {
	for _, c := range []struct {
		name      string
		limit     int
		writes    int // spent first
		polls     int // then tried
		wantTaken int
		wantLeft  int
	}{
		{"PollsTakeWhatIsLeftAfterWrites", 40, 35, 10, 5, 0},
		{"WritesPastTheLimitAreNeverHeldBackAndPollsGetNothing", 40, 50, 3, 0, 0},
		{"AnIdleKeyGivesPollsTheWholeMinute", 40, 0, 45, 40, 0},
		{"TheDefaultLimitIsForty", 0, 0, 100, 40, 0},
		{"UnspentRequestsAreLeft", 40, 10, 5, 5, 25},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := budget.New(clock.NewFake(t0), c.limit)
			b.Spend("tenant/plane", c.writes)
			taken := 0
			for range c.polls {
				if b.Take("tenant/plane") {
					taken++
				}
			}
			if taken != c.wantTaken {
				t.Errorf("polls took %d, want %d", taken, c.wantTaken)
			}
			if left := b.Left("tenant/plane"); left != c.wantLeft {
				t.Errorf("left %d, want %d", left, c.wantLeft)
			}
		})
	}
}

func TestBudgetFreesRequestsAsTheMinuteSlides(t *testing.T) {
	clk := clock.NewFake(t0)
	b := budget.New(clk, 40)
	b.Spend("k", 30)
	clk.Advance(30 * time.Second)
	b.Spend("k", 10)
	if b.Take("k") {
		t.Fatal("a full minute gave a poll a request")
	}
	clk.Advance(30 * time.Second)
	if got := b.Left("k"); got != 30 {
		t.Fatalf("after the first spends aged out, left %d, want 30", got)
	}
}

func TestBudgetKeepsKeysApart(t *testing.T) {
	b := budget.New(clock.NewFake(t0), 40)
	b.Spend("a", 40)
	if !b.Take("b") {
		t.Fatal("one tenant's writes held back another's polls")
	}
}
