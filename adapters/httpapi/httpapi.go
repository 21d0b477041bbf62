// Package httpapi is relayr's HTTP surface: the webhook nudges of ADR-0036,
// the write API runs file, edit and comment through (ADR-0033), the event
// feed, health, and the operator's page (/relayr/ui/, HTML: ui.go).
//
// Every route but the webhooks' and health's takes a per-tenant bearer token,
// compared in constant time; a token of one tenant reaches nothing of
// another. Every body is limited, every error of the API is an RFC 9457
// problem (application/problem+json) naming a stable code, relayr's own
// error object beside it (ADR-1014; the page's are pages), and garbage
// gets a 4xx, never a 5xx.
package httpapi

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path"
	"reflect"
	"runtime/debug"
	"strings"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/relayr-go/relayr/adapters/httpapi/internal/tokens"

	"github.com/relayr-go/relayr/core/binding"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/integrations"
	"github.com/relayr-go/relayr/core/metrics"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
)

// Limits of the surface.
const (
	// MaxNudgeBody is the largest webhook delivery read (ADR-0036: 1 MB).
	MaxNudgeBody = 1 << 20
	// MaxBody is the largest request body of the write API.
	MaxBody = 1 << 20
	// MaxWait is the longest a feed read waits for events.
	MaxWait = 60 * time.Second
	// MaxLimit is the most events one feed read answers.
	MaxLimit = 1000
	// DefaultLimit is how many events a feed read answers when it names no
	// limit.
	DefaultLimit = 100
)

// Writes is the write path the API serves (*writes.Writer).
type Writes interface {
	EnsureItem(ctx context.Context, p writes.EnsureParams) (writes.Result, error)
	Update(ctx context.Context, p writes.UpdateParams) (tracker.Item, error)
	Comment(ctx context.Context, p writes.CommentParams) (writes.CommentResult, error)
}

// Waker wakes the follower of a binding after a verified nudge naming its
// project, passing what the delivery said (the items it reports deleted
// included); the follower debounces (ADR-0036: 2 s) and believes nothing it
// has not read from the tracker. The route asked the switch already, once,
// after the signature: a Waker wakes no switched-off workspace's follower
// because it is never handed one, and asks the switch no second time.
type Waker interface {
	Wake(b binding.Binding, n tracker.Nudged)
}

// WakerFunc is a Waker.
type WakerFunc func(b binding.Binding, n tracker.Nudged)

// Wake implements Waker.
func (f WakerFunc) Wake(b binding.Binding, n tracker.Nudged) { f(b, n) }

// Pinger answers whether the ledger is reachable and migrated.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Config is what the API serves from.
type Config struct {
	Writes Writes
	// Log is the event log the feed reads. A *eventlog.Notifying wakes
	// long-polls at once; any other Log is read again every second.
	Log eventlog.Log
	// Connections holds the bindings and the credentials their followers
	// last asked for, which verify webhook deliveries.
	Connections  *binding.Connections
	Integrations integrations.Integrations // Always when nil
	Waker        Waker
	Ledger       Pinger
	// Tokens maps each bearer token to its tenant.
	Tokens map[string]string
	// OperatorToken guards /metrics, the status and the operator's page
	// ("" leaves them closed).
	OperatorToken string
	// Status answers GET /relayr/v1/status (a 503 when nil).
	Status StatusSource
	// Metrics serves /metrics (the app's Prometheus handler).
	Metrics  http.Handler
	Counters metrics.Metrics // Discard when nil
	Clock    clock.Clock     // System when nil
	Logger   *slog.Logger    // discards when nil
	// Limits bound what callers hold at once (the defaults where zero).
	Limits Limits
	// UI, when set, is served at UIPath (the operator's page,
	// adapters/httpapi/operator), behind the API's recovery and limits.
	UI http.Handler
	// MCP, when set, serves the Model Context Protocol's streamable HTTP
	// at POST /relayr/v1/tenants/{tenant}/workspaces/{workspace}/mcp,
	// behind the tenant's token (adapters/mcp's Handler, ADR-1015); the
	// route answers 404 not_found when nil. It is a plain handler so that
	// this module does not pull the MCP SDK.
	MCP http.Handler
}

