package deliver

import (
	"time"

	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/lease"
)

// The timings of ADR-0015, the defaults of Options.
const (
	// DefaultPollEvery: a log follower that read everything looks again
	// after a second, or at once when Notify (or its log) wakes it.
	DefaultPollEvery = time.Second
	// DefaultBatch: how many entries a log follower reads at a time.
	DefaultBatch = 100
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

// Options tune the log followers; a zero field takes the seeds' default.
type Options struct {
	// LeaseTTL is how long a lease lasts (lease.DefaultTTL); it is renewed
	// every third of it.
	LeaseTTL time.Duration
	// PollEvery is how soon a log follower that read everything looks
	// again when nothing wakes it.
	PollEvery time.Duration
	// Batch is how many entries a log follower reads at a time.
	Batch int
	// QuietSave is after how many entries that bridge nothing a log
	// follower saves its cursor.
	QuietSave int
	// RetryFirst is a log follower's first wait after its sink failed
	// with ErrRetry; each failure in a row doubles it, up to RetryMax.
	RetryFirst time.Duration
	RetryMax   time.Duration
	// ReopenAfter, when set, follows a stopped log again that long after
	// its follower stopped, as Follow would: a service has no one to
	// follow it again, and a failure that passes must not stop the
	// delivery for good. Zero (the seeds' rule) leaves it stopped.
	ReopenAfter time.Duration
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
	def(&o.LeaseTTL, lease.DefaultTTL)
	def(&o.PollEvery, DefaultPollEvery)
	def(&o.RetryFirst, DefaultRetryFirst)
	def(&o.RetryMax, DefaultRetryMax)
	if o.Reserved == nil {
		o.Reserved = []string{eventlog.TrackerNamespace}
	}
	if o.Batch <= 0 {
		o.Batch = DefaultBatch
	}
	if o.QuietSave <= 0 {
		o.QuietSave = DefaultQuietSave
	}
	return o
}
