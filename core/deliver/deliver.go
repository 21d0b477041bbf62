// Package deliver is ADR-0015's side of relayr: a log follower per
// subscription relays its workspace's event log, in order and each event
// once by its id, into the subscription's Sink (a webhook subscriber, a
// NATS JetStream stream, another log), from a cursor it saves in the
// ledger, under a lease so one replica at a time relays it. A sink that
// fails for now is retried from the cursor, backing off; an event the
// subscription's projection refuses is a dead letter, which the Resolver
// replays or skips once. Followers wake at their log's next append when the
// log tells (eventlog.Notifying). Every sink runs sinktest; memsink is the
// in-memory one. core/follow is the other side: the tracker followers that
// fill the log.
package deliver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/lease"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/metrics"
)

// Sink takes what a log follower publishes (ADR-0015: "publishes what it
// selects ... with the same ids"). In the app a sink delivers to a
// subscriber; LogSink appends to another log.
type Sink interface {
	// Publish publishes e, keyed by e.ID: an id the sink already took
	// publishes nothing new and answers nil, so an entry read twice is
	// delivered once. Any error stops the follower at that entry, to
	// start again there when its log is followed again: ErrUnknownType
	// when the sink does not accept e's type (the application's
	// configuration, not the entry's fault), anything else for a refused
	// publish or a failure.
	Publish(ctx context.Context, e eventlog.Event) error
}

// BatchSink is a Sink that takes several events at once, in order: a broker
// that acknowledges publishes asynchronously takes a page of them in about
// the time one takes. The follower saves its cursor after each batch rather
// than after each event; the ids make a batch read again after a crash
// publish nothing twice (ADR-0015's departures).
type BatchSink interface {
	Sink
	// PublishBatch publishes es in order, each keyed by its ID as Publish
	// does, and answers how many of them, from the first, the sink took
	// before the first it did not, with that failure. A later event is
	// never taken before an earlier one.
	PublishBatch(ctx context.Context, es []eventlog.Event) (int, error)
}

// ErrRetry is what a sink's failure matches when it passes (a broker or a
// subscriber down, slow, full, or refusing the credentials for now): the
// follower counts it, says why in its status, and publishes again from its
// cursor after a backoff, holding its lease, skipping nothing. Any other
// failure stops the follower (ADR-0015).
var ErrRetry = errors.New("deliver: the sink failed for now; retrying")

// RetryError is a sink's failure that passes, with a short reason for the
// metrics (unreachable, timeout, stream_full, …). It matches ErrRetry.
type RetryError struct {
	Reason string
	Err    error
}

// Retry marks err as a failure that passes, for reason.
func Retry(reason string, err error) error { return &RetryError{Reason: reason, Err: err} }

func (e *RetryError) Error() string { return e.Err.Error() }

// Unwrap answers the failure.
func (e *RetryError) Unwrap() error { return e.Err }

// Is makes a RetryError match ErrRetry.
func (e *RetryError) Is(target error) bool { return target == ErrRetry }

// reasonOf is a failure's reason for the metrics.
func reasonOf(err error) string {
	var r *RetryError
	if errors.As(err, &r) && r.Reason != "" {
		return r.Reason
	}
	return "failed"
}

type reporterKey struct{}

// ReportFailure tells the log follower whose Publish call ctx belongs to
// that an attempt failed and that the sink tries again itself (the HTTP
// subscriber retries internally): the follower's status and metrics say
// why. Outside a follower's call it does nothing.
func ReportFailure(ctx context.Context, err error) {
	if report, ok := ctx.Value(reporterKey{}).(func(error)); ok && err != nil {
		report(err)
	}
}

// ErrUnknownType says the sink does not accept an event's type. A sink answers
// an error matching it; the follower stops rather than dead-letter it, which
// would skip every later entry of the type (ADR-0015).
var ErrUnknownType = errors.New("deliver: the sink does not accept this type")

