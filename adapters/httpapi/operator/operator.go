// Package operator is relayr's operator page, /relayr/ui/: behind the
// operator token, read from the status report and the ledger alone (it
// keeps no state of its own), rendered on the server with html/template
// from embedded files, and acting on dead letters once. The app mounts it
// beside the API (httpapi.Config.UI); it imports nothing of the API.
package operator

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/relayr-go/relayr/adapters/httpapi/internal/tokens"

	"github.com/relayr-go/relayr/adapters/httpapi/status"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/deliver"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/follow"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
)

// Path is where the operator's page is served.
const Path = "/relayr/ui/"

// Limits of the page.
const (
	// MaxUIQuery is the longest query a page request may carry.
	MaxUIQuery = 1024
	// MaxUIForm is the largest form the page takes (a sign-in, an action).
	MaxUIForm = 8 << 10
	// UIEvents is how many of a workspace's latest events the page shows.
	UIEvents = 20
	// UIRows is how many rows the page shows of each list of writes and of
	// each follower's dead letters.
	UIRows = 50
	// DefaultUIRefresh is how often the page refreshes its sections.
	DefaultUIRefresh = 5 * time.Second
	// DefaultUISession is how long a sign-in lasts.
	DefaultUISession = 12 * time.Hour
)

// Ledger is what the page reads from the ledger beyond the status:
// the operator's queries, each follower's latest dead letters among them.
type Ledger interface {
	ledger.Operator
}

// DeadLetterResolver replays or skips a dead letter once
// (*deliver.Resolver).
type DeadLetterResolver interface {
	Resolve(ctx context.Context, f ledger.Follower, id string, r ledger.Resolution) (ledger.DeadLetter, bool, error)
}

// Config is what the operator's page reads and does. The page answers 503
// while Ledger or Status is nil, and lets no one sign in without Token.
type Config struct {
	// Token is the operator's token, which signs a person in.
	Token string
	// Tokens are the tenants' tokens (token → tenant): a tenant's token is
	// told apart from a wrong one, and its tenant is listed.
	Tokens map[string]string
	// Status answers the status report the page shows.
	Status status.Source
	Clock  clock.Clock  // System when nil
	Logger *slog.Logger // slog.Default() when nil

	Ledger   Ledger
	Resolver DeadLetterResolver
	// CapWindow and CapLimit are the loop cap the writes use, which the
	// page's items at the cap are read against.
	CapWindow time.Duration
	CapLimit  int
	// Refresh is how often the page refreshes its sections
	// (DefaultUIRefresh when zero).
	Refresh time.Duration
	// Session is how long a sign-in lasts (DefaultUISession when zero).
	Session time.Duration
}

//go:embed ui
var uiFiles embed.FS

var uiTemplates = template.Must(template.New("ui").Funcs(template.FuncMap{
	"ago":  ago,
	"when": when,
	"secs": func(f float64) string { return ago(time.Duration(f * float64(time.Second))) },
}).ParseFS(uiFiles, "ui/*.html"))

// uiSecurityHeaders are set on every answer of the page: its own scripts
// and styles only, never framed, no referrer beyond the origin, no
// sniffing, never cached.
func uiSecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "+
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
}

// uiCookie names the session cookie, scoped to the page's path.
const uiCookie = "relayr_ui"

// uiKey derives the page's secret from the operator token: sessions and
// CSRF tokens are HMACs under it, so the cookie never holds the token and
// a new token ends every session.
func uiKey(token string) []byte {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("relayr ui v1"))
	return m.Sum(nil)
}

