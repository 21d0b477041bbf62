package follow

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"math/rand/v2"
	"time"

	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/ledger"
)

// The timings of ADR-0015 and ADR-0036, the defaults of Options.
const (
	// DefaultLeaseTTL: a follower's lease lasts 30 s, renewed every third
	// of that (ADR-0015, ADR-0036).
	DefaultLeaseTTL = 30 * time.Second
	// DefaultPollEvery: a tracker follower polls its project every 30 s.
	DefaultPollEvery = 30 * time.Second
	// DefaultLookback: each poll reads what changed since two minutes
	// before its cursor.
	DefaultLookback = 2 * time.Minute
	// DefaultSweepEvery: a sweep reads the whole project once a day, at
	// the least: past that it goes on whatever writes spend.
	DefaultSweepEvery = 24 * time.Hour
	// DefaultSweepMin: a sweep may come this soon after the last, on what
	// the budget leaves idle, so a deletion no webhook announces (Plane
	// sends none) is found as soon as the budget allows
	// (ADR-0036's departures).
	DefaultSweepMin = time.Minute
	// DefaultLateAfter: a follower that completed no poll in this many of
	// its intervals is late, which the log and the status say.
	DefaultLateAfter = 3
	// DefaultDebounce: a nudge wakes the followers debounced by 2 s.
	DefaultDebounce = 2 * time.Second
	// DefaultMaxJitter: a 429 is waited out with up to a second of jitter.
	DefaultMaxJitter = time.Second
	// DefaultSettleAfter: an item read this long after its last change has
	// settled: a comment in the same second as that change has shown up.
	// Vikunja keeps time to the second; the rest is room for the clocks of
	// relayr and the tracker to differ.
	DefaultSettleAfter = 5 * time.Second
	// DefaultLogPollEvery: a log follower that read everything looks again
	// after a second, or at once when Notify wakes it.
	DefaultLogPollEvery = time.Second
	// DefaultLogBatch: how many entries a log follower reads at a time.
	DefaultLogBatch = 100
	// DefaultQuietSave: a log follower saves its cursor after every 500
	// entries that bridge nothing (ADR-0015).
	DefaultQuietSave = 500
	// DefaultRetryFirst and DefaultRetryMax: a log follower whose sink
	// fails for a while (ErrRetry) tries again from its cursor after a
	// second, doubling each time up to five minutes, as the HTTP
	// subscriber backs off.
	DefaultRetryFirst = time.Second
	DefaultRetryMax   = 5 * time.Minute
)

// Options tune the followers; a zero field takes the seeds' default.
type Options struct {
	// LeaseTTL is how long a lease lasts; it is renewed every third of it.
	LeaseTTL time.Duration
	// PollEvery is a tracker follower's interval between polls.
	PollEvery time.Duration
	// Lookback is how far before its cursor a poll reads.
	Lookback time.Duration
	// SweepEvery is how often a tracker follower reads its whole project,
	// at the least.
	SweepEvery time.Duration
	// SweepMin is how soon after the last a sweep may come on what the
	// budget leaves idle; a negative SweepMin sweeps only every
	// SweepEvery.
	SweepMin time.Duration
	// Debounce is how long after a first nudge its poll comes.
	Debounce time.Duration
	// MaxJitter bounds the jitter added to a 429's Retry-After.
	MaxJitter time.Duration
	// SettleAfter is how long after an item's last change a read finds its
	// comments settled (see DefaultSettleAfter).
	SettleAfter time.Duration
	// ReopenAfter, when set, opens a stopped follower again that long after
	// it stopped, as Open would: a service has no one to open a workspace,
	// and a storage failure that passes must not stop the reading for good.
	// Zero (the seeds' rule) leaves a stopped follower stopped until Open.
	ReopenAfter time.Duration
	// Jitter answers the jitter added to a 429's Retry-After, in
	// [0, MaxJitter); a uniform random draw when nil.
	Jitter func(max time.Duration) time.Duration
	// Reserved lists the namespaces no projection may answer a new event
	// in; eventlog.TrackerNamespace when nil (only the tracker followers
	// make tracker: events, and only from what they read).
	Reserved []string

	// LogPollEvery is how soon a log follower that read everything looks
	// again when nothing notifies it.
	LogPollEvery time.Duration
	// LogBatch is how many entries a log follower reads at a time.
	LogBatch int
	// QuietSave is after how many entries that bridge nothing a log
	// follower saves its cursor.
	QuietSave int
	// RetryFirst is a log follower's first wait after its sink failed
	// with ErrRetry; each failure in a row doubles it, up to RetryMax.
	RetryFirst time.Duration
	RetryMax   time.Duration
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.LeaseTTL, DefaultLeaseTTL)
	def(&o.PollEvery, DefaultPollEvery)
	def(&o.Lookback, DefaultLookback)
	def(&o.SweepEvery, DefaultSweepEvery)
	if o.SweepMin == 0 {
		o.SweepMin = DefaultSweepMin
	}
	def(&o.Debounce, DefaultDebounce)
	def(&o.SettleAfter, DefaultSettleAfter)
	def(&o.MaxJitter, DefaultMaxJitter)
	def(&o.LogPollEvery, DefaultLogPollEvery)
	def(&o.RetryFirst, DefaultRetryFirst)
	def(&o.RetryMax, DefaultRetryMax)
	if o.Jitter == nil {
		o.Jitter = func(max time.Duration) time.Duration {
			if max <= 0 {
				return 0
			}
			return rand.N(max) //nolint:gosec // a jitter, not a secret
		}
	}
	if o.Reserved == nil {
		o.Reserved = []string{eventlog.TrackerNamespace}
	}
	if o.LogBatch <= 0 {
		o.LogBatch = DefaultLogBatch
	}
	if o.QuietSave <= 0 {
		o.QuietSave = DefaultQuietSave
	}
	return o
}

