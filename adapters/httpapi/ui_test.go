package httpapi_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/httpapi"
	"github.com/relayr-go/relayr/adapters/httpapi/operator"
	"github.com/relayr-go/relayr/core/deliver"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/follow"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/ledger/memledger"
)

// countSink counts what a replay publishes, by id.
type countSink struct {
	mu  sync.Mutex
	ids map[string]int
}

func (s *countSink) Publish(_ context.Context, e eventlog.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids == nil {
		s.ids = map[string]int{}
	}
	s.ids[e.ID]++
	return nil
}

func (s *countSink) count(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids[id]
}

var rules = ledger.Follower{Kind: ledger.LogFollower, Tenant: "acme", Workspace: "ops", Name: "rules"}

// uiEnv is the API with the page on, a subscription "rules" with one dead
// letter, and a status that says what late says.
type uiEnv struct {
	*env
	sink *countSink
	late bool
}

func newUIEnv(t *testing.T, opts ...func(*httpapi.Config)) *uiEnv {
	t.Helper()
	u := &uiEnv{sink: &countSink{}}
	status := func(c *httpapi.Config) {
		inner := c.Status
		c.Status = httpapi.StatusFunc(func(ctx context.Context) (httpapi.StatusReport, error) {
			rep, err := inner.Status(ctx)
			for i := range rep.Bindings {
				rep.Bindings[i].Late = u.late && rep.Bindings[i].Workspace == "ops"
			}
			rep.Subscriptions = []deliver.Status{{Tenant: "acme", Workspace: "ops", Name: "rules", State: deliver.Running, Cursor: 1, Head: 3}}
			return rep, err
		})
	}
	// The page is made last, from the API's configuration as the options
	// left it, as the app makes it.
	page := func(c *httpapi.Config) {
		led := c.Ledger.(*memledger.Ledger)
		c.UI = operatorPage(c, led, &deliver.Resolver{Ledger: led, Clock: c.Clock, Sink: func(ledger.Follower) (deliver.Sink, error) { return u.sink, nil }})
	}
	u.env = newEnv(t, append(append([]func(*httpapi.Config){status}, opts...), page)...)
	raw, _ := json.Marshal(eventlog.Event{ID: "trk_00000000000000dd", Seq: 2, Tenant: "acme", Workspace: "ops", Type: follow.TypeItemChanged, Data: json.RawMessage(`{}`)})
	if _, err := u.ledger.DeadLetter(t.Context(), ledger.DeadLetter{Follower: rules, ID: "2", Seq: 2, Event: raw, Reason: "projection failed: boom", At: t0}); err != nil {
		t.Fatal(err)
	}
	return u
}

