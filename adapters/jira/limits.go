package jira

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// Jira's per-issue write windows: "20 writes per 2 seconds and 100 writes
// per 30 seconds" on one issue, answered 429 with RateLimit-Reason
// jira-per-issue-on-write (docs rate-limiting; docs/trackers/jira.md §2).
var issueWindows = []window{{span: 2 * time.Second, limit: 20}, {span: 30 * time.Second, limit: 100}}

// The RateLimit-Reason values a 429 carries (§2).
const (
	reasonPerIssue = "jira-per-issue-on-write"
	reasonBurst    = "jira-burst-based"
)

// Jira's burst limits: a token bucket per endpoint and method, "GET 100,
// POST 100, PUT 50, DELETE 50" requests a second by default, answered 429
// with RateLimit-Reason jira-burst-based (docs rate-limiting;
// docs/trackers/jira.md §2). A few endpoints take more (GET of an issue
// 150); the driver holds every endpoint to its method's default, which no
// site's configuration goes below. A bucket holds a second's worth.
var burstRates = map[string]float64{
	http.MethodGet: 100, http.MethodPost: 100, http.MethodPut: 50, http.MethodDelete: 50,
}

// burstMargin is the share of Jira's burst rate relayr sends at: Jira
// counts a request when it arrives, relayr when it leaves, and requests
// overtake one another on their way; a tenth kept back absorbs that.
const burstMargin = 0.9

// burstRate is the requests a second relayr sends on route.
func burstRate(route string) float64 {
	method, _, _ := strings.Cut(route, " ")
	r, ok := burstRates[method]
	if !ok {
		r = 50
	}
	return r * burstMargin
}

// bucket is one endpoint's tokens as last counted.
type bucket struct {
	tokens float64
	at     time.Time
}

type window struct {
	span  time.Duration
	limit int
}

// pacer keeps Jira's limits unsent: each endpoint's requests within its
// burst bucket and each issue's writes within its windows, waiting for
// room where the caller's deadline allows, and what
// a 429 said held for as long as its Retry-After, for what its
// RateLimit-Reason names (one issue, one endpoint, or everything). It is
// the Connector's, shared by every workspace on the site.
type pacer struct {
	now   func() time.Time
	sleep func(context.Context, time.Duration) error

	mu      sync.Mutex
	writes  map[string][]time.Time // issue id → its writes within the longest window, oldest first
	held    map[string]time.Time   // "issue:<id>", "route:<method path>" or "all" → held until
	buckets map[string]*bucket     // route → its burst bucket
}

func newPacer(now func() time.Time, sleep func(context.Context, time.Duration) error) *pacer {
	return &pacer{now: now, sleep: sleep, writes: map[string][]time.Time{}, held: map[string]time.Time{}, buckets: map[string]*bucket{}}
}

// enter waits until a request on route (and, for a write, on issue) is
// within what Jira takes, and counts a write. A wait past ctx's deadline
// is not waited: the request is answered rate-limited, unsent.
func (p *pacer) enter(ctx context.Context, route, issue string, write bool) error {
	for {
		wait := p.reserve(route, issue, write)
		if wait <= 0 {
			return nil
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			// A context's deadline is on the system's clock, whatever
			// clock the driver reads Jira's windows on.
			return tracker.NotSent(fmt.Errorf("jira: %s is over Jira's limit for %s: %w", what(route, issue), wait.Round(time.Millisecond), tracker.RateLimited(wait)))
		}
		if err := p.sleep(ctx, wait); err != nil {
			return tracker.NotSent(fmt.Errorf("jira: waiting for Jira's limit: %w", err))
		}
	}
}

func what(route, issue string) string {
	if issue != "" {
		return "issue " + issue
	}
	return route
}

// reserve answers how long the request must wait, or counts it and
// answers none.
func (p *pacer) reserve(route, issue string, write bool) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	var wait time.Duration
	for _, k := range []string{"all", "route:" + route, "issue:" + issue} {
		if until, ok := p.held[k]; ok {
			if d := until.Sub(now); d > 0 {
				wait = max(wait, d)
			} else {
				delete(p.held, k)
			}
		}
	}
	if wait > 0 {
		return wait
	}
	b := p.bucket(route, now)
	if b.tokens < 1 {
		// Rounded up, never to nothing: a wait of none would admit the
		// request without its token.
		return max(time.Duration(math.Ceil((1-b.tokens)/burstRate(route)*float64(time.Second))), time.Nanosecond)
	}
	if !write || issue == "" {
		b.tokens--
		return 0
	}
	ts := p.writes[issue]
	for len(ts) > 0 && !ts[0].After(now.Add(-issueWindows[len(issueWindows)-1].span)) {
		ts = ts[1:]
	}
	for _, w := range issueWindows {
		n := 0
		for i := len(ts) - 1; i >= 0 && ts[i].After(now.Add(-w.span)); i-- {
			n++
			if n == w.limit {
				wait = max(wait, ts[i].Add(w.span).Sub(now))
			}
		}
	}
	if wait > 0 {
		p.writes[issue] = ts
		return wait
	}
	b.tokens--
	p.writes[issue] = append(ts, now)
	if len(p.writes) > 4096 {
		p.prune(now)
	}
	return 0
}

