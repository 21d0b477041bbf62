package ledgerpg

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
)

// The calls that arrive while a commit is in flight go in the next one,
// together, but never two of one key; each caller is answered its own.
func TestGroupCommitsWhatArrivedWhileOneWasInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var (
			mu      sync.Mutex
			commits [][]int
		)
		g := &group[int, int]{
			depth: 1,
			apart: func(a, b int) bool { return a%10 == b%10 },
			one: func(_ context.Context, r int) (int, error) {
				if r == 0 {
					<-release // the commit in flight
				}
				mu.Lock()
				commits = append(commits, []int{r})
				mu.Unlock()
				return r * 2, nil
			},
			many: func(_ context.Context, rs []int) ([]int, error) {
				mu.Lock()
				commits = append(commits, slices.Clone(rs))
				mu.Unlock()
				out := make([]int, len(rs))
				for i, r := range rs {
					out[i] = r * 2
				}
				return out, nil
			},
		}
		var wg sync.WaitGroup
		got := make(map[int]int)
		var gotMu sync.Mutex
		run := func(r int) {
			wg.Go(func() {
				v, err := g.do(t.Context(), r)
				if err != nil {
					t.Error(err)
				}
				gotMu.Lock()
				got[r] = v
				gotMu.Unlock()
			})
		}
		run(0)
		synctest.Wait()
		for _, r := range []int{1, 2, 3, 11} { // 11 shares 1's key
			run(r)
			synctest.Wait()
		}
		close(release)
		wg.Wait()
		want := [][]int{{0}, {1, 2, 3}, {11}}
		if !slices.EqualFunc(commits, want, slices.Equal) {
			t.Fatalf("commits %v, want %v", commits, want)
		}
		for _, r := range []int{0, 1, 2, 3, 11} {
			if got[r] != r*2 {
				t.Errorf("call %d answered %d", r, got[r])
			}
		}
	})
}

// A caller whose context ends while it waits leaves the queue; the others
// are committed.
func TestGroupCallerThatGivesUpLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		g := &group[int, int]{
			depth: 1,
			apart: func(a, b int) bool { return a == b },
			one: func(_ context.Context, r int) (int, error) {
				if r == 0 {
					<-release
				}
				return r, nil
			},
			many: func(_ context.Context, rs []int) ([]int, error) { return rs, nil },
		}
		var wg sync.WaitGroup
		wg.Go(func() { _, _ = g.do(t.Context(), 0) })
		synctest.Wait()
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		wg.Go(func() { _, err := g.do(ctx, 1); errc <- err })
		var two int
		wg.Go(func() { two, _ = g.do(t.Context(), 2) })
		synctest.Wait()
		cancel()
		if err := <-errc; err == nil {
			t.Fatal("a caller that gave up was answered no error")
		}
		close(release)
		wg.Wait()
		if two != 2 {
			t.Fatalf("the call after it answered %d", two)
		}
	})
}

