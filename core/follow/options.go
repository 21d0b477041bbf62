package follow

import (
	"math/rand/v2"
	"time"

	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/lease"
)

// The timings of ADR-0015 and ADR-0036, the defaults of Options.
const (
	// DefaultLeaseTTL: a follower's lease lasts 30 s, renewed every third
	// of that (ADR-0015, ADR-0036).
	DefaultLeaseTTL = lease.DefaultTTL
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
	// DefaultDebounce: a nudge after a quiet spell reads at once, and the
	// nudges after it are gathered into at most one poll every 2 s
	// (ADR-0036's 2 s debounce, its departures).
	DefaultDebounce = 2 * time.Second
	// DefaultMaxJitter: a 429 is waited out with up to a second of jitter.
	DefaultMaxJitter = time.Second
	// DefaultSettleAfter: an item read this long after its last change has
	// settled: a comment in the same second as that change has shown up.
	// Vikunja keeps time to the second; the rest is room for the clocks of
	// relayr and the tracker to differ.
	DefaultSettleAfter = 5 * time.Second
	// DefaultFilingBound: relayr's item whose key is claimed and not yet
	// recorded, read with no snapshot, is left for the next poll for this
	// long after its claim: the write bound (20 s) and the retake (30 s)
	// of ADR-0033, within which a filing leaves the item's first snapshot
	// or its claim is retaken by one that will.
	DefaultFilingBound = 50 * time.Second
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
	// Debounce is how long after a poll began a nudge's poll may come:
	// the first nudge of a quiet spell reads at once, the burst after
	// it gathers into one poll this long after.
	Debounce time.Duration
	// MaxJitter bounds the jitter added to a 429's Retry-After.
	MaxJitter time.Duration
	// SettleAfter is how long after an item's last change a read finds its
	// comments settled (see DefaultSettleAfter).
	SettleAfter time.Duration
	// FilingBound is how long after its claim relayr's item with no
	// snapshot is left for its filing to leave one (see
	// DefaultFilingBound); past it the item is read as it stands.
	FilingBound time.Duration
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
	def(&o.FilingBound, DefaultFilingBound)
	def(&o.MaxJitter, DefaultMaxJitter)
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
	return o
}

// renewEvery is a third of the lease (ADR-0015: "renewed every third of
// that").
func (o Options) renewEvery() time.Duration { return lease.RenewEvery(o.LeaseTTL) }

// beatTTL is how long a replica's heartbeat keeps it counted: two beats,
// a beat every third of a lease. A killed replica drops out of the others'
// count before its leases lapse, so the survivors' shares have grown by
// the time its bindings are free (ADR-1002: a takeover spreads).
func (o Options) beatTTL() time.Duration { return 2 * o.renewEvery() }
