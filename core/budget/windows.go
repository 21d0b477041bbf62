package budget

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
)

// TrackerWindow is one of a tracker's own limits beside the budget's minute: at
// most Limit of cost in any Span, across every replica. A read costs one;
// a write costs WriteCost (GitHub weighs a write at five points of its
// minute's 900). Reported marks the window the tracker reports in its
// answers (x-ratelimit-remaining and -reset), whose word is taken as the
// truth, since other clients may spend the same key.
//
// A window keeps ADR-0036's floor as the budget's minute does: writes are
// never held back by the followers, but the followers are not starved by
// the writes either. A write that would leave a window less than the
// floor's polls need over its span is answered rate-limited, unsent, until
// room is made; a follower's request is held only when the window is
// spent; and where the floor's polls alone would pass a window, their
// interval stretches (Interval), within the hour as within the minute.
type TrackerWindow struct {
	Span      time.Duration
	Limit     int
	WriteCost int
	Reported  bool
}

func (w TrackerWindow) cost(write bool) int {
	if write && w.WriteCost > 1 {
		return w.WriteCost
	}
	return 1
}

// TrackerWindows are the windows of each tracker kind by default:
// GitHub's hour of 5,000 requests per token, which it reports, and its
// minute of 900 points where a write costs five (docs/trackers/github.md
// §2). Plane and Vikunja keep the budget's minute alone.
var TrackerWindows = map[string][]TrackerWindow{
	"github": {
		{Span: time.Hour, Limit: 5000, Reported: true},
		{Span: time.Minute, Limit: 900, WriteCost: 5},
	},
	// Linear's requests an hour a user, as its older docs and two live
	// clients have it (2,500; newer copies say 5,000), reported on every
	// answer (X-RateLimit-Requests-Remaining and -Reset, which the Linear
	// driver reports). Its complexity points are the driver's to keep.
	"linear": {
		{Span: time.Hour, Limit: 2500, Reported: true},
	},
}

// CheckWindows checks a kind's windows: each a span of a second to a day
// and a limit and a write's cost that are not negative.
func CheckWindows(ws []TrackerWindow) error {
	for _, w := range ws {
		switch {
		case w.Span < time.Second || w.Span > 24*time.Hour:
			return fmt.Errorf("a window of %s: spans are a second to a day", w.Span)
		case w.Limit < 1:
			return fmt.Errorf("a window of %s with a limit of %d: at least one", w.Span, w.Limit)
		case w.WriteCost < 0:
			return fmt.Errorf("a window of %s with writes costing %d", w.Span, w.WriteCost)
		}
	}
	return nil
}

// sentAt is one request sent with a key, for its windows.
type sentAt struct {
	at    time.Time
	write bool
}

// reported is what the tracker last said of its reported window.
type reported struct {
	remaining int
	reset     time.Time
	at        time.Time // when it said so: requests sent since are taken off remaining
}

// windowsOf answers the windows of a key ("tenant/kind"); b.mu is held.
func (b *Budget) windowsOf(key string) []TrackerWindow {
	kind := key[strings.LastIndexByte(key, '/')+1:]
	return b.windows[kind]
}

// span is the longest of ws' spans.
func span(ws []TrackerWindow) time.Duration {
	var s time.Duration
	for _, w := range ws {
		s = max(s, w.Span)
	}
	return s
}

// logSent counts one request sent for the key's windows; b.mu is held.
func (b *Budget) logSent(a *account, now time.Time, write bool) {
	if len(a.windows) > 0 {
		a.sent = append(a.sent, sentAt{at: now, write: write})
	}
}

// pruneSent drops what every window has let go; b.mu is held.
func (a *account) pruneSent(now time.Time) {
	if len(a.windows) == 0 {
		return
	}
	cut := 0
	longest := span(a.windows)
	for cut < len(a.sent) && !a.sent[cut].at.After(now.Add(-longest)) {
		cut++
	}
	a.sent = a.sent[cut:]
}

// used answers what w holds of the key now, and how long until it holds
// less by need; b.mu is held.
func (a *account) used(w TrackerWindow, now time.Time, need int) (int, time.Duration) {
	total := 0
	start := now.Add(-w.Span)
	first := len(a.sent)
	for i := len(a.sent) - 1; i >= 0 && a.sent[i].at.After(start); i-- {
		total += w.cost(a.sent[i].write)
		first = i
	}
	// The oldest requests leave the window first: the wait is until
	// enough of them have.
	freed, wait := 0, time.Duration(0)
	for i := first; i < len(a.sent) && freed < need; i++ {
		freed += w.cost(a.sent[i].write)
		wait = a.sent[i].at.Add(w.Span).Sub(now) + time.Nanosecond
	}
	return total, wait
}

// floorKeep is what the floor's polls need of w over its span at this
// replica, a read costing one; b.mu is held.
func (b *Budget) floorKeep(a *account, w TrackerWindow) int {
	return int(math.Ceil(b.floorNeed(a) * float64(w.Span) / float64(Window)))
}

// windowCapacity is the requests a minute the floor's polls may take of
// the key's windows at this replica: nine tenths of each, spread over its
// span (math.Inf(1) without windows); b.mu is held.
func (b *Budget) windowCapacity(a *account) float64 {
	c := math.Inf(1)
	for _, w := range a.windows {
		share := float64(w.Limit) / float64(b.replicas)
		c = min(c, share*0.9*float64(Window)/float64(w.Span))
	}
	return max(c, 1)
}

// admit answers whether one more request of the call may be sent now
// under the key's windows: nil, or a rate-limited error, unsent, with the
// wait until it may.
func (m *meter) admit() error {
	b := m.b
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	a := b.account(m.key, now)
	write := m.use == useWrite
	var wait time.Duration
	for _, w := range a.windows {
		limit := max(1, w.Limit/b.replicas)
		keep := 0
		if write {
			keep = b.floorKeep(a, w)
		}
		cost := w.cost(write)
		used, _ := a.used(w, now, 0)
		if over := used + cost - max(0, limit-keep); over > 0 {
			_, freeIn := a.used(w, now, over)
			wait = max(wait, freeIn)
		}
		if w.Reported && a.told.reset.After(now) {
			left := a.told.remaining
			for _, s := range a.sent {
				if s.at.After(a.told.at) {
					left--
				}
			}
			if left-1 < keep*b.replicas {
				wait = max(wait, a.told.reset.Sub(now))
			}
		}
	}
	if wait <= 0 {
		return nil
	}
	a.held++
	what := "a follower's read"
	if write {
		what = "a write, which would leave the followers' polls too little"
	}
	return tracker.NotSent(fmt.Errorf("budget: %s of key %s waits %s for the tracker's window: %w", what, m.key, wait.Round(time.Second), tracker.RateLimited(wait)))
}

// report takes the tracker's word on its reported window.
func (m *meter) report(remaining int, reset time.Time) {
	b := m.b
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	a := b.account(m.key, now)
	a.told = reported{remaining: remaining, reset: reset, at: now}
}
