package budget_test

import (
	"bytes"
	"context"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/core/budget"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/metrics"
	"github.com/relayr-go/relayr/core/tracker"
)

const key = "acme/plane"

// spacing is the pacer's gap at the default limit: a minute over 40.
const spacing = time.Minute / 40

func TestWritesSpendAndAreNeverHeldBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := budget.New(clock.System{}, 40)
		ctx := b.Writing(context.Background(), key)
		for range 50 {
			tracker.Sent(ctx) // a write's requests, as the adapter sends them
		}
		if left := b.Left(key); left != 0 {
			t.Fatalf("left %d after 50 writes, want 0", left)
		}
		st := b.Status()[0]
		if st.Writes != 50 || st.Spent != 50 || st.Reads != 0 {
			t.Fatalf("status %+v, want the 50 writes spent", st)
		}
	})
}

func TestSpareTakesOnlyWhatIsLeft(t *testing.T) {
	for _, c := range []struct {
		name      string
		writes    int
		wantTaken int
	}{
		// All but the two kept for a connection's reads.
		{"AnIdleKeySparesTheMinute", 0, 38},
		{"WritesLeaveTheRest", 35, 3},
		{"WritesPastTheLimitLeaveNothing", 50, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				b := budget.New(clock.System{}, 40)
				b.Spend(key, c.writes)
				taken := 0
				for range 45 {
					if _, done, ok := b.Spare(context.Background(), key); ok {
						done()
						taken++
					}
					if time.Since(start) < 58*time.Second {
						time.Sleep(spacing) // the pacer's pace, so only the minute limits
					}
				}
				if taken != c.wantTaken {
					t.Fatalf("spare took %d, want %d", taken, c.wantTaken)
				}
			})
		})
	}
}

func TestSpareKeepsRoomForTheFloor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := budget.New(clock.System{}, 40)
		for i := range 10 {
			b.Follow(key, string(rune('a'+i)), 30*time.Second) // 20 requests a minute
		}
		taken := 0
		for range 38 {
			if _, done, ok := b.Spare(context.Background(), key); ok {
				done()
				taken++
			}
			time.Sleep(spacing)
		}
		if taken != 18 {
			t.Fatalf("spare took %d with ten bindings needing 20 a minute, want the 18 they leave beside a connection's reads", taken)
		}
	})
}

func TestIdleWantsTheKeyMostlyIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := budget.New(clock.System{}, 40)
		// Half the minute, less the two kept for a connection's reads.
		b.Spend(key, 17)
		if _, _, ok := b.Idle(context.Background(), key); !ok {
			t.Fatal("idle refused with 17 of 40 spent")
		}
		time.Sleep(spacing)
		if _, _, ok := b.Idle(context.Background(), key); ok {
			t.Fatal("idle took a request with 18 of 40 spent")
		}
		if _, _, ok := b.Spare(context.Background(), key); !ok {
			t.Fatal("spare refused with 18 of 40 spent")
		}
	})
}

func TestFloorIsPacedAndNeverHeldBackByWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := budget.New(clock.System{}, 40)
		b.Spend(key, 100) // writes spent past the limit
		start := time.Now()
		var at []time.Duration
		for range 60 {
			_, done, err := b.Floor(context.Background(), key)
			if err != nil {
				t.Fatal(err)
			}
			done() // a call of one request: nothing beyond it
			at = append(at, time.Since(start))
		}
		// Ten back to back, then one every minute/40, whatever writes
		// spent, and never more than 40 in a minute (less the room kept
		// for a call's further requests).
		if at[9] != 0 {
			t.Fatalf("the first ten at %v, want them at once (the burst)", at[:10])
		}
		for i := 11; i < 38; i++ {
			if gap := at[i] - at[i-1]; gap != spacing {
				t.Fatalf("request %d came %v after the one before, want %v", i, gap, spacing)
			}
		}
		for i := range at {
			n := 0
			for j := i; j < len(at) && at[j]-at[i] < time.Minute; j++ {
				n++
			}
			if n > 40 {
				t.Fatalf("%d floor requests within a minute of %v, want at most 40", n, at[i])
			}
		}
	})
}