// LogSink publishes into an event log as Publisher: what bridges one log
// into another. The log appends an id once, as a Sink must.
type LogSink struct {
	Log       eventlog.Log
	Publisher string
}

// Publish implements Sink.
func (s LogSink) Publish(ctx context.Context, e eventlog.Event) error {
	_, _, err := s.Log.Append(ctx, eventlog.AppendParams{Publisher: s.Publisher, Event: e})
	return err
}

// Subscription is what one followed log delivers and where.
type Subscription struct {
	// Projection selects and maps each entry; nil publishes every entry
	// as it is.
	Projection Projection
	Sink       Sink
}

// Config is what the log followers need.
type Config struct {
	Ledger ledger.Followers
	// Log is the log the followers relay. One that tells when it grows in
	// this process (eventlog.Notifying) wakes a waiting follower at its
	// next append; any other is read again every PollEvery.
	Log eventlog.Log
	// Subscriptions answers a followed log's subscription, for the logs
	// Start resumes; an error leaves that log unfollowed, logged.
	Subscriptions func(ctx context.Context, f ledger.Follower) (Subscription, error)
	Clock         clock.Clock     // System when nil
	Metrics       metrics.Metrics // Discard when nil
	Logger        *slog.Logger    // slog.Default() when nil
	// Holder names this process in the leases; a random name when "".
	Holder  string
	Options Options
}

// Followers runs one follower per followed log (ADR-0015). It is safe for
// concurrent use.
type Followers struct {
	c    Config
	opts Options

	mu      sync.Mutex
	ctx     context.Context
	cancel  context.CancelFunc
	running map[ledger.Follower]*logFollower
	stopped map[ledger.Follower]error
	states  map[ledger.Follower]*followerState
	wg      sync.WaitGroup
}

// State is what a log follower is doing.
type State string

// A log follower's states.
const (
	// Running: it holds its lease and relays.
	Running State = "running"
	// Waiting: another holder has its lease (another replica relays),
	// or it is taking it.
	Waiting State = "waiting"
	// Retrying: its sink failed for now (ErrRetry, or a sink that
	// retries itself reported a failure); it publishes again from its
	// cursor.
	Retrying State = "retrying"
	// Stopped: a failure stopped it (ADR-0015); Stopped says which.
	Stopped State = "stopped"
)

// Status is what an operator sees of one subscription's log follower:
// its cursor against its log's head, what it is doing and why. Failures and
// deliveries are this process's: a replica waiting for the lease knows
// only the cursor.
type Status struct {
	Tenant    string `json:"tenant"`
	Workspace string `json:"workspace"`
	Name      string `json:"name"`
	State     State  `json:"state"`
	// Cursor is the last sequence saved as delivered (or bridging
	// nothing); Head the log's last sequence. Head-Cursor is the lag.
	Cursor int64 `json:"cursor"`
	Head   int64 `json:"head"`
	// LastDelivery is when the sink last took an event.
	LastDelivery time.Time `json:"last_delivery,omitzero"`
	// Failures counts the sink's failed attempts in a row; a delivery
	// sets it back to 0.
	Failures int `json:"consecutive_failures"`
	// LastError is the sink's last failure, and LastFailure when it was.
	LastError   string    `json:"last_error,omitempty"`
	LastFailure time.Time `json:"last_failure,omitzero"`
	// RetryAt is when a retrying follower publishes again.
	RetryAt time.Time `json:"retry_at,omitzero"`
	// Stopped is why a stopped follower stopped.
	Stopped string `json:"stopped,omitempty"`
}

// followerState is a follower's status as this process knows it, kept across
// its stops and restarts.
type followerState struct {
	state        State
	lastDelivery time.Time
	failures     int
	lastErr      string
	lastFailure  time.Time
	retryAt      time.Time
	stopped      string
}

