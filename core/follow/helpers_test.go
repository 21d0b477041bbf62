package follow_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/core/binding"
	"github.com/relayr-go/relayr/core/budget"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/coretest"
	"github.com/relayr-go/relayr/core/deliver"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/faketracker"
	"github.com/relayr-go/relayr/core/follow"
	"github.com/relayr-go/relayr/core/integrations"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/ledger/memledger"
	"github.com/relayr-go/relayr/core/metrics"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
)

// Every test here runs inside a synctest bubble with clock.System: its time
// is virtual, so a 30 s poll or a day's sweep passes at once, and a
// goroutine left behind fails the test.

const (
	tenant    = "acme"
	workspace = "ops"
	secret    = "whsec"
)

// env is one process's followers over a fake tracker and a memory ledger.
type env struct {
	t      *testing.T
	fake   *faketracker.Tracker
	rec    *recorder
	led    *coretest.FaultLedger
	mem    *memledger.Ledger
	log    *coretest.FaultLog
	conns  *binding.Connections
	sw     *integrations.Switches
	m      *metrics.Memory
	bud    *budget.Budget
	w      *writes.Writer
	b      binding.Binding
	cfg    follow.Config
	fs     *follow.Followers
	ctx    context.Context
	logger *slog.Logger
	// fetching: the fake reads several items by id at once.
	fetching bool
}

type option func(*env)

// fakeOptions are given to every env's fake: the follower's cases run
// again with a fake that lists the project's comments in one read.
var fakeOptions []faketracker.Option

func newFake(f faketracker.Flavour, opts ...faketracker.Option) *faketracker.Tracker {
	return faketracker.New(f, append(slices.Clone(fakeOptions), opts...)...)
}

func withFlavour(f faketracker.Flavour) option {
	return func(e *env) { e.fake = newFake(f) }
}

// withSanitizing makes the fake Plane-like and sanitizing: it rewrites the
// descriptions it holds, and compares them as Plane's adapter does.
func withSanitizing() option {
	return func(e *env) { e.fake = newFake(faketracker.LikePlane, faketracker.Sanitizing()) }
}

// withFetching makes the fake a tracker that reads several items by id in
// one request (faketracker.ItemsFetching, tracker.ItemsFetcher).
func withFetching() option { return func(e *env) { e.fetching = true } }

func withSince(t time.Time) option        { return func(e *env) { e.b.Since = t } }
func withBudget(limit int) option         { return func(e *env) { e.bud = budget.New(clock.System{}, limit) } }
func withOptions(o follow.Options) option { return func(e *env) { e.cfg.Options = o } }
func withLogger(l *slog.Logger) option    { return func(e *env) { e.logger = l } }
func withProjection(p deliver.Projection) option {
	return func(e *env) { e.cfg.Projections = map[string]deliver.Projection{tenant + "/" + workspace: p} }
}

func newEnv(t *testing.T, opts ...option) *env {
	t.Helper()
	e := &env{t: t, fake: newFake(faketracker.LikePlane), mem: memledger.New(), sw: integrations.NewSwitches(), m: metrics.NewMemory()}
	e.b = binding.Binding{Tenant: tenant, Workspace: workspace}
	e.bud = budget.New(clock.System{}, 1000)
	// The seeds' sweep, once a day, unless a test asks for sweeps on an
	// idle budget: most tests count a poll's requests.
	e.cfg.Options.SweepMin = -1
	for _, o := range opts {
		o(e)
	}
	e.rec = &recorder{Tracker: e.fake}
	e.b.Connector = coretest.Connector{Driver: e.rec}
	if e.fetching {
		e.b.Connector = coretest.Connector{Driver: fetchingRecorder{e.rec}}
	}
	e.led = &coretest.FaultLedger{Ledger: e.mem}
	e.log = &coretest.FaultLog{Log: e.mem}
	e.conns = binding.NewConnections(clock.System{}, tracker.StaticCredentials{tenant + "/fake": {Token: "tk", WebhookSecret: secret}}, e.b)
	e.w = writes.New(writes.Config{Ledger: e.led, Log: e.log, Connections: e.conns, Integrations: e.sw, Budget: e.bud, Metrics: e.m})
	e.cfg.Ledger, e.cfg.Log, e.cfg.Connections = e.led, e.log, e.conns
	e.cfg.Integrations, e.cfg.Budget, e.cfg.Metrics = e.sw, e.bud, e.m
	e.cfg.Logger = e.logger
	if e.cfg.Logger == nil {
		e.cfg.Logger = slog.New(slog.DiscardHandler)
	}
	e.cfg.Holder = "replica-a"
	e.fs = follow.New(e.cfg)
	ctx, cancel := context.WithCancel(t.Context())
	e.ctx = ctx
	t.Cleanup(func() { e.fs.Stop(); cancel() })
	return e
}

// bubble runs a test on virtual time.
func bubble(t *testing.T, fn func(t *testing.T)) {
	t.Helper()
	synctest.Test(t, fn)
}

// start runs the followers, lets their first poll finish, and a second
// pass: on virtual time nothing else moves the clock, and a change in the
// very instant of a read is one the read may or may not have seen.
func (e *env) start() {
	e.fs.Start(e.ctx)
	synctest.Wait()
	e.after(time.Second)
}