// page sends a request to the page without following redirects.
func (u *uiEnv) page(method, path string, body url.Values, header ...string) resp {
	u.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = strings.NewReader(body.Encode())
	}
	req, err := http.NewRequest(method, u.srv.URL+path, rd)
	if err != nil {
		u.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	if err != nil {
		u.t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	b, _ := io.ReadAll(res.Body)
	return resp{status: res.StatusCode, header: res.Header, body: b}
}

// signIn signs in and answers the cookie header to send.
func (u *uiEnv) signIn() string {
	u.t.Helper()
	r := u.page(http.MethodPost, "/relayr/ui/signin", url.Values{"token": {opTok}})
	if r.status != http.StatusSeeOther {
		u.t.Fatalf("sign-in answered %d: %s", r.status, r.body)
	}
	c := (&http.Response{Header: r.header}).Cookies()
	if len(c) != 1 {
		u.t.Fatalf("sign-in set %d cookies", len(c))
	}
	return c[0].Name + "=" + c[0].Value
}

// csrfOf reads the CSRF token the page's forms carry.
func csrfOf(t *testing.T, body []byte) string {
	t.Helper()
	_, rest, ok := strings.Cut(string(body), `name="csrf" value="`)
	if !ok {
		t.Fatal("the page carries no CSRF token")
	}
	tok, _, _ := strings.Cut(rest, `"`)
	return tok
}

func mustPage(t *testing.T, r resp, status int, says ...string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("answered %d, want %d: %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("answered %q, not a page", ct)
	}
	for h, want := range map[string]string{
		"X-Frame-Options": "DENY", "Referrer-Policy": "same-origin", "X-Content-Type-Options": "nosniff", "Cache-Control": "no-store",
	} {
		if got := r.header.Get(h); got != want {
			t.Errorf("%s: %q, want %q", h, got, want)
		}
	}
	if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") ||
		!strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	for _, s := range says {
		if !strings.Contains(string(r.body), s) {
			t.Errorf("the page does not say %q", s)
		}
	}
}

func (u *uiEnv) resolution() ledger.Resolution {
	u.t.Helper()
	list, err := u.ledger.DeadLetters(u.t.Context(), rules)
	if err != nil || len(list) != 1 {
		u.t.Fatalf("dead letters %v %v", list, err)
	}
	return list[0].Resolution
}

func TestUISignInSetsAHardenedSessionCookie(t *testing.T) {
	u := newUIEnv(t)
	mustPage(t, u.page(http.MethodGet, "/relayr/ui/", nil), http.StatusUnauthorized, "Sign in", `action="/relayr/ui/signin"`)

	r := u.page(http.MethodPost, "/relayr/ui/signin", url.Values{"token": {opTok}})
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/relayr/ui/" {
		t.Fatalf("sign-in answered %d to %q", r.status, r.header.Get("Location"))
	}
	set := r.header.Get("Set-Cookie")
	for _, want := range []string{"relayr_ui=", "Path=/relayr/ui/", "HttpOnly", "SameSite=Strict"} {
		if !strings.Contains(set, want) {
			t.Errorf("the cookie %q lacks %s", set, want)
		}
	}
	if strings.Contains(set, "Secure") {
		t.Errorf("a cookie over plain HTTP is Secure: %q", set)
	}
	if strings.Contains(set, opTok) {
		t.Fatalf("the cookie holds the operator token: %q", set)
	}
	mustPage(t, u.page(http.MethodGet, "/relayr/ui/", nil, "Cookie", u.signIn()), http.StatusOK, "Bindings", "Events", "Subscriptions", "Writes")

	// Over TLS the cookie is Secure.
	req := httptest.NewRequest(http.MethodPost, "https://relayr.example/relayr/ui/signin", strings.NewReader("token="+opTok))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.TLS = &tls.ConnectionState{}
	rec := httptest.NewRecorder()
	u.api.ServeHTTP(rec, req)
	if set := rec.Header().Get("Set-Cookie"); rec.Code != http.StatusSeeOther || !strings.Contains(set, "; Secure") {
		t.Fatalf("over TLS: %d %q", rec.Code, set)
	}
}

func TestUIRefusesWrongAndTenantTokens(t *testing.T) {
	u := newUIEnv(t)
	for _, c := range []struct {
		name   string
		r      resp
		status int
		says   string
	}{
		{"WrongTokenSignIn", u.page(http.MethodPost, "/relayr/ui/signin", url.Values{"token": {"operator-token?"}}), 401, "The token is not valid"},
		{"TenantTokenSignIn", u.page(http.MethodPost, "/relayr/ui/signin", url.Values{"token": {tokenA}}), 403, "not a tenant"},
		{"EmptySignIn", u.page(http.MethodPost, "/relayr/ui/signin", url.Values{"token": {""}}), 401, "The token is not valid"},
		{"WrongBearer", u.page(http.MethodGet, "/relayr/ui/", nil, "Authorization", "Bearer nope"), 401, "The token is not valid"},
		{"TenantBearer", u.page(http.MethodGet, "/relayr/ui/", nil, "Authorization", "Bearer "+tokenA), 403, "not a tenant"},
		{"ForgedCookie", u.page(http.MethodGet, "/relayr/ui/", nil, "Cookie", "relayr_ui=99999999999."+strings.Repeat("0", 64)), 401, "sign in again"},
		{"TokenAsCookie", u.page(http.MethodGet, "/relayr/ui/", nil, "Cookie", "relayr_ui="+opTok), 401, "sign in again"},
		{"TenantBearerAction", u.page(http.MethodPost, "/relayr/ui/dead-letters", url.Values{"kind": {"log"}, "tenant": {"acme"}, "workspace": {"ops"},
			"name": {"rules"}, "id": {"2"}, "action": {"replay"}}, "Authorization", "Bearer "+tokenA), 403, "not a tenant"},
	} {
		t.Run(c.name, func(t *testing.T) {
			mustPage(t, c.r, c.status, c.says)
			if c.r.header.Get("Set-Cookie") != "" {
				t.Fatal("a refused request set a cookie")
			}
		})
	}
	if u.resolution() != "" || u.sink.count("trk_00000000000000dd") != 0 {
		t.Fatal("a refused request changed the dead letter")
	}
	// The operator's bearer token reads the page without a session.
	mustPage(t, u.page(http.MethodGet, "/relayr/ui/", nil, "Authorization", "Bearer "+opTok), 200, "Bindings")
}

