// Package budget shares a tenant's tracker key between runs' writes and the
// followers' reads (ADR-0036, "The budget"): 40 requests a minute per key by
// default.
//
// Every request sent with a key is counted, whatever sends it: the budget
// hands out contexts (Writing, Floor, Spare) whose httptrace hook counts
// each request the tracker adapter writes, connection reads, lookups and
// comment reads included (a tracker that sends no HTTP of its own counts
// through tracker.Sent). Three uses share the key:
//
//   - Writes spend and are never held back (the ADR's rule, kept).
//   - A binding's scheduled poll is its floor: whatever writes spend, every
//     followed binding completes one poll per interval. Floor requests wait
//     only for the key's pacer, which spreads the followers' requests
//     evenly over the minute and keeps them alone within the limit; where a
//     key has more bindings than the limit can poll once an interval, their
//     interval stretches evenly (Interval). This departs from the ADR, whose
//     polls take only what is left: a rule that writes all day starved them
//     (ADR-1001).
//   - A poll the pacer admitted goes on at the tracker's speed within the
//     minute's room (Continue): its comment reads and next pages.
//   - Everything else a follower reads (a sweep ahead of its day, a first
//     read's further pages) takes only what is left after the writes and
//     the floor (Spare, Idle), as the ADR has it.
package budget

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http/httptrace"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/metrics"
	"github.com/relayr-go/relayr/core/tracker"
)

// Defaults of the seeds.
const (
	// DefaultLimit is the requests a key may make per Window.
	DefaultLimit = 40
	// Window is the budget's minute.
	Window = time.Minute
	// StreakWarn is how many 429s or unavailable answers in a row make a
	// streak worth a warning.
	StreakWarn = 3
)

// Budget counts requests per key (a tenant's tracker key) over a sliding
// minute and paces the followers' reads. It is safe for concurrent use.
type Budget struct {
	clock  clock.Clock
	limit  int
	logger *slog.Logger
	m      metrics.Metrics

	// windows are the trackers' own windows, by kind (TrackerWindow).
	windows map[string][]TrackerWindow

	mu   sync.Mutex
	keys map[string]*account
	// replicas is how many replicas share every key's limit (SetReplicas):
	// this one may spend limit/replicas a minute. A count that falls
	// (a replica gone) takes effect one Window after it was seen, at
	// raiseAt, when the gone replica's minute is past; one that grows at
	// once.
	replicas, next int
	raiseAt        time.Time
}

// account is one key's minute.
type account struct {
	writes []time.Time // requests of writes in the window, oldest first
	reads  []time.Time // requests of followers in the window, oldest first
	// joined is what the replicas already running had spent of the key's
	// minute when this one joined them (Join), counted as sent then: the
	// followers' requests leave room for them until they leave the window.
	joined []time.Time
	// tat is the pacer's theoretical arrival time (GCRA): the followers'
	// next request is due at tat, and may come up to the burst before it.
	tat time.Time
	// followed are the bindings polling with this key, by name, with
	// their poll interval.
	followed map[string]time.Duration
	// extra is the most requests one follower call sent beyond the one it
	// was paced for (a connection's reads): the pacer keeps that much room
	// under the limit, so no call's further requests pass it. It starts at
	// assumedExtra, before any call was seen.
	extra int
	// reserved is what calls under way may still send beyond the one
	// they were paced for (each reserves extra at admission and gives
	// back what it did not send when it is done).
	reserved int
	// The floor's queue: tickets are admitted in the order they were
	// taken, so no follower starves while others poll (nextTicket is the
	// next to hand out, serving the one admitted next, abandoned those
	// whose caller gave up, turn closed when serving moves).
	nextTicket, serving uint64
	abandoned           map[uint64]bool
	turn                chan struct{}

	// windows are the key's tracker's own windows, sent what they count,
	// and told what the tracker last said of its reported one.
	windows []TrackerWindow
	sent    []sentAt
	told    reported
	held    int64 // requests held for a window

	limited     int64 // 429s received
	spareDenied int64 // spare requests refused for want of budget
	unchanged   int64 // conditional reads answered 304 and given back
	streak      int   // 429s or unavailable answers in a row
	streakWhat  string
}

