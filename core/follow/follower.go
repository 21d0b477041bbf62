package follow

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/relayr-go/relayr/core/binding"
	"github.com/relayr-go/relayr/core/deliver"
	"github.com/relayr-go/relayr/core/lease"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/metrics"
	"github.com/relayr-go/relayr/core/tracker"
)

// follower follows one binding. Its loop runs on one goroutine; only the
// tracker it last used, the nudges and its state are shared.
type follower struct {
	fs     *Followers
	b      binding.Binding
	id     ledger.Follower
	proj   deliver.Projection
	nudges chan struct{}

	mu      sync.Mutex
	tr      *tracker.Tracker
	project string
	st      state

	// sweep is the full read under way, kept across polls while the lease
	// holds (a sweep goes on at the next poll where the budget stops it);
	// lastSweep is how many requests the last one sent (sweepGap).
	sweep     *sweep
	lastSweep int64
	// deleted holds the items verified deliveries reported deleted, to be
	// checked at the next poll (deletions.go).
	deleted pendingDeletions
}

// state is what a follower tells the status route and the watchdog.
type state struct {
	held      bool      // it holds the lease
	heldSince time.Time // when it took it
	polled    time.Time // its last completed poll
	late      bool      // the watchdog said it is late
	polls     int64     // polls completed
	deferred  int64     // polls the budget's pacer made wait
	unnudged  int64     // changes published that no nudge announced
	// unannounced are the changes the last polls published unannounced,
	// held until the next poll: a nudge that comes first announced them.
	unannounced int64
	lastCount   int    // requests of its last poll
	lastPublic  int    // events its last poll published
	lastError   string // its last poll's failure, "" when it completed
}

func newFollower(fs *Followers, b binding.Binding) *follower {
	return &follower{
		fs: fs, b: b,
		id:     ledger.Follower{Kind: ledger.TrackerFollower, Tenant: b.Tenant, Workspace: b.Workspace, Name: b.Kind()},
		proj:   fs.projs[b.Name()],
		nudges: make(chan struct{}, 1),
	}
}

func (f *follower) projectName() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.project
}

func (f *follower) setTracker(tr *tracker.Tracker) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tr, f.project = tr, tr.Project()
}

