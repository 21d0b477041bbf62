// Package trackerhttp is the one HTTP layer of relayr's tracker drivers
// (ADR-0033: "a small HTTP layer that only the adapters import, mapping
// trackers' failures, with a 10 s timeout on each phase of a request").
//
// A Client sends a driver's requests to one tracker with one key: each
// phase of a request (getting a connection, writing the request, waiting
// for the answer's first byte, reading the answer) has its own timeout;
// answers are read up to a cap; redirects are never followed (a
// redirected write loses its body); Retry-After and the trackers' reset
// headers become a *tracker.RateLimitedError; every status is mapped onto
// the port's typed errors, a driver overriding what its tracker means by
// one; a GET may be made conditional (ETag / If-None-Match,
// Last-Modified / If-Modified-Since) for a tracker that answers 304; and a
// Gate holds back requests a tracker can take only so many of at once.
// The standard library only, like the rest of core.
package trackerhttp

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
)

// Defaults of Config.
const (
	// DefaultTimeout bounds each phase of a request (ADR-0033).
	DefaultTimeout = 10 * time.Second
	// DefaultMaxResponse bounds an answer read into memory.
	DefaultMaxResponse = 4 << 20
	// DefaultRateWait is the wait a 429 asks for when it says none that
	// can be read: the common window of a minute.
	DefaultRateWait = time.Minute
	// MaxRateWait caps a wait a tracker asks for: a reset an hour away is
	// kept (GitHub's window is an hour), a day away is garbled.
	MaxRateWait = 2 * time.Hour
	// conditionalEntries bounds the answers kept for conditional GETs.
	conditionalEntries = 1024
)

// Config says how a Client reaches one tracker.
type Config struct {
	// Name prefixes every error ("plane").
	Name string
	// BaseURL is joined to each request's Path ("https://plane.example.com/api/v1/").
	BaseURL string
	// AuthHeader and AuthValue are the key's header ("X-Api-Key",
	// "Authorization") and its value ("Bearer tk_…"). AuthHeader
	// defaults to "Authorization".
	AuthHeader, AuthValue string
	// Header is sent with every request (an Accept of the tracker's own,
	// an API version); Accept defaults to application/json.
	Header http.Header
	// Client sends the requests; default one on http.DefaultTransport. Its
	// Timeout, if any, still applies; its CheckRedirect is replaced: a
	// redirect comes back as the answer.
	Client *http.Client
	// Timeout bounds each phase of a request; default DefaultTimeout.
	Timeout time.Duration
	// MaxResponse bounds an answer; default DefaultMaxResponse. A larger
	// one is ErrUnavailable.
	MaxResponse int64
	// RateWait is the wait of a 429 that names none; default
	// DefaultRateWait.
	RateWait time.Duration
	// Classify, when set, maps an answer the default mapping (Classify's
	// def) would map: it answers the error to use, nil for success, or
	// def itself. Drivers name here what their tracker means by a status
	// (Vikunja's 412, GitHub's 403 over a secondary limit).
	Classify func(a Answer, def error) error
	// Gate, when set, is entered by every request before it is sent.
	Gate Gate
	// Now is the clock reset headers are read against; default time.Now.
	Now func() time.Time
}

// Gate holds back requests a tracker can take only so many of at once
// (Vikunja on SQLite takes one write at a time). Enter waits for a slot
// for a request of method, or fails (a done context: an error that
// matches tracker.ErrNotSent). The request calls leave once, saying
// whether it reached the server (a connection was had) and the status of
// its answer, read whole (0 when none was: a request given up on its way
// may still be under way at the server).
type Gate interface {
	Enter(ctx context.Context, method string) (leave func(reached bool, status int), err error)
}

// Client sends one tracker's requests. It is safe for concurrent use.
type Client struct {
	cfg  Config
	http *http.Client

	mu    sync.Mutex
	kept  map[string]*kept // conditional GETs' last answers by URL
	order []string         // kept's URLs, oldest first
}

// kept is the last 200 answer to a conditional GET, with its validators.
type kept struct {
	etag, modified string
	header         http.Header
	body           []byte
}

