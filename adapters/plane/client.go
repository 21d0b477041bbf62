package plane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
)

// client makes requests to Plane's /api/v1/ with one key.
type client struct {
	http    *http.Client
	base    string // ends in /api/v1/
	key     string
	timeout time.Duration
	limit   int64
}

// answer is a response read in full (up to the limit).
type answer struct {
	status int
	header http.Header
	body   []byte
}

var errPhase = errors.New("no progress within the phase timeout")

// errTooLarge is an answer over the response cap.
var errTooLarge = errors.New("answer over the response cap")

// do sends one request. Each phase (connecting, writing the request,
// waiting for the first byte of the answer, reading the body) has its own
// timeout (ADR-0033: 10 s on each phase of a request): a timer restarted as
// each phase begins cancels the request when one takes too long. A transport
// failure comes back already mapped onto the port's errors; an answer of any
// status comes back as it is.
func (c *client) do(ctx context.Context, method, path string, body any) (answer, error) {
	var payload io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return answer{}, fmt.Errorf("plane: encode %s %s: %w", method, path, tracker.ErrRefused)
		}
		payload = bytes.NewReader(b)
	}
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timer := time.AfterFunc(c.timeout, func() { cancel(errPhase) })
	defer timer.Stop()
	restart := func() { timer.Reset(c.timeout) }
	rctx = httptrace.WithClientTrace(rctx, &httptrace.ClientTrace{
		GotConn:              func(httptrace.GotConnInfo) { restart() },
		WroteRequest:         func(httptrace.WroteRequestInfo) { restart() },
		GotFirstResponseByte: restart,
	})
	req, err := http.NewRequestWithContext(rctx, method, c.base+path, payload)
	if err != nil {
		return answer{}, fmt.Errorf("plane: %s %s: %w", method, path, tracker.ErrRefused)
	}
	req.Header.Set("X-Api-Key", c.key)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return answer{}, c.transportError(ctx, rctx, method, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	restart()
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.limit+1))
	if err != nil {
		return answer{}, c.transportError(ctx, rctx, method, path, err)
	}
	if int64(len(data)) > c.limit {
		return answer{}, fmt.Errorf("plane: %s %s: %w of %d bytes: %w", method, path, errTooLarge, c.limit, tracker.ErrUnavailable)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: data}, nil
}

func (c *client) transportError(ctx, rctx context.Context, method, path string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("plane: %s %s: %w: %w", method, path, tracker.ErrUnavailable, ctx.Err())
	}
	if errors.Is(context.Cause(rctx), errPhase) {
		return fmt.Errorf("plane: %s %s: %w of %s: %w", method, path, errPhase, c.timeout, tracker.ErrUnavailable)
	}
	return fmt.Errorf("plane: %s %s: %w: %w", method, path, tracker.ErrUnavailable, err)
}

// classify maps an answer onto the port's typed errors; nil for a 2xx.
//
// 401 (a missing key) and 403 (a bad key, or no rights on the project) are
// Unauthorized (ADR-0033); 404 is NotFound; 429 is RateLimited with its
// Retry-After; any other 4xx (and a redirect, which loses a write's body) is
// Refused; 5xx and anything else is Unavailable.
func classify(a answer) error {
	s := a.status
	switch {
	case s >= 200 && s < 300:
		return nil
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		return fmt.Errorf("plane: %d %s: %w", s, detail(a.body), tracker.ErrUnauthorized)
	case s == http.StatusNotFound:
		return fmt.Errorf("plane: %d %s: %w", s, detail(a.body), tracker.ErrNotFound)
	case s == http.StatusTooManyRequests:
		return &tracker.RateLimitedError{RetryAfter: retryAfter(a.header.Get("Retry-After"))}
	case s >= 300 && s < 500:
		return fmt.Errorf("plane: %d %s: %w", s, detail(a.body), tracker.ErrRefused)
	default:
		return fmt.Errorf("plane: %d %s: %w", s, detail(a.body), tracker.ErrUnavailable)
	}
}

// defaultRetryAfter is the wait asked for by a 429 without a usable
// Retry-After: Plane's window is a minute (api/rate_limit.py).
const defaultRetryAfter = time.Minute

// retryAfter reads Retry-After as seconds or an HTTP date.
func retryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return defaultRetryAfter
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0
		}
		if n > 24*3600 {
			n = 24 * 3600
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d.Round(time.Second)
		}
		return 0
	}
	return defaultRetryAfter
}

// detail is a short, printable excerpt of an error body for messages.
func detail(b []byte) string {
	var m map[string]any
	if json.Unmarshal(b, &m) == nil {
		for _, k := range []string{"error", "detail", "error_message"} {
			if s, ok := m[k].(string); ok {
				return clip(s)
			}
		}
	}
	return clip(strings.TrimSpace(string(b)))
}

func clip(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