func TestUISessionEnds(t *testing.T) {
	u := newUIEnv(t)
	cookie := u.signIn()
	mustPage(t, u.page(http.MethodGet, "/relayr/ui/", nil, "Cookie", cookie), 200)
	u.clock.Advance(operator.DefaultUISession)
	mustPage(t, u.page(http.MethodGet, "/relayr/ui/", nil, "Cookie", cookie), 401, "sign in again")
}

func TestUIRefusesForgedPostsAndChangesNothing(t *testing.T) {
	u := newUIEnv(t)
	cookie := u.signIn()
	page := u.page(http.MethodGet, "/relayr/ui/", nil, "Cookie", cookie)
	mustPage(t, page, 200, "projection failed: boom", `value="replay"`)
	csrf := csrfOf(t, page.body)
	form := func(csrf string) url.Values {
		return url.Values{"csrf": {csrf}, "kind": {"log"}, "tenant": {"acme"}, "workspace": {"ops"}, "name": {"rules"}, "id": {"2"}, "action": {"replay"}}
	}
	for _, c := range []struct {
		name   string
		form   url.Values
		header []string
		status int
	}{
		{"NoCSRFToken", url.Values{"kind": {"log"}, "tenant": {"acme"}, "workspace": {"ops"}, "name": {"rules"}, "id": {"2"}, "action": {"replay"}}, nil, 403},
		{"WrongCSRFToken", form(strings.Repeat("a", 64)), nil, 403},
		{"AnotherSitesOrigin", form(csrf), []string{"Origin", "https://evil.example"}, 403},
		{"CrossSite", form(csrf), []string{"Sec-Fetch-Site", "cross-site"}, 403},
		{"NoSession", form(csrf), []string{"Cookie", ""}, 401},
		{"UnknownField", url.Values{"csrf": {csrf}, "kind": {"log"}, "x": {"1"}}, nil, 400},
		{"UnknownAction", url.Values{"csrf": {csrf}, "kind": {"log"}, "tenant": {"acme"}, "workspace": {"ops"}, "name": {"rules"}, "id": {"2"}, "action": {"forget"}}, nil, 400},
		{"UnknownFollower", url.Values{"csrf": {csrf}, "kind": {"log"}, "tenant": {"acme"}, "workspace": {"ops"}, "name": {"other"}, "id": {"2"}, "action": {"replay"}}, nil, 400},
		{"Oversized", url.Values{"csrf": {csrf}, "id": {strings.Repeat("x", operator.MaxUIForm)}}, nil, 400},
		{"NoSuchDeadLetter", url.Values{"csrf": {csrf}, "kind": {"log"}, "tenant": {"acme"}, "workspace": {"ops"}, "name": {"rules"}, "id": {"9"}, "action": {"replay"}}, nil, 404},
	} {
		t.Run(c.name, func(t *testing.T) {
			header := append([]string{"Cookie", cookie}, c.header...)
			mustPage(t, u.page(http.MethodPost, "/relayr/ui/dead-letters", c.form, header...), c.status, "Nothing was changed")
		})
	}
	if u.resolution() != "" || u.sink.count("trk_00000000000000dd") != 0 {
		t.Fatal("a refused post changed the dead letter")
	}
	// A form that is not url-encoded.
	r := u.page(http.MethodPost, "/relayr/ui/dead-letters", nil, "Cookie", cookie, "Content-Type", "application/json")
	mustPage(t, r, 400, "Nothing was changed")
}