// New returns log followers; nothing runs before Start or
// Follow.
func New(c Config) *Followers {
	if c.Clock == nil {
		c.Clock = clock.System{}
	}
	if c.Metrics == nil {
		c.Metrics = metrics.Discard{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Holder == "" {
		c.Holder = lease.NewHolder()
	}
	return &Followers{c: c, opts: c.Options.withDefaults(), running: map[ledger.Follower]*logFollower{}, stopped: map[ledger.Follower]error{}, states: map[ledger.Follower]*followerState{}}
}

func (lf *Followers) base(ctx context.Context) context.Context {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	if lf.ctx == nil {
		lf.ctx, lf.cancel = context.WithCancel(ctx)
	}
	return lf.ctx
}

// Start resumes every followed log (ADR-0015: "Ledger.followed() lists the
// workspaces with a row, which the followers resume at startup"). It
// answers the ledger's error when the list can't be read.
func (lf *Followers) Start(ctx context.Context) error {
	base := lf.base(ctx)
	followed, err := lf.c.Ledger.Followed(ctx)
	if err != nil {
		return err
	}
	for _, f := range followed {
		sub, err := lf.c.Subscriptions(base, f)
		if err != nil {
			lf.c.Logger.Error("followed log has no subscription", "tenant", f.Tenant, "workspace", f.Workspace, "name", f.Name, "err", err)
			continue
		}
		lf.start(f, sub)
	}
	return nil
}

// Follow follows a log for a subscription, or again after its follower
// stopped, from its cursor. It does nothing for a follower that runs.
func (lf *Followers) Follow(ctx context.Context, f ledger.Follower, sub Subscription) error {
	if err := ledger.CheckFollower(f); err != nil {
		return err
	}
	if f.Kind != ledger.LogFollower {
		return fmt.Errorf("%w: a log follower's kind is %q", ledger.ErrInvalid, ledger.LogFollower)
	}
	lf.base(ctx)
	lf.start(f, sub)
	return nil
}

func (lf *Followers) start(f ledger.Follower, sub Subscription) {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	if lf.ctx.Err() != nil {
		return
	}
	if _, ok := lf.running[f]; ok {
		return
	}
	delete(lf.stopped, f)
	st := lf.states[f]
	if st == nil {
		st = &followerState{}
		lf.states[f] = st
	}
	st.state, st.stopped, st.retryAt = Waiting, "", time.Time{}
	x := &logFollower{lf: lf, f: f, sub: sub, wake: make(chan struct{}, 1), st: st}
	lf.running[f] = x
	lf.wg.Add(1)
	go func() {
		defer lf.wg.Done()
		err := x.run(lf.ctx)
		lf.mu.Lock()
		delete(lf.running, f)
		if err != nil {
			lf.stopped[f] = err
			x.st.state, x.st.stopped, x.st.retryAt = Stopped, err.Error(), time.Time{}
		}
		lf.mu.Unlock()
		if err != nil {
			lf.c.Metrics.Add(metrics.FollowersStopped, 1, metrics.Labels{"tenant": f.Tenant, "workspace": f.Workspace, "kind": string(ledger.LogFollower)})
			lf.c.Logger.Error("log follower stopped", "tenant", f.Tenant, "workspace", f.Workspace, "name", f.Name, "err", err, "reopen_after", lf.opts.ReopenAfter)
			if lf.opts.ReopenAfter > 0 && clock.Sleep(lf.ctx, lf.c.Clock, lf.opts.ReopenAfter) == nil {
				lf.start(f, sub) // from its cursor, as Follow would
			}
		}
	}()
}

// Notify wakes the followers of a workspace's log, which then read at once
// rather than at their next look (an append just happened).
func (lf *Followers) Notify(tenant, workspace string) {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	for f, x := range lf.running {
		if f.Tenant == tenant && f.Workspace == workspace {
			select {
			case x.wake <- struct{}{}:
			default:
			}
		}
	}
}

// Stop stops every log follower and waits for them; each gives its lease up
// at once. A stopped Followers starts nothing again.
func (lf *Followers) Stop() {
	lf.base(context.Background())
	lf.mu.Lock()
	lf.cancel()
	lf.mu.Unlock()
	lf.wg.Wait()
}

// Status answers every subscription this process follows, or followed and
// stopped, sorted by tenant, workspace and name: its state, its cursor
// against the log's head, its last delivery and its failures. It answers
// the ledger's or the log's error when the cursors can't be read.
func (lf *Followers) Status(ctx context.Context) ([]Status, error) {
	lf.mu.Lock()
	out := make([]Status, 0, len(lf.states))
	for f, st := range lf.states {
		out = append(out, Status{
			Tenant: f.Tenant, Workspace: f.Workspace, Name: f.Name, State: st.state,
			LastDelivery: st.lastDelivery, Failures: st.failures, LastError: st.lastErr,
			LastFailure: st.lastFailure, RetryAt: st.retryAt, Stopped: st.stopped,
		})
	}
	lf.mu.Unlock()
	slices.SortFunc(out, func(a, b Status) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Workspace, b.Workspace), cmp.Compare(a.Name, b.Name))
	})
	for i := range out {
		s := &out[i]
		cur, err := lf.c.Ledger.Cursor(ctx, ledger.Follower{Kind: ledger.LogFollower, Tenant: s.Tenant, Workspace: s.Workspace, Name: s.Name})
		if err != nil {
			return nil, err
		}
		head, err := lf.c.Log.Head(ctx, s.Tenant, s.Workspace)
		if err != nil {
			return nil, err
		}
		s.Cursor, s.Head = cur.Seq, head
	}
	return out, nil
}

