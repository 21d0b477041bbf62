package gitlab

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// Limits are the instance's limits, per minute (docs/trackers/gitlab.md
// §2). Zero takes GitLab.com's; a negative value is no limit (a
// self-managed instance has the API throttle off by default, and an
// admin may set issues_create_limit or notes_create_limit to 0).
type Limits struct {
	// Requests is the authenticated API requests a user sends a minute
	// (GitLab.com 2,000; self-managed, when on, 7,200 an hour).
	Requests int
	// IssueCreates is the issues a user creates in one project a minute
	// (GitLab.com 200; issues_create_limit).
	IssueCreates int
	// Notes is the notes a user creates a minute (GitLab.com 60;
	// notes_create_limit).
	Notes int
}

// GitLabCom are GitLab.com's limits (doc/user/gitlab_com/_index.md).
var GitLabCom = Limits{Requests: 2000, IssueCreates: 200, Notes: 60}

func (l Limits) withDefaults() (Limits, error) {
	for _, f := range []struct {
		n   *int
		def int
	}{{&l.Requests, GitLabCom.Requests}, {&l.IssueCreates, GitLabCom.IssueCreates}, {&l.Notes, GitLabCom.Notes}} {
		if *f.n == 0 {
			*f.n = f.def
		}
	}
	return l, nil
}

// span is the window the driver counts a limit over: GitLab's minute,
// and a second for requests overtaking one another on their way. Every
// limiter of GitLab's counts in fixed windows of a minute
// (lib/gitlab/application_rate_limiter.rb, Rack-Attack's epoch-aligned
// periods); no more than a limit in any span is within it in any window.
const span = time.Minute + time.Second

// class is which of GitLab's limiters a request counts against besides
// the user's requests.
type class int

const (
	anyRequest class = iota
	issueCreate
	noteCreate
)

func (c class) String() string {
	switch c {
	case issueCreate:
		return "issue creations"
	case noteCreate:
		return "note creations"
	}
	return "requests"
}

// pacer keeps a user's requests within GitLab's limits unsent: each
// request waits for room where the caller's deadline allows, and is
// answered rate-limited, unsent, where it doesn't. What GitLab says (a
// 429, RateLimit-Remaining: 0) is held for as long as it says, or to the
// end of GitLab's minute where it says nothing (the create and note
// limiters' 429 carries no Retry-After, §2).
type pacer struct {
	lim   Limits
	now   func() time.Time
	sleep func(context.Context, time.Duration) error

	mu       sync.Mutex
	requests []time.Time           // within the span, oldest first
	creates  map[int64][]time.Time // project → its creations within the span
	notes    []time.Time
	held     map[class]time.Time // a limiter → held until
}

// pacer answers the limits of the user a token acts as: GitLab counts per
// user, whichever workspace sends.
func (c *Connector) pacer(user string) *pacer {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.pacers[user]
	if !ok {
		p = &pacer{lim: c.cfg.Limits, now: c.cfg.Now, sleep: c.cfg.Sleep, creates: map[int64][]time.Time{}, held: map[class]time.Time{}}
		c.pacers[user] = p
	}
	return p
}

// enter waits until a request of cl is within the limits, and counts it.
func (p *pacer) enter(ctx context.Context, cl class, project int64) error {
	for {
		wait, which := p.reserve(cl, project)
		if wait <= 0 {
			return nil
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			// A context's deadline is on the system's clock, whatever
			// clock the driver counts GitLab's minutes on.
			return tracker.NotSent(fmt.Errorf("gitlab: over GitLab's limit of %s for %s: %w", which, wait.Round(time.Millisecond), tracker.RateLimited(wait)))
		}
		if err := p.sleep(ctx, wait); err != nil {
			return tracker.NotSent(fmt.Errorf("gitlab: waiting for GitLab's limit of %s: %w", which, err))
		}
	}
}

// reserve answers how long a request must wait and which limit holds it,
// or counts it and answers none.
func (p *pacer) reserve(cl class, project int64) (time.Duration, class) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	var wait time.Duration
	var which class
	hold := func(d time.Duration, c class) {
		if d > wait {
			wait, which = d, c
		}
	}
	for _, c := range []class{anyRequest, cl} {
		if until, ok := p.held[c]; ok {
			if d := until.Sub(now); d > 0 {
				hold(d, c)
			} else {
				delete(p.held, c)
			}
		}
	}
	p.requests = within(p.requests, now)
	hold(room(p.requests, p.lim.Requests, now), anyRequest)
	switch cl {
	case issueCreate:
		p.creates[project] = within(p.creates[project], now)
		hold(room(p.creates[project], p.lim.IssueCreates, now), issueCreate)
	case noteCreate:
		p.notes = within(p.notes, now)
		hold(room(p.notes, p.lim.Notes, now), noteCreate)
	}
	if wait > 0 {
		return wait, which
	}
	if p.lim.Requests > 0 {
		p.requests = append(p.requests, now)
	}
	switch {
	case cl == issueCreate && p.lim.IssueCreates > 0:
		p.creates[project] = append(p.creates[project], now)
	case cl == noteCreate && p.lim.Notes > 0:
		p.notes = append(p.notes, now)
	}
	return 0, which
}