func (a *Page) mac(parts ...string) string {
	m := hmac.New(sha256.New, a.uiKey)
	m.Write([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(m.Sum(nil))
}

// session makes a session value that lasts until expires.
func (a *Page) session(expires time.Time) string {
	exp := strconv.FormatInt(expires.Unix(), 10)
	return exp + "." + a.mac("session", exp)
}

// validSession checks a session value in constant time, and that it has
// not ended.
func (a *Page) validSession(v string) bool {
	exp, sum, ok := strings.Cut(v, ".")
	if !ok || len(exp) > 20 || len(sum) != 2*sha256.Size {
		return false
	}
	unix, err := strconv.ParseInt(exp, 10, 64)
	if err != nil {
		return false
	}
	want := a.mac("session", exp)
	if subtle.ConstantTimeCompare([]byte(sum), []byte(want)) != 1 {
		return false
	}
	return a.c.Clock.Now().Before(time.Unix(unix, 0))
}

// csrf is the token every form of a session carries.
func (a *Page) csrf(session string) string { return a.mac("csrf", session) }

// uiAuth is how a page request was authenticated.
type uiAuth struct {
	// session is the cookie's value ("" for a bearer request, which no
	// browser sends unasked, so it needs no CSRF token).
	session string
}

// uiOperator authenticates a page request: the operator's bearer token, or
// a session cookie a sign-in set. It writes the error page and answers false
// when the caller is not the operator.
func (a *Page) uiOperator(w http.ResponseWriter, r *http.Request) (uiAuth, bool) {
	if r.Header.Get("Authorization") != "" {
		tok, ok := bearer(r)
		switch a.tokenKind(tok, ok) {
		case tokenOperator:
			return uiAuth{}, true
		case tokenTenant:
			a.uiError(w, r, http.StatusForbidden, "A tenant's token", "The page takes the operator token, not a tenant's. Nothing was changed.", true)
			return uiAuth{}, false
		}
		a.uiError(w, r, http.StatusUnauthorized, "Not signed in", "The token is not valid. Nothing was changed.", true)
		return uiAuth{}, false
	}
	if c, err := r.Cookie(uiCookie); err == nil && c.Value != "" {
		if a.validSession(c.Value) {
			return uiAuth{session: c.Value}, true
		}
		a.uiError(w, r, http.StatusUnauthorized, "Signed out", "Your sign-in ended or is not valid; sign in again. Nothing was changed.", true)
		return uiAuth{}, false
	}
	a.uiError(w, r, http.StatusUnauthorized, "Sign in", "The page takes the operator token; sign in with it. Nothing was changed.", true)
	return uiAuth{}, false
}

type tokenKind int

const (
	tokenNone tokenKind = iota
	tokenOperator
	tokenTenant
)

// tokenKind tells the operator's token from a tenant's and from anything
// else, in constant time.
func (a *Page) tokenKind(tok string, ok bool) tokenKind {
	if !ok {
		return tokenNone
	}
	sum := sha256.Sum256([]byte(tok))
	if a.op != ([32]byte{}) && subtle.ConstantTimeCompare(sum[:], a.op[:]) == 1 {
		return tokenOperator
	}
	if _, isTenant := a.tenantOfToken(tok); isTenant {
		return tokenTenant
	}
	return tokenNone
}

// sameOrigin refuses a form post another site made: an Origin naming
// another host, or a Sec-Fetch-Site other than same-origin (or none, a
// person's own navigation). Browsers send at least one of them with every
// post; a post with neither comes from no browser and is let through to
// the token checks.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return false
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host) {
			return false
		}
	}
	return true
}

// serveUI serves everything under /relayr/ui/.
func (a *Page) serveUI(w http.ResponseWriter, r *http.Request) {
	uiSecurityHeaders(w.Header())
	rest := strings.TrimPrefix(r.URL.Path, Path)
	if a.uiKey == nil && !strings.HasPrefix(rest, "assets/") {
		// With no operator token nothing could sign in, and no session
		// could be told from a forged one.
		a.uiError(w, r, http.StatusServiceUnavailable, "Closed", "No operator token is configured, so the page is closed.", false)
		return
	}
	switch {
	case r.URL.Path == strings.TrimSuffix(Path, "/"):
		http.Redirect(w, r, Path, http.StatusMovedPermanently)
	case strings.HasPrefix(rest, "assets/"):
		a.uiAsset(w, r, strings.TrimPrefix(rest, "assets/"))
	case rest == "" || rest == "fragment":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			a.uiMethod(w, r, "GET")
			return
		}
		a.uiPage(w, r, rest == "fragment")
	case rest == "signin":
		if r.Method != http.MethodPost {
			a.uiMethod(w, r, "POST")
			return
		}
		a.uiSignIn(w, r)
	case rest == "signout":
		if r.Method != http.MethodPost {
			a.uiMethod(w, r, "POST")
			return
		}
		a.uiSignOut(w, r)
	case rest == "dead-letters":
		if r.Method != http.MethodPost {
			a.uiMethod(w, r, "POST")
			return
		}
		a.uiDeadLetter(w, r)
	default:
		a.uiError(w, r, http.StatusNotFound, "Not found", "There is no such page.", false)
	}
}