// Stopped answers why a log follower stopped (an error matching ErrStopped),
// or nil when it did not.
func (lf *Followers) Stopped(f ledger.Follower) error {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	return lf.stopped[f]
}

type logFollower struct {
	lf   *Followers
	f    ledger.Follower
	sub  Subscription
	wake chan struct{}
	st   *followerState // guarded by lf.mu
}

// errLeaseLost says a renewal found another holder, or failed: the follower
// stops relaying and waits for its lease (ADR-0015).
var errLeaseLost = errors.New("deliver: the lease was lost")

func (x *logFollower) run(ctx context.Context) error {
	c, o := x.lf.c, x.lf.opts
	r := &relaying{x: x, ls: &lease.Lease{Ledger: c.Ledger, Clock: c.Clock, Follower: x.f, Holder: c.Holder, TTL: o.LeaseTTL}}
	defer r.ls.Release(ctx)
	backoff := o.RetryFirst
	for {
		if ctx.Err() != nil {
			return nil
		}
		if !r.ls.Held() {
			x.setState(Waiting)
			if err := r.ls.Take(ctx); err != nil {
				if !errors.Is(err, ledger.ErrLeaseHeld) && ctx.Err() == nil {
					c.Logger.Warn("log follower could not take its lease", "name", x.f.Name, "err", err)
				}
				// A follower that lost its lease, or can't take it, tries
				// again every third of it (ADR-0015).
				if !x.wait(ctx, lease.RenewEvery(o.LeaseTTL)) {
					return nil
				}
				continue
			}
			cur, err := c.Ledger.Cursor(ctx, x.f)
			if err != nil {
				return x.stop(ctx, err)
			}
			r.seq, r.saved, r.quiet, r.nextRenew = cur.Seq, cur.Seq, 0, c.Clock.Now().Add(lease.RenewEvery(o.LeaseTTL))
			c.Logger.Info("log follower took its lease", "tenant", x.f.Tenant, "workspace", x.f.Workspace, "name", x.f.Name, "cursor", cur.Seq)
			x.setState(Running)
		}
		// Taken before the read, so an append between the read and the
		// wait wakes it.
		grown := x.grown()
		entries, err := c.Log.Read(ctx, x.f.Tenant, x.f.Workspace, r.seq, o.Batch)
		if err != nil {
			return x.stop(ctx, err) // a storage failure stops the follower
		}
		err = r.page(ctx, entries)
		switch {
		case err == nil:
			backoff = o.RetryFirst
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, errLeaseLost):
			r.ls.Drop()
			continue
		case errors.Is(err, ErrRetry):
			// A sink that fails for now is tried again from the cursor
			// after a backoff, never skipped and never stopped for it.
			x.failed(err, c.Clock.Now().Add(backoff))
			if !r.hold(ctx, backoff) {
				continue // ctx ended, or the lease was lost while waiting
			}
			backoff = min(backoff*2, o.RetryMax)
			r.seq, r.quiet = r.saved, 0
			continue
		default:
			return x.stop(ctx, err)
		}
		if !r.ls.Held() {
			continue
		}
		if len(entries) == o.Batch {
			continue
		}
		wait := r.nextRenew.Sub(c.Clock.Now())
		if wait > o.PollEvery {
			wait = o.PollEvery
		}
		if !x.waitFor(ctx, wait, grown) {
			return nil
		}
		if !c.Clock.Now().Before(r.nextRenew) {
			if err := r.ls.Renew(ctx); err == nil {
				r.nextRenew = c.Clock.Now().Add(lease.RenewEvery(o.LeaseTTL))
			}
		}
	}
}