// after lets d of virtual time pass, everything that was due having run.
func (e *env) after(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

// poll lets one poll interval pass.
func (e *env) poll() { e.after(follow.DefaultPollEvery) }

func (e *env) events() []eventlog.Event {
	e.t.Helper()
	evs, err := e.mem.Read(context.Background(), tenant, workspace, 0, 1<<20)
	if err != nil {
		e.t.Fatal(err)
	}
	return evs
}

func (e *env) data(ev eventlog.Event) follow.Data {
	e.t.Helper()
	d, err := follow.DataOf(ev)
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

func (e *env) wantEvents(n int) []eventlog.Event {
	e.t.Helper()
	evs := e.events()
	if len(evs) != n {
		for _, ev := range evs {
			e.t.Logf("event %s %s", ev.Type, ev.Data)
		}
		e.t.Fatalf("%d events, want %d", len(evs), n)
	}
	return evs
}

func (e *env) person(title string) tracker.Item {
	e.t.Helper()
	it, err := e.fake.PersonCreate(tracker.Draft{Title: title, State: tracker.Todo})
	if err != nil {
		e.t.Fatal(err)
	}
	return it
}

func (e *env) ensure(key string, d tracker.Draft) tracker.Item {
	e.t.Helper()
	r, err := e.w.EnsureItem(context.Background(), writes.EnsureParams{Tenant: tenant, Workspace: workspace, Key: key, Draft: d, Correlation: "run-" + key})
	if err != nil {
		e.t.Fatalf("EnsureItem(%q): %v", key, err)
	}
	return r.Item
}

func (e *env) update(key string, p tracker.Patch) error {
	_, err := e.w.Update(context.Background(), writes.UpdateParams{Tenant: tenant, Workspace: workspace, Key: key, Patch: p})
	return err
}

func (e *env) row(key string) ledger.Claim {
	e.t.Helper()
	r, err := e.mem.Lookup(context.Background(), ledger.Key{Tenant: tenant, Workspace: workspace, Kind: ledger.KindItem, Key: key})
	if err != nil {
		e.t.Fatalf("Lookup(%q): %v", key, err)
	}
	return r
}

func (e *env) cursor() ledger.Cursor {
	e.t.Helper()
	c, err := e.mem.Cursor(context.Background(), trackerFollower)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

var trackerFollower = ledger.Follower{Kind: ledger.TrackerFollower, Tenant: tenant, Workspace: workspace, Name: "fake"}

// second makes another process's followers over the same ledger, log and
// tracker, with a recorder of its own.
func (e *env) second(holder string) (*follow.Followers, *recorder) {
	cfg := e.cfg
	cfg.Holder = holder
	rec := &recorder{Tracker: e.fake}
	b := e.b
	b.Connector = coretest.Connector{Driver: rec}
	cfg.Connections = binding.NewConnections(clock.System{}, tracker.StaticCredentials{tenant + "/fake": {Token: "tk", WebhookSecret: secret}}, b)
	fs := follow.New(cfg)
	e.t.Cleanup(fs.Stop)
	return fs, rec
}

// recorder wraps the fake to keep the queries polls made and when.
// fetchingRecorder is the recorder over a fake that reads several items by
// id in one request.
type fetchingRecorder struct{ *recorder }

func (f fetchingRecorder) FetchItems(ctx context.Context, ids []string) (map[string]tracker.Item, error) {
	return faketracker.ItemsFetching{Tracker: f.Tracker}.FetchItems(ctx, ids)
}

type recorder struct {
	*faketracker.Tracker
	mu      sync.Mutex
	queries []query
	// during, when set, answers the next Items call in the tracker's
	// place, once: what happens while its request is on its way.
	during func(context.Context, tracker.Query) (tracker.Page, error)
}

type query struct {
	at time.Time
	q  tracker.Query
}

func (r *recorder) Items(ctx context.Context, q tracker.Query) (tracker.Page, error) {
	r.mu.Lock()
	r.queries = append(r.queries, query{at: time.Now(), q: q})
	during := r.during
	r.during = nil
	r.mu.Unlock()
	if during == nil {
		return r.Tracker.Items(ctx, q)
	}
	// The request goes out now; what during does happens while it is on
	// its way, and the tracker answers after. Its own calls are no
	// request of the follower's.
	tracker.Sent(ctx)
	time.Sleep(time.Millisecond)
	return during(context.WithoutCancel(context.Background()), q)
}

// answerNext sets during, under the recorder's lock.
func (r *recorder) answerNext(during func(context.Context, tracker.Query) (tracker.Page, error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.during = during
}

// count answers how many queries the polls made.
func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.queries)
}

// first answers the first query of each read (each poll's, and each
// sweep's).
func (r *recorder) first() []query {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []query
	for _, q := range r.queries {
		if q.q.Page == "" {
			out = append(out, q)
		}
	}
	return out
}

// sweeps answers the sweeps' first queries after the first read, on a
// project with items (whose polls read from their cursor, never from the
// beginning).
func (r *recorder) sweeps() []query {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []query
	for i, q := range r.queries {
		if i > 0 && q.q.Page == "" && q.q.Since.IsZero() {
			out = append(out, q)
		}
	}
	return out
}

var errDisk = errors.New("disk on fire")
