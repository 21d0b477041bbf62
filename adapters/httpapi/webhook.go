package httpapi

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/relayr-go/relayr/core/binding"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/metrics"
	"github.com/relayr-go/relayr/core/tracker"
)

// Bounds of the webhook route: what a flood of deliveries may hold at once,
// and how long a delivery taken is remembered.
const (
	// MaxWebhooks is how many webhook deliveries are read at once, over
	// every tenant: each may hold up to MaxNudgeBody.
	MaxWebhooks = 32
	// MaxWebhooksPerTenant is how many of one tenant's deliveries are read
	// at once, so one tenant's flood leaves room for the others.
	MaxWebhooksPerTenant = 8
	// ReplayWindow is how long a delivery taken is remembered: the same
	// delivery again within it is a replay, answered 204 and woken for
	// nothing.
	ReplayWindow = 10 * time.Minute
	// MaxRemembered is the most deliveries remembered at once; past it the
	// oldest is forgotten first.
	MaxRemembered = 10_000
)

// Counters of the webhook route beside ADR-0036's relayr.trackers.nudges_refused.
const (
	// NudgesReplayed counts verified deliveries dropped as replays of one
	// already taken.
	NudgesReplayed = "relayr.trackers.nudges_replayed"
	// NudgesShed counts deliveries answered 429 because too many were being
	// read at once.
	NudgesShed = "relayr.trackers.nudges_shed"
)

// webhook takes a tracker's delivery as a nudge (ADR-0036, "Webhooks only
// nudge"), the cheap checks first: the tenant and tracker must be bound
// before anything of the body is read, and only a bounded number of
// deliveries are read at once, overall and per tenant. Then, as the ADR has
// it: the body limited to 1 MB, the signature checked first with the
// credentials the tenant's followers last asked for, only then the switch;
// an unknown tenant, a switched-off workspace and a bad signature are the
// same 401, counted together; a verified nudge wakes the followers of the
// project it names, with the items it reports deleted for them to check,
// and answers 204. A delivery taken before (the same body within
// ReplayWindow) answers 204 and wakes nothing, so a captured delivery
// replayed cannot spend a tenant's budget.
func (a *API) webhook(w http.ResponseWriter, r *http.Request) {
	tenant, kind := r.PathValue("tenant"), r.PathValue("tracker")
	// The tenant and the tracker first: nothing of a body no binding could
	// verify is read.
	candidates := a.verifiable(tenant, kind)
	if len(candidates) == 0 {
		a.refuseNudge(w, kind)
		return
	}
	// Refused once it says it is over 1 MB…
	if r.ContentLength > MaxNudgeBody {
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", "a delivery is at most 1 MB", 0)
		return
	}
	release, ok := a.hooks.acquire(tenant)
	if !ok {
		a.c.Counters.Add(NudgesShed, 1, metrics.Labels{"tenant": tenant, "tracker": kind})
		writeError(w, http.StatusTooManyRequests, "too_many_requests", "too many deliveries are being read at once", time.Second)
		return
	}
	defer release()
	// …or once that much is read.
	body, err := readBody(w, r, MaxNudgeBody)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", "a delivery is at most 1 MB", 0)
		return
	case err != nil:
		writeError(w, http.StatusBadRequest, "invalid", "the body could not be read", 0)
		return
	}
	outcome, status := a.nudge(r, tenant, kind, candidates, body)
	switch outcome {
	case nudgeWoke:
		w.WriteHeader(status)
	case nudgeReplayed:
		a.c.Counters.Add(NudgesReplayed, 1, metrics.Labels{"tenant": tenant, "tracker": kind})
		a.c.Logger.Debug("webhook replay dropped", "tenant", tenant, "tracker", kind)
		w.WriteHeader(status)
	default:
		a.refuseNudge(w, kind)
	}
}

// refuseNudge answers ADR-0036's one 401, counted.
func (a *API) refuseNudge(w http.ResponseWriter, kind string) {
	a.c.Counters.Add(metrics.NudgesRefused, 1, metrics.Labels{"tracker": a.knownKind(kind)})
	writeError(w, http.StatusUnauthorized, "unauthorized", "the delivery was not accepted", 0)
}

// readBody reads r's body up to limit: into a buffer of its declared length
// when it says one, so a delivery costs what it weighs and no more.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, limit)
	if r.ContentLength < 0 {
		return io.ReadAll(body)
	}
	buf := bytes.NewBuffer(make([]byte, 0, r.ContentLength+1))
	_, err := buf.ReadFrom(body)
	return buf.Bytes(), err
}

// knownKind is kind when a binding has it, else "unknown": the path is the
// caller's to say, and a label taken from it would be a new series per
// request, kept for good (Prometheus panics on one that isn't UTF-8).
func (a *API) knownKind(kind string) string {
	if a.c.Connections != nil {
		for _, b := range a.c.Connections.Bindings() {
			if b.Kind() == kind {
				return kind
			}
		}
	}
	return "unknown"
}