// relaying is a follower's pass over its log while it holds its lease.
type relaying struct {
	x         *logFollower
	ls        *lease.Lease
	nextRenew time.Time
	seq       int64 // the last entry handled
	saved     int64 // the last cursor saved
	quiet     int   // entries that bridged nothing since the last save
	pending   []eventlog.Event
	pendSeq   []int64
}

// page bridges a page of entries. It answers nil, errLeaseLost, a sink's
// failure that passes (ErrRetry: the caller reads again from the cursor), or
// the error that stops the follower.
func (r *relaying) page(ctx context.Context, entries []eventlog.Event) error {
	x := r.x
	c, o := x.lf.c, x.lf.opts
	batch, _ := x.sub.Sink.(BatchSink)
	for _, e := range entries {
		// A follower relays only while its renewal runs: a renewal that
		// finds another holder, or fails, stops the relaying (ADR-0015).
		if !c.Clock.Now().Before(r.nextRenew) {
			if err := r.ls.Renew(ctx); err != nil {
				r.pending, r.pendSeq = nil, nil
				return errLeaseLost
			}
			r.nextRenew = c.Clock.Now().Add(lease.RenewEvery(o.LeaseTTL))
		}
		out, dead := Project(x.sub.Projection, e, o.Reserved)
		switch {
		case dead != "":
			if err := r.flush(ctx); err != nil {
				return err
			}
			if err := x.deadLetter(ctx, e, dead); err != nil {
				return err
			}
			r.seq = e.Seq
			if err := r.save(ctx, e.Seq); err != nil {
				return err
			}
		case out == nil:
			r.seq = e.Seq
			r.quiet++
			// ... and after every 500 that bridge nothing, so a restart
			// reads at most that many again (ADR-0015).
			if len(r.pending) == 0 && r.quiet >= o.QuietSave {
				if err := r.save(ctx, e.Seq); err != nil {
					return err
				}
			}
		case batch != nil:
			r.pending = append(r.pending, *out)
			r.pendSeq = append(r.pendSeq, e.Seq)
			r.seq = e.Seq
		default:
			r.pending, r.pendSeq = []eventlog.Event{*out}, []int64{e.Seq}
			r.seq = e.Seq
			// The cursor moves after the publish, after each entry
			// published (ADR-0015).
			if err := r.flush(ctx); err != nil {
				return err
			}
		}
	}
	return r.flush(ctx)
}

// flush publishes what is pending and saves the cursor after what the sink
// took: every entry handled when it took them all, the last it took when
// it failed.
func (r *relaying) flush(ctx context.Context) error {
	if len(r.pending) == 0 {
		return nil
	}
	es, seqs := r.pending, r.pendSeq
	r.pending, r.pendSeq = nil, nil
	n, err := r.deliver(ctx, es)
	switch {
	case err == nil:
		return r.save(ctx, r.seq)
	case n > 0:
		if serr := r.save(ctx, seqs[n-1]); serr != nil {
			return serr
		}
	}
	return err
}

