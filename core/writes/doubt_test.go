package writes_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/core/coretest"
	"github.com/relayr-go/relayr/core/faketracker"
	"github.com/relayr-go/relayr/core/ledger/memledger"
	"github.com/relayr-go/relayr/core/metrics"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
)

// Three callers of one key in one process, arriving together as a CI job
// and its re-runs do, are never told tracker_claimed: the first files,
// the others wait for its record, and all three are answered the one
// item. Run many times, under -race in make test, on virtual time.
func TestThreeCallersOfOneKeyAreAllAnsweredTheOneItem(t *testing.T) {
	for round := range 200 {
		synctest.Test(t, func(t *testing.T) {
			fake := faketracker.New(faketracker.LikeVikunja)
			// Each create takes 300 ms, as a live Vikunja's did.
			slow := &pacedCreate{Tracker: fake, took: 300 * time.Millisecond}
			w := writerOver(slow, memledger.New(), metrics.Discard{})
			var wg sync.WaitGroup
			got := make([]answer, 3)
			for i := range got {
				wg.Go(func() {
					r, err := w.EnsureItem(context.Background(), writes.EnsureParams{Tenant: "acme", Workspace: "ops",
						Key: fmt.Sprintf("ci/%d", round), Draft: tracker.Draft{Title: "build failed"}, Correlation: "run"})
					got[i] = answer{r, err}
				})
			}
			wg.Wait()
			for i, a := range got {
				if a.err != nil {
					t.Fatalf("round %d, caller %d: %v", round, i, a.err)
				}
				if a.r.Item.Ref.ID != got[0].r.Item.Ref.ID {
					t.Fatalf("round %d: caller %d answered %s, caller 0 %s", round, i, a.r.Item.Ref.ID, got[0].r.Item.Ref.ID)
				}
			}
			if _, created := fake.Filed(); created != 1 {
				t.Fatalf("round %d: %d items filed, want 1", round, created)
			}
		})
	}
}

// With 30% of creates answered by a failure after the tracker made the
// item (the answer lost), 50 keys, each sent by a job and its re-run, each
// retrying three times with the write bound as its patience: every key is
// filed once, every caller answered its item within its bound, and each
// key in doubt costs one look-up, not one a caller.
func TestLostAnswersAreResolvedByRelayrOneLookupAKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := faketracker.New(faketracker.LikeVikunja)
		lossy := &losingAnswers{Tracker: fake, rng: rand.New(rand.NewPCG(1, 2)), share: 0.3}
		m := metrics.NewMemory()
		w := writerOver(lossy, memledger.New(), m)
		const keys = 50
		var wg sync.WaitGroup
		var mu sync.Mutex
		items := map[string]string{}
		for i := range keys {
			key := fmt.Sprintf("job/%02d", i)
			for caller := range 2 {
				wg.Go(func() {
					var err error
					for try := range 3 {
						began := time.Now()
						ctx, cancel := context.WithTimeout(context.Background(), writes.DefaultWriteBound)
						var r writes.Result
						r, err = w.EnsureItem(ctx, writes.EnsureParams{Tenant: "acme", Workspace: "ops", Key: key,
							Draft: tracker.Draft{Title: "failed: " + key}, Correlation: fmt.Sprintf("run-%d", caller)})
						cancel()
						if took := time.Since(began); took > writes.DefaultWriteBound {
							t.Errorf("%s, caller %d, try %d: answered after %v, past the bound", key, caller, try, took)
						}
						if err == nil {
							mu.Lock()
							if id, ok := items[key]; ok && id != r.Item.Ref.ID {
								t.Errorf("%s: answered %s and %s", key, id, r.Item.Ref.ID)
							}
							items[key] = r.Item.Ref.ID
							mu.Unlock()
							return
						}
						var we *writes.Error
						if !errors.As(err, &we) || !we.Code.Retryable() {
							break
						}
						time.Sleep(max(we.RetryAfter, time.Second))
					}
					t.Errorf("%s, caller %d: no item after three tries: %v", key, caller, err)
				})
			}
		}
		wg.Wait()
		perKey, created := fake.Filed()
		if len(perKey) != keys || created != keys {
			t.Fatalf("%d keys filed with %d items, want %d once each", len(perKey), created, keys)
		}
		lost := lossy.lostCount()
		if lost == 0 {
			t.Fatal("no answer was lost: the test tests nothing")
		}
		if finds := fake.Calls(faketracker.MethodFind); finds != lost {
			t.Fatalf("%d look-ups for %d answers lost, want one a key in doubt", finds, lost)
		}
		if n := m.Get(metrics.DoubtLookups); int(n) != lost {
			t.Fatalf("the doubt look-ups counted %v, want %d", n, lost)
		}
		t.Logf("%d keys, %d answers lost, %d look-ups", keys, lost, fake.Calls(faketracker.MethodFind))
	})
}