// New checks cfg and fills in its defaults.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &tracker.InvalidError{Field: cfg.Name + " base URL", Reason: tracker.Quote(cfg.BaseURL) + " is not an http(s) URL"}
	}
	if cfg.Name == "" {
		cfg.Name = "tracker"
	}
	if cfg.AuthHeader == "" {
		cfg.AuthHeader = "Authorization"
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxResponse <= 0 {
		cfg.MaxResponse = DefaultMaxResponse
	}
	if cfg.RateWait <= 0 {
		cfg.RateWait = DefaultRateWait
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	var hc http.Client
	if cfg.Client != nil {
		hc = *cfg.Client
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Client{cfg: cfg, http: &hc, kept: map[string]*kept{}}, nil
}

// BaseURL answers the URL requests' paths are joined to.
func (c *Client) BaseURL() string { return c.cfg.BaseURL }

// Name is the prefix of the client's errors.
func (c *Client) Name() string { return c.cfg.Name }

// Request is one request to the tracker.
type Request struct {
	Method string
	// Path is joined to Config.BaseURL; Query is encoded after it.
	Path  string
	Query url.Values
	// URL, when set, is the whole URL in place of Path and Query: a Link
	// header's next page, a redirect's Location. It must be on BaseURL's
	// scheme and host, or the request is refused unsent: the key is never
	// sent anywhere else.
	URL string
	// Body, when not nil, is sent as JSON.
	Body any
	// ContentType of Body; default application/json.
	ContentType string
	// Conditional makes a GET conditional on the validators of the last
	// answer to the same URL: answered 304, it comes back as that answer,
	// NotModified set.
	Conditional bool
}

// Answer is a response read in full.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
	// NotModified: the tracker answered 304 to a conditional GET, and
	// Body is the earlier answer's, which still holds.
	NotModified bool
}

var (
	// ErrPhase is a phase of a request that made no progress within the
	// timeout: the request was given up (and is ErrUnavailable too).
	ErrPhase = errors.New("no progress within the phase timeout")
	// ErrTooLarge is an answer over the response cap.
	ErrTooLarge = errors.New("answer over the response cap")
)

// Do sends req and reads its answer. A request that could not be sent, a
// phase that timed out, a dropped connection or an answer over the cap
// are ErrUnavailable (a done context's error wrapped, so
// context.Canceled stays matchable); an answer that was read comes back
// whole, with the error its status maps to (nil for 2xx and for a 304 to
// a conditional GET). A driver reads a.Status first where its tracker
// says more with a status than the mapping does.
func (c *Client) Do(ctx context.Context, req Request) (Answer, error) {
	target := c.cfg.BaseURL + req.Path
	if len(req.Query) > 0 {
		target += "?" + req.Query.Encode()
	}
	what := req.Method + " " + req.Path
	if req.URL != "" {
		if !c.sameOrigin(req.URL) {
			return Answer{}, fmt.Errorf("%s: %s is not on %s: %w", c.cfg.Name, tracker.Quote(req.URL), c.cfg.BaseURL, tracker.ErrRefused)
		}
		target, what = req.URL, req.Method+" "+req.URL
	}
	var payload []byte
	if req.Body != nil {
		b, err := json.Marshal(req.Body)
		if err != nil {
			return Answer{}, &tracker.InvalidError{Field: "request", Reason: err.Error()}
		}
		payload = b
	}
	// The budget's word first: a request a tracker's window has no room
	// for is never sent.
	if err := tracker.Admit(ctx); err != nil {
		return Answer{}, err
	}
	if c.cfg.Gate != nil {
		leave, err := c.cfg.Gate.Enter(ctx, req.Method)
		if err != nil {
			return Answer{}, err
		}
		var reached atomic.Bool
		var status atomic.Int64
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { reached.Store(true) }})
		defer func() { leave(reached.Load(), int(status.Load())) }()
		a, err := c.send(ctx, req, target, what, payload)
		status.Store(int64(a.Status))
		return a, err
	}
	return c.send(ctx, req, target, what, payload)
}