// Options tune a Budget beyond its limit.
type Options struct {
	// Logger says when a key's tracker answers 429 or is unavailable in a
	// streak, and when it recovers (slog.Default() when nil).
	Logger *slog.Logger
	// Metrics counts 429s and refused spare requests (Discard when nil).
	Metrics metrics.Metrics
	// Windows are the trackers' own windows beside the minute, by kind
	// (the key's part after its last "/"); nil takes TrackerWindows, and a
	// kind it doesn't name has the minute alone.
	Windows map[string][]TrackerWindow
}

// New returns a budget of limit requests a minute per key (DefaultLimit when
// limit is 0 or less).
func New(c clock.Clock, limit int) *Budget { return NewWith(c, limit, Options{}) }

// NewWith returns a budget as New does, with options.
func NewWith(c clock.Clock, limit int, o Options) *Budget {
	if limit <= 0 {
		limit = DefaultLimit
	}
	if c == nil {
		c = clock.System{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Metrics == nil {
		o.Metrics = metrics.Discard{}
	}
	if o.Windows == nil {
		o.Windows = TrackerWindows
	}
	return &Budget{clock: c, limit: limit, logger: o.Logger, m: o.Metrics, windows: o.Windows, keys: map[string]*account{}, replicas: 1, next: 1}
}

// Limit answers the requests a key may make per minute, across replicas.
func (b *Budget) Limit() int { return b.limit }

// SetReplicas tells the budget how many replicas share each key's limit
// (ADR-1001: one budget per key across replicas): this replica spends
// limit/n a minute of each key, and its followers' floor is reckoned on
// their share of the key's bindings, so n replicas spend what one would.
// The count comes from the replicas' heartbeats in the ledger. A count
// that grows applies at once; one that falls a Window after it was seen,
// so the survivors of a kill never spend their larger share while the
// minute still holds what the gone replica spent.
func (b *Budget) SetReplicas(n int) {
	n = max(1, n)
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	b.settle(now)
	switch {
	case n >= b.replicas:
		b.replicas, b.next, b.raiseAt = n, n, time.Time{}
	case n != b.next || b.raiseAt.IsZero():
		b.next, b.raiseAt = n, now.Add(Window)
	}
}

// Inherit counts n requests of key that replicas gone within the last
// minute made (what their heartbeats last told): the pacer starts that far
// behind, at most a minute, so a replica that starts, or starts again,
// leaves the tracker's minute room for them (ADR-1001: the budget
// survives restarts).
func (b *Budget) Inherit(key string, n int) {
	b.others(key, n, func(a *account, now time.Time) {
		behind := now.Add(min(time.Duration(n)*b.spacing(), Window))
		if a.tat.Before(behind) {
			a.tat = behind
		}
	})
}

// others applies what other replicas spent, n requests of key, to its
// account now (Inherit, Join); nothing when n is none.
func (b *Budget) others(key string, n int, apply func(a *account, now time.Time)) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	apply(b.account(key, now), now)
}

// Join counts n requests of key that the live replicas this one joins
// spent in their last minute (their heartbeats' count, at this one's first
// beat), as sent now: until they leave the window, this replica's
// followers spend only what its share leaves beside them. The replicas
// already running keep each to its own share once they see this one, but
// what they spent before is still in the tracker's minute: without it, a
// replica started 10 s after another spent its share on top of the
// other's whole minute (45 requests of a budget of 40 in the first 60 s).
func (b *Budget) Join(key string, n int) {
	b.others(key, n, func(a *account, now time.Time) {
		for range min(n, b.limit) {
			a.joined = append(a.joined, now)
		}
	})
}

// readsInWindow are the followers' requests in the window with what the
// replicas joined had spent (Join), oldest first; b.mu is held.
func (a *account) readsInWindow() []time.Time {
	if len(a.joined) == 0 {
		return a.reads
	}
	out := make([]time.Time, 0, len(a.joined)+len(a.reads))
	out = append(out, a.joined...)
	out = append(out, a.reads...)
	slices.SortFunc(out, func(x, y time.Time) int { return x.Compare(y) })
	return out
}

// Replicas answers how many replicas this one reckons share each key's
// limit now.
func (b *Budget) Replicas() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.settle(b.clock.Now())
	return b.replicas
}