func (f *follower) state() state {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

func (f *follower) update(fn func(*state)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(&f.st)
}

func (f *follower) enabled(ctx context.Context) bool {
	return f.fs.integ.Enabled(ctx, f.b.Tenant, f.b.Workspace, f.b.Integration())
}

// stopError stops a follower until its workspace is opened again.
type stopError struct{ err error }

func (e *stopError) Error() string { return fmt.Sprintf("%v: %v", ErrStopped, e.err) }
func (e *stopError) Unwrap() []error {
	return []error{ErrStopped, e.err}
}

// interval is how often the binding polls on its floor: the poll interval,
// stretched where its key has more bindings than the budget can poll once
// an interval (budget.Interval).
func (f *follower) interval() time.Duration {
	if f.fs.budget == nil {
		return f.fs.opts.PollEvery
	}
	return f.fs.budget.Interval(f.b.BudgetKey(), f.fs.opts.PollEvery)
}

// run is the follower's life: take the lease, poll while it holds, give it
// up when switched off or stopped. It answers a stop's error, or nil when
// ctx ended.
//
// Polls come one an interval, at the binding's own phase of it (the
// bindings of a key spread evenly over the interval, so a start or a
// takeover ramps up instead of reading every project at once). A nudge
// brings the poll forward: at once after a quiet spell, else the debounce
// after the last poll began; nudges that come while one is pending join
// it. Every poll is the binding's floor: writes never hold it
// back, and the key's pacer keeps all its polls within the budget
// (ADR-1001: a floor for polls).
func (f *follower) run(ctx context.Context) error {
	fs, o := f.fs, f.fs.opts
	ls := &lease.Lease{Ledger: fs.ledger, Clock: fs.clock, Follower: f.id, Holder: fs.holder, TTL: o.LeaseTTL}
	// counted: the replica's share counts this follower's lease (share.go).
	counted := false
	uncount := func() {
		if counted {
			fs.share.release()
			counted = false
		}
	}
	defer func() {
		if ls.Held() {
			fs.logger.Info("tracker follower gave its lease up", "binding", f.b.Name(), "holder", fs.holder)
		}
		ls.Release(ctx)
		uncount()
		f.update(func(s *state) { s.held = false })
	}()

	var nextPoll, nextRenew, debounceAt, waitUntil, lastStart time.Time
	announced := false
	for {
		if ctx.Err() != nil {
			return nil
		}
		if !ls.Held() {
			took, ok := f.takeLease(ctx, ls)
			if !ok {
				return nil
			}
			if !took {
				continue
			}
			counted = true
			now := fs.clock.Now()
			// The first poll comes at the binding's phase of its interval.
			nextPoll = now.Add(fs.phase(f.b, f.interval()))
			nextRenew, debounceAt, waitUntil, lastStart, announced = now.Add(o.renewEvery()), time.Time{}, time.Time{}, time.Time{}, false
		}

		now := fs.clock.Now()
		debounced := !debounceAt.IsZero() && !now.Before(debounceAt) && !now.Before(waitUntil)
		switch {
		case !now.Before(nextRenew):
			if !f.enabled(ctx) {
				fs.logger.Info("tracker follower switched off", "binding", f.b.Name())
				ls.Release(ctx)
				uncount()
				f.update(func(s *state) { s.held = false })
				continue
			}
			// A replica over its share gives the lease up at renewal
			// instead of renewing it, for one under its share to take
			// (share.go; ADR-1002: the hand-over). No poll is
			// under way: polls and renewals take turns on this loop; nor
			// a sweep, whose pages read so far the taker would read again;
			// nor a reported deletion, which only this follower was told.
			if f.sweep == nil && f.deleted.empty() && fs.share.giveUp() {
				counted = false
				fs.logger.Info("tracker follower gave its lease up to rebalance", "binding", f.b.Name(), "holder", fs.holder)
				ls.Release(ctx)
				f.update(func(s *state) { s.held = false })
				if !f.wait(ctx, o.renewEvery(), nil) {
					return nil
				}
				continue
			}
			// A renewal that finds another holder, or fails, stops the
			// reading (ADR-0015: "a lease is never held with nothing
			// relayed"); the follower then waits for the lease.
			if err := ls.Renew(ctx); err != nil {
				if ctx.Err() == nil {
					fs.logger.Info("tracker follower lost its lease", "binding", f.b.Name(), "holder", fs.holder, "err", err)
				}
				uncount()
				f.update(func(s *state) { s.held = false })
				continue
			}
			nextRenew = fs.clock.Now().Add(o.renewEvery())
			continue
		case !now.Before(nextPoll) || debounced:
			// Each poll asks the switch first.
			if !f.enabled(ctx) {
				fs.logger.Info("tracker follower switched off", "binding", f.b.Name())
				ls.Release(ctx)
				uncount()
				f.update(func(s *state) { s.held = false })
				continue
			}
			wasAnnounced := announced
			debounceAt, lastStart, announced = time.Time{}, now, false
			f.settleUnannounced(wasAnnounced)
			// Every poll is the binding's floor, scheduled or nudged: it
			// goes whatever writes spend, paced within the budget with
			// every other poll of its key (ADR-1001: a floor for polls).
			wait, err := f.pollHolding(ctx, ls, &nextRenew, wasAnnounced)
			if err != nil {
				return err
			}
			if !ls.Held() {
				// The lease was lost while the poll waited or read.
				uncount()
				f.update(func(s *state) { s.held = false })
				continue
			}
			now = fs.clock.Now()
			// A poll, nudged or not, is the interval's: the next comes
			// an interval after it.
			nextPoll = lastStart.Add(f.interval())
			if !nextPoll.After(now) {
				nextPoll = now
			}
			if wait > 0 {
				// A 429 is waited out, with up to a second of jitter, and
				// the poll it stopped comes again then.
				waitUntil = now.Add(wait + o.Jitter(o.MaxJitter))
				nextPoll = waitUntil
			}
			continue
		}

		nudged := false
		if !f.wait(ctx, nextWake(nextRenew, nextPoll, debounceAt, waitUntil).Sub(now), &nudged) {
			return nil
		}
		if nudged {
			// A nudge after a quiet spell reads at once; the nudges
			// that follow within the debounce of that poll's start are
			// gathered into one poll at its end (ADR-0036's departures:
			// the debounce gathers a burst, it does not delay its
			// first). A nudge also announces what the last poll
			// published unannounced: its webhook was sent while that
			// poll read.
			f.update(func(s *state) { s.unannounced = 0 })
			announced = true
			if debounceAt.IsZero() {
				debounceAt = fs.clock.Now()
				if !lastStart.IsZero() && lastStart.Add(o.Debounce).After(debounceAt) {
					debounceAt = lastStart.Add(o.Debounce)
				}
			}
		}
	}
}

// settleUnannounced counts, as a poll begins, the changes the polls
// before it published that no nudge announced, before or after: the
// signal of a webhook gone silent (ADR-0036). A poll a nudge brought
// forgets them, since the nudge announced them.
func (f *follower) settleUnannounced(announced bool) {
	var n int64
	f.update(func(s *state) {
		if !announced {
			n = s.unannounced
			s.unnudged += n
		}
		s.unannounced = 0
	})
	if n > 0 {
		f.fs.m.Add(metrics.Unnudged, float64(n), f.labels())
	}
}

// takeLease tries to take the binding's lease while it is not held:
// nothing while the binding is switched off (ADR-0036: "a follower
// switched off reads nothing, writes nothing, and lets its lease go until
// it is switched on"), nor while the replica holds its share (share.go).
// It answers took when the lease is now held and counted in the share, and
// ok false when ctx ended; otherwise it has waited before the next try.
func (f *follower) takeLease(ctx context.Context, ls *lease.Lease) (took, ok bool) {
	fs, o := f.fs, f.fs.opts
	f.sweep = nil
	if !f.enabled(ctx) {
		return false, f.wait(ctx, o.PollEvery, nil)
	}
	// A replica holding its share takes no more: the binding is
	// another's, and a replica under its share takes it.
	freed := fs.share.freed()
	if !fs.share.reserve() {
		// Tried again a third of a lease on, or as soon as a place is
		// given back (share.freed).
		select {
		case <-ctx.Done():
			return false, false
		case <-fs.clock.After(o.renewEvery()):
		case <-freed:
		}
		return false, true
	}
	if err := ls.Take(ctx); err != nil {
		fs.share.unreserve()
		if !errors.Is(err, ledger.ErrLeaseHeld) && ctx.Err() == nil {
			fs.logger.Warn("tracker follower could not take its lease", "binding", f.b.Name(), "err", err)
		}
		// ADR-0015: "A follower that can't take it tries again every
		// third of that".
		return false, f.wait(ctx, o.renewEvery(), nil)
	}
	fs.share.took()
	now := fs.clock.Now()
	fs.logger.Info("tracker follower took its lease", "binding", f.b.Name(), "holder", fs.holder)
	f.update(func(s *state) { s.held, s.heldSince, s.late = true, now, false })
	return true, true
}

// nextWake is when a follower holding its lease next has something to do:
// its renewal, its poll, or a debounced nudge's poll (no sooner than a
// 429's wait).
func nextWake(nextRenew, nextPoll, debounceAt, waitUntil time.Time) time.Time {
	next := nextRenew
	if nextPoll.Before(next) {
		next = nextPoll
	}
	if !debounceAt.IsZero() {
		at := debounceAt
		if at.Before(waitUntil) {
			at = waitUntil
		}
		if at.Before(next) {
			next = at
		}
	}
	return next
}

// pollHolding polls, renewing the lease at *nextRenew while the poll waits
// for the key's pacer or reads: a poll may wait longer than a lease for
// its turn (a start, a rebalance, a key shared by many bindings), and a
// lease that lapsed under it would go to another replica mid-read. A
// renewal that fails ends the poll (ADR-0015: "a lease is never held with
// nothing relayed"), and the lease is no longer held when it answers.
func (f *follower) pollHolding(ctx context.Context, ls *lease.Lease, nextRenew *time.Time, announced bool) (time.Duration, error) {
	fs := f.fs
	pctx, cancel := context.WithCancel(ctx)
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		for {
			select {
			case <-pctx.Done():
				return
			case <-fs.clock.After(nextRenew.Sub(fs.clock.Now())):
			}
			if err := ls.Renew(ctx); err != nil {
				if ctx.Err() == nil {
					fs.logger.Info("tracker follower lost its lease during a poll", "binding", f.b.Name(), "holder", fs.holder, "err", err)
				}
				cancel()
				return
			}
			*nextRenew = fs.clock.Now().Add(fs.opts.renewEvery())
		}
	}()
	wait, err := f.poll(pctx, announced)
	cancel()
	<-renewed
	if !ls.Held() {
		return 0, nil
	}
	return wait, err
}

// wait waits d, or until ctx ends (false), or, when nudged is not nil,
// until a nudge comes (*nudged set).
func (f *follower) wait(ctx context.Context, d time.Duration, nudged *bool) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	var nudges chan struct{}
	if nudged != nil {
		nudges = f.nudges
	}
	select {
	case <-ctx.Done():
		return false
	case <-f.fs.clock.After(d):
	case <-nudges:
		*nudged = true
	}
	return true
}

func (f *follower) labels() metrics.Labels {
	return metrics.Labels{"tenant": f.b.Tenant, "workspace": f.b.Workspace, "tracker": f.b.Kind()}
}
