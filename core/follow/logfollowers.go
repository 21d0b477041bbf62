package follow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/eventlog"
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

// ErrUnknownType says the sink does not accept an event's type. A sink answers
// an error matching it; the follower stops rather than dead-letter it, which
// would skip every later entry of the type (ADR-0015).
var ErrUnknownType = errors.New("follow: the sink does not accept this type")

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

// LogConfig is what the log followers need.
type LogConfig struct {
	Ledger ledger.Followers
	Log    eventlog.Log
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

// LogFollowers runs one follower per followed log (ADR-0015). It is safe for
// concurrent use.
type LogFollowers struct {
	c    LogConfig
	opts Options

	mu      sync.Mutex
	ctx     context.Context
	cancel  context.CancelFunc
	running map[ledger.Follower]*logFollower
	stopped map[ledger.Follower]error
	wg      sync.WaitGroup
}

// NewLogFollowers returns log followers; nothing runs before Start or
// Follow.
func NewLogFollowers(c LogConfig) *LogFollowers {
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
		c.Holder = newHolder()
	}
	return &LogFollowers{c: c, opts: c.Options.withDefaults(), running: map[ledger.Follower]*logFollower{}, stopped: map[ledger.Follower]error{}}
}

func (lf *LogFollowers) base(ctx context.Context) context.Context {
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
func (lf *LogFollowers) Start(ctx context.Context) error {
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
func (lf *LogFollowers) Follow(ctx context.Context, f ledger.Follower, sub Subscription) error {
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

func (lf *LogFollowers) start(f ledger.Follower, sub Subscription) {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	if lf.ctx.Err() != nil {
		return
	}
	if _, ok := lf.running[f]; ok {
		return
	}
	delete(lf.stopped, f)
	x := &logFollower{lf: lf, f: f, sub: sub, wake: make(chan struct{}, 1)}
	lf.running[f] = x
	lf.wg.Add(1)
	go func() {
		defer lf.wg.Done()
		err := x.run(lf.ctx)
		lf.mu.Lock()
		delete(lf.running, f)
		if err != nil {
			lf.stopped[f] = err
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
func (lf *LogFollowers) Notify(tenant, workspace string) {
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
// at once. A stopped LogFollowers starts nothing again.
func (lf *LogFollowers) Stop() {
	lf.base(context.Background())
	lf.mu.Lock()
	lf.cancel()
	lf.mu.Unlock()
	lf.wg.Wait()
}

// Stopped answers why a log follower stopped (an error matching ErrStopped),
// or nil when it did not.
func (lf *LogFollowers) Stopped(f ledger.Follower) error {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	return lf.stopped[f]
}

type logFollower struct {
	lf   *LogFollowers
	f    ledger.Follower
	sub  Subscription
	wake chan struct{}
}

func (x *logFollower) run(ctx context.Context) error {
	c, o := x.lf.c, x.lf.opts
	ls := &lease{ledger: c.Ledger, clock: c.Clock, f: x.f, holder: c.Holder, ttl: o.LeaseTTL}
	defer ls.release(ctx)
	var nextRenew time.Time
	var seq int64
	quiet := 0
	for {
		if ctx.Err() != nil {
			return nil
		}
		if !ls.held() {
			if err := ls.take(ctx); err != nil {
				if !errors.Is(err, ledger.ErrLeaseHeld) && ctx.Err() == nil {
					c.Logger.Warn("log follower could not take its lease", "name", x.f.Name, "err", err)
				}
				// A follower that lost its lease, or can't take it, tries
				// again every third of it (ADR-0015).
				if !x.wait(ctx, o.renewEvery()) {
					return nil
				}
				continue
			}
			cur, err := c.Ledger.Cursor(ctx, x.f)
			if err != nil {
				return x.stop(ctx, err)
			}
			seq, quiet, nextRenew = cur.Seq, 0, c.Clock.Now().Add(o.renewEvery())
		}
		entries, err := c.Log.Read(ctx, x.f.Tenant, x.f.Workspace, seq, o.LogBatch)
		if err != nil {
			return x.stop(ctx, err) // a storage failure stops the follower
		}
		for _, e := range entries {
			// A follower relays only while its renewal runs: a renewal
			// that finds another holder, or fails, stops the relaying
			// (ADR-0015).
			if !c.Clock.Now().Before(nextRenew) {
				if err := ls.renew(ctx); err != nil {
					break
				}
				nextRenew = c.Clock.Now().Add(o.renewEvery())
			}
			saved, err := x.relay(ctx, e)
			if err != nil {
				return x.stop(ctx, err)
			}
			seq = e.Seq
			quiet++
			if saved {
				quiet = 0
			}
			// The cursor moves after the publish: after each entry
			// published or dead-lettered, and after every 500 that bridge
			// nothing, so a restart reads at most that many again.
			if saved || quiet >= o.QuietSave {
				if err := c.Ledger.SaveCursor(ctx, x.f, ledger.Cursor{Seq: seq}); err != nil {
					return x.stop(ctx, err)
				}
				quiet = 0
			}
		}
		if !ls.held() {
			continue
		}
		if len(entries) == o.LogBatch {
			continue
		}
		wait := nextRenew.Sub(c.Clock.Now())
		if wait > o.LogPollEvery {
			wait = o.LogPollEvery
		}
		if !x.wait(ctx, wait) {
			return nil
		}
		if !c.Clock.Now().Before(nextRenew) {
			if err := ls.renew(ctx); err == nil {
				nextRenew = c.Clock.Now().Add(o.renewEvery())
			}
		}
	}
}

// relay bridges one entry. It answers whether the entry was published or
// dead-lettered (the cursor is saved after either), or the error that stops
// the follower.
func (x *logFollower) relay(ctx context.Context, e eventlog.Event) (bool, error) {
	c := x.lf.c
	out, dead := project(x.sub.Projection, e, x.lf.opts.Reserved)
	if dead != "" {
		raw, _ := json.Marshal(e)
		// Dead letters, once per seq (ADR-0015).
		added, err := c.Ledger.DeadLetter(ctx, ledger.DeadLetter{
			Follower: x.f, ID: strconv.FormatInt(e.Seq, 10), Seq: e.Seq, Event: raw, Reason: dead, At: c.Clock.Now(),
		})
		if err != nil {
			return false, err
		}
		if added {
			c.Metrics.Add(metrics.LogDeadLetters, 1, metrics.Labels{"tenant": x.f.Tenant, "workspace": x.f.Workspace, "name": x.f.Name})
			c.Logger.Warn("log entry dead-lettered", "name", x.f.Name, "seq", e.Seq, "reason", dead)
		}
		return true, nil
	}
	if out == nil {
		return false, nil
	}
	// A refused publish, a failure, or a type the sink doesn't accept stops
	// the follower, never dead-letters the entry (ADR-0015).
	if err := x.sub.Sink.Publish(ctx, *out); err != nil {
		return false, err
	}
	return true, nil
}

func (x *logFollower) stop(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return &stopError{err: err}
}

func (x *logFollower) wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	select {
	case <-ctx.Done():
		return false
	case <-x.lf.c.Clock.After(d):
	case <-x.wake:
	}
	return true
}