// settle applies a fall in the replicas' count whose Window passed; b.mu
// is held.
func (b *Budget) settle(now time.Time) {
	if !b.raiseAt.IsZero() && !now.Before(b.raiseAt) {
		b.replicas, b.raiseAt = b.next, time.Time{}
	}
}

// share is what this replica may spend of a key a minute: the limit split
// evenly over the replicas; b.mu is held.
func (b *Budget) share() int { return max(1, b.limit/b.replicas) }

// ReplicaLimit answers what this replica may spend of a key a minute.
func (b *Budget) ReplicaLimit() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.settle(b.clock.Now())
	return b.share()
}

// spacing is the pacer's gap between two follower requests: the minute
// spread evenly over the replica's share of the limit; b.mu is held.
func (b *Budget) spacing() time.Duration { return Window / time.Duration(b.share()) }

// burst is how far ahead of its spacing the pacer lets calls go: a quarter
// of the share's back to back (ten at the default 40 on one replica), well
// within a tracker's own minute (Plane's 60); b.mu is held.
func (b *Budget) burst() time.Duration {
	return time.Duration(max(1, b.share()/4)-1) * b.spacing()
}

// account answers the key's account, pruned to the window; b.mu is held.
func (b *Budget) account(key string, now time.Time) *account {
	a, ok := b.keys[key]
	if !ok {
		a = &account{followed: map[string]time.Duration{}, abandoned: map[uint64]bool{}, turn: make(chan struct{}), extra: assumedExtra,
			windows: b.windowsOf(key)}
		b.keys[key] = a
	}
	a.pruneSent(now)
	a.writes = prune(a.writes, now)
	a.reads = prune(a.reads, now)
	a.joined = prune(a.joined, now)
	b.settle(now)
	return a
}

func prune(s []time.Time, now time.Time) []time.Time {
	cut := 0
	for cut < len(s) && !s[cut].After(now.Add(-Window)) {
		cut++
	}
	if cut == 0 {
		return s
	}
	return append(s[:0], s[cut:]...)
}

// Spend counts n requests of a write. A write is never held back, so Spend
// counts them even past the limit (ADR-0036: "writes spend it and are never
// held back"). Writing counts them as they are sent; Spend is for a caller
// that counts them itself.
func (b *Budget) Spend(key string, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	a := b.account(key, now)
	for range n {
		a.writes = append(a.writes, now)
	}
}

// Take takes one request for a follower if the minute has one to spare,
// and answers whether it did (ADR-0036: "polls take only what is left"). It
// is Spare without a context.
func (b *Budget) Take(key string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.takeSpare(key, b.clock.Now(), 0)
}

// Left answers how many requests the key has left this minute (0 when
// writes or the floor spent past the limit).
func (b *Budget) Left(key string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	a := b.account(key, b.clock.Now())
	return max(0, b.share()-len(a.writes)-len(a.reads))
}

// Follow counts a binding among the key's followers, polling every every;
// the floor and the stretched Interval are reckoned from them. Following a
// name again replaces its interval.
func (b *Budget) Follow(key, name string, every time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.account(key, b.clock.Now()).followed[name] = every
}

// Unfollow takes a binding off the key's followers.
func (b *Budget) Unfollow(key, name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.account(key, b.clock.Now()).followed, name)
}

// floorNeed is the requests a minute the key's followers need to poll once
// an interval each, an idle poll being one request; b.mu is held.
func (a *account) floorNeed() float64 {
	need := 0.0
	for _, every := range a.followed {
		if every > 0 {
			need += float64(Window) / float64(every)
		}
	}
	return need
}

// Interval answers how often each of the key's followers polls on its
// floor: every, or longer where the key has more followers than its limit
// can poll once every (the polls stretch evenly, so that polls alone never
// pass the limit: n followers at one request a poll need n requests an
// interval, and the floor may take nine tenths of the limit a minute).
func (b *Budget) Interval(key string, every time.Duration) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.interval(b.account(key, b.clock.Now()), every)
}