func (r *relaying) save(ctx context.Context, seq int64) error {
	if seq <= r.saved {
		return nil
	}
	if err := r.x.lf.c.Ledger.SaveCursor(ctx, r.x.f, ledger.Cursor{Seq: seq}); err != nil {
		return err
	}
	r.saved, r.quiet = seq, 0
	return nil
}

// deliver hands es to the sink and answers how many it took. The lease is
// renewed while the sink works (a subscriber that retries for minutes, a
// slow ack), and a renewal that fails ends the sink's call with
// errLeaseLost: a follower relays only while its renewal runs (ADR-0015).
func (r *relaying) deliver(ctx context.Context, es []eventlog.Event) (int, error) {
	x := r.x
	c, o := x.lf.c, x.lf.opts
	sctx, cancel := context.WithCancel(context.WithValue(ctx, reporterKey{}, func(err error) { x.failed(err, time.Time{}) }))
	defer cancel()
	done, lost := make(chan struct{}), make(chan bool, 1)
	go func() {
		for {
			select {
			case <-done:
				lost <- false
				return
			case <-c.Clock.After(r.nextRenew.Sub(c.Clock.Now())):
			}
			if err := r.ls.Renew(ctx); err != nil {
				cancel()
				lost <- true
				return
			}
			r.nextRenew = c.Clock.Now().Add(lease.RenewEvery(o.LeaseTTL))
		}
	}()
	var (
		n   int
		err error
	)
	if b, ok := x.sub.Sink.(BatchSink); ok {
		n, err = b.PublishBatch(sctx, es)
	} else if err = x.sub.Sink.Publish(sctx, es[0]); err == nil {
		n = 1
	}
	close(done)
	if n > 0 {
		x.delivered(n)
	}
	if <-lost {
		return n, errLeaseLost
	}
	// A refused publish, a failure, or a type the sink doesn't accept stops
	// the follower, never dead-letters the entry (ADR-0015); a failure that
	// passes (ErrRetry) is tried again from the cursor.
	return n, err
}

// hold waits d while keeping the lease. It answers false when ctx ended or
// the lease was lost.
func (r *relaying) hold(ctx context.Context, d time.Duration) bool {
	c, o := r.x.lf.c, r.x.lf.opts
	until := c.Clock.Now().Add(d)
	for {
		now := c.Clock.Now()
		if !now.Before(until) {
			return true
		}
		step := min(until.Sub(now), r.nextRenew.Sub(now))
		if step > 0 {
			select {
			case <-ctx.Done():
				return false
			case <-c.Clock.After(step):
			}
		}
		if !c.Clock.Now().Before(r.nextRenew) {
			if err := r.ls.Renew(ctx); err != nil {
				return false
			}
			r.nextRenew = c.Clock.Now().Add(lease.RenewEvery(o.LeaseTTL))
		}
	}
}

// deadLetter records an entry the projection refused, once per seq
// (ADR-0015).
func (x *logFollower) deadLetter(ctx context.Context, e eventlog.Event, reason string) error {
	c := x.lf.c
	raw, _ := json.Marshal(e)
	added, err := c.Ledger.DeadLetter(ctx, ledger.DeadLetter{
		Follower: x.f, ID: strconv.FormatInt(e.Seq, 10), Seq: e.Seq, Event: raw, Reason: reason, At: c.Clock.Now(),
	})
	if err != nil {
		return err
	}
	if added {
		c.Metrics.Add(metrics.LogDeadLetters, 1, metrics.Labels{"tenant": x.f.Tenant, "workspace": x.f.Workspace, "name": x.f.Name})
		c.Logger.Warn("log entry dead-lettered", "name", x.f.Name, "seq", e.Seq, "reason", reason)
	}
	return nil
}

