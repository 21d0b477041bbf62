package linear

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// gqlError is one of an answer's errors (sdk types.ts
// LinearGraphQLErrorRaw).
type gqlError struct {
	Message    string `json:"message"`
	Path       []any  `json:"path"`
	Extensions struct {
		Code                   string `json:"code"`
		Type                   string `json:"type"`
		UserError              bool   `json:"userError"`
		UserPresentableMessage string `json:"userPresentableMessage"`
	} `json:"extensions"`
}

// field names the root field an error is of ("" when none).
func (e gqlError) field() string {
	if len(e.Path) > 0 {
		if s, ok := e.Path[0].(string); ok {
			return s
		}
	}
	return ""
}

// envelope is a GraphQL answer.
type envelope struct {
	Data   map[string]json.RawMessage `json:"data"`
	Errors []gqlError                 `json:"errors"`
}

// errNotFound is Linear's "Entity not found" (sdk bundle.test.ts).
const notFoundPrefix = "Entity not found"

// kind maps an error onto the port's: by its code first, then by what its
// message starts with (§1's table).
func (e gqlError) kind(now time.Time, h http.Header) error {
	msg := e.Message
	if e.Extensions.UserPresentableMessage != "" && e.Extensions.UserPresentableMessage != msg {
		msg += " (" + e.Extensions.UserPresentableMessage + ")"
	}
	quoted := tracker.Quote(msg)
	switch {
	case e.Extensions.Code == "RATELIMITED" || strings.EqualFold(e.Extensions.Type, "ratelimited"):
		return fmt.Errorf("%s: %w", quoted, tracker.RateLimited(resetWait(h, now)))
	case strings.HasPrefix(e.Message, notFoundPrefix):
		return fmt.Errorf("%s: %w", quoted, tracker.ErrNotFound)
	case e.Extensions.Code == "AUTHENTICATION_ERROR" || strings.HasPrefix(e.Message, "Authentication required") ||
		strings.EqualFold(e.Extensions.Type, "authentication error") || strings.EqualFold(e.Extensions.Type, "forbidden"):
		return fmt.Errorf("%s: %w", quoted, tracker.ErrUnauthorized)
	case strings.Contains(strings.ToLower(e.Message), "usage limit exceeded"):
		// The workspace's plan is full: waiting does not clear it (§10).
		return fmt.Errorf("%s: %w", quoted, tracker.ErrRefused)
	case e.Extensions.UserError || e.Extensions.Code == "INPUT_ERROR" || e.Extensions.Code == "GRAPHQL_VALIDATION_FAILED":
		return fmt.Errorf("%s: %w", quoted, tracker.ErrRefused)
	case strings.EqualFold(e.Extensions.Type, "lock timeout"), strings.EqualFold(e.Extensions.Type, "internal error"):
		return fmt.Errorf("%s: %w", quoted, tracker.ErrUnavailable)
	}
	return fmt.Errorf("%s: %w", quoted, tracker.ErrUnavailable)
}

// classify maps a non-2xx answer: Linear answers most errors 400 with
// errors[] (§0.3), which say what they are; others by their status.
func classify(a trackerhttp.Answer, def error, now time.Time) error {
	var env envelope
	if json.Unmarshal(a.Body, &env) == nil && len(env.Errors) > 0 {
		err := fmt.Errorf("%d: %w", a.Status, env.Errors[0].kind(now, a.Header))
		if issueNotFoundOnly(env.Errors) {
			return &issueUnseenError{err}
		}
		return err
	}
	if a.Status == http.StatusTooManyRequests {
		return fmt.Errorf("%d %s: %w", a.Status, trackerhttp.Detail(a.Body), tracker.RateLimited(resetWait(a.Header, now)))
	}
	return def
}

// issueNotFoundOnly answers whether every error of an answer is Linear's
// "Entity not found: Issue".
func issueNotFoundOnly(errs []gqlError) bool {
	for _, e := range errs {
		if !strings.HasPrefix(e.Message, notFoundPrefix+": Issue") {
			return false
		}
	}
	return len(errs) > 0
}

// issueUnseenError is an answer whose only errors are "Entity not found:
// Issue". To a create of relayr's own id it says an issue holds the id:
// a fresh id's issueCreate makes its issue, and the attachment beside it
// is refused only beside issueCreate's own error. So a create answered so
// was filed before, by an issue Linear does not show (one in the trash,
// where Linear hides trashed issues from reads by id and lists alike).
type issueUnseenError struct{ err error }