// UIPath is where the API serves Config.UI.
const UIPath = "/relayr/ui/"

// Limits bound what callers hold at once; zero is the default.
type Limits struct {
	// Webhooks is how many webhook deliveries are read at once, over every
	// tenant (MaxWebhooks).
	Webhooks int
	// WebhooksPerTenant is how many of one tenant's deliveries are read at
	// once (MaxWebhooksPerTenant).
	WebhooksPerTenant int
	// LongPollsPerToken is how many feed reads one token may hold waiting
	// at once (MaxLongPollsPerToken).
	LongPollsPerToken int
	// ReplayWindow is how long a delivery taken is remembered
	// (ReplayWindow).
	ReplayWindow time.Duration
}

// API is the handler.
type API struct {
	c       Config
	tokens  *tokens.Tenants
	op      [32]byte
	mux     *http.ServeMux
	hooks   *hookSlots
	replays *replayCache
	polls   *pollSlots

	// draining is closed by Drain: waiting feed reads answer at once.
	draining  chan struct{}
	drainOnce sync.Once
}

// Drain answers the feed reads waiting now, and any that come later, with
// what they have, as their wait ending would: a server shutting down
// (http.Server.Shutdown) waits for its requests, and a read waiting up to
// a minute for events would hold the shutdown past its grace. Register it
// with http.Server.RegisterOnShutdown; NewServer does. It is safe to call
// more than once.
func (a *API) Drain() {
	a.drainOnce.Do(func() {
		if a.draining != nil { // an API New did not make drains nothing
			close(a.draining)
		}
	})
}

// Route is one route of the API, as the OpenAPI document lists it.
type Route struct {
	Method  string
	Pattern string
	// Public routes take no bearer token.
	Public bool
}

// Routes lists every route New serves.
func Routes() []Route {
	var out []Route
	for _, r := range (&API{}).routes() {
		out = append(out, r.Route)
	}
	return out
}

type route struct {
	Route
	h http.HandlerFunc
}

const (
	workspacePath = "/relayr/v1/tenants/{tenant}/workspaces/{workspace}"
)

func (a *API) routes() []route {
	return []route{
		{Route{http.MethodPost, "/relayr/v1/trackers/{tenant}/{tracker}", true}, a.webhook},
		{Route{http.MethodPost, workspacePath + "/items/ensure", false}, a.ensure},
		{Route{http.MethodPost, workspacePath + "/items/update", false}, a.update},
		{Route{http.MethodPost, workspacePath + "/comments", false}, a.comment},
		{Route{http.MethodGet, workspacePath + "/events", false}, a.events},
		{Route{http.MethodPost, workspacePath + "/mcp", false}, a.mcp},
		{Route{http.MethodGet, "/healthz", true}, a.healthz},
		{Route{http.MethodGet, "/readyz", true}, a.readyz},
		{Route{http.MethodGet, "/metrics", false}, a.metrics},
		{Route{http.MethodGet, "/relayr/v1/status", false}, a.status},
		{Route{http.MethodGet, "/relayr/v1/openapi.json", true}, a.openapi},
	}
}

// New returns the API's handler.
func New(c Config) *API {
	if c.Integrations == nil {
		c.Integrations = integrations.Always
	}
	if c.Counters == nil {
		c.Counters = metrics.Discard{}
	}
	if c.Clock == nil {
		c.Clock = clock.System{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	l := &c.Limits
	l.Webhooks = cmp.Or(l.Webhooks, MaxWebhooks)
	l.WebhooksPerTenant = cmp.Or(l.WebhooksPerTenant, MaxWebhooksPerTenant)
	l.LongPollsPerToken = cmp.Or(l.LongPollsPerToken, MaxLongPollsPerToken)
	l.ReplayWindow = cmp.Or(l.ReplayWindow, ReplayWindow)
	a := &API{
		c: c, mux: http.NewServeMux(),
		hooks: &hookSlots{max: l.Webhooks, perTenant: l.WebhooksPerTenant, tenants: map[string]int{}},
		replays: &replayCache{clock: c.Clock, window: l.ReplayWindow, max: MaxRemembered,
			until: map[[sha256.Size]byte]time.Time{}},
		polls:    &pollSlots{max: l.LongPollsPerToken, held: map[[sha256.Size]byte]int{}},
		draining: make(chan struct{}),
	}
	a.tokens = tokens.NewTenants(c.Tokens)
	if c.OperatorToken != "" {
		a.op = sha256.Sum256([]byte(c.OperatorToken))
	}
	for _, r := range a.routes() {
		a.mux.HandleFunc(r.Method+" "+r.Pattern, r.h)
	}
	// The operator's page dispatches its own paths and methods, and
	// answers HTML, never the API's JSON.
	if c.UI != nil {
		a.mux.Handle(UIPath, c.UI)
		a.mux.Handle(strings.TrimSuffix(UIPath, "/"), c.UI)
	}
	a.mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no such route", 0)
	})
	return a
}

