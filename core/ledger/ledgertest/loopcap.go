package ledgertest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/ledger"
)

// loopCapCases are the rules of the loop cap: at most capLimit writes to an
// item in any capWindow, counted atomically across replicas (ADR-0036).
var loopCapCases = []testCase{
	{"CountWriteFailsWithErrLoopAtTheCap", capRefuses},
	{"CountWriteWindowSlides", capWindowSlides},
	{"ForgetWritesStartsTheCountAgain", forgetWrites},
	{"UncountWriteGivesBackOneWriteCountedThen", uncountWrites},
	{"ConcurrentCountWritesNeverPassTheCap", concurrentCountWrites},
}

func capRefuses(t *testing.T, l ledger.Ledger) {
	for i := 1; i <= capLimit; i++ {
		n, err := countWrite(l, t.Context(), "item-1", t0.Add(time.Duration(i)*time.Second))
		mustNil(t, err)
		if n != i {
			t.Fatalf("write %d counted as %d", i, n)
		}
	}
	_, err := countWrite(l, t.Context(), "item-1", t0.Add(time.Minute))
	mustIs(t, err, ledger.ErrLoop)
	_, err = countWrite(l, t.Context(), "item-1", t0.Add(30*time.Minute))
	mustIs(t, err, ledger.ErrLoop)
	n, err := countWrite(l, t.Context(), "item-2", t0.Add(time.Minute))
	mustNil(t, err)
	if n != 1 {
		t.Fatalf("another item's first write counted as %d", n)
	}
}

func capWindowSlides(t *testing.T, l ledger.Ledger) {
	for i := range capLimit {
		_, err := countWrite(l, t.Context(), "item", t0.Add(time.Duration(i)*time.Minute))
		mustNil(t, err)
	}
	_, err := countWrite(l, t.Context(), "item", t0.Add(capWindow-time.Millisecond))
	mustIs(t, err, ledger.ErrLoop)
	// The first write (at t0) leaves the window an hour later: one more fits.
	n, err := countWrite(l, t.Context(), "item", t0.Add(capWindow))
	mustNil(t, err)
	if n != capLimit {
		t.Fatalf("counted %d once the first write left the window, want %d", n, capLimit)
	}
	_, err = countWrite(l, t.Context(), "item", t0.Add(capWindow+time.Second))
	mustIs(t, err, ledger.ErrLoop)
	n, err = countWrite(l, t.Context(), "item", t0.Add(3*capWindow))
	mustNil(t, err)
	if n != 1 {
		t.Fatalf("counted %d after hours of quiet, want 1", n)
	}
}

func forgetWrites(t *testing.T, l ledger.Ledger) {
	for range capLimit {
		_, err := countWrite(l, t.Context(), "item", t0)
		mustNil(t, err)
	}
	mustNil(t, l.ForgetWrites(t.Context(), "acme", "ops", "item"))
	n, err := countWrite(l, t.Context(), "item", t0)
	mustNil(t, err)
	if n != 1 {
		t.Fatalf("counted %d after forgetting, want 1", n)
	}
}

// uncountWrites: a write the tracker did not take gives its count back, so
// refusals never spend the cap; only a write counted at that very time is
// given back, and only once.
func uncountWrites(t *testing.T, l ledger.Ledger) {
	ctx := t.Context()
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	// Two writes at 1 s, then one a second to the cap.
	for _, s := range append([]int{1}, seq(1, capLimit-1)...) {
		_, err := countWrite(l, ctx, "item", at(s))
		mustNil(t, err)
	}
	_, err := countWrite(l, ctx, "item", at(capLimit))
	mustIs(t, err, ledger.ErrLoop)
	// Times no write of the item was counted at give back nothing.
	mustNil(t, uncountWrite(l, ctx, "item", at(capLimit)))
	mustNil(t, uncountWrite(l, ctx, "other", at(1)))
	mustNil(t, uncountWrite(l, ctx, "item", at(1).Add(time.Millisecond)))
	_, err = countWrite(l, ctx, "item", at(capLimit))
	mustIs(t, err, ledger.ErrLoop)
	// Each give-back at 1 s frees one place, and only one.
	for i := range 2 {
		mustNil(t, uncountWrite(l, ctx, "item", at(1)))
		n, err := countWrite(l, ctx, "item", at(capLimit+i))
		mustNil(t, err)
		if n != capLimit {
			t.Fatalf("given back %d, then counted %d; want %d", i+1, n, capLimit)
		}
		_, err = countWrite(l, ctx, "item", at(capLimit+i))
		mustIs(t, err, ledger.ErrLoop)
	}
	// Both writes at 1 s are given back: a third give-back frees nothing.
	mustNil(t, uncountWrite(l, ctx, "item", at(1)))
	_, err = countWrite(l, ctx, "item", at(capLimit+2))
	mustIs(t, err, ledger.ErrLoop)
}

// seq answers from, from+1, ..., to.
func seq(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

func concurrentCountWrites(t *testing.T, l ledger.Ledger) {
	const goroutines, each = 8, 6
	var (
		wg            sync.WaitGroup
		mu            sync.Mutex
		counted, loop int
		seen          = map[int]bool{}
	)
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				n, err := countWrite(l, t.Context(), "hot", t0.Add(time.Duration(g*each+i)*time.Millisecond))
				mu.Lock()
				switch {
				case err == nil:
					counted++
					if seen[n] {
						t.Errorf("count %d answered twice", n)
					}
					seen[n] = true
				case errors.Is(err, ledger.ErrLoop):
					loop++
				default:
					t.Errorf("CountWrite: %v", err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if counted != capLimit || loop != goroutines*each-capLimit {
		t.Fatalf("%d counted and %d refused, want %d and %d", counted, loop, capLimit, goroutines*each-capLimit)
	}
}