func (a *Page) uiMethod(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	a.uiError(w, r, http.StatusMethodNotAllowed, "Not allowed", r.Method+" is not allowed here. Nothing was changed.", false)
}

func (a *Page) uiAsset(w http.ResponseWriter, r *http.Request, name string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		a.uiMethod(w, r, "GET")
		return
	}
	if name == "" || strings.Contains(name, "/") || strings.HasSuffix(name, ".html") {
		a.uiError(w, r, http.StatusNotFound, "Not found", "There is no such file.", false)
		return
	}
	b, err := fs.ReadFile(uiFiles, "ui/"+name)
	if err != nil {
		a.uiError(w, r, http.StatusNotFound, "Not found", "There is no such file.", false)
		return
	}
	w.Header().Set("Content-Type", cmp.Or(mime.TypeByExtension(path.Ext(name)), "application/octet-stream"))
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(b) //nolint:gosec // G705: the binary's own embedded files, never input
}

// errorPage is what the error template shows.
type errorPage struct {
	Status  int
	Title   string
	Message string
	SignIn  bool
}

// uiError answers a clear page for a refusal: its status, what happened,
// and a sign-in form where signing in is the way on.
func (a *Page) uiError(w http.ResponseWriter, _ *http.Request, status int, title, msg string, signIn bool) {
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="relayr"`)
	}
	a.render(w, status, "error.html", errorPage{Status: status, Title: title, Message: msg, SignIn: signIn && a.op != ([32]byte{})})
}

func (a *Page) render(w http.ResponseWriter, status int, name string, data any) {
	var buf bytes.Buffer
	if err := uiTemplates.ExecuteTemplate(&buf, name, data); err != nil {
		a.c.Logger.Error("ui: rendering", "template", name, "err", err)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte("the page could not be rendered\n"))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// readForm reads a page's form within MaxUIForm: url-encoded, each field
// once. It writes the error page and answers false when the form is bad.
func (a *Page) readForm(w http.ResponseWriter, r *http.Request, fields ...string) (map[string]string, bool) {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/x-www-form-urlencoded" {
		a.uiError(w, r, http.StatusBadRequest, "Bad form", "The form must be sent as application/x-www-form-urlencoded. Nothing was changed.", false)
		return nil, false
	}
	body := http.MaxBytesReader(w, r.Body, MaxUIForm)
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(body); err != nil {
		a.uiError(w, r, http.StatusBadRequest, "Bad form", fmt.Sprintf("The form is over %d bytes or could not be read. Nothing was changed.", MaxUIForm), false)
		return nil, false
	}
	vals, err := url.ParseQuery(buf.String())
	if err != nil {
		a.uiError(w, r, http.StatusBadRequest, "Bad form", "The form is malformed. Nothing was changed.", false)
		return nil, false
	}
	out := map[string]string{}
	for k, v := range vals {
		if !slices.Contains(fields, k) || len(v) != 1 {
			a.uiError(w, r, http.StatusBadRequest, "Bad form", fmt.Sprintf("The form's field %s is unknown or repeated. Nothing was changed.", tracker.Quote(k)), false)
			return nil, false
		}
		if err := ledger.CheckText(v[0]); err != nil {
			a.uiError(w, r, http.StatusBadRequest, "Bad form", "The form holds text that is not UTF-8. Nothing was changed.", false)
			return nil, false
		}
		out[k] = v[0]
	}
	return out, true
}

func (a *Page) uiSignIn(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		a.uiError(w, r, http.StatusForbidden, "Forged post", "The sign-in came from another site. Nothing was changed.", false)
		return
	}
	form, ok := a.readForm(w, r, "token")
	if !ok {
		return
	}
	tok := strings.TrimSpace(form["token"])
	switch a.tokenKind(tok, tok != "") {
	case tokenTenant:
		a.uiError(w, r, http.StatusForbidden, "A tenant's token", "The page takes the operator token, not a tenant's. Nothing was changed.", true)
		return
	case tokenNone:
		a.uiError(w, r, http.StatusUnauthorized, "Not signed in", "The token is not valid. Nothing was changed.", true)
		return
	}
	ttl := cmp.Or(a.c.Session, DefaultUISession)
	expires := a.c.Clock.Now().Add(ttl)
	// Secure over TLS; on plain HTTP (loopback, or TLS ended by a proxy)
	// a Secure cookie would never come back (ADR-0015's departures: the
	// session cookie).
	http.SetCookie(w, &http.Cookie{ //nolint:gosec // G124: Secure when the connection is TLS
		Name: uiCookie, Value: a.session(expires), Path: Path, MaxAge: int(ttl / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	http.Redirect(w, r, Path, http.StatusSeeOther)
}

// checkPost checks a page action: the operator, from the page itself, with
// the session's CSRF token when it came with a cookie.
func (a *Page) checkPost(w http.ResponseWriter, r *http.Request, fields ...string) (map[string]string, bool) {
	if !sameOrigin(r) {
		a.uiError(w, r, http.StatusForbidden, "Forged post", "The form came from another site. Nothing was changed.", false)
		return nil, false
	}
	auth, ok := a.uiOperator(w, r)
	if !ok {
		return nil, false
	}
	form, ok := a.readForm(w, r, append(fields, "csrf")...)
	if !ok {
		return nil, false
	}
	if auth.session != "" && subtle.ConstantTimeCompare([]byte(form["csrf"]), []byte(a.csrf(auth.session))) != 1 {
		a.uiError(w, r, http.StatusForbidden, "Forged post", "The form's token is not this sign-in's. Nothing was changed.", false)
		return nil, false
	}
	return form, true
}

func (a *Page) uiSignOut(w http.ResponseWriter, r *http.Request) {
	if _, ok := a.checkPost(w, r); !ok {
		return
	}
	http.SetCookie(w, &http.Cookie{Name: uiCookie, Value: "", Path: Path, //nolint:gosec // G124: as the sign-in's
		MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	a.uiError(w, r, http.StatusOK, "Signed out", "You are signed out.", true)
}

func (a *Page) uiDeadLetter(w http.ResponseWriter, r *http.Request) {
	form, ok := a.checkPost(w, r, "kind", "tenant", "workspace", "name", "id", "action")
	if !ok {
		return
	}
	if a.c.Resolver == nil || a.c.Status == nil {
		a.uiError(w, r, http.StatusServiceUnavailable, "Not served", "Dead letters cannot be resolved here. Nothing was changed.", false)
		return
	}
	var res ledger.Resolution
	switch form["action"] {
	case "replay":
		res = ledger.Replayed
	case "skip":
		res = ledger.Skipped
	default:
		a.uiError(w, r, http.StatusBadRequest, "Bad action", "The action must be replay or skip. Nothing was changed.", false)
		return
	}
	f := ledger.Follower{Kind: ledger.FollowerKind(form["kind"]), Tenant: form["tenant"], Workspace: form["workspace"], Name: form["name"]}
	if ledger.CheckFollower(f) != nil || form["id"] == "" || len(form["id"]) > ledger.MaxKey {
		a.uiError(w, r, http.StatusBadRequest, "Bad dead letter", "The form does not name a dead letter. Nothing was changed.", false)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	rep, _ := a.c.Status.Status(ctx)
	if !knownFollower(rep, f) {
		a.uiError(w, r, http.StatusBadRequest, "Unknown follower", "relayr follows no such subscription or binding. Nothing was changed.", false)
		return
	}
	_, changed, err := a.c.Resolver.Resolve(ctx, f, form["id"], res)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		a.uiError(w, r, http.StatusNotFound, "No such dead letter", "The follower has no such dead letter. Nothing was changed.", false)
		return
	case errors.Is(err, ledger.ErrInvalid), errors.Is(err, deliver.ErrUnreadable):
		a.uiError(w, r, http.StatusBadRequest, "Cannot be done", "The dead letter cannot be "+string(res)+": "+err.Error()+". Nothing was changed.", false)
		return
	case err != nil:
		a.c.Logger.Warn("ui: resolving a dead letter failed", "tenant", f.Tenant, "workspace", f.Workspace, "name", f.Name, "id", form["id"], "err", err)
		a.uiError(w, r, http.StatusServiceUnavailable, "Not done", "The "+form["action"]+" failed and nothing was recorded; relayr's log says why. Try again.", false)
		return
	}
	a.c.Logger.Info("ui: dead letter action", "tenant", f.Tenant, "workspace", f.Workspace, "name", f.Name, "id", form["id"],
		"action", form["action"], "changed", changed)
	http.Redirect(w, r, Path+"#subscriptions", http.StatusSeeOther)
}

func knownFollower(rep status.Report, f ledger.Follower) bool {
	switch f.Kind {
	case ledger.LogFollower:
		return slices.ContainsFunc(rep.Subscriptions, func(s deliver.Status) bool {
			return s.Tenant == f.Tenant && s.Workspace == f.Workspace && s.Name == f.Name
		})
	case ledger.TrackerFollower:
		return slices.ContainsFunc(rep.Bindings, func(b follow.BindingStatus) bool {
			return b.Tenant == f.Tenant && b.Workspace == f.Workspace && b.Tracker == f.Name
		})
	}
	return false
}

// uiFilter is the events' filter, from the page's query.
type uiFilter struct {
	Tenant, Workspace, Type string
}

// parseFilter reads the page's query: at most MaxUIQuery bytes, the
// fields ws (tenant/workspace) and type, each at most once.
func parseFilter(raw string) (uiFilter, error) {
	if len(raw) > MaxUIQuery {
		return uiFilter{}, fmt.Errorf("the query is over %d bytes", MaxUIQuery)
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		return uiFilter{}, errors.New("the query is malformed")
	}
	var f uiFilter
	for k, v := range q {
		if len(v) != 1 {
			return uiFilter{}, fmt.Errorf("%s is given %d times", tracker.Quote(k), len(v))
		}
		if ledger.CheckText(v[0]) != nil {
			return uiFilter{}, fmt.Errorf("%s is not UTF-8", tracker.Quote(k))
		}
		switch k {
		case "ws":
			if v[0] == "" {
				continue
			}
			t, ws, ok := strings.Cut(v[0], "/")
			if !ok || t == "" || ws == "" || len(t) > ledger.MaxName || len(ws) > ledger.MaxName {
				return uiFilter{}, errors.New("ws must be tenant/workspace")
			}
			f.Tenant, f.Workspace = t, ws
		case "type":
			if v[0] != "" && !slices.Contains(follow.Types, v[0]) {
				return uiFilter{}, fmt.Errorf("type must be one of %s", strings.Join(follow.Types, ", "))
			}
			f.Type = v[0]
		default:
			return uiFilter{}, fmt.Errorf("%s is not a field of the page's query", tracker.Quote(k))
		}
	}
	return f, nil
}

// page is what the page's template shows: every figure is the status's
// or the ledger's.
type page struct {
	Now      time.Time
	Holder   string
	Refresh  int64 // milliseconds
	Fragment string
	CSRF     string
	Session  bool
	Partial  bool // the status or the ledger did not answer in full
	Filter   uiFilter
	WSValue  string

	Workspaces    []string
	Types         []string
	Bindings      []bindingRow
	Budgets       []budgetRow
	Events        []eventGroup
	Subscriptions []subscriptionRow
	DeadLetters   []deadLetterGroup
	Writes        []tenantWrites
}

type bindingRow struct {
	follow.BindingStatus
	LeaseLeft time.Duration
	Lag       time.Duration
	Interval  time.Duration
}

type budgetRow struct {
	Key    string
	Limit  int
	Spent  int
	Writes int
	Reads  int
	Left   int
	// Pct is how much of the limit is spent, for the bar.
	Pct int
}

type eventGroup struct {
	Tenant, Workspace string
	Events            []eventRow
}

type eventRow struct {
	Seq         int64
	At          time.Time
	Type        string
	Item        follow.ItemData
	Link        template.URL
	Field       string
	Old, New    string
	Actor       string
	Correlation string
}

type subscriptionRow struct {
	deliver.Status
	Behind int64
}

type deadLetterGroup struct {
	Kind, Tenant, Workspace, Name string
	Letters                       []deadLetterRow
}

type deadLetterRow struct {
	ledger.DeadLetter
	Type    string
	EventID string
}

type tenantWrites struct {
	Tenant     string
	Unrecorded []claimRow
	AtCap      []ledger.CapItem
	Deleted    []claimRow
	CapLimit   int
	CapWindow  time.Duration
}

type claimRow struct {
	ledger.Claim
	Age time.Duration
}

func (a *Page) uiPage(w http.ResponseWriter, r *http.Request, fragment bool) {
	auth, ok := a.uiOperator(w, r)
	if !ok {
		return
	}
	filter, err := parseFilter(r.URL.RawQuery)
	if err != nil {
		a.uiError(w, r, http.StatusBadRequest, "Bad query", "The page's query was refused: "+err.Error()+".", false)
		return
	}
	if a.c.Status == nil || a.c.Ledger == nil {
		a.uiError(w, r, http.StatusServiceUnavailable, "Not served", "relayr serves no status here.", false)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	p, err := a.buildPage(ctx, filter)
	if err != nil {
		// The page is shown as far as it was read, marked partial.
		a.c.Logger.Warn("ui: the status or the ledger did not answer in full", "err", err)
		p.Partial = true
	}
	p.Refresh = cmp.Or(a.c.Refresh, DefaultUIRefresh).Milliseconds()
	q := url.Values{}
	if filter.Tenant != "" {
		p.WSValue = filter.Tenant + "/" + filter.Workspace
		q.Set("ws", p.WSValue)
	}
	if filter.Type != "" {
		q.Set("type", filter.Type)
	}
	p.Fragment = Path + "fragment"
	if len(q) > 0 {
		p.Fragment += "?" + q.Encode()
	}
	if auth.session != "" {
		p.CSRF, p.Session = a.csrf(auth.session), true
	}
	name := "page.html"
	if fragment {
		name = "sections"
	}
	a.render(w, http.StatusOK, name, p)
}

// buildPage reads the status and the ledger into the page. It answers the
// page as far as it was read, with the first failure.
func (a *Page) buildPage(ctx context.Context, filter uiFilter) (page, error) {
	rep, err := a.c.Status.Status(ctx)
	errs := []error{err}
	p := page{Now: rep.Now, Holder: rep.Holder, Filter: filter, Types: follow.Types}
	if p.Now.IsZero() {
		p.Now = a.c.Clock.Now()
	}
	tenants := map[string]bool{}
	for _, tenant := range a.c.Tokens {
		tenants[tenant] = true
	}
	workspaces := map[[2]string]bool{}
	for _, b := range rep.Bindings {
		tenants[b.Tenant] = true
		workspaces[[2]string{b.Tenant, b.Workspace}] = true
		p.Bindings = append(p.Bindings, bindingRow{
			BindingStatus: b, LeaseLeft: b.LeaseExpires.Sub(p.Now),
			Lag: time.Duration(b.LagSeconds * float64(time.Second)), Interval: time.Duration(b.IntervalSeconds * float64(time.Second)),
		})
	}
	for _, k := range rep.Budgets {
		pct := 0
		if k.Limit > 0 {
			pct = min(100, 100*k.Spent/k.Limit)
		}
		p.Budgets = append(p.Budgets, budgetRow{Key: k.Key, Limit: k.Limit, Spent: k.Spent, Writes: k.Writes, Reads: k.Reads, Left: k.Left, Pct: pct})
	}
	for _, s := range rep.Subscriptions {
		tenants[s.Tenant] = true
		workspaces[[2]string{s.Tenant, s.Workspace}] = true
		p.Subscriptions = append(p.Subscriptions, subscriptionRow{Status: s, Behind: max(0, s.Head-s.Cursor)})
	}
	ws := slices.SortedFunc(func(yield func([2]string) bool) {
		for k := range workspaces {
			if !yield(k) {
				return
			}
		}
	}, func(a, b [2]string) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	for _, w := range ws {
		p.Workspaces = append(p.Workspaces, w[0]+"/"+w[1])
		if filter.Tenant != "" && (w[0] != filter.Tenant || w[1] != filter.Workspace) {
			continue
		}
		es, err := a.c.Ledger.LatestEvents(ctx, ledger.EventQuery{Tenant: w[0], Workspace: w[1], Type: filter.Type, Limit: UIEvents})
		errs = append(errs, err)
		g := eventGroup{Tenant: w[0], Workspace: w[1]}
		for _, e := range es {
			g.Events = append(g.Events, eventRowOf(e))
		}
		p.Events = append(p.Events, g)
	}
	// Dead letters: each subscription's, then each binding's follower's.
	for _, s := range rep.Subscriptions {
		g, err := a.deadLetters(ctx, ledger.Follower{Kind: ledger.LogFollower, Tenant: s.Tenant, Workspace: s.Workspace, Name: s.Name})
		errs = append(errs, err)
		p.DeadLetters = append(p.DeadLetters, g)
	}
	for _, b := range rep.Bindings {
		g, err := a.deadLetters(ctx, ledger.Follower{Kind: ledger.TrackerFollower, Tenant: b.Tenant, Workspace: b.Workspace, Name: b.Tracker})
		errs = append(errs, err)
		if len(g.Letters) > 0 {
			p.DeadLetters = append(p.DeadLetters, g)
		}
	}
	window, limit := cmp.Or(a.c.CapWindow, time.Hour), cmp.Or(a.c.CapLimit, 20)
	for _, t := range slices.Sorted(func(yield func(string) bool) {
		for t := range tenants {
			if !yield(t) {
				return
			}
		}
	}) {
		tw := tenantWrites{Tenant: t, CapLimit: limit, CapWindow: window}
		open, err := a.c.Ledger.Unrecorded(ctx, t, UIRows)
		errs = append(errs, err)
		for _, c := range open {
			tw.Unrecorded = append(tw.Unrecorded, claimRow{Claim: c, Age: p.Now.Sub(c.ClaimedAt)})
		}
		tw.AtCap, err = a.c.Ledger.AtCap(ctx, ledger.CapQuery{Tenant: t, Now: p.Now, Window: window, Limit: limit, Rows: UIRows})
		errs = append(errs, err)
		gone, err := a.c.Ledger.DeletedKeys(ctx, t, UIRows)
		errs = append(errs, err)
		for _, c := range gone {
			tw.Deleted = append(tw.Deleted, claimRow{Claim: c})
		}
		p.Writes = append(p.Writes, tw)
	}
	return p, errors.Join(errs...)
}

func (a *Page) deadLetters(ctx context.Context, f ledger.Follower) (deadLetterGroup, error) {
	g := deadLetterGroup{Kind: string(f.Kind), Tenant: f.Tenant, Workspace: f.Workspace, Name: f.Name}
	// The newest first, at most UIRows: a backlog is not read whole at
	// every refresh.
	list, err := a.c.Ledger.RecentDeadLetters(ctx, f, UIRows)
	for _, d := range list {
		var e struct {
			ID   string `json:"id"`
			Type string `json:"type"`
		}
		_ = json.Unmarshal(d.Event, &e)
		d.Event = nil
		g.Letters = append(g.Letters, deadLetterRow{DeadLetter: d, Type: e.Type, EventID: e.ID})
	}
	return g, err
}

// eventRowOf reads what the page shows of an event from its data.
func eventRowOf(e eventlog.Event) eventRow {
	row := eventRow{Seq: e.Seq, At: e.At, Type: e.Type, Correlation: e.Correlation}
	var d follow.Data
	if json.Unmarshal(e.Data, &d) == nil {
		row.Item, row.Field, row.Actor = d.Item, d.Field, d.Actor
		row.Old, row.New = shortJSON(d.Old), shortJSON(d.New)
		if u, err := url.Parse(d.Item.Link); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
			// Only web links are made links: a javascript: link in an
			// item's data is shown as text.
			row.Link = template.URL(u.String()) // #nosec G203 -- http(s) only, checked above
		}
		if d.Comment != nil {
			row.Field, row.New, row.Actor = "comment", shorten(d.Comment.Body), cmp.Or(d.Actor, d.Comment.Author)
		}
		if d.Deleted != nil && *d.Deleted {
			row.Field = "deleted"
		}
	}
	return row
}

// shortJSON shows a value as text: a string without its quotes, anything
// else as its JSON, cut to 120 characters.
func shortJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return shorten(s)
	}
	return shorten(string(raw))
}

func shorten(s string) string {
	if r := []rune(s); len(r) > 120 {
		return string(r[:119]) + "…"
	}
	return s
}

// ago shows a duration the way the page reads it: 4s, 2m10s, 3h5m, 2d3h.
func ago(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}

// when shows a time in UTC to the second, "–" for none.
func when(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// Page serves the operator's page. It is safe for concurrent use.
type Page struct {
	c      Config
	op     [32]byte // the operator token's digest; zero without one
	uiKey  []byte
	tokens *tokens.Tenants
}

// New answers the page over c.
func New(c Config) *Page {
	if c.Clock == nil {
		c.Clock = clock.System{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	p := &Page{c: c, tokens: tokens.NewTenants(c.Tokens)}
	if c.Token != "" {
		p.op = sha256.Sum256([]byte(c.Token))
		p.uiKey = uiKey(c.Token)
	}
	return p
}

// ServeHTTP implements http.Handler: everything under Path.
func (a *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.serveUI(w, r) }

// tenantOfToken answers the tenant of a token (tokens.Tenants: in
// constant time).
func (a *Page) tenantOfToken(tok string) (string, bool) { return a.tokens.Of(tok) }

func bearer(r *http.Request) (string, bool) { return tokens.Bearer(r) }