// takeClaims and recordClaims answer each call as the single statements
// do, across tenants, with and without RLS.
func TestGroupedClaimsAndRecords(t *testing.T) {
	for _, rls := range []bool{false, true} {
		t.Run(map[bool]string{false: "Postgres", true: "PostgresRLS"}[rls], func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			l := newTestLedger(t, rls)
			d := l.d
			t0 := time.Date(2026, 10, 17, 9, 30, 0, 0, time.UTC)
			key := func(tenant, k string) ledger.Key {
				return ledger.Key{Tenant: tenant, Workspace: "ops", Kind: ledger.KindItem, Key: k}
			}
			claim := func(k ledger.Key, now time.Time) claimReq {
				return claimReq{p: ledger.ClaimParams{Key: k, Correlation: "c-" + k.Key, Now: now, RetakeAfter: 30 * time.Second}, nonce: ledger.NewNonce()}
			}
			// held: claimed now; lapsed: claimed long ago.
			held, lapsed := key("acme", "held"), key("acme", "lapsed")
			for _, c := range []struct {
				k  ledger.Key
				at time.Time
			}{{held, t0}, {lapsed, t0.Add(-time.Hour)}} {
				if _, err := d.takeClaim(ctx, claim(c.k, c.at)); err != nil {
					t.Fatal(err)
				}
			}
			reqs := []claimReq{claim(key("globex", "b"), t0), claim(held, t0), claim(key("acme", "a"), t0), claim(lapsed, t0)}
			res, err := d.takeClaims(ctx, reqs)
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range []struct{ taken, inserted bool }{{true, true}, {false, false}, {true, true}, {true, false}} {
				r := res[i]
				if r.taken != want.taken || r.inserted != want.inserted || (r.taken && (r.c.Key != reqs[i].p.Key || r.c.Nonce != reqs[i].nonce)) {
					t.Errorf("claim %d (%s): %+v, want %+v", i, reqs[i].p.Key.Key, r, want)
				}
			}
			if res[3].c.Correlation != "c-lapsed" {
				t.Errorf("the retaken claim's correlation %q", res[3].c.Correlation)
			}
			record := func(i int, nonce string) recordReq {
				return recordReq{p: ledger.RecordParams{Key: reqs[i].p.Key, Nonce: nonce, Ref: tracker.ItemRef{ID: "id-" + reqs[i].p.Key.Key, Number: int64(i)}, Now: t0}, nonce: ledger.NewNonce()}
			}
			recs := []recordReq{record(2, reqs[2].nonce), record(0, reqs[0].nonce), record(3, "not its nonce")}
			rres, err := d.recordClaims(ctx, recs)
			if err != nil {
				t.Fatal(err)
			}
			for i, taken := range []bool{true, true, false} {
				r := rres[i]
				if r.taken != taken || (taken && (!r.c.Recorded || r.c.Ref.ID != recs[i].p.Ref.ID || r.c.Nonce != recs[i].nonce)) {
					t.Errorf("record %d: %+v, want taken %v", i, r, taken)
				}
			}
			c, err := l.LookupItem(ctx, "globex", "ops", "id-b")
			if err != nil || c.Key.Key != "b" {
				t.Fatalf("LookupItem after the grouped record: %+v %v", c, err)
			}
		})
	}
}

// Many callers on a group of depth 2, some giving up: every call is
// answered its own result or its context's error, none twice in one
// commit, and the group ends with no lead held.
func TestGroupUnderLoadAnswersEveryCall(t *testing.T) {
	var (
		mu       sync.Mutex
		inCommit int
		most     int
	)
	enter := func(n int) {
		mu.Lock()
		inCommit++
		most = max(most, inCommit)
		mu.Unlock()
		runtime.Gosched()
		mu.Lock()
		inCommit--
		mu.Unlock()
	}
	g := &group[int, int]{
		depth: 2,
		apart: func(a, b int) bool { return a%7 == b%7 },
		one:   func(_ context.Context, r int) (int, error) { enter(1); return -r, nil },
		many: func(_ context.Context, rs []int) ([]int, error) {
			seen := map[int]bool{}
			out := make([]int, len(rs))
			for i, r := range rs {
				if seen[r%7] {
					return nil, fmt.Errorf("two calls of key %d in one commit", r%7)
				}
				seen[r%7] = true
				out[i] = -r
			}
			enter(len(rs))
			return out, nil
		},
	}
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := range 300 {
				r := w*1000 + i + 1
				ctx, cancel := context.WithCancel(t.Context())
				if i%17 == 0 {
					cancel()
				}
				v, err := g.do(ctx, r)
				cancel()
				if err == nil && v != -r {
					t.Errorf("call %d answered %d", r, v)
				}
				if err != nil && i%17 != 0 {
					t.Errorf("call %d: %v", r, err)
				}
			}
		})
	}
	wg.Wait()
	if g.inFlight != 0 || len(g.queue) != 0 {
		t.Fatalf("after the calls: %d leads held, %d calls queued", g.inFlight, len(g.queue))
	}
	if most > 2 {
		t.Fatalf("%d commits in flight at once, depth 2", most)
	}
}
