package plane

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// rateWindow is the wait asked for by a 429 without a usable Retry-After:
// Plane's window is a minute (api/rate_limit.py).
const rateWindow = time.Minute

// get reads path with the query q.
func (t *Driver) get(ctx context.Context, path string, q url.Values) (trackerhttp.Answer, error) {
	return t.http.Do(ctx, trackerhttp.Request{Method: http.MethodGet, Path: path, Query: q})
}

// send writes body to path with method. The answer comes back with the
// error its status maps to, so a caller reads Plane's quirks (a 409, a
// 400 over a stale id) off a.Status first.
func (t *Driver) send(ctx context.Context, method, path string, body any) (trackerhttp.Answer, error) {
	return t.http.Do(ctx, trackerhttp.Request{Method: method, Path: path, Body: body})
}

// pageQuery is the query of one page of a list: Plane's cursor is
// "<per_page>:<page>:0" (utils/paginator.py:L642-652).
func pageQuery(perPage, page int) url.Values {
	return url.Values{
		"per_page": {strconv.Itoa(perPage)},
		"cursor":   {strconv.Itoa(perPage) + ":" + strconv.Itoa(page) + ":0"},
	}
}

// classify is what Plane means by a status otherwise than trackerhttp's
// default mapping: a 403 is always a key that is bad or lacks the rights
// on the project (ADR-0033), never a spent limit. Plane's throttle runs
// after authentication and permissions and answers 429 (api/rate_limit.py);
// a view's own 403 comes after the throttle passed, with the allowed
// answer's X-RateLimit-Remaining, "0" on the last request of a minute.
func classify(a trackerhttp.Answer, def error) error {
	if a.Status == http.StatusForbidden {
		return fmt.Errorf("%d %s: %w", a.Status, trackerhttp.Detail(a.Body), tracker.ErrUnauthorized)
	}
	return def
}

// tooLarge reports a request that failed for the size of its answer: over
// the response cap, or not answered within the phase timeout.
func tooLarge(err error) bool {
	return errors.Is(err, trackerhttp.ErrTooLarge) || errors.Is(err, trackerhttp.ErrPhase)
}