// A write that never left relayr (it waited for a write slot and gave
// up) releases its claim at once (ADR-0033: the tracker certainly did not
// take it): the next caller files at once, with no look-up.
func TestAWriteNeverSentReleasesItsClaimAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := faketracker.New(faketracker.LikeVikunja)
		gated := &unsentOnce{Tracker: fake}
		w := writerOver(gated, memledger.New(), metrics.Discard{})
		p := writes.EnsureParams{Tenant: "acme", Workspace: "ops", Key: "k", Draft: tracker.Draft{Title: "x"}}
		_, err := w.EnsureItem(context.Background(), p)
		if !errors.Is(err, writes.ErrUnavailable) {
			t.Fatalf("the unsent write answered %v, want tracker_unavailable", err)
		}
		began := time.Now()
		r, err := w.EnsureItem(context.Background(), p)
		if err != nil || r.How != writes.Created {
			t.Fatalf("the next caller: %+v, %v; want the key filed", r, err)
		}
		if waited := time.Since(began); waited != 0 {
			t.Fatalf("the next caller waited %v, want none", waited)
		}
		if n := fake.Calls(faketracker.MethodFind); n != 0 {
			t.Fatalf("%d look-ups, want none: nothing was sent", n)
		}
	})
}

func writerOver(tr tracker.Driver, l *memledger.Ledger, m metrics.Metrics) *writes.Writer {
	return coretest.NewWorld(coretest.WorldOptions{Driver: tr, Ledger: l, Writes: writes.Config{Metrics: m}}).Writer
}

// pacedCreate makes each create take took.
type pacedCreate struct {
	*faketracker.Tracker
	took time.Duration
}

func (p *pacedCreate) Create(ctx context.Context, key string, d tracker.Draft) (tracker.Item, error) {
	time.Sleep(p.took)
	return p.Tracker.Create(ctx, key, d)
}

// losingAnswers makes the item on every create, and loses the answer of a
// share of them, as a proxy answering 504 after the tracker made the item.
type losingAnswers struct {
	*faketracker.Tracker
	mu    sync.Mutex
	rng   *rand.Rand
	share float64
	lost  int
}

func (l *losingAnswers) Create(ctx context.Context, key string, d tracker.Draft) (tracker.Item, error) {
	time.Sleep(50 * time.Millisecond)
	it, err := l.Tracker.Create(ctx, key, d)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil && l.rng.Float64() < l.share {
		l.lost++
		return tracker.Item{}, fmt.Errorf("%w: 504 Gateway Timeout", tracker.ErrUnavailable)
	}
	return it, err
}

func (l *losingAnswers) lostCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

// unsentOnce fails its first create as never sent.
type unsentOnce struct {
	*faketracker.Tracker
	mu   sync.Mutex
	done bool
}

func (u *unsentOnce) Create(ctx context.Context, key string, d tracker.Draft) (tracker.Item, error) {
	u.mu.Lock()
	first := !u.done
	u.done = true
	u.mu.Unlock()
	if first {
		return tracker.Item{}, tracker.NotSent(errors.New("waiting for the server's other writes: context deadline exceeded"))
	}
	return u.Tracker.Create(ctx, key, d)
}

// A comment's callers are waited for as a filing's are: two callers of one
// comment key, arriving together, both answered the one comment, never
// tracker_claimed; a caller on another replica is answered it once it is
// recorded.
func TestCallersOfOneCommentKeyAreAllAnsweredTheOneComment(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := faketracker.New(faketracker.LikeVikunja)
		slow := &pacedComment{Tracker: fake, took: 300 * time.Millisecond}
		led := memledger.New()
		w := writerOver(slow, led, metrics.Discard{})
		if _, err := w.EnsureItem(context.Background(), writes.EnsureParams{Tenant: "acme", Workspace: "ops", Key: "k", Draft: tracker.Draft{Title: "t"}}); err != nil {
			t.Fatal(err)
		}
		other := writerOver(slow, led, metrics.Discard{}) // another replica on the same ledger
		p := writes.CommentParams{Tenant: "acme", Workspace: "ops", ItemKey: "k", Key: "ci/log-1", Body: "the log"}
		var wg sync.WaitGroup
		got := make([]writes.CommentResult, 3)
		errs := make([]error, 3)
		for i, wr := range []*writes.Writer{w, w, other} {
			wg.Go(func() { got[i], errs[i] = wr.Comment(context.Background(), p) })
		}
		wg.Wait()
		for i := range got {
			if errs[i] != nil {
				t.Fatalf("caller %d: %v", i, errs[i])
			}
			if got[i].Comment.ID != got[0].Comment.ID {
				t.Fatalf("caller %d answered %s, caller 0 %s", i, got[i].Comment.ID, got[0].Comment.ID)
			}
		}
		if n := fake.Calls(faketracker.MethodComment); n != 1 {
			t.Fatalf("%d comments posted, want 1", n)
		}
	})
}

// pacedComment makes each comment take took.
type pacedComment struct {
	*faketracker.Tracker
	took time.Duration
}

func (p *pacedComment) Comment(ctx context.Context, id, key, body string) (tracker.Comment, error) {
	time.Sleep(p.took)
	return p.Tracker.Comment(ctx, id, key, body)
}