// bucket is route's burst bucket, refilled to now; p.mu is held.
func (p *pacer) bucket(route string, now time.Time) *bucket {
	rate := burstRate(route)
	b, ok := p.buckets[route]
	if !ok {
		b = &bucket{tokens: rate, at: now}
		p.buckets[route] = b
	}
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(rate, b.tokens+d.Seconds()*rate)
		b.at = now
	}
	return b
}

// prune forgets issues written to no later than the longest window ago;
// p.mu is held.
func (p *pacer) prune(now time.Time) {
	for id, ts := range p.writes {
		if len(ts) == 0 || !ts[len(ts)-1].After(now.Add(-issueWindows[len(issueWindows)-1].span)) {
			delete(p.writes, id)
		}
	}
}

// heard holds what a 429 names for its Retry-After: the issue written to
// (per-issue), the endpoint (burst), or every request (a quota, or a
// reason relayr doesn't know).
func (p *pacer) heard(route, issue string, a trackerhttp.Answer) {
	if a.Status != http.StatusTooManyRequests {
		return
	}
	now := p.now()
	wait := trackerhttp.RateWait(a.Header, time.Minute, now)
	k := "all"
	switch reason := strings.TrimSpace(a.Header.Get("RateLimit-Reason")); {
	case reason == reasonPerIssue && issue != "":
		k = "issue:" + issue
	case reason == reasonBurst:
		k = "route:" + route
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if until := now.Add(wait); until.After(p.held[k]) {
		p.held[k] = until
	}
}

// send sends req through the pacer: route names its endpoint as the
// description does ("PUT /rest/api/3/issue/{issueIdOrKey}"), issue the
// issue it writes to or reads ("" for none). A 429, which Jira answers
// before it does anything, is sent again once its Retry-After has passed,
// up to twice, where the caller's deadline leaves room: another client's
// writes to the issue (a person's, another replica's) count in Jira's
// window too.
func (d *Driver) send(ctx context.Context, req trackerhttp.Request, route, issue string) (trackerhttp.Answer, error) {
	write := req.Method != http.MethodGet && !strings.HasSuffix(route, "/search/jql") && !strings.HasSuffix(route, "/bulkfetch")
	for attempt := 0; ; attempt++ {
		if err := d.c.pacer.enter(ctx, route, issue, write); err != nil {
			return trackerhttp.Answer{}, err
		}
		a, err := d.cl.Do(ctx, req)
		d.c.pacer.heard(route, issue, a)
		if a.Status != http.StatusTooManyRequests || attempt == 2 {
			return a, err
		}
	}
}

// count notes a write Jira counts against an issue relayr learned of only
// from its answer (a create's).
func (p *pacer) count(issue string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.writes[issue] = append(p.writes[issue], p.now())
}

// read sends req and decodes its answer into v, refusing one valid says
// is none.
func (d *Driver) read(ctx context.Context, req trackerhttp.Request, issue, what string, v any, valid func() bool) (trackerhttp.Answer, error) {
	a, err := d.send(ctx, req, req.Method+" /"+routeOf(req.Path), issue)
	if err != nil {
		return a, err
	}
	if err := json.Unmarshal(a.Body, v); err != nil {
		return a, trackerhttp.Garbled("jira", what, err)
	}
	if valid != nil && !valid() {
		return a, trackerhttp.Garbled("jira", what, errGarbled)
	}
	return a, nil
}

// routeOf names a path's endpoint as the description does: an issue's id
// and a comment's are its parameters.
func routeOf(path string) string {
	parts := strings.Split(path, "/")
	for i := range parts {
		if i > 0 && tracker.PositiveID(parts[i]) {
			switch parts[i-1] {
			case "issue":
				parts[i] = "{issueIdOrKey}"
			case "comment":
				parts[i] = "{id}"
			}
		}
	}
	return strings.Join(parts, "/")
}

// classify maps what Jira means by its statuses (§1): a 409 is a
// conflicting update, worth another try; 413 a per-issue limit (too many
// comments), refused; the rest as trackerhttp's default.
func classify(a trackerhttp.Answer, def error) error {
	if a.Status == http.StatusConflict {
		return fmt.Errorf("%d %s: %w", a.Status, detail(a.Body), tracker.ErrUnavailable)
	}
	if kind := errors.Unwrap(def); kind != nil && a.Status >= 400 && a.Status < 500 && a.Status != http.StatusTooManyRequests {
		// Jira's errors are errorMessages and errors
		// (components.schemas.ErrorCollection).
		return fmt.Errorf("%d %s: %w", a.Status, detail(a.Body), kind)
	}
	return def
}

// detail is Jira's error body in a line: errorMessages, then the field
// errors, by field.
func detail(body []byte) string {
	var e struct {
		Messages []string          `json:"errorMessages"`
		Errors   map[string]string `json:"errors"`
	}
	if json.Unmarshal(body, &e) != nil || (len(e.Messages) == 0 && len(e.Errors) == 0) {
		return trackerhttp.Detail(body)
	}
	parts := append([]string(nil), e.Messages...)
	for _, f := range slices.Sorted(maps.Keys(e.Errors)) {
		parts = append(parts, f+": "+e.Errors[f])
	}
	return tracker.Quote(strings.Join(parts, "; "))
}

func basic(user, password string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
}