// verifiable answers the tenant's bindings of the tracker kind whose
// followers have asked for a webhook secret: the only ones a delivery can
// be verified with (credentials are never asked for on a request).
func (a *API) verifiable(tenant, kind string) []binding.Binding {
	if a.c.Connections == nil {
		return nil
	}
	var out []binding.Binding
	for _, b := range a.c.Connections.Bindings() {
		if b.Tenant != tenant || b.Kind() != kind {
			continue
		}
		if _, creds, ok := a.c.Connections.Cached(b); ok && creds.WebhookSecret != "" {
			out = append(out, b)
		}
	}
	return out
}

// nudgeOutcome is what became of a delivery.
type nudgeOutcome int

const (
	nudgeRefused nudgeOutcome = iota
	nudgeWoke
	nudgeReplayed
)

// nudge verifies the delivery and wakes the bindings it names, and
// answers the status the tracker counts a delivery taken by (204, or its
// Capabilities.DeliveredStatus).
func (a *API) nudge(r *http.Request, tenant, kind string, candidates []binding.Binding, body []byte) (nudgeOutcome, int) {
	// The signature first: with the credentials the followers last asked
	// for, never asked for on a request.
	var nudged tracker.Nudged
	verified, status := false, http.StatusNoContent
	for _, b := range candidates {
		tr, creds, ok := a.c.Connections.Cached(b)
		if !ok || creds.WebhookSecret == "" {
			continue
		}
		n, err := tr.Nudge(creds.WebhookSecret, r.Header, body)
		if err == nil {
			nudged, verified = n, true
			if s := tr.Capabilities().DeliveredStatus; s >= 200 && s < 300 {
				status = s
			}
			break
		}
	}
	if !verified {
		return nudgeRefused, 0
	}
	// A delivery taken before is a replay. Most trackers send no delivery
	// id a replay keeps (Plane's X-Plane-Delivery is new on every attempt,
	// Vikunja sends none) and no header is signed, so the delivery is known
	// by its signed body; one that names its event (GitLab's
	// Idempotency-Key, kept by a retry and a resend) is known by that.
	digest := deliveryDigest(tenant, kind, body)
	if nudged.Delivery != "" {
		digest = deliveryDigest(tenant, kind, []byte("delivery:"+nudged.Delivery))
	}
	if !a.replays.remember(digest) {
		return nudgeReplayed, status
	}
	// Only then the switch, for each workspace bound to the project: asked
	// here once, the Waker asks it no second time.
	woken := 0
	for _, b := range candidates {
		tr, _, ok := a.c.Connections.Cached(b)
		if !ok || tr.Project() != nudged.Project {
			continue
		}
		if !a.c.Integrations.Enabled(r.Context(), b.Tenant, b.Workspace, b.Integration()) {
			continue
		}
		if a.c.Waker != nil {
			a.c.Waker.Wake(b, nudged)
		}
		woken++
	}
	if woken == 0 {
		// Refused: the tracker may send it again, and that is no replay.
		a.replays.forget(digest)
		return nudgeRefused, 0
	}
	return nudgeWoke, status
}

// deliveryDigest names a delivery: its tenant, tracker and body.
func deliveryDigest(tenant, kind string, body []byte) [sha256.Size]byte {
	h := sha256.New()
	_, _ = fmt.Fprintf(h, "%d:%s%d:%s", len(tenant), tenant, len(kind), kind)
	h.Write(body)
	var d [sha256.Size]byte
	h.Sum(d[:0])
	return d
}

// hookSlots bounds the deliveries read at once, overall and per tenant.
type hookSlots struct {
	max, perTenant int
	mu             sync.Mutex
	total          int
	tenants        map[string]int
}

// acquire takes a slot for tenant without waiting; release gives it back.
func (s *hookSlots) acquire(tenant string) (release func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.total >= s.max || s.tenants[tenant] >= s.perTenant {
		return nil, false
	}
	s.total++
	s.tenants[tenant]++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.total--
		if s.tenants[tenant]--; s.tenants[tenant] == 0 {
			delete(s.tenants, tenant)
		}
	}, true
}

// replayCache remembers the deliveries taken within a window, at most max
// of them, the oldest forgotten first.
type replayCache struct {
	clock  clock.Clock
	window time.Duration
	max    int
	mu     sync.Mutex
	until  map[[sha256.Size]byte]time.Time
	order  []remembered // oldest first
}

type remembered struct {
	digest [sha256.Size]byte
	until  time.Time
}

// remember records a delivery; false when it was taken within the window.
func (c *replayCache) remember(d [sha256.Size]byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	// The window is the same for all, so the oldest lapses first.
	for len(c.order) > 0 && (!now.Before(c.order[0].until) || len(c.order) >= c.max) {
		e := c.order[0]
		if u, ok := c.until[e.digest]; ok && u.Equal(e.until) {
			delete(c.until, e.digest)
		}
		c.order = c.order[1:]
	}
	if u, ok := c.until[d]; ok && now.Before(u) {
		return false
	}
	until := now.Add(c.window)
	c.until[d] = until
	c.order = append(c.order, remembered{d, until})
	return true
}

// forget drops a delivery that was not taken after all.
func (c *replayCache) forget(d [sha256.Size]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.until, d)
}
