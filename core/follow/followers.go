// Package follow reads back what relayr can't be told: the tracker
// followers turn what people do in a bound tracker project into an
// exactly-once stream of tracker: events (ADR-0036), and the log followers
// deliver a workspace's event log, in sequence, to a sink (ADR-0015).
//
// Both kinds hold a lease in the ledger, so one process at a time does the
// work, but neither's guarantee rests on it: every event's id is derived
// from what it says, and the log and the sink take an id once, so a page read
// twice, by another replica or after a restart, publishes nothing new. A
// tracker follower drops relayr's own writes by the values the ledger
// recorded for them, and a person's change on an item a run filed joins that
// run's chain by the key's correlation id, without causation, so nothing
// loops through a tracker unseen.
//
// Every timing is an Option with the seeds' default, and every wait goes
// through a clock.Clock, so tests run on virtual time.
package follow

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/relayr-go/relayr/core/binding"
	"github.com/relayr-go/relayr/core/budget"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/deliver"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/integrations"
	"github.com/relayr-go/relayr/core/lease"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/metrics"
	"github.com/relayr-go/relayr/core/tracker"
)

// Config is what the tracker followers need.
type Config struct {
	Ledger ledger.Ledger
	// Log is where the tracker: events (or their projections) go.
	Log eventlog.Log
	// Connections holds the bindings to follow and their credentials.
	Connections  *binding.Connections
	Integrations integrations.Integrations // Always when nil
	Clock        clock.Clock               // System when nil
	// Budget is the process's request budget, shared with the writes;
	// polls take only what is left. No limit when nil.
	Budget  *budget.Budget
	Metrics metrics.Metrics // Discard when nil
	Logger  *slog.Logger    // slog.Default() when nil
	// Holder names this process in the leases; a random name when "".
	Holder string
	// Projections maps a bound workspace ("<tenant>/<workspace>") to its
	// projection. A workspace without one publishes the tracker: events as
	// they are.
	Projections map[string]deliver.Projection
	Options     Options
}

// Followers runs one tracker follower per binding (ADR-0036:
// TrackerFollowers). It is safe for concurrent use.
type Followers struct {
	ledger ledger.Ledger
	log    eventlog.Log
	conns  *binding.Connections
	integ  integrations.Integrations
	clock  clock.Clock
	budget *budget.Budget
	m      metrics.Metrics
	logger *slog.Logger
	holder string
	projs  map[string]deliver.Projection
	opts   Options

	// phases are each binding's place in its key's interval, in [0, 1):
	// the bindings of a key, by name, spread evenly over it.
	phases map[string]float64

	mu      sync.Mutex
	ctx     context.Context
	cancel  context.CancelFunc
	running map[string]*follower
	stopped map[string]error
	wg      sync.WaitGroup
	// watching: the watchdog runs.
	watching bool
	// share is this replica's part of the leases (share.go).
	share *share
}

// ErrStopped is what a stopped follower's error matches: it met something
// it must not skip (a refused publish, a failing log) and waits for its
// workspace to be opened again.
var ErrStopped = errors.New("follow: follower stopped")

// New returns the followers of every binding in c.Connections. Nothing runs
// before Start.
func New(c Config) *Followers {
	fs := &Followers{
		ledger: c.Ledger, log: c.Log, conns: c.Connections, integ: c.Integrations, clock: c.Clock,
		budget: c.Budget, m: c.Metrics, logger: c.Logger, holder: c.Holder, projs: c.Projections,
		opts: c.Options.withDefaults(), running: map[string]*follower{}, stopped: map[string]error{},
	}
	if fs.integ == nil {
		fs.integ = integrations.Always
	}
	if fs.clock == nil {
		fs.clock = clock.System{}
	}
	if fs.m == nil {
		fs.m = metrics.Discard{}
	}
	if fs.logger == nil {
		fs.logger = slog.Default()
	}
	if fs.holder == "" {
		fs.holder = lease.NewHolder()
	}
	// Every binding's polls are reckoned in its key's budget, which
	// stretches them where the key has more than it can poll once an
	// interval; the bindings of a key take turns over the interval.
	byKey := map[string][]string{}
	for _, b := range fs.conns.Bindings() {
		byKey[b.BudgetKey()] = append(byKey[b.BudgetKey()], b.Name())
		if fs.budget != nil {
			fs.budget.Follow(b.BudgetKey(), b.Name(), fs.opts.PollEvery)
		}
	}
	fs.share = newShare(len(fs.conns.Bindings()))
	fs.phases = map[string]float64{}
	for _, names := range byKey {
		slices.Sort(names)
		for i, name := range names {
			fs.phases[name] = float64(i) / float64(len(names))
		}
	}
	return fs
}