func (b *Budget) interval(a *account, every time.Duration) time.Duration {
	if need, capacity := b.floorNeed(a), min(b.floorCapacity(), b.windowCapacity(a)); need > capacity {
		// Scale every interval by how far the floor passes what it may
		// take of the limit (at most the longest Duration, for absurd
		// figures).
		return time.Duration(min(float64(every)*need/capacity, float64(math.MaxInt64/2)))
	}
	return every
}

// floorNeed is what this replica's share of the key's followers need a
// minute: the replicas hold the key's bindings evenly (follow's share), so
// each polls its part of them; b.mu is held.
func (b *Budget) floorNeed(a *account) float64 {
	return a.floorNeed() / float64(b.replicas)
}

// floorCapacity is the requests a minute the followers' polls may take of
// the replica's share: all of it but a tenth, which keeps room for a
// connection's reads and a poll's further requests beside them, and one at
// the least (a share of one request a minute, a budget under twice the
// replicas, keeps no room beside the polls: with none, every interval was
// infinite, read as a negative Duration); b.mu is held.
func (b *Budget) floorCapacity() float64 {
	return float64(max(1, b.share()-max(1, b.share()/10)))
}

// Writing answers a context whose requests count as a write's: spent, and
// never held back.
func (b *Budget) Writing(ctx context.Context, key string) context.Context {
	return b.meter(ctx, key, useWrite, 0)
}

// Floor waits for the key's pacer and answers a context whose requests
// count as the followers', and a func to call when the call made with it is
// done, which gives back the room kept for further requests it did not
// send (ADR-0036 as it departs: a binding's scheduled
// poll is never held back by writes). The pacer lets the followers' requests
// go one every minute/limit, a few back to back, and never more than the
// limit in a minute, so polls alone stay within it. It fails only when ctx
// ends.
func (b *Budget) Floor(ctx context.Context, key string) (context.Context, func(), error) {
	b.mu.Lock()
	start := b.clock.Now()
	a := b.account(key, start)
	ticket := a.nextTicket
	a.nextTicket++
	b.mu.Unlock()
	blocked := false
	for {
		b.mu.Lock()
		now := b.clock.Now()
		a = b.account(key, now)
		var wait time.Duration
		turn := a.turn
		if a.serving == ticket {
			if wait = b.paced(a, now); wait <= 0 {
				b.sendRead(a, now)
				b.advance(a)
				m := b.reserve(a, key)
				if blocked {
					m.waited = now.Sub(start)
				}
				b.mu.Unlock()
				return m.ctx(ctx), m.done, nil
			}
		}
		b.mu.Unlock()
		blocked = true
		var after <-chan time.Time
		if wait > 0 {
			after = b.clock.After(wait)
		}
		select {
		case <-ctx.Done():
			b.mu.Lock()
			if a.serving == ticket {
				b.advance(a)
			} else {
				a.abandoned[ticket] = true
			}
			b.mu.Unlock()
			return ctx, func() {}, ctx.Err()
		case <-turn:
		case <-after:
		}
	}
}

// Continue answers a context for a follower call that goes on a poll the
// pacer already admitted (its comment reads, its next page), and a func
// to call when it is done: it waits only for the minute to have room for
// it, not for the pacer's spacing, so a poll's requests go at the
// tracker's speed while the starts of polls stay spread. The pacer carries
// what it sends as debt, which spaces the next poll's start. It fails only
// when ctx ends.
func (b *Budget) Continue(ctx context.Context, key string) (context.Context, func(), error) {
	start, blocked := b.clock.Now(), false
	for {
		b.mu.Lock()
		now := b.clock.Now()
		a := b.account(key, now)
		wait := time.Duration(0)
		if room := max(1, b.share()-a.extra-a.reserved); len(a.reads) >= room {
			wait = a.reads[len(a.reads)-room].Add(Window).Sub(now) + time.Nanosecond
		}
		if wait <= 0 {
			b.sendRead(a, now)
			m := b.reserve(a, key)
			if blocked {
				m.waited = now.Sub(start) // what the minute's room held it (Waited)
			}
			b.mu.Unlock()
			return m.ctx(ctx), m.done, nil
		}
		b.mu.Unlock()
		blocked = true
		if err := clock.Sleep(ctx, b.clock, wait); err != nil {
			return ctx, func() {}, err
		}
	}
}

