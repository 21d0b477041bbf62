package ledgerpg_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/ledgerpg"
	"github.com/relayr-go/relayr/adapters/ledgerpg/pgtest"
	"github.com/relayr-go/relayr/core/coretest"
	"github.com/relayr-go/relayr/core/faketracker"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
)

// replicas are two relayr replicas on one PostgreSQL ledger, filing into
// one tracker: each its own pool and its own Writer, as two processes.
type replicas struct {
	fake *faketracker.Tracker
	gate *gatedCreate
	a, b *writes.Writer
	// reread is closed when b first reads a claim's row again: its caller
	// is waiting for the holder.
	reread chan struct{}
}

// rereading tells when a waiting caller first reads a row again.
type rereading struct {
	writes.Ledger
	once   sync.Once
	reread chan struct{}
}

func (l *rereading) Lookup(ctx context.Context, k ledger.Key) (ledger.Claim, error) {
	l.once.Do(func() { close(l.reread) })
	return l.Ledger.Lookup(ctx, k)
}

func newReplicas(t testing.TB, rls bool) *replicas {
	t.Helper()
	first := newStore(t, rls, nil)
	cfg := pgtest.Admin(t)
	if rls {
		cfg = pgtest.Restricted(t, first.schema)
	}
	second := ledgerpg.New(pgtest.Open(t, cfg), ledgerpg.Options{Schema: first.schema, RLS: rls})
	fake := faketracker.New(faketracker.LikeVikunja)
	gate := &gatedCreate{Tracker: fake}
	writer := func(l writes.Ledger) *writes.Writer {
		return coretest.NewWorld(coretest.WorldOptions{Driver: gate, Ledger: l}).Writer
	}
	rr := &rereading{Ledger: second, reread: make(chan struct{})}
	return &replicas{fake: fake, gate: gate, a: writer(first.Ledger), b: writer(rr), reread: rr.reread}
}

// gatedCreate holds a create until the test lets it go, when hold is set.
type gatedCreate struct {
	*faketracker.Tracker
	mu      sync.Mutex
	entered chan struct{}
	release chan struct{}
}

func (g *gatedCreate) hold() (entered, release chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.entered, g.release = make(chan struct{}), make(chan struct{})
	return g.entered, g.release
}

func (g *gatedCreate) Create(ctx context.Context, key string, d tracker.Draft) (tracker.Item, error) {
	g.mu.Lock()
	entered, release := g.entered, g.release
	g.mu.Unlock()
	if entered != nil {
		close(entered)
		<-release
	}
	return g.Tracker.Create(ctx, key, d)
}

func ensure(w *writes.Writer, key string) (writes.Result, error) {
	return w.EnsureItem(context.Background(), writes.EnsureParams{Tenant: "acme", Workspace: "ops", Key: key,
		Draft: tracker.Draft{Title: "filed as " + key}, Correlation: "run"})
}

// A second caller on another replica than the holder's waits for the
// holder's record, read from the ledger, and is answered the item: never
// tracker_claimed, nothing sent to the tracker, one item filed.
func TestACallerOnAnotherReplicaIsAnsweredTheHoldersItem(t *testing.T) {
	for _, run := range pgtest.Modes {
		t.Run(run.Name, func(t *testing.T) {
			t.Parallel()
			r := newReplicas(t, run.RLS)
			entered, release := r.gate.hold()
			first := make(chan writes.Result, 1)
			go func() {
				res, err := ensure(r.a, "ci/1")
				if err != nil {
					t.Errorf("the holder: %v", err)
				}
				first <- res
			}()
			<-entered
			second := make(chan error, 1)
			var got writes.Result
			go func() {
				var err error
				got, err = ensure(r.b, "ci/1")
				second <- err
			}()
			<-r.reread // the other replica's caller waits for the holder
			close(release)
			filed := <-first
			if err := <-second; err != nil {
				t.Fatalf("the caller on the other replica: %v", err)
			}
			if got.Item.Ref.ID != filed.Item.Ref.ID {
				t.Fatalf("the other replica answered %s, the holder filed %s", got.Item.Ref.ID, filed.Item.Ref.ID)
			}
			if n := r.fake.TotalCalls(); n != 1 {
				t.Fatalf("%d calls to the tracker, want the holder's create alone", n)
			}
			if _, created := r.fake.Filed(); created != 1 {
				t.Fatalf("%d items filed, want 1", created)
			}
		})
	}
}

// BenchmarkSecondReplicasWait is how long a caller on another replica than
// the holder's waits past the holder's record (the holder's filing takes
// 50 ms): p50 and p99 in ms, of b.N keys.
func BenchmarkSecondReplicasWait(b *testing.B) {
	for _, run := range pgtest.Modes {
		b.Run(run.Name, func(b *testing.B) {
			r := newReplicas(b, run.RLS)
			var lags []time.Duration
			for i := range b.N {
				key := fmt.Sprintf("bench/%d", i)
				entered, release := r.gate.hold()
				recorded := make(chan time.Time, 1)
				go func() {
					_, err := ensure(r.a, key)
					if err != nil {
						b.Error(err)
					}
					recorded <- time.Now()
				}()
				<-entered
				answered := make(chan time.Time, 1)
				go func() {
					_, err := ensure(r.b, key)
					if err != nil {
						b.Error(err)
					}
					answered <- time.Now()
				}()
				time.Sleep(50 * time.Millisecond) // the holder's filing
				close(release)
				at := <-recorded
				lags = append(lags, (<-answered).Sub(at))
			}
			slices.Sort(lags)
			b.ReportMetric(float64(lags[len(lags)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lags[len(lags)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