// phase is how long into its interval a binding's polls come.
func (fs *Followers) phase(b binding.Binding, interval time.Duration) time.Duration {
	return time.Duration(fs.phases[b.Name()] * float64(interval))
}

// Holder answers the name this process holds leases under.
func (fs *Followers) Holder() string { return fs.holder }

// Start follows every binding it was given, whether or not its workspace
// was ever opened (ADR-0036: "resume follows every binding it was given").
// The followers run until ctx ends or Stop is called.
func (fs *Followers) Start(ctx context.Context) {
	fs.mu.Lock()
	if fs.ctx == nil {
		fs.ctx, fs.cancel = context.WithCancel(ctx)
	}
	ctx = fs.ctx
	fs.mu.Unlock()
	// The replica counts the others before its followers take a lease, so
	// a start takes its share, not everything.
	fs.beat(ctx)
	for _, b := range fs.conns.Bindings() {
		fs.start(b)
	}
	fs.watch()
}

// watch beats the replica's heartbeat every third of a lease (share.go),
// and warns of a follower that holds its lease and completed no poll in
// DefaultLateAfter of its intervals (a starved read back was once silent);
// the follower says when it polls again.
func (fs *Followers) watch() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.ctx.Err() != nil || fs.watching {
		return
	}
	fs.watching = true
	ctx := fs.ctx
	fs.wg.Go(func() {
		for clock.Sleep(ctx, fs.clock, fs.opts.renewEvery()) == nil {
			fs.beat(ctx)
			now := fs.clock.Now()
			for _, f := range fs.runningFollowers() {
				interval := f.interval()
				late := false
				var since time.Time
				f.update(func(s *state) {
					since = s.polled
					if since.Before(s.heldSince) {
						since = s.heldSince
					}
					if s.held && !s.late && now.Sub(since) > DefaultLateAfter*interval {
						s.late, late = true, true
					}
				})
				if late {
					fs.logger.Warn("tracker follower completed no poll in three intervals", "binding", f.b.Name(),
						"since", since, "interval", interval)
				}
			}
		}
	})
}

func (fs *Followers) runningFollowers() []*follower {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	out := make([]*follower, 0, len(fs.running))
	for _, f := range fs.running {
		out = append(out, f)
	}
	return out
}

// Open follows a workspace's binding again after its follower stopped, or
// for the first time (the seeds' watch, their on_open hook). It does
// nothing for a follower that runs.
func (fs *Followers) Open(ctx context.Context, tenant, workspace string) error {
	b, err := fs.conns.Binding(tenant, workspace)
	if err != nil {
		return err
	}
	fs.mu.Lock()
	if fs.ctx == nil {
		fs.ctx, fs.cancel = context.WithCancel(ctx)
	}
	fs.mu.Unlock()
	fs.start(b)
	return nil
}

func (fs *Followers) start(b binding.Binding) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.ctx.Err() != nil {
		return
	}
	if _, ok := fs.running[b.Name()]; ok {
		return
	}
	delete(fs.stopped, b.Name())
	f := newFollower(fs, b)
	fs.running[b.Name()] = f
	fs.wg.Add(1)
	go func() {
		defer fs.wg.Done()
		err := f.run(fs.ctx)
		fs.mu.Lock()
		delete(fs.running, b.Name())
		if err != nil {
			fs.stopped[b.Name()] = err
		}
		fs.mu.Unlock()
		if err != nil {
			// A stopped follower is counted, so an operator sees it
			// without reading logs (ADR-0015's consequences).
			fs.m.Add(metrics.FollowersStopped, 1, metrics.Labels{"tenant": b.Tenant, "workspace": b.Workspace, "kind": string(ledger.TrackerFollower)})
			fs.logger.Error("tracker follower stopped", "binding", b.Name(), "err", err, "reopen_after", fs.opts.ReopenAfter)
			if fs.opts.ReopenAfter > 0 && clock.Sleep(fs.ctx, fs.clock, fs.opts.ReopenAfter) == nil {
				fs.start(b) // from its cursor, as Open would
			}
		}
	}()
}

