package follow_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/core/binding"
	"github.com/relayr-go/relayr/core/budget"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/coretest"
	"github.com/relayr-go/relayr/core/faketracker"
	"github.com/relayr-go/relayr/core/follow"
	"github.com/relayr-go/relayr/core/tracker"
)

// The budget's figures, on virtual time. Each test checks what the budget
// promises and logs its figure as a FIGURE line, which `make bench` reads
// into the README's table beside the benchmarks.

// keyed is the figures' bindings, on one tenant key, and when each polled.
type keyed struct {
	fakes []*faketracker.Tracker
	fs    *follow.Followers
	bud   *budget.Budget
	polls [][]time.Time // each binding's polls (its Items calls), in order
	mu    sync.Mutex
}

// followMany follows n projects of one tenant's key with a budget of limit.
func followMany(t *testing.T, n, limit int) *keyed {
	k := &keyed{bud: budget.New(clock.System{}, limit), polls: make([][]time.Time, n)}
	var bindings []binding.Binding
	for i := range n {
		f := faketracker.New(faketracker.LikePlane, faketracker.WithProject(fmt.Sprint("proj-", i), "P"))
		if _, err := f.PersonCreate(tracker.Draft{Title: "first"}); err != nil {
			t.Fatal(err)
		}
		rec := &callTimes{Tracker: f, at: func() { k.mu.Lock(); k.polls[i] = append(k.polls[i], time.Now()); k.mu.Unlock() }}
		k.fakes = append(k.fakes, f)
		bindings = append(bindings, binding.Binding{Tenant: tenant, Workspace: fmt.Sprint("ws-", i), Connector: coretest.Connector{Driver: rec}})
	}
	wd := coretest.NewWorld(coretest.WorldOptions{Bindings: bindings, Budget: k.bud})
	k.fs = follow.New(follow.Config{Ledger: wd.Memory, Log: wd.Memory, Connections: wd.Connections, Budget: k.bud, Logger: slog.New(slog.DiscardHandler),
		Holder: "replica", Options: follow.Options{SweepMin: -1}})
	t.Cleanup(k.fs.Stop)
	return k
}

// callTimes notes when each poll (a read of what changed) is made.
type callTimes struct {
	*faketracker.Tracker
	at func()
}

func (c *callTimes) Items(ctx context.Context, q tracker.Query) (tracker.Page, error) {
	c.at()
	return c.Tracker.Items(ctx, q)
}

// worstGap is the longest wait between two polls of one binding after from.
func (k *keyed) worstGap(from time.Time) time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	worst := time.Duration(0)
	for _, ps := range k.polls {
		for i := 1; i < len(ps); i++ {
			if ps[i-1].After(from) {
				worst = max(worst, ps[i].Sub(ps[i-1]))
			}
		}
	}
	return worst
}

// TestFigureWorstPollGapUnderWritesAtTwiceTheBudget: ten bindings on one
// key, and a rule writing 80 times a minute on it for ten minutes. No
// binding waits more than an interval and a bit between two polls: the
// floor holds whatever writes spend.
func TestFigureWorstPollGapUnderWritesAtTwiceTheBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := followMany(t, 10, budget.DefaultLimit)
		k.fs.Start(t.Context())
		time.Sleep(2 * time.Minute)
		start := time.Now()
		for range 10 * 80 {
			k.bud.Spend(tenant+"/fake", 1) // a write: spent, never held back
			time.Sleep(time.Minute / 80)
		}
		worst := k.worstGap(start)
		t.Logf("FIGURE budget.worst_poll_gap %.1f s", worst.Seconds())
		if worst > follow.DefaultPollEvery+5*time.Second {
			t.Fatalf("a binding waited %v between two polls under writes at twice the budget, want about its 30 s", worst)
		}
	})
}

// TestFigurePollsOf500BindingsSpreadOverTheInterval: 500 bindings on one
// key poll each at its own phase of the interval, never all at once: with
// a budget that carries them every 30 s (2,000 a minute), and with the
// default 40, where the polls stretch to what the floor may take (36 a
// minute: each binding every 14 minutes). The figure is the most polls
// in any one second.
func TestFigurePollsOf500BindingsSpreadOverTheInterval(t *testing.T) {
	for _, c := range []struct {
		limit    int
		most     int
		interval time.Duration
	}{
		{2000, 30, 30 * time.Second},
		{budget.DefaultLimit, 4, 30 * time.Second * 1000 / 36},
	} {
		t.Run(fmt.Sprint("Budget", c.limit), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				k := followMany(t, 500, c.limit)
				if got := k.bud.Interval(tenant+"/fake", follow.DefaultPollEvery); got != c.interval {
					t.Fatalf("interval %v, want %v", got, c.interval)
				}
				k.fs.Start(t.Context())
				time.Sleep(2*c.interval + 2*time.Minute)
				perSecond := map[int64]int{}
				k.mu.Lock()
				fewest := -1
				for _, ps := range k.polls {
					for _, p := range ps {
						perSecond[p.Unix()]++
					}
					if fewest < 0 || len(ps) < fewest {
						fewest = len(ps)
					}
				}
				k.mu.Unlock()
				most := 0
				for _, n := range perSecond {
					most = max(most, n)
				}
				t.Logf("FIGURE budget.polls500.most_per_second.budget%d %d polls", c.limit, most)
				if most > c.most {
					t.Fatalf("%d polls in one second, want at most %d", most, c.most)
				}
				if fewest < 2 {
					t.Fatalf("a binding polled %d times in two intervals", fewest)
				}
			})
		})
	}
}

// TestAFloodOfNudgesStaysWithinTheBudget: a webhook delivery every 100 ms
// for ten minutes (a chatty project, or a tracker delivering relayr's own
// writes back) polls a binding at most once a debounce after its last poll,
// and all its polls go through the key's pacer: reads stay within the
// budget, on an idle key or one writes keep spent.
func TestAFloodOfNudgesStaysWithinTheBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := followMany(t, 1, budget.DefaultLimit)
		k.fs.Start(t.Context())
		time.Sleep(time.Minute)
		polled := func() int {
			k.mu.Lock()
			defer k.mu.Unlock()
			return len(k.polls[0])
		}
		flood := func(d time.Duration, spend bool) int {
			before := polled()
			for end := time.Now().Add(d); time.Now().Before(end); {
				if spend {
					k.bud.Spend(tenant+"/fake", 1)
				}
				k.fs.Nudge(context.Background(), tenant, "fake", "proj-0")
				time.Sleep(100 * time.Millisecond)
			}
			return polled() - before
		}
		idle := flood(10*time.Minute, false)
		busy := flood(10*time.Minute, true)
		t.Logf("polls in 10 minutes of nudges every 100 ms: %d on an idle key, %d on one writes keep spent", idle, busy)
		for _, n := range []int{idle, busy} {
			// One a debounce at most (300 in 10 minutes), each a request,
			// within the budget's 40 a minute.
			if n > 10*60/2+1 || n > 10*budget.DefaultLimit {
				t.Fatalf("%d polls in 10 minutes, want at most one a debounce within 40 a minute", n)
			}
		}
		if busy < idle/2 {
			t.Fatalf("writes held the nudged polls back: %d against %d", busy, idle)
		}
	})
}