// ServeHTTP implements http.Handler: it recovers a panic as a 500 (a bug,
// logged), answers unknown methods and routes in JSON, and limits bodies.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(v)
			}
			a.c.Logger.Error("httpapi: panic", "panic", v, "stack", string(debug.Stack()))
			writeError(w, http.StatusInternalServerError, "internal", "internal error", 0)
		}
	}()
	if !clean(r.URL.EscapedPath()) {
		// ServeMux would answer a redirect in HTML, or a route's 405: a
		// path with "." or ".." segments, or "//", names no route.
		writeError(w, http.StatusBadRequest, "invalid", `the path has "." or ".." segments, or "//"`, 0)
		return
	}
	if _, pattern := a.mux.Handler(r); pattern == "" || pattern == "/" {
		// ServeMux answers a method it doesn't route with a plain-text 405.
		for _, rt := range a.routes() {
			if matches(rt.Pattern, r.URL.Path) {
				w.Header().Set("Allow", rt.Method)
				writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not allowed here", 0)
				return
			}
		}
	}
	a.mux.ServeHTTP(w, r)
}

// clean reports whether p is as path.Clean leaves it, a trailing slash
// aside.
func clean(p string) bool {
	if p == "" {
		return true
	}
	c := path.Clean(p)
	return c == p || c+"/" == p
}

// matches reports whether path fits a pattern's segments.
func matches(pattern, path string) bool {
	ps, qs := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(ps) != len(qs) {
		return false
	}
	for i := range ps {
		if strings.HasPrefix(ps[i], "{") {
			if qs[i] == "" {
				return false
			}
			continue
		}
		if ps[i] != qs[i] {
			return false
		}
	}
	return true
}

