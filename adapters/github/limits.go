package github

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// GitHub's limits on content creation per account (docs rate-limits,
// secondary: "no more than 80 content-generating requests per minute and
// no more than 500 content-generating requests per hour").
const (
	CreatesPerMinute = 80
	CreatesPerHour   = 500
)

// ConcurrentRequests is GitHub's secondary limit on requests in flight at
// once ("No more than 100 concurrent requests are allowed", docs
// rate-limits, secondary). Over HTTP/2 a bounded pool of connections
// bounds no streams, so the driver holds a token's requests to it itself,
// in each process; relayr's budget (40 requests a minute a key by default)
// keeps replicas far below it together.
const ConcurrentRequests = 100

// secondaryWait is the wait of a secondary limit that names none: "wait
// at least one minute" (docs rate-limits, "Exceeding the rate limit").
const secondaryWait = time.Minute

// limits is what GitHub said of one token's limits, shared by every
// Tracker of the token, and GitHub's own rule on content creation. It is
// the client's trackerhttp.Gate and sees every answer (classify): GitHub's
// headers are the truth of the hour, whoever else spends the token.
type limits struct {
	now func() time.Time
	// slots holds one token per request in flight (ConcurrentRequests).
	slots chan struct{}

	mu sync.Mutex
	// spentUntil is when GitHub's hour resets after an answer saying
	// nothing is left of it (x-ratelimit-remaining: 0).
	spentUntil time.Time
	// heldUntil is when a secondary limit GitHub answered ends.
	heldUntil time.Time
	creates   []time.Time // content-creating requests of the last hour, oldest first
}

func newLimits(now func() time.Time) *limits {
	return &limits{now: now, slots: make(chan struct{}, ConcurrentRequests)}
}

// Enter implements trackerhttp.Gate: a request waits for one of the
// token's ConcurrentRequests places (unsent if ctx ends first); a request
// GitHub has said it would refuse (the hour spent, a secondary limit in
// force) or one more content creation than GitHub takes in a minute or an
// hour is answered rate-limited, never sent.
func (l *limits) Enter(ctx context.Context, method string) (func(reached bool, status int), error) {
	select {
	case l.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, tracker.NotSent(fmt.Errorf("github: waiting for one of the token's %d requests at once: %w", ConcurrentRequests, ctx.Err()))
	}
	leave := func(bool, int) { <-l.slots }
	if err := l.admit(method); err != nil {
		leave(false, 0)
		return nil, err
	}
	return leave, nil
}

// admit refuses, unsent, a request GitHub would refuse.
func (l *limits) admit(method string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if wait := max(l.spentUntil.Sub(now), l.heldUntil.Sub(now)); wait > 0 {
		return tracker.NotSent(fmt.Errorf("github: the token's limit is spent for %s: %w", wait.Round(time.Second), tracker.RateLimited(wait)))
	}
	if method != http.MethodPost {
		return nil
	}
	l.creates = prune(l.creates, now.Add(-time.Hour))
	if wait := l.createWait(now); wait > 0 {
		return tracker.NotSent(fmt.Errorf("github: %d issues and comments a minute, %d an hour, are GitHub's most: %w", CreatesPerMinute, CreatesPerHour, tracker.RateLimited(wait)))
	}
	l.creates = append(l.creates, now)
	return nil
}

// createWait answers how long until one more content creation is within
// both of GitHub's windows; l.mu is held.
func (l *limits) createWait(now time.Time) time.Duration {
	var wait time.Duration
	if n := len(l.creates); n >= CreatesPerHour {
		wait = l.creates[n-CreatesPerHour].Add(time.Hour).Sub(now)
	}
	minute := 0
	for i := len(l.creates) - 1; i >= 0 && l.creates[i].After(now.Add(-time.Minute)); i-- {
		minute++
		if minute == CreatesPerMinute {
			wait = max(wait, l.creates[i].Add(time.Minute).Sub(now))
		}
	}
	return wait
}

func prune(ts []time.Time, before time.Time) []time.Time {
	i := 0
	for i < len(ts) && !ts[i].After(before) {
		i++
	}
	return ts[i:]
}

// classify reads GitHub's limits off every answer and maps what GitHub
// means by its statuses: a 403 or 429 of a spent hour or a secondary limit
// is rate-limited (its retry-after, else its reset, else a minute), any
// other 403 is the key refused.
func (l *limits) classify(a trackerhttp.Answer, def error) error {
	now := l.now()
	remaining, hasRemaining := header(a.Header, "X-Ratelimit-Remaining")
	reset, hasReset := header(a.Header, "X-Ratelimit-Reset")
	l.mu.Lock()
	if hasRemaining && hasReset && remaining == 0 {
		l.spentUntil = time.Unix(reset, 0)
	}
	l.mu.Unlock()
	if a.Status != http.StatusForbidden && a.Status != http.StatusTooManyRequests {
		return def
	}
	secondary := strings.Contains(strings.ToLower(string(a.Body)), "secondary rate limit")
	limited := a.Status == http.StatusTooManyRequests || secondary || a.Header.Get("Retry-After") != "" || (hasRemaining && remaining == 0)
	if !limited {
		return fmt.Errorf("%d %s: %w", a.Status, trackerhttp.Detail(a.Body), tracker.ErrUnauthorized)
	}
	wait := trackerhttp.RateWait(a.Header, secondaryWait, now)
	if secondary || a.Header.Get("Retry-After") != "" {
		l.mu.Lock()
		l.heldUntil = now.Add(wait)
		l.mu.Unlock()
	}
	return fmt.Errorf("%d %s: %w", a.Status, trackerhttp.Detail(a.Body), tracker.RateLimited(wait))
}

func header(h http.Header, k string) (int64, bool) {
	v, err := strconv.ParseInt(strings.TrimSpace(h.Get(k)), 10, 64)
	return v, err == nil
}