// ContinueSpare is Continue for a call that takes only what the minute
// spares (Spare's, or with idle Idle's, rule): it answers false, counting
// the refusal as Spare does, when the minute spares nothing.
func (b *Budget) ContinueSpare(ctx context.Context, key string, idle bool) (context.Context, func(), bool) {
	if !b.spares(key, idle) {
		return ctx, func() {}, false
	}
	ctx, done, err := b.Continue(ctx, key)
	return ctx, done, err == nil
}

// spares reports whether the key's minute has a request to spare (with
// idle, while it is less than half spent), counting a refusal.
func (b *Budget) spares(key string, idle bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	keep := 0
	if idle {
		keep = b.share() / 2
	}
	return b.hasSpare(key, b.clock.Now(), keep)
}

// reserve makes the meter of a follower call just admitted, reserving
// what it may send beyond its first request; b.mu is held.
func (b *Budget) reserve(a *account, key string) *meter {
	m := &meter{b: b, key: key, use: useRead, reserve: a.extra, windowed: len(a.windows) > 0}
	m.prepaid.Store(1)
	a.reserved += a.extra
	return m
}

// advance hands the floor's turn to the next ticket still waiting; b.mu is
// held.
func (b *Budget) advance(a *account) {
	a.serving++
	for a.abandoned[a.serving] {
		delete(a.abandoned, a.serving)
		a.serving++
	}
	close(a.turn)
	a.turn = make(chan struct{})
}

// Spare answers a context whose requests count as the followers' (and a
// func to call when the call is done, as Floor's), when the key has a
// request to spare: the minute's writes and reads leave one, and the reads
// leave room for the floor's polls to come. It then waits for the pacer, in
// turn with the floor. It answers false, and counts the refusal, when the
// minute spares nothing (ADR-0036: "polls take only what is left").
func (b *Budget) Spare(ctx context.Context, key string) (context.Context, func(), bool) {
	return b.spare(ctx, key, false)
}

// Idle is Spare for reading ahead of need (a sweep before its day): it
// answers a context only while the key's minute is less than half spent,
// its floor's polls included, so work that can wait never takes what a
// poll or a burst of writes would want.
func (b *Budget) Idle(ctx context.Context, key string) (context.Context, func(), bool) {
	return b.spare(ctx, key, true)
}

func (b *Budget) spare(ctx context.Context, key string, idle bool) (context.Context, func(), bool) {
	if !b.spares(key, idle) {
		return ctx, func() {}, false
	}
	// What the minute spares goes through the pacer in turn with the
	// floor's requests, so it never bursts.
	ctx, done, err := b.Floor(ctx, key)
	if err != nil {
		return ctx, done, false
	}
	return ctx, done, true
}

// hasSpare reports whether the key's minute spares a request, leaving keep
// of the limit untouched, and counts the refusal when it does not; b.mu is
// held.
func (b *Budget) hasSpare(key string, now time.Time, keep int) bool {
	a := b.account(key, now)
	reserve := int(b.floorNeed(a) + 0.999)
	room := b.share() - keep - a.reserved - a.extra
	if len(a.writes)+len(a.reads)+len(a.joined) >= room || len(a.reads)+len(a.joined)+reserve >= room {
		if keep == 0 {
			a.spareDenied++
			b.m.Add(metrics.SpareRefused, 1, metrics.Labels{"key": key})
		}
		return false
	}
	return true
}

// takeSpare takes one spare request for key now, when the minute spares
// one and the pacer allows it now; b.mu is held.
func (b *Budget) takeSpare(key string, now time.Time, keep int) bool {
	a := b.account(key, now)
	if a.serving != a.nextTicket || b.paced(a, now) > 0 || !b.hasSpare(key, now, keep) {
		return false
	}
	b.sendRead(a, now)
	return true
}

// paced answers how long the next follower request must wait: for the pacer
// (GCRA: at most the burst ahead of the theoretical arrival time) and for
// the minute to hold fewer than the limit's reads.
func (b *Budget) paced(a *account, now time.Time) time.Duration {
	wait := a.tat.Add(-b.burst()).Sub(now)
	// The minute keeps room for the call's first request, what it may
	// send beyond it, and what the calls under way may still send.
	if reads, room := a.readsInWindow(), max(1, b.share()-a.extra-a.reserved); len(reads) >= room {
		wait = max(wait, reads[len(reads)-room].Add(Window).Sub(now)+time.Nanosecond)
	}
	return wait
}

