package faketracker

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
)

// Chaos makes a fake fail at random: each call, with probability P, is rate
// limited, answers unavailable, hangs until its caller gives up, or (a
// create) files the item and then fails. The seed makes a run repeatable.
type Chaos struct {
	P    float64
	Seed uint64
}

type chaos struct {
	mu     sync.Mutex
	p      float64
	rng    *rand.Rand
	counts map[string]int
}

// WithChaos makes the fake fail at random (see Chaos).
func WithChaos(c Chaos) Option {
	return func(t *Tracker) {
		// A seeded, repeatable draw: these faults are a test's, not secrets.
		t.chaos = &chaos{p: c.P, rng: rand.New(rand.NewPCG(c.Seed, c.Seed^0x9e3779b97f4a7c15)), counts: map[string]int{}} //nolint:gosec // G404: repeatable test faults
	}
}

// The faults chaos injects, as Faults counts them.
const (
	FaultRateLimited = "rate_limited"
	FaultUnavailable = "unavailable"
	FaultHang        = "hang"
	FaultCrash       = "create_then_crash"
)

// roll picks a fault for a call of method, or nil.
func (c *chaos) roll(method string) *fault {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rng.Float64() >= c.p {
		return nil
	}
	n := 3
	if method == MethodCreate {
		n = 4
	}
	switch c.rng.IntN(n) {
	case 0:
		c.counts[FaultRateLimited]++
		return &fault{err: tracker.RateLimited(time.Duration(1+c.rng.IntN(5)) * time.Second)}
	case 1:
		c.counts[FaultUnavailable]++
		return &fault{err: fmt.Errorf("%w: chaos answered 503", tracker.ErrUnavailable)}
	case 2:
		c.counts[FaultHang]++
		return &fault{hang: true}
	default:
		c.counts[FaultCrash]++
		return &fault{crash: true}
	}
}

// Faults answers how many faults of each kind chaos injected.
func (t *Tracker) Faults() map[string]int {
	out := map[string]int{}
	if t.chaos == nil {
		return out
	}
	t.chaos.mu.Lock()
	defer t.chaos.mu.Unlock()
	for k, v := range t.chaos.counts {
		out[k] = v
	}
	return out
}