func (e *issueUnseenError) Error() string { return e.err.Error() }
func (e *issueUnseenError) Unwrap() error { return e.err }

// resetWait is how long a rate-limited answer asks to wait: Retry-After,
// else the reset of the axis that ran out (epoch seconds or, as Linear
// sends them, milliseconds: a value over 10^12 is milliseconds, §2), else
// a minute (Linear's importer waits 60 s, §2).
func resetWait(h http.Header, now time.Time) time.Duration {
	if h != nil && h.Get("Retry-After") != "" {
		if d := trackerhttp.RateWait(h, 0, now); d > 0 {
			return d
		}
	}
	var wait time.Duration
	for _, axis := range []string{"Requests", "Complexity"} {
		if rem, err := strconv.ParseInt(h.Get("X-RateLimit-"+axis+"-Remaining"), 10, 64); err == nil && rem <= 0 {
			if t, ok := epoch(h.Get("X-RateLimit-" + axis + "-Reset")); ok && t.After(now) {
				wait = max(wait, t.Sub(now))
			}
		}
	}
	if wait > 0 && wait <= 2*time.Hour {
		return wait
	}
	return time.Minute
}

// requestsLeft reads what an answer says of the key's requests: the
// remaining ones and when they are whole again.
func requestsLeft(h http.Header) (int, time.Time, bool) {
	if h == nil {
		return 0, time.Time{}, false
	}
	rem, err := strconv.Atoi(strings.TrimSpace(h.Get("X-RateLimit-Requests-Remaining")))
	reset, ok := epoch(h.Get("X-RateLimit-Requests-Reset"))
	if err != nil || rem < 0 || !ok {
		return 0, time.Time{}, false
	}
	return rem, reset, true
}

// epoch reads a reset: Unix seconds or milliseconds.
func epoch(v string) (time.Time, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}, false
	}
	if n > 1e12 {
		return time.UnixMilli(n), true
	}
	return time.Unix(n, 0), true
}

// class is what a request is for: the budget keeps room for writes.
type class int

const (
	write class = iota
	poll
)

// do sends one GraphQL operation and decodes its data into out (a struct
// of the root fields). Any error in the answer fails the call (sdk
// graphql-client.ts: success only without errors), mapped onto the port's
// errors; partial data is still decoded into out for a caller that reads
// what landed (errs names the fields that failed).
func (d *Driver) do(ctx context.Context, cl class, query string, vars map[string]any, out any) (errs map[string]error, err error) {
	if err := d.pacer.enter(ctx, cl, query); err != nil {
		return nil, err
	}
	a, err := d.cl.Do(ctx, trackerhttp.Request{Method: http.MethodPost, Body: map[string]any{"query": query, "variables": vars}})
	d.pacer.observe(a, cl, query)
	if rem, reset, ok := requestsLeft(a.Header); ok {
		// The shared budget's window of Linear's requests takes Linear's
		// word (budget.TrackerWindows["linear"]).
		tracker.Report(ctx, rem, reset)
	}
	if err != nil {
		return nil, err
	}
	var env envelope
	dec := json.NewDecoder(bytes.NewReader(a.Body))
	if err := dec.Decode(&env); err != nil {
		return nil, trackerhttp.Garbled("linear", "answer", err)
	}
	if len(env.Data) > 0 && out != nil {
		raw, _ := json.Marshal(env.Data)
		if err := json.Unmarshal(raw, out); err != nil {
			return nil, trackerhttp.Garbled("linear", "answer", err)
		}
	}
	if len(env.Errors) == 0 {
		if len(env.Data) == 0 {
			return nil, trackerhttp.Garbled("linear", "answer", errGarbled)
		}
		return nil, nil
	}
	errs = map[string]error{}
	now := d.cfg.Now()
	for _, e := range env.Errors {
		if f := e.field(); f != "" {
			if _, ok := errs[f]; !ok {
				errs[f] = fmt.Errorf("linear: %s: %w", f, e.kind(now, a.Header))
			}
		}
	}
	first := env.Errors[0]
	err = fmt.Errorf("linear: %w", first.kind(now, a.Header))
	if issueNotFoundOnly(env.Errors) {
		err = &issueUnseenError{err}
	}
	return errs, err
}

var errNoSuccess = errors.New("the mutation answered success false")