func (c *Client) send(ctx context.Context, req Request, target, what string, payload []byte) (Answer, error) {
	if err := ctx.Err(); err != nil {
		return Answer{}, tracker.NotSent(fmt.Errorf("%s: %s: %w", c.cfg.Name, what, err))
	}
	// Each phase restarts the timer: it cancels the request when one
	// phase takes too long, however long the request takes in all.
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timer := time.AfterFunc(c.cfg.Timeout, func() { cancel(ErrPhase) })
	defer timer.Stop()
	restart := func() { timer.Reset(c.cfg.Timeout) }
	rctx = httptrace.WithClientTrace(rctx, &httptrace.ClientTrace{
		GotConn:              func(httptrace.GotConnInfo) { restart() },
		WroteRequest:         func(httptrace.WroteRequestInfo) { restart() },
		GotFirstResponseByte: restart,
	})
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	hr, err := http.NewRequestWithContext(rctx, req.Method, target, body)
	if err != nil {
		return Answer{}, &tracker.InvalidError{Field: "request", Reason: err.Error()}
	}
	for k, vs := range c.cfg.Header {
		hr.Header[k] = vs
	}
	if hr.Header.Get("Accept") == "" {
		hr.Header.Set("Accept", "application/json")
	}
	if c.cfg.AuthValue != "" {
		hr.Header.Set(c.cfg.AuthHeader, c.cfg.AuthValue)
	}
	if payload != nil {
		ct := req.ContentType
		if ct == "" {
			ct = "application/json"
		}
		hr.Header.Set("Content-Type", ct)
	}
	conditional := req.Conditional && req.Method == http.MethodGet
	if conditional {
		c.validators(target, hr.Header)
	}
	resp, err := c.http.Do(hr)
	if err != nil {
		return Answer{}, c.transport(ctx, rctx, what, err)
	}
	defer func() { _ = resp.Body.Close() }()
	restart()
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.MaxResponse+1))
	if err != nil {
		return Answer{}, c.transport(ctx, rctx, what, err)
	}
	if int64(len(data)) > c.cfg.MaxResponse {
		return Answer{}, fmt.Errorf("%s: %s: %w of %d bytes: %w", c.cfg.Name, what, ErrTooLarge, c.cfg.MaxResponse, tracker.ErrUnavailable)
	}
	a := Answer{Status: resp.StatusCode, Header: resp.Header, Body: data}
	reportLimit(ctx, resp.Header)
	if conditional {
		if a = c.keep(target, a); a.NotModified {
			// A 304 costs nothing of the tracker's limit (GitHub's
			// conditional requests): whoever meters ctx is told.
			tracker.Free(ctx)
		}
	}
	if err := c.classify(a); err != nil {
		return a, fmt.Errorf("%s: %s: %w", c.cfg.Name, what, err)
	}
	return a, nil
}

// reportLimit tells the budget what an answer says of the tracker's limit:
// X-RateLimit-Remaining and X-RateLimit-Reset (Unix seconds), both or
// neither.
func reportLimit(ctx context.Context, h http.Header) {
	remaining, err1 := strconv.Atoi(strings.TrimSpace(h.Get("X-Ratelimit-Remaining")))
	reset, err2 := strconv.ParseInt(strings.TrimSpace(h.Get("X-Ratelimit-Reset")), 10, 64)
	if err1 == nil && err2 == nil && remaining >= 0 && reset > 0 {
		tracker.Report(ctx, remaining, time.Unix(reset, 0))
	}
}

// sameOrigin reports whether u is on the base URL's scheme and host.
func (c *Client) sameOrigin(u string) bool {
	a, err := url.Parse(u)
	b, berr := url.Parse(c.cfg.BaseURL)
	return err == nil && berr == nil && a.Scheme == b.Scheme && strings.EqualFold(a.Host, b.Host) && a.User == nil
}

// transport maps a request that got no whole answer.
func (c *Client) transport(ctx, rctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %s: %w: %w", c.cfg.Name, what, tracker.ErrUnavailable, ctx.Err())
	}
	if errors.Is(context.Cause(rctx), ErrPhase) {
		return fmt.Errorf("%s: %s: %w of %s: %w", c.cfg.Name, what, ErrPhase, c.cfg.Timeout, tracker.ErrUnavailable)
	}
	return fmt.Errorf("%s: %s: %w: %w", c.cfg.Name, what, tracker.ErrUnavailable, err)
}

