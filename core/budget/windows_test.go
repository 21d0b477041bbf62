package budget_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/core/budget"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/tracker"
)

// send sends one request of ctx's kind as a tracker driver on trackerhttp
// does: admitted first, then counted as written.
func send(ctx context.Context) error {
	if err := tracker.Admit(ctx); err != nil {
		return err
	}
	tracker.Sent(ctx)
	return nil
}

func heldUnsent(t *testing.T, err error, what string) time.Duration {
	t.Helper()
	var rl *tracker.RateLimitedError
	if !errors.As(err, &rl) || !errors.Is(err, tracker.ErrNotSent) || rl.RetryAfter <= 0 {
		t.Fatalf("%s: %v, want rate-limited, unsent, with a wait", what, err)
	}
	return rl.RetryAfter
}

// TestWritesLeaveTheFloorItsShareOfTheHour: the hour's writes stop where
// they would leave the followers' polls too little of it; the followers'
// reads go on, and the writes go once the window lets old ones go.
func TestWritesLeaveTheFloorItsShareOfTheHour(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := budget.NewWith(clock.System{}, 1000, budget.Options{Windows: map[string][]budget.TrackerWindow{"forge": {{Span: time.Hour, Limit: 300}}}})
		b.Follow("acme/forge", "ops", 30*time.Second) // two polls a minute: 120 of the hour
		w := b.Writing(context.Background(), "acme/forge")
		for i := range 180 {
			if err := send(w); err != nil {
				t.Fatalf("write %d: %v", i, err)
			}
			time.Sleep(time.Second)
		}
		wait := heldUnsent(t, send(w), "the write past the floor's share")
		if wait > time.Hour || wait < 56*time.Minute {
			t.Fatalf("held for %s, want until the first write leaves the hour", wait)
		}
		ctx, done, err := b.Floor(context.Background(), "acme/forge")
		if err != nil {
			t.Fatal(err)
		}
		if err := send(ctx); err != nil {
			t.Fatalf("a poll while writes are held: %v", err)
		}
		done()
		// The poll took a place: two writes must leave the hour.
		time.Sleep(wait + time.Second)
		if err := send(w); err != nil {
			t.Fatalf("once the first writes left the hour: %v", err)
		}
		if s := b.Status(); s[0].Held != 1 {
			t.Fatalf("status %+v, want one request held", s[0])
		}
	})
}

// TestAWindowSpentHoldsTheReadsToo: the tracker would refuse them.
func TestAWindowSpentHoldsTheReadsToo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := budget.NewWith(clock.System{}, 1000, budget.Options{Windows: map[string][]budget.TrackerWindow{"forge": {{Span: time.Hour, Limit: 20}}}})
		for range 20 {
			ctx, done, err := b.Continue(context.Background(), "acme/forge")
			if err != nil {
				t.Fatal(err)
			}
			if err := send(ctx); err != nil {
				t.Fatal(err)
			}
			done()
		}
		ctx, done, _ := b.Continue(context.Background(), "acme/forge")
		defer done()
		heldUnsent(t, send(ctx), "a read past the hour")
	})
}

// TestWritesWeighAsTheTrackerWeighsThem: GitHub's minute of 900 points,
// a write costing five; here a minute of 20.
func TestWritesWeighAsTheTrackerWeighsThem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := budget.NewWith(clock.System{}, 1000, budget.Options{Windows: map[string][]budget.TrackerWindow{"forge": {{Span: time.Minute, Limit: 20, WriteCost: 5}}}})
		w := b.Writing(context.Background(), "acme/forge")
		for i := range 4 {
			if err := send(w); err != nil {
				t.Fatalf("write %d: %v", i, err)
			}
		}
		heldUnsent(t, send(w), "a fifth write of five points")
	})
}

// TestTheTrackersWordIsTheTruth: an answer saying nothing is left holds
// every request until its reset, however little relayr itself sent.
func TestTheTrackersWordIsTheTruth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		b := budget.New(clock.System{}, 40) // GitHub's windows by default
		ctx, done, err := b.Floor(context.Background(), "acme/github")
		if err != nil {
			t.Fatal(err)
		}
		defer done()
		if err := send(ctx); err != nil {
			t.Fatal(err)
		}
		tracker.Report(ctx, 1, start.Add(10*time.Minute))
		time.Sleep(time.Second)
		if err := send(ctx); err != nil {
			t.Fatalf("the one the tracker said was left: %v", err)
		}
		wait := heldUnsent(t, send(ctx), "a read when the tracker's last was spent")
		if wait != 10*time.Minute-time.Second {
			t.Fatalf("held %s, want until the tracker's reset", wait)
		}
		time.Sleep(wait)
		if err := send(ctx); err != nil {
			t.Fatalf("after the reset: %v", err)
		}
		// Plane keeps the minute alone: no window, nothing held.
		p := b.Writing(context.Background(), "acme/plane")
		tracker.Report(p, 0, start.Add(time.Hour))
		if err := send(p); err != nil {
			t.Fatalf("a Plane write: %v", err)
		}
	})
}

// TestTheFloorStretchesWithinTheHour: where the followers' polls alone
// would pass the hour, their interval stretches.
func TestTheFloorStretchesWithinTheHour(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := budget.NewWith(clock.System{}, 1000, budget.Options{Windows: map[string][]budget.TrackerWindow{"forge": {{Span: time.Hour, Limit: 100}}}})
		for _, ws := range []string{"a", "b"} {
			b.Follow("acme/forge", ws, 30*time.Second) // 240 polls an hour
		}
		got := b.Interval("acme/forge", 30*time.Second)
		// Nine tenths of 100 an hour is 1.5 a minute; four are needed.
		if want := 80 * time.Second; got < want-time.Second || got > want+time.Second {
			t.Fatalf("interval %s, want about %s", got, want)
		}
		if b.Interval("acme/other", 30*time.Second) != 30*time.Second {
			t.Fatal("a key of no window stretched")
		}
	})
}

func TestCheckWindows(t *testing.T) {
	for _, w := range []budget.TrackerWindow{{Span: 0, Limit: 1}, {Span: time.Hour, Limit: 0}, {Span: 48 * time.Hour, Limit: 1}, {Span: time.Hour, Limit: 1, WriteCost: -1}} {
		if budget.CheckWindows([]budget.TrackerWindow{w}) == nil {
			t.Errorf("%+v passed", w)
		}
	}
	if err := budget.CheckWindows(budget.TrackerWindows["github"]); err != nil {
		t.Fatal(err)
	}
}
