package budget_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/core/budget"
	"github.com/relayr-go/relayr/core/clock"
)

// replicaRun is replicas of one key's budget, each polling 20 bindings
// on its floor, seeing each other only through heartbeats every 10 s (a
// third of a lease) as the followers do: a replica's count of the others,
// and what each spent in its last minute, are a beat old.
type replicaRun struct {
	t      *testing.T
	ctx    context.Context
	wg     sync.WaitGroup
	mu     sync.Mutex
	sent   []time.Time
	beats  map[string]beat // each replica's last heartbeat
	budget map[string]*budget.Budget
	stop   map[string]context.CancelFunc
}

type beat struct {
	at    time.Time
	spent int
}

const beatEvery = 10 * time.Second

func (r *replicaRun) alive(now time.Time) []string {
	var out []string
	for name, b := range r.beats {
		if now.Sub(b.at) < 2*beatEvery {
			out = append(out, name)
		}
	}
	return out
}

// start starts a replica: its first beat counts the others and joins what
// they spent, then its followers poll.
func (r *replicaRun) start(name string) {
	b := budget.New(clock.System{}, 40)
	ctx, cancel := context.WithCancel(r.ctx)
	r.mu.Lock()
	r.budget[name], r.stop[name] = b, cancel
	now := time.Now()
	r.beats[name] = beat{at: now}
	b.SetReplicas(len(r.alive(now)))
	for other, bt := range r.beats {
		if other != name && now.Sub(bt.at) < 2*beatEvery {
			b.Join("k", bt.spent)
		}
	}
	r.mu.Unlock()
	r.wg.Go(func() {
		for clock.Sleep(ctx, clock.System{}, beatEvery) == nil {
			r.mu.Lock()
			now := time.Now()
			spent := 0
			if st := b.Status(); len(st) == 1 {
				spent = st[0].Spent
			}
			r.beats[name] = beat{at: now, spent: spent}
			b.SetReplicas(len(r.alive(now)))
			r.mu.Unlock()
		}
	})
	for i := range 20 {
		b.Follow("k", fmt.Sprint(name, i), 30*time.Second)
		r.wg.Go(func() {
			for ctx.Err() == nil {
				_, done, err := b.Floor(ctx, "k")
				if err != nil {
					return
				}
				r.mu.Lock()
				r.sent = append(r.sent, time.Now())
				r.mu.Unlock()
				done()
				time.Sleep(time.Second)
			}
		})
	}
}

// kill stops a replica's polls and beats, as SIGKILL does.
func (r *replicaRun) kill(name string) { r.stop[name]() }

func (r *replicaRun) worstMinute() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	worst := 0
	for i := range r.sent {
		n := 0
		for j := i; j < len(r.sent) && r.sent[j].Sub(r.sent[i]) < time.Minute; j++ {
			n++
		}
		worst = max(worst, n)
	}
	return worst
}

// staggered starts three replicas gap apart, and runs them five minutes.
func staggered(gap time.Duration) func(r *replicaRun) {
	return func(r *replicaRun) {
		for _, name := range []string{"a", "b", "c"} {
			r.start(name)
			time.Sleep(gap)
		}
		time.Sleep(5 * time.Minute)
	}
}

// The key's budget holds in every 60 s window whether the replicas start
// together, one after another, or are killed and restarted: a replica
// that joins spends its share beside what the others spent before they
// saw it (budget.Join), and the others keep to theirs once they see it.
func TestTheBudgetHoldsInEveryMinuteAsReplicasComeAndGo(t *testing.T) {
	for _, c := range []struct {
		name   string
		script func(r *replicaRun)
	}{
		{"StartedTogether", func(r *replicaRun) {
			r.start("a")
			r.start("b")
			r.start("c")
			time.Sleep(5 * time.Minute)
		}},
		{"Started10sApart", staggered(10 * time.Second)},
		{"StartedApartByABeatAndAHalf", staggered(15 * time.Second)},
		{"OneKilledAndRestarted", func(r *replicaRun) {
			r.start("a")
			r.start("b")
			r.start("c")
			time.Sleep(2 * time.Minute)
			r.kill("b")
			time.Sleep(90 * time.Second)
			r.start("b-restarted")
			time.Sleep(3 * time.Minute)
		}},
		{"AloneThenJoined", func(r *replicaRun) {
			r.start("a")
			time.Sleep(2 * time.Minute)
			r.start("b")
			time.Sleep(3 * time.Minute)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				r := &replicaRun{t: t, ctx: ctx, beats: map[string]beat{}, budget: map[string]*budget.Budget{}, stop: map[string]context.CancelFunc{}}
				c.script(r)
				cancel()
				r.wg.Wait()
				if worst := r.worstMinute(); worst > 40 {
					t.Fatalf("the tracker saw %d requests of the key in one minute, past the budget of 40", worst)
				}
				t.Logf("worst minute %d of 40, %d requests", r.worstMinute(), len(r.sent))
			})
		})
	}
}