// validators sets the conditional headers of the last answer to target.
func (c *Client) validators(target string, h http.Header) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.kept[target]
	if !ok {
		return
	}
	if k.etag != "" {
		h.Set("If-None-Match", k.etag)
	}
	if k.modified != "" {
		h.Set("If-Modified-Since", k.modified)
	}
}

// keep answers a 304 with the kept answer and keeps a 200 that carries a
// validator.
func (c *Client) keep(target string, a Answer) Answer {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a.Status == http.StatusNotModified {
		k, ok := c.kept[target]
		if !ok {
			return a // a 304 to a request that sent no validators: classified as a refusal
		}
		return Answer{Status: http.StatusOK, Header: a.Header, Body: k.body, NotModified: true}
	}
	if a.Status != http.StatusOK {
		return a
	}
	etag, modified := a.Header.Get("ETag"), a.Header.Get("Last-Modified")
	if etag == "" && modified == "" {
		delete(c.kept, target)
		return a
	}
	if _, ok := c.kept[target]; !ok {
		c.order = append(c.order, target)
		if len(c.order) > conditionalEntries {
			delete(c.kept, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.kept[target] = &kept{etag: etag, modified: modified, header: a.Header, body: a.Body}
	return a
}

func (c *Client) classify(a Answer) error {
	def := Classify(a, c.cfg.RateWait, c.cfg.Now())
	if c.cfg.Classify != nil {
		return c.cfg.Classify(a, def)
	}
	return def
}

// Classify is the default mapping of an answer onto the port's typed
// errors, nil for a 2xx:
//
//   - 401 and 403 are ErrUnauthorized (a missing, bad or underprivileged
//     key), but a 403 that says the rate limit is spent
//     (X-RateLimit-Remaining: 0, or a Retry-After) is rate-limited;
//   - 404 and 410 (gone) are ErrNotFound;
//   - 429 is a *tracker.RateLimitedError with the wait the answer names
//     (RateWait);
//   - any other 3xx and 4xx is ErrRefused (a redirect loses a write's
//     body; sending the request again won't help);
//   - 5xx and anything else is ErrUnavailable.
//
// The message quotes a short excerpt of the answer's error text.
func Classify(a Answer, rateWait time.Duration, now time.Time) error {
	s := a.Status
	switch {
	case s >= 200 && s < 300:
		return nil
	case s == http.StatusForbidden && (a.Header.Get("X-Ratelimit-Remaining") == "0" || a.Header.Get("Retry-After") != ""):
		return fmt.Errorf("%d %s: %w", s, Detail(a.Body), tracker.RateLimited(RateWait(a.Header, rateWait, now)))
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		return fmt.Errorf("%d %s: %w", s, Detail(a.Body), tracker.ErrUnauthorized)
	case s == http.StatusNotFound || s == http.StatusGone:
		return fmt.Errorf("%d %s: %w", s, Detail(a.Body), tracker.ErrNotFound)
	case s == http.StatusTooManyRequests:
		return fmt.Errorf("%d %s: %w", s, Detail(a.Body), tracker.RateLimited(RateWait(a.Header, rateWait, now)))
	case s >= 300 && s < 500:
		return fmt.Errorf("%d %s: %w", s, Detail(a.Body), tracker.ErrRefused)
	default:
		return fmt.Errorf("%d %s: %w", s, Detail(a.Body), tracker.ErrUnavailable)
	}
}

// RateWait reads how long a rate-limited answer asks relayr to wait:
// Retry-After as seconds or an HTTP date, else X-RateLimit-Reset as Unix
// seconds (Vikunja, GitHub, Gitea), else def. A wait in the past is none;
// one past MaxRateWait is taken as garbled, and def is answered.
func RateWait(h http.Header, def time.Duration, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return bounded(time.Duration(max(n, 0))*time.Second, def)
		}
		if t, err := http.ParseTime(v); err == nil {
			return bounded(t.Sub(now).Round(time.Second), def)
		}
	}
	if n, err := strconv.ParseInt(strings.TrimSpace(h.Get("X-Ratelimit-Reset")), 10, 64); err == nil && n > 0 {
		d := time.Unix(n, 0).Sub(now)
		if d < time.Second {
			return time.Second
		}
		return bounded(d.Round(time.Second), def)
	}
	return def
}

func bounded(d, def time.Duration) time.Duration {
	switch {
	case d < 0:
		return 0
	case d > MaxRateWait:
		return def
	}
	return d
}

// Detail is a short, printable excerpt of an error answer for messages:
// the first of its JSON error fields a tracker uses ("message", "detail",
// "error", "error_message"), else its text.
func Detail(b []byte) string {
	var m map[string]any
	if json.Unmarshal(b, &m) == nil {
		for _, k := range []string{"message", "detail", "error", "error_message"} {
			if s, ok := m[k].(string); ok && s != "" {
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
		cut := 200
		for cut > 0 && (s[cut]&0xc0) == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// Garbled is the error of a 2xx whose body can't be read as the answer:
// ErrUnavailable, since nothing is known of what the tracker did.
func Garbled(name, what string, err error) error {
	if err == nil {
		return fmt.Errorf("%s: the tracker answered an unreadable %s: %w", name, what, tracker.ErrUnavailable)
	}
	return fmt.Errorf("%s: the tracker answered an unreadable %s (%s): %w", name, what, err.Error(), tracker.ErrUnavailable)
}

// Landed is the error of a call that failed after one of its writes
// landed: ErrUnavailable and nothing more. The cause is kept as text only,
// since a cause that matches ErrRateLimited, ErrRefused or ErrNotFound
// says the write certainly wasn't taken, and relayr would release the
// claim and file the item again, or put back the values it recorded for
// what landed.
func Landed(name, what, then string, err error) error {
	return fmt.Errorf("%s: %s landed, then %s failed: %s: %w", name, what, then, err.Error(), tracker.ErrUnavailable)
}

// SignSHA256 is the lowercase hex HMAC-SHA256 of body under secret: the
// signature Plane, Vikunja and Gitea send with a webhook delivery (GitHub
// prefixes it with "sha256=").
func SignSHA256(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// VerifySHA256 reports whether signature, after prefix, is SignSHA256 of
// the raw body as received under secret, compared in constant time. An
// empty secret verifies nothing.
func VerifySHA256(secret, prefix, signature string, body []byte) bool {
	if secret == "" {
		return false
	}
	sig, ok := strings.CutPrefix(strings.TrimSpace(signature), prefix)
	if !ok {
		return false
	}
	got, err := hex.DecodeString(sig)
	if err != nil || len(got) != sha256.Size {
		return false
	}
	want, _ := hex.DecodeString(SignSHA256(secret, body))
	return hmac.Equal(got, want)
}

// Decode reads one object of a tracker's answer, refusing one that valid
// says is no answer (an issue without an id, the empty object a failing
// converter answers): never a panic, whatever the body.
func Decode[T any](body []byte, valid func(T) bool) (T, error) {
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		return v, err
	}
	if !valid(v) {
		var zero T
		return zero, errNotAnAnswer
	}
	return v, nil
}

// DecodeAll reads a list of a tracker's answer (null reads as none),
// refusing it when valid refuses any of its objects.
func DecodeAll[T any](body []byte, valid func(T) bool) ([]T, error) {
	var vs []T
	if err := json.Unmarshal(body, &vs); err != nil {
		return nil, err
	}
	for _, v := range vs {
		if !valid(v) {
			return nil, errNotAnAnswer
		}
	}
	return vs, nil
}

// errNotAnAnswer is an object that is not what the tracker answers.
var errNotAnAnswer = errors.New("an object without the fields every answer has")

// Read sends req and decodes its answer as one object valid takes; an
// answer that isn't one is Garbled, named what.
func Read[T any](ctx context.Context, c *Client, req Request, what string, valid func(T) bool) (T, Answer, error) {
	var zero T
	a, err := c.Do(ctx, req)
	if err != nil {
		return zero, a, err
	}
	v, err := Decode(a.Body, valid)
	if err != nil {
		return zero, a, Garbled(c.cfg.Name, what, err)
	}
	return v, a, nil
}
