package linear

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

// Linear limits each user in two units an hour, requests and complexity
// points, refilled at a constant rate, and reports both on every answer
// (X-RateLimit-Requests-*, X-RateLimit-Complexity-*, and the query's own
// cost in X-Complexity, §2); its figures differ by source (2,500 or 5,000
// requests, 250,000 points), so the driver takes what the headers say.
// The polls (Items, Comments, the team's comments, the sweep's reads)
// never spend the last writeReserve of either axis: what is left is the
// writes', so a poll never starves a rule's filings. What a poll will
// cost is what the same query cost last time (X-Complexity), else the
// dearest poll seen: a 4-point probe and a 2,000-point walk differ too
// much for one figure. A RATELIMITED answer holds every request until its
// reset.

// writeReserve is the share of each axis the polls leave to the writes.
const writeReserve = 0.1

// axis is what Linear last said of one of its two limits.
type axis struct {
	limit, remaining int64
	reset            time.Time
	known            bool
}

// pacer is one key's two budgets, as Linear reports them.
type pacer struct {
	now   func() time.Time
	sleep func(context.Context, time.Duration) error

	mu       sync.Mutex
	requests axis
	points   axis
	costs    map[string]int64 // each poll query's last X-Complexity, what it is taken to cost next
	dearest  int64            // the most any poll cost, for a query not yet seen
	held     time.Time        // a RATELIMITED answer's reset
}

func newPacer(now func() time.Time, sleep func(context.Context, time.Duration) error) *pacer {
	return &pacer{now: now, sleep: sleep, costs: map[string]int64{}}
}

// enter waits, where the caller's deadline allows, until query, a request
// of cl, is within the budgets; else it answers rate-limited, unsent.
func (p *pacer) enter(ctx context.Context, cl class, query string) error {
	for {
		wait, why := p.room(cl, query)
		if wait <= 0 {
			return nil
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return tracker.NotSent(fmt.Errorf("linear: %s for %s: %w", why, wait.Round(time.Second), tracker.RateLimited(wait)))
		}
		if err := p.sleep(ctx, wait); err != nil {
			return tracker.NotSent(fmt.Errorf("linear: waiting for %s: %w", why, err))
		}
	}
}

// room answers how long query, a request of cl, must wait, and why.
func (p *pacer) room(cl class, query string) (time.Duration, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if d := p.held.Sub(now); d > 0 {
		return d, "Linear's rate limit"
	}
	if cl != poll {
		return 0, ""
	}
	for _, a := range []struct {
		ax   *axis
		need int64
		name string
	}{{&p.requests, 1, "the writes' share of Linear's requests"}, {&p.points, p.costOf(query), "the writes' share of Linear's complexity points"}} {
		ax := a.ax
		if !ax.known || !ax.reset.After(now) {
			continue
		}
		if float64(ax.remaining-a.need) < writeReserve*float64(ax.limit) {
			return ax.reset.Sub(now), a.name
		}
	}
	return 0, ""
}

// costOf answers what query is taken to cost: its last cost, else the
// dearest poll's, else one point. Under p.mu.
func (p *pacer) costOf(query string) int64 {
	if c, ok := p.costs[query]; ok {
		return c
	}
	return max(p.dearest, 1)
}

// observe takes in what the answer to query, a request of cl, says of
// the budgets.
func (p *pacer) observe(a trackerhttp.Answer, cl class, query string) {
	if a.Header == nil {
		return
	}
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	read := func(ax *axis, name string) {
		lim, err1 := strconv.ParseInt(strings.TrimSpace(a.Header.Get("X-RateLimit-"+name+"-Limit")), 10, 64)
		rem, err2 := strconv.ParseInt(strings.TrimSpace(a.Header.Get("X-RateLimit-"+name+"-Remaining")), 10, 64)
		reset, ok := epoch(a.Header.Get("X-RateLimit-" + name + "-Reset"))
		if err1 == nil && err2 == nil && ok {
			*ax = axis{limit: lim, remaining: rem, reset: reset, known: true}
		}
	}
	read(&p.requests, "Requests")
	read(&p.points, "Complexity")
	if c, err := strconv.ParseInt(strings.TrimSpace(a.Header.Get("X-Complexity")), 10, 64); err == nil && c > 0 && cl == poll {
		p.costs[query] = c
		p.dearest = max(p.dearest, c)
	}
	if a.Status == http.StatusBadRequest || a.Status == http.StatusTooManyRequests {
		if strings.Contains(string(a.Body), `"RATELIMITED"`) || a.Status == http.StatusTooManyRequests {
			if until := now.Add(resetWait(a.Header, now)); until.After(p.held) {
				p.held = until
			}
		}
	}
}
