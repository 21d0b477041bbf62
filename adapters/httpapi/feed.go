package httpapi

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/eventlog"
)

// FeedResponse is one read of a workspace's events.
type FeedResponse struct {
	Events []eventlog.Event `json:"events"`
	// Next is the sequence number to read after next time.
	Next int64 `json:"next"`
}

// pollEvery is how often a long-poll reads again when no notification can
// reach it (another replica's appends).
const pollEvery = time.Second

// MaxLongPollsPerToken is how many feed reads one token may hold waiting at
// once; past it a read that would wait answers 429. Each waiting read reads
// the log again every second when no notification reaches it.
const MaxLongPollsPerToken = 16

func (a *API) events(w http.ResponseWriter, r *http.Request) {
	tenant, ok := a.tenantOf(w, r)
	if !ok {
		return
	}
	workspace := r.PathValue("workspace")
	q, err := feedQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid", err.Error(), 0)
		return
	}
	after, err := intParam(q.Get("after"), 0)
	if err != nil || after < 0 {
		writeError(w, http.StatusBadRequest, "invalid", "after must be a sequence number (0 or more)", 0)
		return
	}
	limit, err := intParam(q.Get("limit"), DefaultLimit)
	if err != nil || limit < 1 || limit > MaxLimit {
		writeError(w, http.StatusBadRequest, "invalid", "limit must be from 1 to "+strconv.Itoa(MaxLimit), 0)
		return
	}
	var wait time.Duration
	if s := q.Get("wait"); s != "" {
		wait, err = time.ParseDuration(s)
		if err != nil || wait < 0 || wait > MaxWait {
			writeError(w, http.StatusBadRequest, "invalid", "wait must be a duration from 0s to "+MaxWait.String(), 0)
			return
		}
	}
	if wait > 0 {
		tok, _ := bearer(r)
		release, ok := a.polls.acquire(sha256.Sum256([]byte(tok)))
		if !ok {
			writeError(w, http.StatusTooManyRequests, "too_many_requests",
				fmt.Sprintf("a token holds at most %d waiting feed reads at once", a.polls.max), time.Second)
			return
		}
		defer release()
	}
	ctx, cancel := a.c.Clock.WithTimeout(r.Context(), wait)
	defer cancel()
	notify, _ := a.c.Log.(*eventlog.Notifying)
	if wait == 0 || !a.bound(tenant, workspace) {
		// Notifying keeps a channel per workspace asked about until its
		// next append: taken for any name a client sends, it would grow
		// for good. No append reaches a workspace not bound here, and a
		// read that doesn't wait needs no wake-up.
		notify = nil
	}
	for {
		var changed <-chan struct{}
		if notify != nil {
			changed = notify.Changed(tenant, workspace)
		}
		evs, err := a.c.Log.Read(r.Context(), tenant, workspace, int64(after), limit)
		if errors.Is(err, eventlog.ErrInvalid) {
			// A workspace name no log keeps (too long, a NUL byte, not
			// UTF-8) is the client's error, not to be retried.
			writeError(w, http.StatusBadRequest, "invalid", "the workspace is not a valid name", 0)
			return
		}
		if err != nil {
			// The detail (a database's host, user, error) is the
			// operator's, not the caller's.
			a.c.Logger.Warn("feed: reading the event log failed", "tenant", tenant, "workspace", workspace, "err", err)
			writeError(w, http.StatusServiceUnavailable, "unavailable", "the event log is unavailable", time.Second)
			return
		}
		if len(evs) > 0 || wait == 0 || ctx.Err() != nil || a.drained() {
			next := int64(after)
			if len(evs) > 0 {
				next = evs[len(evs)-1].Seq
			} else {
				evs = []eventlog.Event{}
			}
			writeJSON(w, http.StatusOK, FeedResponse{Events: evs, Next: next})
			return
		}
		if err := waitFor(ctx, a.c.Clock, changed, a.draining); err != nil && r.Context().Err() != nil {
			return // the client went away
		}
	}
}

// bound reports whether the tenant's workspace is bound to a tracker.
func (a *API) bound(tenant, workspace string) bool {
	if a.c.Connections == nil {
		return false
	}
	_, err := a.c.Connections.Binding(tenant, workspace)
	return err == nil
}

// waitFor waits for a notification, the poll interval, a drain, or the
// context.
func waitFor(ctx context.Context, c clock.Clock, changed, draining <-chan struct{}) error {
	select {
	case <-changed:
	case <-draining:
	case <-c.After(pollEvery):
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// drained reports whether Drain was called.
func (a *API) drained() bool {
	select {
	case <-a.draining:
		return true
	default:
		return false
	}
}

// pollSlots bounds the waiting feed reads per token.
type pollSlots struct {
	max  int
	mu   sync.Mutex
	held map[[sha256.Size]byte]int
}

// acquire takes a slot for the token's digest without waiting; release
// gives it back. Only authenticated tokens reach it, so the map holds at
// most one entry per configured token.
func (s *pollSlots) acquire(tok [sha256.Size]byte) (release func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[tok] >= s.max {
		return nil, false
	}
	s.held[tok]++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.held[tok]--; s.held[tok] == 0 {
			delete(s.held, tok)
		}
	}, true
}

// feedQuery reads the feed's query strictly: a pair it cannot read (a
// ';' between two, a bad escape) or a parameter given twice is refused,
// where url.Values would drop the one or keep the first of the other and
// answer events the caller did not ask for.
func feedQuery(raw string) (url.Values, error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return nil, errors.New("the query is malformed: pairs are joined by '&', and '%' starts an escape")
	}
	for _, k := range []string{"after", "limit", "wait"} {
		if len(q[k]) > 1 {
			return nil, fmt.Errorf("%s is given %d times", k, len(q[k]))
		}
	}
	return q, nil
}

func intParam(s string, def int) (int, error) {
	if s == "" {
		return def, nil
	}
	return strconv.Atoi(s)
}