// drainBurst takes the pacer's burst of ten at once.
func drainBurst(t *testing.T, b *budget.Budget) {
	t.Helper()
	for range 10 {
		_, done, err := b.Floor(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		done()
	}
}

func TestFloorServesWaitersInTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := budget.New(clock.System{}, 40)
		drainBurst(t, b)
		order := make(chan int, 3)
		for i := range 3 {
			go func() {
				if _, done, err := b.Floor(context.Background(), key); err == nil {
					done()
					order <- i
				}
			}()
			// Each takes its ticket before the next comes.
			for b.Status()[0].Queued != i+1 {
				runtime.Gosched()
			}
		}
		for want := range 3 {
			synctest.Wait() // the one whose turn it is waits on its timer
			time.Sleep(spacing)
			synctest.Wait()
			select {
			case got := <-order:
				if got != want {
					t.Fatalf("waiter %d admitted in turn %d", got, want)
				}
			default:
				t.Fatalf("no waiter admitted %v on, want waiter %d", spacing, want)
			}
		}
	})
}

func TestAWaiterThatGivesUpLeavesTheQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := budget.New(clock.System{}, 40)
		drainBurst(t, b)
		ctx, cancel := context.WithCancel(context.Background())
		gaveUp := make(chan error, 1)
		go func() { _, _, err := b.Floor(ctx, key); gaveUp <- err }()
		synctest.Wait() // it waits on its timer
		admitted := make(chan struct{})
		go func() {
			if _, _, err := b.Floor(context.Background(), key); err == nil {
				close(admitted)
			}
		}()
		cancel()
		if err := <-gaveUp; err == nil {
			t.Fatal("a cancelled wait was admitted")
		}
		// The one who gave up left its timer behind; the next in turn waits on
		// its own before time moves.
		synctest.Wait()
		time.Sleep(spacing)
		synctest.Wait()
		select {
		case <-admitted:
		default:
			t.Fatalf("the next in turn not admitted %v on", spacing)
		}
	})
}

func TestTheFloorsFurtherRequestsAreCountedAndPaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := budget.New(clock.System{}, 40)
		ctx, done, err := b.Floor(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		defer done()
		tracker.Sent(ctx) // the one paced for
		tracker.Sent(ctx) // a connection's reads beyond it
		tracker.Sent(ctx)
		if st := b.Status()[0]; st.Reads != 3 {
			t.Fatalf("reads %d, want the call's three requests", st.Reads)
		}
		// The pacer carries the debt: the burst of ten has room for seven
		// more now, and the next waits for it.
		taken := 0
		for b.Take(key) {
			taken++
		}
		if taken != 7 {
			t.Fatalf("%d more went at once after the call's three, want the burst's seven", taken)
		}
	})
}

func TestPollsStretchWhereAKeyHasMoreBindingsThanItsBudgetCanPoll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := budget.New(clock.System{}, 40)
		for i := range 18 {
			b.Follow(key, string(rune('a'+i)), 30*time.Second)
		}
		if got := b.Interval(key, 30*time.Second); got != 30*time.Second {
			t.Fatalf("18 bindings need 36 a minute, the floor's share of 40: interval %v, want 30s", got)
		}
		b.Follow(key, "one more", 30*time.Second)
		if got, want := b.Interval(key, 30*time.Second), 30*time.Second*38/36; got != want {
			t.Fatalf("19 bindings: interval %v, want %v", got, want)
		}
		for i := range 481 {
			b.Follow(key, "many-"+string(rune(i)), 30*time.Second)
		}
		// 500 bindings at one request a poll take 36 a minute: one poll each
		// every 500/36 minutes.
		if got, want := b.Interval(key, 30*time.Second), 30*time.Second*1000/36; got != want {
			t.Fatalf("500 bindings: interval %v, want %v", got, want)
		}
		if st := b.Status()[0]; !st.Stretched || st.Followed != 500 || st.FloorPerMinute != 1000 {
			t.Fatalf("status %+v, want 500 bindings, stretched", st)
		}
		if got := b.Interval("other", 30*time.Second); got != 30*time.Second {
			t.Fatalf("another key's interval %v, want 30s", got)
		}
	})
}