func TestUIReplaysADeadLetterOnce(t *testing.T) {
	u := newUIEnv(t)
	cookie := u.signIn()
	csrf := csrfOf(t, u.page(http.MethodGet, "/relayr/ui/", nil, "Cookie", cookie).body)
	form := url.Values{"csrf": {csrf}, "kind": {"log"}, "tenant": {"acme"}, "workspace": {"ops"}, "name": {"rules"}, "id": {"2"}, "action": {"replay"}}
	for i := range 2 {
		r := u.page(http.MethodPost, "/relayr/ui/dead-letters", form, "Cookie", cookie, "Origin", u.srv.URL, "Sec-Fetch-Site", "same-origin")
		if r.status != http.StatusSeeOther {
			t.Fatalf("click %d answered %d: %s", i+1, r.status, r.body)
		}
	}
	form.Set("action", "skip")
	if r := u.page(http.MethodPost, "/relayr/ui/dead-letters", form, "Cookie", cookie); r.status != http.StatusSeeOther {
		t.Fatalf("a skip after the replay answered %d", r.status)
	}
	if n := u.sink.count("trk_00000000000000dd"); n != 1 || u.resolution() != ledger.Replayed {
		t.Fatalf("published %d times, resolution %q", n, u.resolution())
	}
	page := u.page(http.MethodGet, "/relayr/ui/", nil, "Cookie", cookie)
	mustPage(t, page, 200, `data-resolution="replayed"`)
	if strings.Contains(string(page.body), `value="replay"`) {
		t.Fatal("a replayed dead letter still offers a replay")
	}
}

func TestUIRefusesBadQueries(t *testing.T) {
	u := newUIEnv(t)
	for name, q := range map[string]string{
		"Oversized":    "?ws=" + strings.Repeat("a", operator.MaxUIQuery),
		"Malformed":    "?ws=%zz",
		"UnknownField": "?limit=5",
		"Repeated":     "?ws=acme/ops&ws=acme/dev",
		"NoSlash":      "?ws=acme",
		"UnknownType":  "?type=tracker:item_exploded",
		"NotUTF8":      "?ws=acme/%ff",
	} {
		t.Run(name, func(t *testing.T) {
			mustPage(t, u.page(http.MethodGet, "/relayr/ui/"+q, nil, "Authorization", "Bearer "+opTok), 400, "Bad query")
			mustPage(t, u.page(http.MethodGet, "/relayr/ui/fragment"+q, nil, "Authorization", "Bearer "+opTok), 400, "Bad query")
		})
	}
	mustPage(t, u.page(http.MethodPut, "/relayr/ui/", nil, "Authorization", "Bearer "+opTok), 405, "not allowed")
	mustPage(t, u.page(http.MethodGet, "/relayr/ui/signin", nil), 405, "not allowed")
	mustPage(t, u.page(http.MethodGet, "/relayr/ui/nothing", nil), 404)
	mustPage(t, u.page(http.MethodGet, "/relayr/ui/assets/page.html", nil), 404)
}