func (x *logFollower) setState(s State) {
	x.lf.mu.Lock()
	defer x.lf.mu.Unlock()
	x.st.state, x.st.retryAt = s, time.Time{}
}

// delivered records that the sink took n events.
func (x *logFollower) delivered(n int) {
	c := x.lf.c
	x.lf.mu.Lock()
	recovered := x.st.failures
	x.st.lastDelivery, x.st.failures, x.st.state, x.st.retryAt = c.Clock.Now(), 0, Running, time.Time{}
	x.lf.mu.Unlock()
	c.Metrics.Add(metrics.Delivered, float64(n), metrics.Labels{"tenant": x.f.Tenant, "workspace": x.f.Workspace, "name": x.f.Name})
	if recovered > 0 {
		c.Logger.Info("log follower's sink recovered", "tenant", x.f.Tenant, "workspace", x.f.Workspace, "name", x.f.Name, "failures", recovered)
	}
	c.Logger.Debug("log follower delivered", "tenant", x.f.Tenant, "workspace", x.f.Workspace, "name", x.f.Name, "events", n)
}

// failed records a sink's failed attempt: counted, logged, and in the
// status until a delivery. retryAt is when the follower tries again, zero
// when the sink retries itself.
func (x *logFollower) failed(err error, retryAt time.Time) {
	c := x.lf.c
	reason := reasonOf(err)
	x.lf.mu.Lock()
	x.st.failures++
	n := x.st.failures
	x.st.state, x.st.lastErr, x.st.lastFailure, x.st.retryAt = Retrying, err.Error(), c.Clock.Now(), retryAt
	x.lf.mu.Unlock()
	c.Metrics.Add(metrics.DeliveryFailures, 1, metrics.Labels{"tenant": x.f.Tenant, "workspace": x.f.Workspace, "name": x.f.Name, "reason": reason})
	if retryAt.IsZero() {
		c.Logger.Warn("log follower's sink failed; the sink retries", "tenant", x.f.Tenant, "workspace", x.f.Workspace,
			"name", x.f.Name, "reason", reason, "failures", n, "err", err)
		return
	}
	c.Logger.Warn("log follower's sink failed; retrying from its cursor", "tenant", x.f.Tenant, "workspace", x.f.Workspace,
		"name", x.f.Name, "reason", reason, "failures", n, "retry_at", retryAt, "err", err)
}

// ErrStopped is what a stopped log follower's failure matches (Stopped).
var ErrStopped = errors.New("deliver: log follower stopped")

// stopError stops a log follower until its log is followed again.
type stopError struct{ err error }

func (e *stopError) Error() string { return fmt.Sprintf("%v: %v", ErrStopped, e.err) }
func (e *stopError) Unwrap() []error {
	return []error{ErrStopped, e.err}
}

func (x *logFollower) stop(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return &stopError{err: err}
}

func (x *logFollower) wait(ctx context.Context, d time.Duration) bool { return x.waitFor(ctx, d, nil) }

// waitFor waits d, or until Notify wakes the follower or grown is closed
// (its log grew); false when ctx ended.
func (x *logFollower) waitFor(ctx context.Context, d time.Duration, grown <-chan struct{}) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	select {
	case <-ctx.Done():
		return false
	case <-x.lf.c.Clock.After(d):
	case <-x.wake:
	case <-grown:
	}
	return true
}

// growing is a log that tells when a workspace's log grows in this process
// (eventlog.Notifying): a log follower waiting for entries wakes at its
// next append, with no wiring of the application's.
type growing interface {
	Changed(tenant, workspace string) <-chan struct{}
}

// grown answers a channel closed at the follower's log's next append, or
// nil when its log doesn't tell (the follower then reads again every
// PollEvery, or when Notify wakes it).
func (x *logFollower) grown() <-chan struct{} {
	if g, ok := x.lf.c.Log.(growing); ok {
		return g.Changed(x.f.Tenant, x.f.Workspace)
	}
	return nil
}
