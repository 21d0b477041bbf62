// Package clock is the time every timer of core goes through (leases, polls,
// the 20 s write bound, the 5 min credential cache, the loop cap's hour, the
// budget's minute, the 2 s debounce), so tests step time instead of waiting.
//
// System is the real clock. Fake is stepped by its test with Advance; its
// timers fire when fake time reaches them. A test that drives many goroutines
// at once may instead run System inside a testing/synctest bubble, where
// Go's own time is virtual.
package clock

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"
)

// Clock tells the time and waits.
type Clock interface {
	// Now is the current time.
	Now() time.Time
	// After sends the time once d has passed.
	After(d time.Duration) <-chan time.Time
	// WithTimeout is context.WithTimeout on this clock's time.
	WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc)
}

// Sleep waits for d on c, or until ctx ends (then it answers ctx.Err()).
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	select {
	case <-c.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// System is the real clock.
type System struct{}

// Now implements Clock.
func (System) Now() time.Time { return time.Now() }

// After implements Clock.
func (System) After(d time.Duration) <-chan time.Time { return time.After(d) }

// WithTimeout implements Clock.
func (System) WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}

// Fake is a clock that moves only when its test calls Advance or Set.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	waiters []*waiter
	changed chan struct{} // closed and replaced whenever waiters change
}

type waiter struct {
	at   time.Time
	ch   chan time.Time
	fire func()
}

// NewFake starts a fake clock at start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, changed: make(chan struct{})}
}

// Now implements Clock.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// After implements Clock.
func (f *Fake) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if d <= 0 {
		ch <- f.now
		return ch
	}
	f.addLocked(&waiter{at: f.now.Add(d), ch: ch})
	return ch
}

// WithTimeout implements Clock: the context ends when fake time reaches
// now+d, or when ctx or the cancel function ends it.
func (f *Fake) WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	f.mu.Lock()
	if d <= 0 {
		f.mu.Unlock()
		cancel(context.DeadlineExceeded)
		return &deadlineCtx{ctx}, func() { cancel(context.Canceled) }
	}
	w := &waiter{at: f.now.Add(d), fire: func() { cancel(context.DeadlineExceeded) }}
	f.addLocked(w)
	f.mu.Unlock()
	return &deadlineCtx{ctx}, func() {
		cancel(context.Canceled)
		f.remove(w)
	}
}

// deadlineCtx reports the cause as Err when the fake deadline passed, so
// callers see context.DeadlineExceeded as they would from a real timeout.
type deadlineCtx struct{ context.Context }

func (c *deadlineCtx) Err() error {
	if err := c.Context.Err(); err != nil {
		if cause := context.Cause(c.Context); errors.Is(cause, context.DeadlineExceeded) {
			return cause
		}
		return err
	}
	return nil
}

func (f *Fake) addLocked(w *waiter) {
	f.waiters = append(f.waiters, w)
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *Fake) remove(w *waiter) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, x := range f.waiters {
		if x == w {
			f.waiters = append(f.waiters[:i], f.waiters[i+1:]...)
			close(f.changed)
			f.changed = make(chan struct{})
			return
		}
	}
}

// Advance moves fake time forward by d, firing every timer it passes, in
// time order.
func (f *Fake) Advance(d time.Duration) {
	f.Set(f.Now().Add(d))
}

// Set moves fake time to t (never backwards), firing every timer it passes.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	if t.Before(f.now) {
		f.mu.Unlock()
		return
	}
	var due, rest []*waiter
	for _, w := range f.waiters {
		if !w.at.After(t) {
			due = append(due, w)
		} else {
			rest = append(rest, w)
		}
	}
	sort.SliceStable(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	f.waiters = rest
	f.now = t
	if len(due) > 0 {
		close(f.changed)
		f.changed = make(chan struct{})
	}
	f.mu.Unlock()
	for _, w := range due {
		if w.ch != nil {
			w.ch <- w.at
		}
		if w.fire != nil {
			w.fire()
		}
	}
}

// Waiters is how many timers and deadlines are pending.
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

// BlockUntil waits until at least n timers or deadlines are pending, so a
// test advances time only once the code under test is waiting on it. It
// gives up when ctx ends.
func (f *Fake) BlockUntil(ctx context.Context, n int) error {
	for {
		f.mu.Lock()
		if len(f.waiters) >= n {
			f.mu.Unlock()
			return nil
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