// within drops the times older than the span.
func within(ts []time.Time, now time.Time) []time.Time {
	i := 0
	for i < len(ts) && now.Sub(ts[i]) >= span {
		i++
	}
	return ts[i:]
}

// room answers how long until one more fits under limit (0: now; a
// negative limit: none).
func room(ts []time.Time, limit int, now time.Time) time.Duration {
	if limit <= 0 || len(ts) < limit {
		return 0
	}
	return ts[len(ts)-limit].Add(span).Sub(now)
}

// observe holds what GitLab's answer says of its limits: a 429 for as
// long as its Retry-After or RateLimit-Reset says, or, from the create
// and note limiters that say nothing, to the end of GitLab's minute; a
// RateLimit-Remaining of 0 until its RateLimit-Reset.
func (p *pacer) observe(cl class, a trackerhttp.Answer) {
	if a.Header == nil {
		return
	}
	now := p.now()
	var until time.Time
	c := anyRequest
	switch {
	case a.Status == http.StatusTooManyRequests:
		until = now.Add(rateWait(a.Header, now))
		if a.Header.Get("Retry-After") == "" && a.Header.Get("RateLimit-Reset") == "" {
			c = cl // an application limiter: the endpoint's own
		}
	case strings.TrimSpace(a.Header.Get("RateLimit-Remaining")) == "0":
		if reset, ok := resetAt(a.Header); ok {
			until = reset
		}
	}
	if until.IsZero() || !until.After(now) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if until.After(p.held[c]) {
		p.held[c] = until
	}
}

// resetAt reads RateLimit-Reset, Unix seconds (§2).
func resetAt(h http.Header) (time.Time, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(h.Get("RateLimit-Reset")), 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}, false
	}
	return time.Unix(n, 0), true
}

// rateWait is how long a 429 asks to wait: Retry-After, else
// RateLimit-Reset, else to the next whole minute (GitLab's windows are
// epoch-aligned minutes) and a second.
func rateWait(h http.Header, now time.Time) time.Duration {
	if h.Get("Retry-After") != "" {
		if d := trackerhttp.RateWait(h, 0, now); d > 0 {
			return d
		}
	}
	if reset, ok := resetAt(h); ok && reset.After(now) && reset.Sub(now) <= time.Hour {
		return reset.Sub(now)
	}
	return now.Truncate(time.Minute).Add(time.Minute + time.Second).Sub(now)
}

// classify maps what GitLab means by a status where the default mapping
// says otherwise: a 409 is a lock a retry gets past ("409 Conflict:
// Resource lock", lib/api/api.rb), and a 429 says how long by GitLab's
// own headers.
func classify(a trackerhttp.Answer, def error, now time.Time) error {
	switch a.Status {
	case http.StatusConflict:
		return fmt.Errorf("%d %s: %w", a.Status, trackerhttp.Detail(a.Body), tracker.ErrUnavailable)
	case http.StatusTooManyRequests:
		return fmt.Errorf("%d %s: %w", a.Status, trackerhttp.Detail(a.Body), tracker.RateLimited(rateWait(a.Header, now)))
	}
	return def
}

// resends is how many times a request GitLab answered 429 is sent again:
// its limiters refuse before they act, so nothing was done.
const resends = 2

// do sends a request within the user's limits, counting it as cl, and
// sends it again after a 429 where the caller's deadline allows.
func (d *Driver) do(ctx context.Context, cl class, req trackerhttp.Request) (trackerhttp.Answer, error) {
	for attempt := 0; ; attempt++ {
		if err := d.pacer.enter(ctx, cl, d.project); err != nil {
			return trackerhttp.Answer{}, err
		}
		a, err := d.cl.Do(ctx, req)
		d.pacer.observe(cl, a)
		var rl *tracker.RateLimitedError
		if err == nil || a.Status != http.StatusTooManyRequests || attempt >= resends || !errors.As(err, &rl) {
			return a, err
		}
	}
}

// read sends a GET (or any request answering one object) and decodes it
// into v, checked by valid.
func (d *Driver) read(ctx context.Context, req trackerhttp.Request, what string, v any, valid func() bool) (trackerhttp.Answer, error) {
	a, err := d.do(ctx, anyRequest, req)
	if err != nil {
		return a, err
	}
	if err := decode(a.Body, v); err != nil || (valid != nil && !valid()) {
		if err == nil {
			err = errGarbled
		}
		return a, trackerhttp.Garbled("gitlab", what, err)
	}
	return a, nil
}