// A share of one request a minute (a budget of 1, or under twice the
// replicas) still polls: each binding in turn, once a minute between them,
// never an interval that overflows into the past.
func TestAShareOfOneRequestAMinuteStretchesThePolls(t *testing.T) {
	for _, c := range []struct {
		name            string
		limit, replicas int
		bindings        int
		want            time.Duration
	}{
		{"ABudgetOfOne", 1, 1, 1, time.Minute},
		{"ABudgetOfOneTwoBindings", 1, 1, 2, 2 * time.Minute},
		{"FiveAcrossThreeReplicas", 5, 3, 3, time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := budget.New(clock.System{}, c.limit)
				b.SetReplicas(c.replicas)
				for i := range c.bindings {
					b.Follow(key, string(rune('a'+i)), 30*time.Second)
				}
				if got := b.Interval(key, 30*time.Second); got != c.want {
					t.Fatalf("interval %v, want %v", got, c.want)
				}
			})
		})
	}
}

func TestBudgetFreesRequestsAsTheMinuteSlides(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := budget.New(clock.System{}, 40)
		b.Spend(key, 30)
		time.Sleep(30 * time.Second)
		b.Spend(key, 10)
		if _, _, ok := b.Spare(context.Background(), key); ok {
			t.Fatal("a full minute spared a request")
		}
		time.Sleep(30 * time.Second)
		if got := b.Left(key); got != 30 {
			t.Fatalf("after the first spends aged out, left %d, want 30", got)
		}
	})
}

func TestBudgetKeepsKeysApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := budget.New(clock.System{}, 40)
		b.Spend("a", 40)
		if _, _, ok := b.Spare(context.Background(), "b"); !ok {
			t.Fatal("one tenant's writes held back another's polls")
		}
	})
}

func TestTheDefaultLimitIsForty(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		if l := budget.New(clock.System{}, 0).Limit(); l != 40 {
			t.Fatalf("limit %d, want 40", l)
		}
	})
}

func TestObserveCounts429sAndSaysWhenAStreakBeginsAndEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		m := metrics.NewMemory()
		b := budget.NewWith(clock.System{}, 40, budget.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Metrics: m})
		b.Observe(key, tracker.RateLimited(time.Second))
		b.Observe(key, tracker.RateLimited(time.Second))
		if strings.Contains(logs.String(), "streak") {
			t.Fatalf("two 429s logged as a streak: %s", logs.String())
		}
		b.Observe(key, tracker.RateLimited(time.Second))
		b.Observe(key, tracker.RateLimited(time.Second))
		if n := strings.Count(logs.String(), "tracker answers in a streak"); n != 1 {
			t.Fatalf("logged %d streak warnings, want one at the third 429:\n%s", n, logs.String())
		}
		b.Observe(key, tracker.ErrNotFound) // an answer of its own ends nothing
		b.Observe(key, nil)
		if !strings.Contains(logs.String(), "tracker answers again") {
			t.Fatalf("the streak's end is not logged:\n%s", logs.String())
		}
		if st := b.Status()[0]; st.RateLimited != 4 {
			t.Fatalf("429s %d, want 4", st.RateLimited)
		}
		if got := m.Get(metrics.RateLimited); got != 4 {
			t.Fatalf("counter %v, want 4", got)
		}
	})
}

func TestAPollGoesOnAtTheTrackersSpeedWithinTheMinute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := budget.New(clock.System{}, 40)
		drainBurst(t, b)
		start := time.Now()
		// A poll the pacer admits: its start waits its spacing, its 20
		// further reads go at once, and the minute still holds no more
		// than the limit (less the room kept for a connection's reads).
		_, done, err := b.Floor(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		done()
		admitted := time.Since(start)
		for range 20 {
			_, done, err := b.Continue(context.Background(), key)
			if err != nil {
				t.Fatal(err)
			}
			done()
		}
		if went := time.Since(start); went != admitted || admitted == 0 {
			t.Fatalf("admitted after %v, its reads done after %v: want a paced start and reads at once", admitted, went)
		}
		for range 10 {
			_, done, err := b.Continue(context.Background(), key)
			if err != nil {
				t.Fatal(err)
			}
			done()
		}
		if st := b.Status()[0]; st.Reads > 40 {
			t.Fatalf("%d reads within the minute", st.Reads)
		}
		if time.Since(start) < time.Minute-time.Second {
			t.Fatalf("the minute's 38 reads and 3 more went after %v, want the minute to hold them back", time.Since(start))
		}
	})
}

func TestReplicasShareOneBudgetPerKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := budget.New(clock.System{}, 40)
		for i := range 300 {
			b.Follow(key, "b"+strings.Repeat("x", i), 30*time.Second)
		}
		alone := b.Interval(key, 30*time.Second)
		b.SetReplicas(3)
		if got := b.ReplicaLimit(); got != 13 {
			t.Fatalf("one replica of three may spend %d, want 13", got)
		}
		// Each replica polls a third of the bindings on a third of the budget:
		// about the interval one replica alone would poll all of them at.
		if got := b.Interval(key, 30*time.Second); got < alone*9/10 || got > alone*11/10 {
			t.Fatalf("interval %v on three replicas, want about %v as on one", got, alone)
		}
		// A replica's share of the minute: 13 writes leave nothing.
		b.Spend(key, 13)
		if left := b.Left(key); left != 0 {
			t.Fatalf("left %d after the share's 13 writes", left)
		}
		st := b.Status()[0]
		if st.Limit != 40 || st.Replicas != 3 || st.ReplicaLimit != 13 || st.SpentAcrossReplicas != 13 {
			t.Fatalf("status %+v", st)
		}
		// A replica gone: the larger share comes a minute later, when what the
		// gone one spent has left the tracker's minute.
		b.SetReplicas(2)
		if got := b.ReplicaLimit(); got != 13 {
			t.Fatalf("share %d at once after a replica went, want 13 for a minute", got)
		}
		time.Sleep(budget.Window - time.Second)
		b.SetReplicas(2) // beats go on saying two
		if got := b.Replicas(); got != 3 {
			t.Fatalf("%d replicas reckoned before the minute passed", got)
		}
		time.Sleep(time.Second)
		if got := b.ReplicaLimit(); got != 20 {
			t.Fatalf("share %d a minute after a replica went, want 20", got)
		}
		// A replica come: the smaller share at once.
		b.SetReplicas(4)
		if got := b.ReplicaLimit(); got != 10 {
			t.Fatalf("share %d once a fourth replica came, want 10", got)
		}
		b.SetReplicas(0)
		time.Sleep(budget.Window)
		if got := b.ReplicaLimit(); got != 40 {
			t.Fatalf("share %d with no replica counted, want the whole 40", got)
		}
	})
}

func TestAReplicaThatStartsLeavesRoomForWhatGoneReplicasSpent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := budget.New(clock.System{}, 40)
		b.SetReplicas(2) // 20 a minute each
		b.Inherit(key, 10)
		// Ten of its twenty were spent by the replica gone: the pacer
		// starts half a minute behind, its burst ahead of that.
		start := time.Now()
		_, done, err := b.Floor(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		done()
		burst := time.Duration(20/4-1) * (time.Minute / 20)
		if waited := time.Since(start); waited != 30*time.Second-burst {
			t.Fatalf("the first floor request went after %v, want %v", waited, 30*time.Second-burst)
		}
		// More than a minute's worth holds it back a minute at most.
		b.Inherit(key, 500)
		start = time.Now()
		_, done, err = b.Floor(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		done()
		if waited := time.Since(start); waited > time.Minute {
			t.Fatalf("waited %v, want at most a minute", waited)
		}
	})
}

// TestA304IsGivenBack: a conditional read the tracker answers 304 costs
// nothing of its limit (GitHub), so the minute no longer counts it.
func TestA304IsGivenBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := budget.New(clock.System{}, 10)
		ctx, done, err := b.Floor(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		defer done()
		tracker.Sent(ctx) // the poll's conditional first page, prepaid
		tracker.Sent(ctx) // its next page
		if got := b.Left("k"); got != 8 {
			t.Fatalf("left %d after two requests, want 8", got)
		}
		tracker.Free(ctx)
		if got := b.Left("k"); got != 9 {
			t.Fatalf("left %d after a 304 was given back, want 9", got)
		}
		if s := b.Status(); len(s) != 1 || s[0].Unchanged != 1 {
			t.Fatalf("status %+v, want one unchanged read", s)
		}
		tracker.Free(context.Background()) // a context no budget meters: nothing happens
	})
}

// TestAContinueThatGoesAtOnceWaitedForNothing: on the system's clock, a
// poll's further request that finds room in the minute reports no wait, so
// no poll that went at once counts as deferred.
func TestAContinueThatGoesAtOnceWaitedForNothing(t *testing.T) {
	b := budget.New(clock.System{}, 40)
	ctx, done, err := b.Continue(context.Background(), "acme/fake")
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	if w := budget.Waited(ctx); w != 0 {
		t.Fatalf("a request with room in the minute waited %s", w)
	}
}
