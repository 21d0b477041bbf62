package vikunja

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
)

// DefaultRateWait is how long a 429 without a usable X-Ratelimit-Reset asks
// relayr to wait: Vikunja's default rate-limit period.
const DefaultRateWait = time.Minute

// classify maps one request's outcome onto the port's typed errors (the
// adapter's one place for it, as ADR-0033's relayr.trackers.http):
//
//   - a transport error (refused, dropped, timed out, cancelled) is
//     ErrUnavailable, wrapping the cause (so context.Canceled stays
//     matchable);
//   - 401 and 403 are ErrUnauthorized (Vikunja answers a token without the
//     route's permission with 401, another user's object with 403);
//   - 404 is ErrNotFound (deleted tasks answer 404 code 4002);
//   - 429 is a *tracker.RateLimitedError waiting until X-Ratelimit-Reset
//     (Vikunja sends no Retry-After);
//   - 412 (archived project, invalid data) and every other 4xx is
//     ErrRefused;
//   - 5xx and anything else unexpected is ErrUnavailable.
//
// A 2xx with no transport error is nil. now is the adapter's clock.
func classify(status int, header http.Header, body []byte, err error, now time.Time) error {
	if err != nil {
		return fmt.Errorf("%w: %w", tracker.ErrUnavailable, err)
	}
	if status >= 200 && status < 300 {
		return nil
	}
	msg := describe(status, body)
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return fmt.Errorf("%w: %s", tracker.ErrUnauthorized, msg)
	case status == http.StatusNotFound:
		return fmt.Errorf("%w: %s", tracker.ErrNotFound, msg)
	case status == http.StatusTooManyRequests:
		return fmt.Errorf("vikunja: %s: %w", msg, &tracker.RateLimitedError{RetryAfter: rateWait(header, now)})
	case status >= 400 && status < 500:
		return fmt.Errorf("%w: %s", tracker.ErrRefused, msg)
	default:
		return fmt.Errorf("%w: %s", tracker.ErrUnavailable, msg)
	}
}

// rateWait reads X-Ratelimit-Reset (Unix seconds when the window ends).
func rateWait(h http.Header, now time.Time) time.Duration {
	reset, err := strconv.ParseInt(h.Get("X-Ratelimit-Reset"), 10, 64)
	if err != nil || reset <= 0 {
		return DefaultRateWait
	}
	d := time.Unix(reset, 0).Sub(now)
	switch {
	case d < time.Second:
		return time.Second
	case d > time.Hour:
		return DefaultRateWait
	}
	return d.Round(time.Second)
}

// describe renders an error answer: v1's {"code","message"} or v2's
// problem+json {"detail","code"}; a body of neither shape is summarised.
func describe(status int, body []byte) string {
	var e struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Detail  string `json:"detail"`
	}
	if json.Unmarshal(body, &e) == nil && (e.Message != "" || e.Detail != "") {
		m := e.Message
		if m == "" {
			m = e.Detail
		}
		return fmt.Sprintf("vikunja answered %d (code %d): %s", status, e.Code, m)
	}
	return fmt.Sprintf("vikunja answered %d", status)
}

// garbled is the error of a 2xx whose body can't be read as the answer.
func garbled(what string, err error) error {
	return fmt.Errorf("%w: vikunja answered an unreadable %s: %w", tracker.ErrUnavailable, what, err)
}

// ctxErr is the error of a call whose context ended before it was made.
func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", tracker.ErrUnavailable, err)
	}
	return nil
}

var errTooLarge = errors.New("answer over the size limit")

// landed is the error of a call that failed after one of its writes
// landed: ErrUnavailable and nothing more. The cause is kept as text only,
// since a cause that matches ErrRateLimited, ErrRefused or ErrNotFound says
// the write certainly wasn't taken, and relayr would release the claim and
// file the task again, or put back the values it recorded for what landed.
func landed(what, then string, err error) error {
	return fmt.Errorf("%w: %s landed, then %s failed: %s", tracker.ErrUnavailable, what, then, err.Error())
}