// tenantOf authenticates the bearer token and checks it is the path's
// tenant's. It writes the error and answers false when not.
func (a *API) tenantOf(w http.ResponseWriter, r *http.Request) (string, bool) {
	tok, ok := bearer(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="relayr"`)
		writeError(w, http.StatusUnauthorized, "unauthorized", "a bearer token is required", 0)
		return "", false
	}
	tenant, known := a.tenantOfToken(tok)
	if !known {
		w.Header().Set("WWW-Authenticate", `Bearer realm="relayr", error="invalid_token"`)
		writeError(w, http.StatusUnauthorized, "unauthorized", "the token is not valid", 0)
		return "", false
	}
	if r.PathValue("tenant") != tenant {
		// A token of tenant A reaches nothing of tenant B.
		writeError(w, http.StatusForbidden, "not_allowed", "the token is not this tenant's", 0)
		return "", false
	}
	return tenant, true
}

// tenantOfToken answers the tenant of a token (tokens.Tenants: in
// constant time).
func (a *API) tenantOfToken(tok string) (string, bool) { return a.tokens.Of(tok) }

func bearer(r *http.Request) (string, bool) { return tokens.Bearer(r) }

// ProblemContentType is every error's media type (RFC 9457).
const ProblemContentType = "application/problem+json"

// ProblemTypeBase begins every problem's type, relayr's code following it
// (https://github.com/relayr-go/relayr/blob/main/docs/http-api.md#tracker_claimed): one absolute URI per
// code, the same from every deployment, so a client may match it whatever
// host answered. It names the problem; nothing needs to fetch it
// (ADR-1014).
const ProblemTypeBase = "https://github.com/relayr-go/relayr/blob/main/docs/http-api.md#"

// Problem is every error's body: an RFC 9457 problem, and beside its
// members relayr's code and the error object relayr answered before, so
// a client that reads error.code goes on working (ADR-1014).
type Problem struct {
	// Type is ProblemTypeBase and Code.
	Type string `json:"type"`
	// Title is the code's summary, the same for every problem of the
	// type (ProblemTitle).
	Title string `json:"title"`
	// Status is the answer's HTTP status.
	Status int `json:"status"`
	// Detail says what went wrong this time, for people: Error.Message.
	Detail string `json:"detail"`
	// Code is relayr's stable code, the one to match.
	Code string `json:"code"`
	// Error is relayr's error object as it was before RFC 9457.
	Error ErrorObject `json:"error"`
}

// ErrorObject is relayr's own error object: its code and a message.
type ErrorObject struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// problemTitles are each code's title.
var problemTitles = map[string]string{
	string(writes.CodeClaimed):     "Another attempt holds the key",
	string(writes.CodeUnavailable): "The tracker is unavailable",
	string(writes.CodeLoop):        "The item took its writes for the hour",
	string(writes.CodeNotAllowed):  "Not allowed",
	string(writes.CodeRefused):     "Refused",
	string(writes.CodeDeleted):     "The key's item was deleted",
	string(writes.CodeInvalid):     "Invalid request",
	"unauthorized":                 "Unauthorized",
	"not_found":                    "No such route",
	"method_not_allowed":           "Method not allowed",
	"too_large":                    "Too large",
	"too_many_requests":            "Too many requests",
	"unavailable":                  "The event log is unavailable",
	"not_ready":                    "Not ready",
	"internal":                     "Internal error",
}

// ProblemTitle is the title of code's problems; a code without one of its
// own takes its status's text.
func ProblemTitle(code string, status int) string {
	if t, ok := problemTitles[code]; ok {
		return t
	}
	return http.StatusText(status)
}

func writeError(w http.ResponseWriter, status int, code, msg string, retryAfter time.Duration) {
	if retryAfter > 0 {
		secs := int((retryAfter + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", fmt.Sprint(secs))
	}
	writeBody(w, status, ProblemContentType, Problem{
		Type: ProblemTypeBase + code, Title: ProblemTitle(code, status), Status: status, Detail: msg,
		Code: code, Error: ErrorObject{Code: code, Message: msg},
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	writeBody(w, status, "application/json", v)
}

func writeBody(w http.ResponseWriter, status int, contentType string, v any) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// decode reads a JSON body strictly: within MaxBody, one object, no unknown
// fields, each field named once and in its own case (exactFields). It
// writes the error and answers false when the body is bad.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if r.ContentLength > MaxBody {
		writeError(w, http.StatusRequestEntityTooLarge, string(writes.CodeInvalid), fmt.Sprintf("the body is over %d bytes", MaxBody), 0)
		return false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err == nil {
		err = exactFields(body, v)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err == nil {
		err = dec.Decode(v)
	}
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value")
	}
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			err = errors.New("trailing data after the JSON object")
		}
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, string(writes.CodeInvalid), fmt.Sprintf("the body is over %d bytes", MaxBody), 0)
		return false
	case err != nil:
		writeError(w, http.StatusBadRequest, string(writes.CodeInvalid), "bad JSON body: "+err.Error(), 0)
		return false
	}
	return true
}

// exactFields refuses a body object that names a field twice, or in
// another case than its own: encoding/json matches names without regard
// to case and keeps the last of two, so {"key":"a","KEY":"b"} would file
// under "b". A body that is not an object is left to the decoder to refuse.
func exactFields(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	names := fieldNames(reflect.TypeOf(v))
	if names == nil {
		return nil
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil // broken JSON: the decoder says where
		}
		name, _ := t.(string)
		switch {
		case seen[name]:
			return fmt.Errorf("field %s is given twice", tracker.Quote(name))
		case !names[name]:
			return fmt.Errorf("unknown field %s", tracker.Quote(name))
		}
		seen[name] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil
		}
		if err := sentAsIs(raw); err != nil {
			return fmt.Errorf("field %s %w", tracker.Quote(name), err)
		}
	}
	return nil
}

// sentAsIs refuses a JSON value whose strings the decoder would rewrite:
// encoding/json turns bytes that are not UTF-8, and a \u escape of a lone
// surrogate, into U+FFFD without a word, so "a\xffb" and "a\xfeb" would
// both file under "a\ufffdb", one key. raw is the value as sent.
func sentAsIs(raw []byte) error {
	in := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case !in:
			in = c == '"'
		case c == '"':
			in = false
		case c == '\\' && i+1 < len(raw) && raw[i+1] == 'u':
			r, ok := hex4(raw[i+2:])
			if !ok {
				return nil // broken JSON: the decoder says where
			}
			switch {
			case utf16.IsSurrogate(r) && r < 0xdc00:
				lo, ok := hex4(raw[min(i+8, len(raw)):])
				if i+7 >= len(raw) || raw[i+6] != '\\' || raw[i+7] != 'u' || !ok || lo < 0xdc00 || lo > 0xdfff {
					return errors.New("holds a lone surrogate (\\u" + string(raw[i+2:i+6]) + ")")
				}
				i += 11
			case utf16.IsSurrogate(r):
				return errors.New("holds a lone surrogate (\\u" + string(raw[i+2:i+6]) + ")")
			default:
				i += 5
			}
		case c == '\\':
			i++
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 {
				return fmt.Errorf("is not UTF-8 (byte %d of the value is %#x)", i, c)
			}
			i += size - 1
		}
	}
	return nil
}

// hex4 reads the four hex digits of a \u escape.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}

// fieldNames are the JSON names of a request struct's fields (t may point
// to it), as its tags spell them; nil for any other type.
func fieldNames(t reflect.Type) map[string]bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	names := map[string]bool{}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case name == "":
			names[f.Name] = true
		default:
			names[name] = true
		}
	}
	return names
}

// writeWriteError answers a write's failure with its code's status, and a
// message that names the tracker and the kind of failure: a tracker's own
// error carries its internal URLs, dial errors and answers, and a ledger's
// its host and user, which are the operator's to read in the log, not the
// caller's.
func (a *API) writeWriteError(w http.ResponseWriter, tenant, workspace string, err error) {
	code, msg := a.publicError(tenant, workspace, err)
	var we *writes.Error
	var wait time.Duration
	hasWe := errors.As(err, &we)
	if code.Retryable() {
		wait = time.Second
		if hasWe {
			wait = max(we.RetryAfter, time.Second)
		}
	}
	if !hasWe || msg != we.Error() {
		// What the caller was not told is the operator's to read.
		a.c.Logger.Warn("write failed", "tenant", tenant, "workspace", workspace, "code", string(code), "err", err)
	} else {
		a.c.Logger.Debug("write refused", "tenant", tenant, "workspace", workspace, "code", string(code), "err", err)
	}
	writeError(w, StatusOf(code), string(code), msg, wait)
}

// publicError is a write failure's code and the message a caller reads.
func (a *API) publicError(tenant, workspace string, err error) (writes.Code, string) {
	var we *writes.Error
	if !errors.As(err, &we) {
		return writes.CodeUnavailable, "the write could not be made; retry"
	}
	name := "the tracker"
	if a.c.Connections != nil {
		if b, berr := a.c.Connections.Binding(tenant, workspace); berr == nil {
			name = b.Kind()
		}
	}
	var rl *tracker.RateLimitedError
	switch {
	case errors.As(err, &rl):
		return we.Code, fmt.Sprintf("%s: rate limited, asked to wait %s", name, rl.RetryAfter.Round(time.Second))
	case errors.Is(err, tracker.ErrUnauthorized):
		return we.Code, name + ": the tenant's key was refused"
	case errors.Is(err, tracker.ErrUnavailable):
		return we.Code, name + ": unavailable"
	case errors.Is(err, tracker.ErrNotFound):
		return we.Code, name + ": not found"
	case errors.Is(err, tracker.ErrRefused):
		return we.Code, name + ": refused the write"
	case errors.Is(err, tracker.ErrExists):
		return we.Code, name + ": an item already exists under the key"
	case errors.Is(err, context.DeadlineExceeded):
		return we.Code, "the write did not finish within its bound"
	case we.Code == writes.CodeUnavailable:
		// The ledger, or anything else relayr did not foresee.
		return we.Code, "the write could not be made now; retry"
	}
	// The write path's own refusals (a bad key, a claim held, the loop
	// cap, a switched-off tracker, a deleted item) say only what the
	// caller sent.
	return we.Code, we.Error()
}

// StatusOf is the HTTP status of a write's code.
func StatusOf(c writes.Code) int {
	switch c {
	case writes.CodeClaimed:
		return http.StatusConflict
	case writes.CodeUnavailable:
		return http.StatusServiceUnavailable
	case writes.CodeLoop:
		// Not 429: generic clients retry a 429, and a loop is stopped for
		// good.
		return http.StatusConflict
	case writes.CodeNotAllowed:
		return http.StatusForbidden
	case writes.CodeRefused:
		return http.StatusUnprocessableEntity
	case writes.CodeDeleted:
		return http.StatusGone
	case writes.CodeInvalid:
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// mcp serves Config.MCP to the path's tenant's token: its tools call the
// API again with the same token, and the write routes check it again.
func (a *API) mcp(w http.ResponseWriter, r *http.Request) {
	if _, ok := a.tenantOf(w, r); !ok {
		return
	}
	if a.c.MCP == nil {
		writeError(w, http.StatusNotFound, "not_found", "MCP is not served here", 0)
		return
	}
	a.c.MCP.ServeHTTP(w, r)
}

func (a *API) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "alive"})
}

func (a *API) readyz(w http.ResponseWriter, r *http.Request) {
	if a.c.Ledger == nil {
		writeError(w, http.StatusServiceUnavailable, "not_ready", "not ready", 0)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	if err := a.c.Ledger.Ping(ctx); err != nil {
		// Public: the ledger's error names its user, host and database.
		a.c.Logger.Warn("readyz: the ledger is not ready", "err", err)
		writeError(w, http.StatusServiceUnavailable, "not_ready", "not ready", 0)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// operator checks the operator's bearer token in constant time: 401
// without it or with a wrong one, 403 with a tenant's (a tenant's token
// reaches nothing that spans tenants). It writes the error and answers
// false when the caller is not the operator.
func (a *API) operator(w http.ResponseWriter, r *http.Request, what string) bool {
	tok, ok := bearer(r)
	sum := sha256.Sum256([]byte(tok))
	if ok && a.op != ([32]byte{}) && subtle.ConstantTimeCompare(sum[:], a.op[:]) == 1 {
		return true
	}
	if _, isTenant := a.tenantOfToken(tok); ok && isTenant {
		writeError(w, http.StatusForbidden, "not_allowed", what+" take the operator token, not a tenant's", 0)
		return false
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="relayr"`)
	writeError(w, http.StatusUnauthorized, "unauthorized", what+" take the operator token", 0)
	return false
}

func (a *API) metrics(w http.ResponseWriter, r *http.Request) {
	if !a.operator(w, r, "metrics") {
		return
	}
	if a.c.Metrics == nil {
		writeError(w, http.StatusServiceUnavailable, "not_ready", "no metrics are served", 0)
		return
	}
	a.c.Metrics.ServeHTTP(w, r)
}

//go:embed openapi.json
var openAPI []byte

// OpenAPI is the API's OpenAPI 3 document.
func OpenAPI() []byte { return openAPI }

func (a *API) openapi(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPI)
}

// NewServer wraps the handler in an http.Server with timeouts on every
// phase, so a slow client holds nothing for long.
func NewServer(addr string, h http.Handler) *http.Server {
	srv := &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		// A feed read may wait MaxWait for events.
		WriteTimeout:   MaxWait + 15*time.Second,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
	}
	if a, ok := h.(*API); ok {
		srv.RegisterOnShutdown(a.Drain)
	}
	return srv
}