func TestUIShowsEventsLagAndWrites(t *testing.T) {
	u := newUIEnv(t)
	bearer := []string{"Authorization", "Bearer " + opTok}
	for i, d := range []follow.Data{
		{Tracker: "fake", Item: follow.ItemData{ID: "i1", Name: "OPS-1", Link: "https://plane.example/ops/1"}, Field: "state", Old: json.RawMessage(`"todo"`), New: json.RawMessage(`"done"`), Actor: "ana"},
		{Tracker: "fake", Item: follow.ItemData{ID: "i2", Name: "OPS-2", Link: "javascript:alert(1)"}, Title: "<script>x</script>"},
	} {
		typ := []string{follow.TypeItemChanged, follow.TypeItemCreated}[i]
		data, _ := json.Marshal(d)
		if _, _, err := u.log.Append(t.Context(), eventlog.AppendParams{Publisher: eventlog.TrackerPublisher, Event: eventlog.Event{
			ID: "trk_e" + string(rune('0'+i)), Tenant: "acme", Workspace: "ops", Type: typ, Correlation: "run-42", Data: data, At: t0,
		}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := u.ledger.Claim(t.Context(), ledger.ClaimParams{Key: ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindItem, Key: "ci/open"}, Now: t0, RetakeAfter: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if err := u.ledger.MarkDeleted(t.Context(), ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindItem, Key: "ci/gone"}); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if _, err := u.ledger.CountWrite(t.Context(), ledger.WriteParams{Tenant: "acme", Workspace: "ops", ItemID: "hot", Now: t0, Window: time.Hour, Limit: 20}); err != nil {
			t.Fatal(err)
		}
	}
	u.clock.Advance(45 * time.Second)
	page := u.page(http.MethodGet, "/relayr/ui/", nil, bearer...)
	mustPage(t, page, 200, `href="https://plane.example/ops/1"`, "todo → done", "ana", "run-42", "OPS-2",
		"<code>ci/open</code>", "for 45s", "<code>ci/gone</code>", "item <code>hot</code>: 20 writes", "1 / 3", "(2 behind)")
	if strings.Contains(string(page.body), "javascript:") || strings.Contains(string(page.body), "<script>x") {
		t.Fatal("an item's data reached the page unescaped")
	}
	if strings.Contains(string(page.body), `class="lag late"`) {
		t.Fatal("a binding is late before its follower starved")
	}
	// Filtered by workspace and type.
	page = u.page(http.MethodGet, "/relayr/ui/?ws=acme/ops&type=tracker:item_created", nil, bearer...)
	mustPage(t, page, 200, "OPS-2", `data-fragment="/relayr/ui/fragment?type=tracker%3Aitem_created&amp;ws=acme%2Fops"`)
	if strings.Contains(string(page.body), "todo → done") || strings.Contains(string(page.body), "acme/dev</h3>") {
		t.Fatal("the filter let other events through")
	}
	// The fragment is the sections alone, and a late binding is red.
	u.late = true
	frag := u.page(http.MethodGet, "/relayr/ui/fragment", nil, bearer...)
	mustPage(t, frag, 200, `class="lag late"`, "<b>late</b>")
	if strings.Contains(string(frag.body), "<html") {
		t.Fatal("the fragment is a whole page")
	}
}

func TestUIIsClosedWithoutAnOperatorToken(t *testing.T) {
	u := newUIEnv(t, func(c *httpapi.Config) { c.OperatorToken = "" })
	mustPage(t, u.page(http.MethodGet, "/relayr/ui/", nil), 503, "closed")
	mustPage(t, u.page(http.MethodPost, "/relayr/ui/signin", url.Values{"token": {""}}), 503, "closed")
}

func TestUIServesItsAssets(t *testing.T) {
	u := newUIEnv(t)
	for path, ct := range map[string]string{"/relayr/ui/assets/ui.css": "text/css", "/relayr/ui/assets/ui.js": "text/javascript"} {
		r := u.page(http.MethodGet, path, nil)
		if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), ct) || len(r.body) == 0 {
			t.Fatalf("%s: %d %q", path, r.status, r.header.Get("Content-Type"))
		}
	}
}

// operatorPage is the operator's page over the API's configuration, as the
// app mounts it.
func operatorPage(c *httpapi.Config, led *memledger.Ledger, rv operator.DeadLetterResolver) *operator.Page {
	return operator.New(operator.Config{Token: c.OperatorToken, Tokens: c.Tokens, Status: c.Status, Clock: c.Clock, Logger: c.Logger,
		Ledger: led, Resolver: rv})
}