// sendRead counts one follower request sent now; b.mu is held.
func (b *Budget) sendRead(a *account, now time.Time) {
	a.reads = append(a.reads, now)
	if a.tat.Before(now) {
		a.tat = now
	}
	a.tat = a.tat.Add(b.spacing())
}

// assumedExtra is how many requests a follower call is taken to send
// beyond the one paced for until one is seen to send more: a connection's
// reads (Plane reads the project and its states).
const assumedExtra = 2

type use int

const (
	useWrite use = iota + 1
	useRead
)

// meter counts the requests sent with a context: the first prepaid of them
// were counted when the context was handed out.
type meter struct {
	b       *Budget
	key     string
	use     use
	prepaid atomic.Int32
	debt    int // requests beyond the prepaid, under b.mu
	reserve int // what it reserved and has not sent yet, under b.mu
	// waited is how long the call waited for the pacer before its first
	// request (Waited).
	waited time.Duration
	// windowed: the key's tracker has windows of its own, which every
	// request is admitted to and logged in.
	windowed bool
}

// meterKey finds a call's meter in its context.
type meterKey struct{}

// Waited answers how long the call ctx was handed out for (Floor, Spare,
// Idle) waited for its key's pacer before its first request, or (Continue)
// for the minute's room: zero when it went at once. A poll that waited is
// one the budget deferred.
func Waited(ctx context.Context) time.Duration {
	if m, ok := ctx.Value(meterKey{}).(*meter); ok {
		return m.waited
	}
	return 0
}

func (b *Budget) meter(ctx context.Context, key string, u use, prepaid int32) context.Context {
	m := &meter{b: b, key: key, use: u}
	m.prepaid.Store(prepaid)
	b.mu.Lock()
	m.windowed = len(b.account(key, b.clock.Now()).windows) > 0
	b.mu.Unlock()
	return m.ctx(ctx)
}

func (m *meter) ctx(ctx context.Context) context.Context {
	ctx = context.WithValue(ctx, meterKey{}, m)
	ctx = tracker.WithFree(ctx, m.free)
	if m.windowed {
		ctx = tracker.WithAdmit(ctx, m.admit, m.report)
	}
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { m.sent() },
	})
}

// done gives back what the call reserved and did not send.
func (m *meter) done() {
	b := m.b
	b.mu.Lock()
	defer b.mu.Unlock()
	a := b.account(m.key, b.clock.Now())
	a.reserved -= m.reserve
	m.reserve = 0
}

func (m *meter) sent() {
	if m.windowed {
		b := m.b
		b.mu.Lock()
		now := b.clock.Now()
		b.logSent(b.account(m.key, now), now, m.use == useWrite)
		b.mu.Unlock()
	}
	if m.prepaid.Add(-1) >= 0 {
		return
	}
	b := m.b
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	a := b.account(m.key, now)
	if m.use == useWrite {
		a.writes = append(a.writes, now)
		return
	}
	// A follower request beyond the one paced for (a connection's reads)
	// goes, and the pacer carries the debt.
	b.sendRead(a, now)
	m.debt++
	a.extra = max(a.extra, m.debt)
	if m.reserve > 0 {
		m.reserve--
		a.reserved--
	}
}

// free gives back one request the call counted: the tracker answered it
// 304 to a conditional request and counts it against nothing (GitHub).
// The pacer still spaced it; the minute no longer holds it.
func (m *meter) free() {
	b := m.b
	b.mu.Lock()
	defer b.mu.Unlock()
	a := b.account(m.key, b.clock.Now())
	a.unchanged++
	s := &a.reads
	if m.use == useWrite {
		s = &a.writes
	}
	if n := len(*s); n > 0 {
		*s = (*s)[:n-1]
	}
	if n := len(a.sent); n > 0 {
		a.sent = a.sent[:n-1]
	}
}