// Stop stops every follower and waits for them; each gives its lease up at
// once, so another replica takes over without waiting for it to lapse. A
// stopped Followers starts nothing again: a restarted process makes a new
// one.
func (fs *Followers) Stop() {
	fs.mu.Lock()
	if fs.ctx == nil {
		fs.ctx, fs.cancel = context.WithCancel(context.Background())
	}
	fs.cancel()
	fs.mu.Unlock()
	fs.wg.Wait()
	// Counted out at once: the others take their shares of what it gave
	// up at their next beat, without waiting for its beat to lapse.
	if !fs.share.beaten.Load() {
		return
	}
	lctx, cancel := fs.clock.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := fs.ledger.Leave(lctx, fs.holder, fs.clock.Now()); err != nil {
		fs.logger.Warn("replica could not leave", "holder", fs.holder, "err", err)
	}
}

// Stopped answers why a workspace's follower stopped (an error matching
// ErrStopped), or nil when it did not.
func (fs *Followers) Stopped(tenant, workspace string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.stopped[tenant+"/"+workspace]
}

func (fs *Followers) followersOf(tenant, kind string) []*follower {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	var out []*follower
	for _, f := range fs.running {
		if f.b.Tenant == tenant && f.b.Kind() == kind {
			out = append(out, f)
		}
	}
	return out
}

// Nudge wakes the followers this process runs of a tenant's project on a
// tracker kind, debounced (ADR-0036: "A verified nudge wakes the followers
// this process runs of the project it names, debounced by 2 s"). A
// switched-off workspace's follower is not woken: each nudge asks the
// switch first. It answers how many followers it woke.
func (fs *Followers) Nudge(ctx context.Context, tenant, kind, project string) int {
	return fs.wakeSwitchedOn(ctx, tenant, kind, tracker.Nudged{Project: project})
}

// Credentials answers the credentials a tenant's followers of a tracker
// kind last asked for, without asking (ADR-0036: a webhook's signature is
// checked "with the credentials the tenant's followers last asked for,
// never asked for on a request"). It answers false when none did yet.
func (fs *Followers) Credentials(tenant, kind string) (tracker.Credentials, bool) {
	for _, b := range fs.conns.Bindings() {
		if b.Tenant != tenant || b.Kind() != kind {
			continue
		}
		if c, ok := fs.conns.LastCredentials(b); ok {
			return c, true
		}
	}
	return tracker.Credentials{}, false
}

// ErrSwitchedOff is PollOnce's answer for a workspace whose tracker is
// switched off, which reads nothing.
var ErrSwitchedOff = errors.New("follow: the tracker is switched off in this workspace")

// PollOnce reads a workspace's project once, now, as its follower would:
// it takes the follower's lease (failing with an error matching
// ledger.ErrLeaseHeld while another holder has it), reads, and gives the
// lease up. It is for one-shot commands and examples; a running process
// uses Start. A read out of budget ends early without error, as a poll does.
func (fs *Followers) PollOnce(ctx context.Context, tenant, workspace string) error {
	b, err := fs.conns.Binding(tenant, workspace)
	if err != nil {
		return err
	}
	f := newFollower(fs, b)
	if !f.enabled(ctx) {
		return ErrSwitchedOff
	}
	ls := &lease.Lease{Ledger: fs.ledger, Clock: fs.clock, Follower: f.id, Holder: fs.holder, TTL: fs.opts.LeaseTTL}
	if err := ls.Take(ctx); err != nil {
		return err
	}
	defer ls.Release(ctx)
	if err := f.read(ctx, &pollRun{use: accessFloor}); err != nil && !errors.Is(err, errOutOfBudget) {
		return err
	}
	return nil
}