// renewEvery is a third of the lease (ADR-0015: "renewed every third of
// that").
func (o Options) renewEvery() time.Duration { return o.LeaseTTL / 3 }

// beatTTL is how long a replica's heartbeat keeps it counted: two beats,
// a beat every third of a lease. A killed replica drops out of the others'
// count before its leases lapse, so the survivors' shares have grown by
// the time its bindings are free (ADR-1002: a takeover spreads).
func (o Options) beatTTL() time.Duration { return 2 * o.renewEvery() }

// newHolder names a process in the leases when its configuration doesn't.
func newHolder() string {
	var b [8]byte
	_, _ = cryptoRead(b[:])
	return "relayr-" + hex.EncodeToString(b[:])
}

var cryptoRead = crand.Read

// lease is a follower's hold on its row in the ledger: taken, renewed with
// the nonce the last change answered, released at once (Ratus: a holder
// whose lease was taken cannot renew it).
type lease struct {
	ledger ledger.Followers
	clock  clock.Clock
	f      ledger.Follower
	holder string
	ttl    time.Duration
	nonce  string
	// expires is when the lease lapses unless renewed.
	expires time.Time
}

// take takes the lease, within its TTL: a take the ledger has not answered
// by then took a lease already lapsed, and the follower tries again.
func (x *lease) take(ctx context.Context) error {
	tctx, cancel := x.clock.WithTimeout(ctx, x.ttl)
	defer cancel()
	l, err := x.ledger.TakeLease(tctx, ledger.LeaseParams{Follower: x.f, Holder: x.holder, Now: x.clock.Now(), TTL: x.ttl})
	if err != nil {
		return err
	}
	x.nonce, x.expires = l.Nonce, l.Expires
	return nil
}

// renew renews the lease, within what is left of it: past its expiry
// another replica may take the binding, so a renewal the ledger has not
// answered by then (a connection that hangs rather than fails) is a lease
// lost, and the reading stops (ADR-0015: one reader a binding).
func (x *lease) renew(ctx context.Context) error {
	rctx, cancel := x.clock.WithTimeout(ctx, x.expires.Sub(x.clock.Now()))
	defer cancel()
	l, err := x.ledger.RenewLease(rctx, ledger.LeaseParams{Follower: x.f, Holder: x.holder, Nonce: x.nonce, Now: x.clock.Now(), TTL: x.ttl})
	if err != nil {
		x.nonce = ""
		return err
	}
	x.nonce, x.expires = l.Nonce, l.Expires
	return nil
}

func (x *lease) held() bool { return x.nonce != "" }

// release gives the lease up at once, even when ctx has ended (a stopping
// process gives its leases up so another replica takes over without waiting
// for them to lapse).
func (x *lease) release(ctx context.Context) {
	if x.nonce == "" {
		return
	}
	rctx, cancel := x.clock.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = x.ledger.ReleaseLease(rctx, x.f, x.nonce)
	x.nonce = ""
}