// Observe takes a tracker call's outcome for the key: it counts 429s, and
// says in the log when the tracker answers 429 or is unavailable StreakWarn
// times in a row (warn), and when it answers again after such a streak
// (info).
func (b *Budget) Observe(key string, err error) {
	what := ""
	switch {
	case errors.Is(err, tracker.ErrRateLimited):
		what = "rate_limited"
	case errors.Is(err, tracker.ErrUnavailable) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded):
		what = "unavailable"
	case err != nil:
		return // an answer of its own (refused, not found): no streak either way
	}
	b.mu.Lock()
	a := b.account(key, b.clock.Now())
	if what == "rate_limited" {
		a.limited++
	}
	prev, prevWhat := a.streak, a.streakWhat
	switch what {
	case "":
		a.streak, a.streakWhat = 0, ""
	case a.streakWhat:
		a.streak++
	default:
		a.streak, a.streakWhat = 1, what
	}
	streak := a.streak
	b.mu.Unlock()
	if what == "rate_limited" {
		b.m.Add(metrics.RateLimited, 1, metrics.Labels{"key": key})
	}
	switch {
	case what != "" && streak == StreakWarn:
		b.logger.Warn("tracker answers in a streak", "key", key, "answer", what, "streak", streak)
	case what == "" && prev >= StreakWarn:
		b.logger.Info("tracker answers again", "key", key, "after", prevWhat, "streak", prev)
	}
}

// KeyStatus is one key's budget as the status route shows it.
type KeyStatus struct {
	Key string `json:"key"`
	// Limit is the key's requests a minute across every replica;
	// Replicas how many replicas share it, and ReplicaLimit what this
	// one may spend of it (Limit / Replicas).
	Limit        int `json:"limit"`
	Replicas     int `json:"replicas"`
	ReplicaLimit int `json:"replica_limit"`
	// SpentAcrossReplicas is what every live replica spent of the key in
	// its last minute, as their heartbeats last told (this replica's
	// alone where none told).
	SpentAcrossReplicas int `json:"spent_across_replicas"`
	// Spent is the requests this replica sent in the last minute, writes
	// and reads; Left what its share leaves of it (0 when spent past it).
	Spent  int `json:"spent"`
	Writes int `json:"writes"`
	Reads  int `json:"reads"`
	Left   int `json:"left"`
	// Followed is how many bindings poll with the key; FloorPerMinute the
	// requests their polls need a minute at one request a poll.
	Followed       int     `json:"followed"`
	FloorPerMinute float64 `json:"floor_per_minute"`
	// Stretched is true when the floor passes the limit, so each binding
	// polls less often than its interval (see Interval).
	Stretched bool `json:"stretched"`
	// RateLimited counts the 429s the tracker answered; SpareRefused the
	// spare requests (early sweeps, a first read's further pages) the
	// budget refused.
	RateLimited  int64 `json:"rate_limited"`
	SpareRefused int64 `json:"spare_refused"`
	// Unchanged counts the conditional reads the tracker answered 304,
	// which cost nothing of its limit and were given back.
	Unchanged int64 `json:"unchanged"`
	// Held counts the requests held, unsent, for a window of the
	// tracker's own (its hour, its points a minute).
	Held int64 `json:"held"`
	// Queued is how many polls wait for the pacer now.
	Queued int `json:"queued"`
}

// Status answers every key's budget, ordered by key.
func (b *Budget) Status() []KeyStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	out := make([]KeyStatus, 0, len(b.keys))
	for key := range b.keys {
		a := b.account(key, now)
		need := a.floorNeed()
		spent := len(a.writes) + len(a.reads)
		out = append(out, KeyStatus{
			Key: key, Limit: b.limit, Replicas: b.replicas, ReplicaLimit: b.share(), SpentAcrossReplicas: spent,
			Spent: spent, Writes: len(a.writes), Reads: len(a.reads),
			Left: max(0, b.share()-spent), Followed: len(a.followed), FloorPerMinute: need,
			Stretched: b.floorNeed(a) > b.floorCapacity(), RateLimited: a.limited, SpareRefused: a.spareDenied, Unchanged: a.unchanged, Held: a.held,
			Queued: int(a.nextTicket - a.serving),
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}
