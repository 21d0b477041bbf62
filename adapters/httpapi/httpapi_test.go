package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/httpapi"
	"github.com/relayr-go/relayr/core/binding"
	"github.com/relayr-go/relayr/core/budget"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/deliver"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/faketracker"
	"github.com/relayr-go/relayr/core/follow"
	"github.com/relayr-go/relayr/core/integrations"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/ledger/memledger"
	"github.com/relayr-go/relayr/core/metrics"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

const (
	tokenA = "token-of-acme"
	tokenB = "token-of-globex"
	opTok  = "operator-token"
	secret = "whsec"
)

type waker struct {
	mu      sync.Mutex
	woken   []string
	deleted []string
}

func (w *waker) Wake(b binding.Binding, n tracker.Nudged) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.woken = append(w.woken, b.Name())
	w.deleted = append(w.deleted, n.Deleted...)
}

func (w *waker) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.woken...)
}

type env struct {
	t      *testing.T
	clock  *clock.Fake
	fake   *faketracker.Tracker
	ledger *memledger.Ledger
	log    *eventlog.Notifying
	conns  *binding.Connections
	sw     *integrations.Switches
	m      *metrics.Memory
	waker  *waker
	api    *httpapi.API
	srv    *httptest.Server
	logs   *syncBuffer
}

// syncBuffer is a log's text, written from any goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newEnv(t *testing.T, opts ...func(*httpapi.Config)) *env {
	t.Helper()
	return newEnvOf(t, faketracker.LikePlane, opts...)
}

// newEnvOf is newEnv over a fake of flavour (a Vikunja-like one reports
// deletions by webhook; a Plane-like one, as Plane, doesn't).
func newEnvOf(t *testing.T, flavour faketracker.Flavour, opts ...func(*httpapi.Config)) *env {
	t.Helper()
	return newEnvOver(t, flavour, nil, opts...)
}

// newEnvOver is newEnvOf over a fake set up with fakeOpts as well.
func newEnvOver(t *testing.T, flavour faketracker.Flavour, fakeOpts []faketracker.Option, opts ...func(*httpapi.Config)) *env {
	t.Helper()
	clk := clock.NewFake(t0)
	fake := faketracker.New(flavour, append([]faketracker.Option{faketracker.WithClock(clk), faketracker.WithProject("proj", "OPS")}, fakeOpts...)...)
	led := memledger.New()
	conn := &faketracker.Connector{Fake: fake}
	bindings := []binding.Binding{
		{Tenant: "acme", Workspace: "ops", Connector: conn},
		{Tenant: "acme", Workspace: "dev", Connector: conn},
		{Tenant: "globex", Workspace: "ops", Connector: conn},
	}
	creds := tracker.StaticCredentials{"acme/fake": {Token: "k", WebhookSecret: secret}, "globex/fake": {Token: "k2", WebhookSecret: "other"}}
	conns := binding.NewConnections(clk, creds, bindings...)
	sw := integrations.NewSwitches()
	m := metrics.NewMemory()
	log := eventlog.NewNotifying(led)
	wk := &waker{}
	logs := &syncBuffer{}
	w := writes.New(writes.Config{Ledger: led, Connections: conns, Integrations: sw, Clock: clk, Metrics: m})
	bud := budget.New(clk, 40)
	fs := follow.New(follow.Config{Ledger: led, Log: log, Connections: conns, Integrations: sw, Clock: clk, Budget: bud, Holder: "replica-1"})
	cfg := httpapi.Config{
		Status: httpapi.StatusFunc(func(ctx context.Context) (httpapi.StatusReport, error) {
			bs, err := fs.Status(ctx)
			return httpapi.StatusReport{Holder: fs.Holder(), Now: clk.Now(), Bindings: bs, Budgets: bud.Status()}, err
		}),
		Writes: w, Log: log, Connections: conns, Integrations: sw, Waker: wk, Ledger: led,
		Tokens:        map[string]string{tokenA: "acme", tokenB: "globex"},
		OperatorToken: opTok,
		Metrics:       http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "relayr_up 1\n") }),
		Counters:      m, Clock: clk,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	for _, o := range opts {
		o(&cfg)
	}
	api := httpapi.New(cfg)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return &env{t: t, clock: clk, fake: fake, ledger: led, log: log, conns: conns, sw: sw, m: m, waker: wk, api: api, srv: srv, logs: logs}
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

// apiError is an error answer's body.
func (r resp) apiError() (code, message string) {
	var b struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(r.body, &b)
	return b.Error.Code, b.Error.Message
}

func (r resp) code() string {
	code, _ := r.apiError()
	return code
}

func (r resp) message() string {
	_, msg := r.apiError()
	return msg
}

func (e *env) do(method, path, token string, body any, header ...string) resp {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	b, _ := io.ReadAll(res.Body)
	return resp{res.StatusCode, res.Header, b}
}

const ws = "/relayr/v1/tenants/acme/workspaces/ops"

// advancing runs fn while moving the fake clock on a second whenever
// something waits on it, until fn answers: a request that waits on the
// clock (a claim held elsewhere) is answered at once in real time.
func (e *env) advancing(fn func() resp) resp {
	got := make(chan resp, 1)
	go func() { got <- fn() }()
	for {
		select {
		case r := <-got:
			return r
		default:
		}
		poll, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		if e.clock.BlockUntil(poll, 1) == nil {
			e.clock.Advance(time.Second)
		}
		cancel()
	}
}

// want checks an error answer's status and code, and that it is an RFC
// 9457 problem (problemOf).
func want(t *testing.T, r resp, status int, code string) {
	t.Helper()
	if r.status != status || r.code() != code {
		t.Fatalf("status %d code %q, want %d %q; body %s", r.status, r.code(), status, code, r.body)
	}
	problemOf(t, r.status, r.header, r.body)
}

func TestWriteAPI(t *testing.T) {
	t.Run("EnsureFilesOnceAndAnswers201ThenTheSameItemWith200", func(t *testing.T) {
		e := newEnv(t)
		r := e.do("POST", ws+"/items/ensure", tokenA, httpapi.EnsureRequest{Key: "ci/1", Title: "Build failed", Labels: []string{"ci"}, Correlation: "run-1"})
		if r.status != http.StatusCreated {
			t.Fatalf("status %d %s", r.status, r.body)
		}
		var first httpapi.ItemResponse
		_ = json.Unmarshal(r.body, &first)
		r = e.do("POST", ws+"/items/ensure", tokenA, httpapi.EnsureRequest{Key: "ci/1", Title: "Build failed"})
		var again httpapi.ItemResponse
		_ = json.Unmarshal(r.body, &again)
		if r.status != http.StatusOK || again.Item.ID != first.Item.ID || again.How != writes.Existing {
			t.Fatalf("second: %d %s", r.status, r.body)
		}
		if first.Item.Name != "OPS-1" || first.Item.Key != "ci/1" || first.How != writes.Created {
			t.Fatalf("first: %+v", first)
		}
		// Answered from the ledger before any read of the item, the state
		// the tracker gave it (the draft named none) and its time are
		// what the filing's answer said: the item's first snapshot.
		var raw struct {
			Item map[string]json.RawMessage `json:"item"`
		}
		if err := json.Unmarshal(r.body, &raw); err != nil {
			t.Fatal(err)
		}
		if got := string(raw.Item["state"]); got != `"backlog"` {
			t.Fatalf("state %s answered, want the tracker's backlog", got)
		}
		if _, ok := raw.Item["updated_at"]; !ok {
			t.Fatal("updated_at left out, want the filing's answer's")
		}
	})

	t.Run("TheCorrelationHeaderIsKeptOnTheRow", func(t *testing.T) {
		e := newEnv(t)
		e.do("POST", ws+"/items/ensure", tokenA, httpapi.EnsureRequest{Key: "k", Title: "t"}, httpapi.CorrelationHeader, "run-9")
		row, err := e.ledger.Lookup(context.Background(), ledgerKey("k"))
		if err != nil || row.Correlation != "run-9" {
			t.Fatalf("row %+v %v", row, err)
		}
	})

	t.Run("UpdateAndCommentByKey", func(t *testing.T) {
		e := newEnv(t)
		e.do("POST", ws+"/items/ensure", tokenA, httpapi.EnsureRequest{Key: "k", Title: "t"})
		done := tracker.Done
		r := e.do("POST", ws+"/items/update", tokenA, httpapi.UpdateRequest{Key: "k", State: &done})
		var up httpapi.ItemResponse
		_ = json.Unmarshal(r.body, &up)
		if r.status != 200 || up.Item.State != tracker.Done {
			t.Fatalf("update: %d %s", r.status, r.body)
		}
		r = e.do("POST", ws+"/comments", tokenA, httpapi.CommentRequest{ItemKey: "k", Key: "c1", Body: "hello"})
		if r.status != http.StatusCreated {
			t.Fatalf("comment: %d %s", r.status, r.body)
		}
		r = e.do("POST", ws+"/comments", tokenA, httpapi.CommentRequest{ItemKey: "k", Key: "c1", Body: "hello"})
		if r.status != http.StatusOK || e.fake.Calls(faketracker.MethodComment) != 1 {
			t.Fatalf("comment again: %d, posted %d", r.status, e.fake.Calls(faketracker.MethodComment))
		}
	})

	t.Run("EveryErrorCodeHasItsStatus", func(t *testing.T) {
		for _, c := range []struct {
			name   string
			setup  func(e *env)
			req    any
			status int
			code   string
			retry  bool
		}{
			{"Invalid", nil, httpapi.EnsureRequest{Key: "", Title: "t"}, 400, "invalid", false},
			{"InvalidTitle", nil, httpapi.EnsureRequest{Key: "k", Title: ""}, 400, "invalid", false},
			{"NotAllowed", func(e *env) { e.sw.Set("acme", "ops", "tracker:fake", false) }, httpapi.EnsureRequest{Key: "k", Title: "t"}, 403, "not_allowed", false},
			{"Claimed", func(e *env) {
				_, _, _ = e.ledger.Claim(context.Background(), claimParams("k"))
			}, httpapi.EnsureRequest{Key: "k", Title: "t"}, 409, "tracker_claimed", true},
			{"Unavailable", func(e *env) { e.fake.FailNext(faketracker.MethodCreate, 1, tracker.ErrUnavailable) }, httpapi.EnsureRequest{Key: "k", Title: "t"}, 503, "tracker_unavailable", true},
			{"RateLimitedCarriesItsWait", func(e *env) { e.fake.FailNext(faketracker.MethodCreate, 1, tracker.RateLimited(7*time.Second)) }, httpapi.EnsureRequest{Key: "k", Title: "t"}, 503, "tracker_unavailable", true},
			{"Refused", func(e *env) { e.fake.FailNext(faketracker.MethodCreate, 1, tracker.ErrRefused) }, httpapi.EnsureRequest{Key: "k", Title: "t"}, 422, "refused", false},
			{"Deleted", func(e *env) {
				e.do("POST", ws+"/items/ensure", tokenA, httpapi.EnsureRequest{Key: "k", Title: "t"})
				_ = e.fake.Delete(context.Background(), e.fake.ItemsByKey("k")[0].Ref.ID)
			}, httpapi.EnsureRequest{Key: "k", Title: "t", Live: true}, 410, "deleted", false},
		} {
			t.Run(c.name, func(t *testing.T) {
				e := newEnv(t)
				if c.setup != nil {
					c.setup(e)
				}
				var r resp
				if c.name == "Claimed" {
					// A claim held elsewhere is waited for up to the write
					// bound, on the clock.
					r = e.advancing(func() resp { return e.do("POST", ws+"/items/ensure", tokenA, c.req) })
				} else {
					r = e.do("POST", ws+"/items/ensure", tokenA, c.req)
				}
				want(t, r, c.status, c.code)
				if got := r.header.Get("Retry-After"); (got != "") != c.retry {
					t.Fatalf("Retry-After %q, retryable %v", got, c.retry)
				}
				if c.name == "RateLimitedCarriesItsWait" && r.header.Get("Retry-After") != "7" {
					t.Fatalf("Retry-After %q, want 7", r.header.Get("Retry-After"))
				}
			})
		}
	})

	t.Run("TheLoopCapIsTrackerLoopWithoutRetryAfter", func(t *testing.T) {
		e := newEnv(t)
		e.do("POST", ws+"/items/ensure", tokenA, httpapi.EnsureRequest{Key: "k", Title: "t0"})
		var r resp
		for i := range 20 {
			title := "t" + string(rune('a'+i))
			r = e.do("POST", ws+"/items/update", tokenA, httpapi.UpdateRequest{Key: "k", Title: &title})
		}
		want(t, r, 409, "tracker_loop")
		if r.header.Get("Retry-After") != "" {
			t.Fatal("a loop is not retryable, yet carries Retry-After")
		}
		if e.m.Get(metrics.Loops) != 1 {
			t.Fatalf("loops %v", e.m.Get(metrics.Loops))
		}
	})

	t.Run("GarbageGetsA4xxAndWritesNothing", func(t *testing.T) {
		for _, c := range []struct {
			name   string
			body   any
			status int
		}{
			{"BrokenJSON", `{"key":`, 400},
			{"NotAnObject", `[1,2]`, 400},
			{"UnknownField", `{"key":"k","title":"t","bogus":1}`, 400},
			{"AFieldInAnotherCase", `{"Key":"k","title":"t"}`, 400},
			{"AFieldTwice", `{"key":"k","title":"t","key":"j"}`, 400},
			{"AFieldTwiceInTwoCases", `{"key":"k","title":"t","KEY":"j"}`, 400},
			{"WrongType", `{"key":5,"title":"t"}`, 400},
			{"TwoObjects", `{"key":"k","title":"t"}{"key":"k"}`, 400},
			{"TrailingGarbage", `{"key":"k","title":"t"} x`, 400},
			{"Empty", ``, 400},
			{"OverTheLimit", `{"key":"k","title":"` + strings.Repeat("x", httpapi.MaxBody) + `"}`, 413},
			{"BadState", `{"key":"k","title":"t","state":"finished"}`, 400},
		} {
			t.Run(c.name, func(t *testing.T) {
				e := newEnv(t)
				r := e.do("POST", ws+"/items/ensure", tokenA, c.body)
				want(t, r, c.status, "invalid")
				if e.fake.TotalCalls() != 0 {
					t.Fatal("garbage reached the tracker")
				}
			})
		}
	})
}

func ledgerKey(k string) ledger.Key {
	return ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindItem, Key: k}
}

func claimParams(k string) ledger.ClaimParams {
	return ledger.ClaimParams{Key: ledgerKey(k), Now: t0, RetakeAfter: 30 * time.Second}
}

func TestAuth(t *testing.T) {
	for _, c := range []struct {
		name   string
		path   string
		token  string
		status int
		code   string
	}{
		{"NoToken", ws + "/events", "", 401, "unauthorized"},
		{"UnknownToken", ws + "/events", "nope", 401, "unauthorized"},
		{"AnotherTenantsToken", ws + "/events", tokenB, 403, "not_allowed"},
		{"AnotherTenantsTokenOnWrites", ws + "/items/ensure", tokenB, 403, "not_allowed"},
		{"OperatorTokenIsNoTenantToken", ws + "/events", opTok, 401, "unauthorized"},
		{"MetricsWithATenantsToken", "/metrics", tokenA, 403, "not_allowed"},
		{"MetricsWithoutAToken", "/metrics", "", 401, "unauthorized"},
		{"StatusWithATenantsToken", "/relayr/v1/status", tokenA, 403, "not_allowed"},
		{"StatusWithoutAToken", "/relayr/v1/status", "", 401, "unauthorized"},
		{"StatusWithAWrongToken", "/relayr/v1/status", "operator-token?", 401, "unauthorized"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			method := "GET"
			var body any
			if strings.HasSuffix(c.path, "ensure") {
				method, body = "POST", httpapi.EnsureRequest{Key: "k", Title: "t"}
			}
			want(t, e.do(method, c.path, c.token, body), c.status, c.code)
			if e.fake.TotalCalls() != 0 {
				t.Fatal("an unauthorized request reached the tracker")
			}
		})
	}
	t.Run("MetricsWithTheOperatorToken", func(t *testing.T) {
		e := newEnv(t)
		if r := e.do("GET", "/metrics", opTok, nil); r.status != 200 || !strings.Contains(string(r.body), "relayr_up") {
			t.Fatalf("%d %s", r.status, r.body)
		}
	})
}

func TestStatus(t *testing.T) {
	e := newEnv(t)
	// A lease held by another replica and a poll it completed.
	f := ledger.Follower{Kind: ledger.TrackerFollower, Tenant: "acme", Workspace: "ops", Name: "fake"}
	if _, err := e.ledger.TakeLease(context.Background(), ledger.LeaseParams{Follower: f, Holder: "replica-2", Now: t0, TTL: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if err := e.ledger.SaveCursor(context.Background(), f, ledger.Cursor{Seeded: true, PolledAt: t0.Add(-2 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	r := e.do("GET", "/relayr/v1/status", opTok, nil)
	if r.status != 200 {
		t.Fatalf("status %d %s", r.status, r.body)
	}
	var rep httpapi.StatusReport
	if err := json.Unmarshal(r.body, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Holder != "replica-1" || len(rep.Bindings) != 3 {
		t.Fatalf("report %+v, want this replica and the three bindings", rep)
	}
	ops := rep.Bindings[1] // acme/dev, acme/ops, globex/ops
	if ops.Tenant != "acme" || ops.Workspace != "ops" || ops.Holder != "replica-2" || ops.HeldHere ||
		!ops.LeaseExpires.Equal(t0.Add(30*time.Second)) || ops.LagSeconds != 120 || !ops.Late || ops.IntervalSeconds != 30 {
		t.Fatalf("acme/ops %+v, want replica-2's lease and a poll two minutes ago, late", ops)
	}
	// Nothing in the report is a secret: no token, no key, no webhook
	// secret.
	for _, s := range []string{tokenA, tokenB, opTok, secret, `"k"`, "k2", "other"} {
		if bytes.Contains(r.body, []byte(s)) {
			t.Fatalf("the status holds %q: %s", s, r.body)
		}
	}
}

func TestOpenAPIDescribesTheStatusAsItIs(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(httpapi.OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	for schema, v := range map[string]any{
		"StatusReport": httpapi.StatusReport{}, "BindingStatus": follow.BindingStatus{}, "KeyStatus": budget.KeyStatus{},
		"LogStatus": deliver.Status{}, "ShareStatus": follow.ShareStatus{},
		"EnsureRequest": httpapi.EnsureRequest{}, "UpdateRequest": httpapi.UpdateRequest{},
		"Problem": httpapi.Problem{},
	} {
		props := doc.Components.Schemas[schema].Properties
		typ := reflect.TypeOf(v)
		fields := map[string]bool{}
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			fields[name] = true
			if _, ok := props[name]; !ok {
				t.Errorf("%s.%s is answered but not documented", schema, name)
			}
		}
		for name := range props {
			if !fields[name] {
				t.Errorf("%s.%s is documented but not answered", schema, name)
			}
		}
	}
}

func TestHealth(t *testing.T) {
	e := newEnv(t)
	if r := e.do("GET", "/healthz", "", nil); r.status != 200 {
		t.Fatalf("healthz %d", r.status)
	}
	if r := e.do("GET", "/readyz", "", nil); r.status != 200 {
		t.Fatalf("readyz %d %s", r.status, r.body)
	}
	want(t, e.do("GET", "/nowhere", "", nil), 404, "not_found")
	want(t, e.do("DELETE", ws+"/items/ensure", tokenA, nil), 405, "method_not_allowed")
	// A path with "." or ".." segments, or "//", names no route: JSON, not
	// a route's 405 or ServeMux's HTML redirect.
	for _, p := range []string{
		"/relayr/v1/tenants/acme/workspaces/./items/ensure",
		"/relayr/v1/tenants/acme/workspaces/ops/../ops/items/ensure",
		"/relayr/v1/tenants/acme//workspaces/ops/items/ensure",
	} {
		want(t, e.do("POST", p, tokenA, `{"key":"k","title":"t"}`), 400, "invalid")
	}
	// Escaped, "//" and "." are a name's own characters, not segments.
	if r := e.do("POST", "/relayr/v1/tenants/acme/workspaces/a%2F%2F.%2Fb/items/ensure", tokenA, `{"key":"k","title":"t"}`); r.status == 400 {
		t.Fatalf("an escaped name: %d %s, want it routed (its workspace is not bound)", r.status, r.body)
	}
	if r := e.do("GET", "/relayr/v1/tenants/acme/workspaces/ops/events/", tokenA, nil); r.status != 404 {
		t.Fatalf("a trailing slash: %d %s, want the unknown route's 404", r.status, r.body)
	}
}

func TestFeed(t *testing.T) {
	appendEv := func(e *env, id string) {
		_, _, err := e.log.Append(context.Background(), eventlog.AppendParams{Publisher: eventlog.TrackerPublisher, Event: eventlog.Event{
			ID: id, Tenant: "acme", Workspace: "ops", Type: "tracker:item_changed", Data: json.RawMessage(`{}`), At: t0,
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	read := func(r resp) httpapi.FeedResponse {
		var f httpapi.FeedResponse
		if err := json.Unmarshal(r.body, &f); err != nil || r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		return f
	}
	t.Run("EventsAfterASequenceWithALimit", func(t *testing.T) {
		e := newEnv(t)
		for _, id := range []string{"e1", "e2", "e3"} {
			appendEv(e, id)
		}
		f := read(e.do("GET", ws+"/events?after=1&limit=1", tokenA, nil))
		if len(f.Events) != 1 || f.Events[0].ID != "e2" || f.Next != 2 {
			t.Fatalf("%+v", f)
		}
		f = read(e.do("GET", ws+"/events?after=3", tokenA, nil))
		if len(f.Events) != 0 || f.Next != 3 {
			t.Fatalf("%+v", f)
		}
	})
	t.Run("ALongPollAnswersWhenAnEventIsAppended", func(t *testing.T) {
		e := newEnv(t)
		got := make(chan resp)
		go func() { got <- e.do("GET", ws+"/events?wait=30s", tokenA, nil) }()
		// The handler waits on its deadline and on the poll timer.
		if err := e.clock.BlockUntil(context.Background(), 2); err != nil {
			t.Fatal(err)
		}
		appendEv(e, "e1")
		f := read(<-got)
		if len(f.Events) != 1 || f.Events[0].ID != "e1" {
			t.Fatalf("%+v", f)
		}
	})
	t.Run("ALongPollEndsEmptyAtItsWait", func(t *testing.T) {
		e := newEnv(t)
		got := make(chan resp)
		go func() { got <- e.do("GET", ws+"/events?wait=2s", tokenA, nil) }()
		// Two seconds: the poll timer fires at one, the deadline at two.
		for range 2 {
			if err := e.clock.BlockUntil(context.Background(), 2); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(time.Second)
		}
		if f := read(<-got); len(f.Events) != 0 {
			t.Fatalf("%+v", f)
		}
	})
	t.Run("ADrainAnswersAWaitingReadAtOnceAndTheNextWithoutWaiting", func(t *testing.T) {
		e := newEnv(t)
		appendEv(e, "e1")
		got := make(chan resp)
		go func() { got <- e.do("GET", ws+"/events?after=1&wait=60s", tokenA, nil) }()
		if err := e.clock.BlockUntil(context.Background(), 2); err != nil {
			t.Fatal(err)
		}
		e.api.Drain()
		if f := read(<-got); len(f.Events) != 0 || f.Next != 1 {
			t.Fatalf("%+v, want no events and next 1", f)
		}
		e.api.Drain() // a second drain is no error
		if f := read(e.do("GET", ws+"/events?after=1&wait=60s", tokenA, nil)); len(f.Events) != 0 {
			t.Fatalf("%+v", f)
		}
	})
	t.Run("BadParametersAreInvalid", func(t *testing.T) {
		e := newEnv(t)
		for _, q := range []string{"after=-1", "after=x", "limit=0", "limit=1001", "wait=forever", "wait=61s", "wait=-1s",
			"after=1;limit=1", "after=1&after=2", "limit=1&limit=2", "wait=1s&wait=2s", "after=%zz"} {
			want(t, e.do("GET", ws+"/events?"+q, tokenA, nil), 400, "invalid")
		}
	})
}

// askedSwitch counts the switch's answers.
type askedSwitch struct {
	integrations.Integrations
	mu    sync.Mutex
	count int
}

func (s *askedSwitch) Enabled(ctx context.Context, tenant, workspace, key string) bool {
	s.mu.Lock()
	s.count++
	s.mu.Unlock()
	return s.Integrations.Enabled(ctx, tenant, workspace, key)
}

func (s *askedSwitch) n() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}

func TestWebhook(t *testing.T) {
	const hook = "/relayr/v1/trackers/acme/fake"
	// The followers asked for credentials: only then can a delivery be
	// verified (never asked for on a request).
	asked := func(e *env) {
		for _, w := range []string{"ops", "dev"} {
			b, _ := e.conns.Binding("acme", w)
			if _, err := e.conns.Tracker(context.Background(), b); err != nil {
				t.Fatal(err)
			}
		}
	}
	signed := func(e *env, sec string) (http.Header, []byte) { return e.fake.Delivery(sec) }
	post := func(e *env, path string, h http.Header, body []byte) resp {
		return e.do("POST", path, "", body, faketracker.SignatureHeader, h.Get(faketracker.SignatureHeader))
	}

	t.Run("AVerifiedNudgeWakesTheProjectsFollowersAndAnswers204", func(t *testing.T) {
		e := newEnv(t)
		asked(e)
		h, b := signed(e, secret)
		if r := post(e, hook, h, b); r.status != 204 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		if got := e.waker.list(); len(got) != 2 {
			t.Fatalf("woken %v, want both acme workspaces bound to the project", got)
		}
	})
	t.Run("ADeliveryIsAnsweredWithTheStatusTheTrackerCountsAsDelivered", func(t *testing.T) {
		e := newEnvOver(t, faketracker.LikePlane, []faketracker.Option{faketracker.WithDeliveredStatus(http.StatusOK)})
		asked(e)
		h, b := signed(e, secret)
		if r := post(e, hook, h, b); r.status != http.StatusOK || len(e.waker.list()) != 2 {
			t.Fatalf("%d %s, woken %v", r.status, r.body, e.waker.list())
		}
		// A replay is answered as delivered too, and wakes nobody again.
		if r := post(e, hook, h, b); r.status != http.StatusOK || len(e.waker.list()) != 2 {
			t.Fatalf("replay: %d %s, woken %v", r.status, r.body, e.waker.list())
		}
		// A forged delivery is not delivered, whatever the tracker asks.
		h, b = signed(e, "wrong")
		want(t, post(e, hook, h, b), 401, "unauthorized")
	})
	t.Run("ADeletionDeliveryPassesTheDeletedItemToTheFollowers", func(t *testing.T) {
		e := newEnvOf(t, faketracker.LikeVikunja)
		asked(e)
		h, b := faketracker.DeletionDelivery(secret, e.fake.Project(), "item-9")
		if r := post(e, hook, h, b); r.status != 204 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		e.waker.mu.Lock()
		defer e.waker.mu.Unlock()
		if len(e.waker.woken) != 2 || len(e.waker.deleted) != 2 || e.waker.deleted[0] != "item-9" {
			t.Fatalf("woken %v with deleted %v, want both workspaces told item-9", e.waker.woken, e.waker.deleted)
		}
	})
	t.Run("AForgedDeletionWakesNobody", func(t *testing.T) {
		e := newEnv(t)
		asked(e)
		h, b := faketracker.DeletionDelivery("forged", e.fake.Project(), "item-9")
		want(t, post(e, hook, h, b), 401, "unauthorized")
		if len(e.waker.list()) != 0 {
			t.Fatal("a forged deletion woke a follower")
		}
	})
	t.Run("ADeletionOfAnotherProjectWakesNobody", func(t *testing.T) {
		e := newEnv(t)
		asked(e)
		h, b := faketracker.DeletionDelivery(secret, "another-project", "item-9")
		want(t, post(e, hook, h, b), 401, "unauthorized")
		if len(e.waker.list()) != 0 {
			t.Fatal("a deletion in another project woke a follower")
		}
	})
	t.Run("ABadSignatureIs401AndCounted", func(t *testing.T) {
		e := newEnv(t)
		asked(e)
		h, b := signed(e, "wrong")
		want(t, post(e, hook, h, b), 401, "unauthorized")
		if e.m.Get(metrics.NudgesRefused) != 1 || len(e.waker.list()) != 0 {
			t.Fatal("not counted, or woke a follower")
		}
	})
	t.Run("AnUnknownTenantIsTheSame401", func(t *testing.T) {
		e := newEnv(t)
		asked(e)
		h, b := signed(e, secret)
		want(t, post(e, "/relayr/v1/trackers/nobody/fake", h, b), 401, "unauthorized")
		if e.m.Get(metrics.NudgesRefused) != 1 {
			t.Fatal("not counted")
		}
	})
	t.Run("ASwitchedOffWorkspaceIsTheSame401AfterTheSignature", func(t *testing.T) {
		e := newEnv(t)
		asked(e)
		e.sw.Set("acme", "ops", "tracker:fake", false)
		e.sw.Set("acme", "dev", "tracker:fake", false)
		h, b := signed(e, secret)
		want(t, post(e, hook, h, b), 401, "unauthorized")
		if e.m.Get(metrics.NudgesRefused) != 1 {
			t.Fatal("not counted")
		}
	})
	t.Run("OneWorkspaceSwitchedOffLeavesTheOtherWoken", func(t *testing.T) {
		e := newEnv(t)
		asked(e)
		e.sw.Set("acme", "ops", "tracker:fake", false)
		h, b := signed(e, secret)
		if r := post(e, hook, h, b); r.status != 204 {
			t.Fatalf("%d", r.status)
		}
		if got := e.waker.list(); len(got) != 1 || got[0] != "acme/dev" {
			t.Fatalf("woken %v", got)
		}
	})
	t.Run("TheSwitchIsAskedOnceAfterTheSignatureAndTheFollowersNever", func(t *testing.T) {
		// Wired as the app wires it: the route asks the switch, then the
		// followers' Wake, which asks it no second time.
		sw := &askedSwitch{}
		var mu sync.Mutex
		var reached []string
		e := newEnv(t, func(c *httpapi.Config) {
			sw.Integrations = c.Integrations
			c.Integrations = sw
			fs := follow.New(follow.Config{Ledger: c.Ledger.(ledger.Ledger), Log: c.Log, Connections: c.Connections, Integrations: sw, Clock: c.Clock})
			c.Waker = httpapi.WakerFunc(func(b binding.Binding, n tracker.Nudged) {
				mu.Lock()
				reached = append(reached, b.Name())
				mu.Unlock()
				fs.Wake(b, n)
			})
		})
		asked(e)
		h, b := signed(e, secret)
		if r := post(e, hook, h, b); r.status != 204 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		if n := sw.n(); n != 2 {
			t.Fatalf("the switch asked %d times, want once for each of the two workspaces", n)
		}
		bad, _ := signed(e, "wrong")
		want(t, post(e, hook, bad, b), 401, "unauthorized")
		if n := sw.n(); n != 2 {
			t.Fatal("the switch was asked before the signature was checked")
		}
		want(t, post(e, "/relayr/v1/trackers/nobody/fake", h, b), 401, "unauthorized")
		e.sw.Set("acme", "ops", "tracker:fake", false)
		e.sw.Set("acme", "dev", "tracker:fake", false)
		h, b = faketracker.DeletionDelivery(secret, e.fake.Project(), "item-9")
		want(t, post(e, hook, h, b), 401, "unauthorized")
		if n := sw.n(); n != 4 {
			t.Fatalf("the switch asked %d times, want once more for each workspace", n-2)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(reached) != 2 {
			t.Fatalf("the followers were woken for %v, want only the first delivery's two", reached)
		}
		if n := e.m.Get(metrics.NudgesRefused); n != 3 {
			t.Fatalf("refused %v, want the bad signature, the unknown tenant and the switched-off counted together", n)
		}
	})
	t.Run("CredentialsAreNeverAskedForOnARequest", func(t *testing.T) {
		e := newEnv(t) // the followers never asked
		h, b := signed(e, secret)
		want(t, post(e, hook, h, b), 401, "unauthorized")
		if e.conns.Asked("acme", "fake") != 0 {
			t.Fatal("a request asked for credentials")
		}
	})
	t.Run("ABodyOver1MBIsRefusedByItsHeaderOrOnceRead", func(t *testing.T) {
		e := newEnv(t)
		asked(e)
		big := bytes.Repeat([]byte("x"), httpapi.MaxNudgeBody+1)
		want(t, e.do("POST", hook, "", big), 413, "too_large")
		// Chunked, with no length said: refused once 1 MB is read.
		req, _ := http.NewRequest("POST", e.srv.URL+hook, io.MultiReader(bytes.NewReader(big)))
		req.ContentLength = -1
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		if res.StatusCode != 413 {
			t.Fatalf("chunked: %d", res.StatusCode)
		}
	})
}

func TestOpenAPIDocumentsEveryRouteAndNoOther(t *testing.T) {
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(httpapi.OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi %q", doc.OpenAPI)
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	served := map[string]bool{}
	for _, r := range httpapi.Routes() {
		served[r.Method+" "+r.Pattern] = true
		if !documented[r.Method+" "+r.Pattern] {
			t.Errorf("%s %s is served but not documented", r.Method, r.Pattern)
		}
	}
	for op := range documented {
		if !served[op] {
			t.Errorf("%s is documented but not served", op)
		}
	}
	e := newEnv(t)
	if r := e.do("GET", "/relayr/v1/openapi.json", "", nil); r.status != 200 || !bytes.Equal(r.body, httpapi.OpenAPI()) {
		t.Fatalf("served document: %d", r.status)
	}
}

// internal is what a tracker's or a database's own error says of the
// deployment: none of it may reach a caller.
var internal = []string{"10.0.0.7", "plane.internal", "dial tcp", "user=relayr", "db.internal", "5432", "/api/v1/"}

func leaks(t *testing.T, what string, body []byte) {
	t.Helper()
	for _, s := range internal {
		if strings.Contains(string(body), s) {
			t.Fatalf("%s shows the caller %q: %s", what, s, body)
		}
	}
}

// failingPinger is a ledger that cannot be reached.
type failingPinger struct{}

func (failingPinger) Ping(context.Context) error {
	return errors.New("failed to connect to `user=relayr database=relayr`: db.internal:5432 (10.0.0.7): dial tcp 10.0.0.7:5432: connect: connection refused")
}

// failingLog is an event log whose reads fail as a database's do.
type failingLog struct{ eventlog.Log }

func (failingLog) Read(context.Context, string, string, int64, int) ([]eventlog.Event, error) {
	return nil, failingPinger{}.Ping(context.Background())
}

func TestNothingLeaks(t *testing.T) {
	t.Run("ReadyzSaysOnlyNotReadyAndLogsWhy", func(t *testing.T) {
		e := newEnv(t, func(c *httpapi.Config) { c.Ledger = failingPinger{} })
		r := e.do("GET", "/readyz", "", nil)
		want(t, r, http.StatusServiceUnavailable, "not_ready")
		leaks(t, "/readyz", r.body)
		if !strings.Contains(e.logs.String(), "db.internal:5432") {
			t.Fatalf("the reason is not in the log: %s", e.logs)
		}
	})

	t.Run("AFeedReadThatFailsSaysOnlyUnavailable", func(t *testing.T) {
		e := newEnv(t, func(c *httpapi.Config) { c.Log = failingLog{c.Log} })
		r := e.do("GET", ws+"/events", tokenA, nil)
		want(t, r, http.StatusServiceUnavailable, "unavailable")
		leaks(t, "a feed read", r.body)
		if !strings.Contains(e.logs.String(), "db.internal:5432") {
			t.Fatalf("the reason is not in the log: %s", e.logs)
		}
	})

	// A tracker's own errors, as the adapters word them.
	dial := fmt.Errorf("plane: POST http://plane.internal:8000/api/v1/workspaces/acme/projects/p/work-items/: %w: dial tcp 10.0.0.7:8000: connect: connection refused", tracker.ErrUnavailable)
	for _, c := range []struct {
		name    string
		err     error
		status  int
		code    string
		message string
	}{
		{"Unavailable", dial, 503, "tracker_unavailable", "fake: unavailable"},
		{"RateLimited", fmt.Errorf("plane: GET http://plane.internal/api/v1/: %w", tracker.RateLimited(7*time.Second)), 503, "tracker_unavailable", "fake: rate limited, asked to wait 7s"},
		{"Refused", fmt.Errorf("plane: 400 {\"error\": \"state not in project\", \"url\": \"http://plane.internal/api/v1/\"}: %w", tracker.ErrRefused), 422, "refused", "fake: refused the write"},
		{"KeyRefused", fmt.Errorf("plane: 403 from http://plane.internal/api/v1/ as user=relayr: %w", tracker.ErrUnauthorized), 503, "tracker_unavailable", "fake: the tenant's key was refused"},
		// A driver's error of no kind of the port's is unavailable
		// (tracker.Tracker's mapping), and named so.
		{"Unforeseen", errors.New("dial tcp 10.0.0.7:8000: i/o timeout"), 503, "tracker_unavailable", "fake: unavailable"},
	} {
		t.Run("AWriteThatFailsNamesTheTrackerAndTheKindOfFailure/"+c.name, func(t *testing.T) {
			e := newEnv(t)
			e.fake.FailNext(faketracker.MethodCreate, 2, c.err)
			r := e.do("POST", ws+"/items/ensure", tokenA, httpapi.EnsureRequest{Key: "k", Title: "t"})
			if r.status != c.status || r.code() != c.code {
				t.Fatalf("%d %s, want %d %s", r.status, r.body, c.status, c.code)
			}
			leaks(t, "a write's error", r.body)
			var b struct {
				Error struct{ Message string } `json:"error"`
			}
			_ = json.Unmarshal(r.body, &b)
			if b.Error.Message != c.message {
				t.Fatalf("message %q, want %q", b.Error.Message, c.message)
			}
			if !strings.Contains(e.logs.String(), "10.0.0.7") && !strings.Contains(e.logs.String(), "plane.internal") {
				t.Fatalf("the detail is not in the log: %s", e.logs)
			}
		})
	}

	t.Run("TheWritePathsOwnRefusalsStillSayWhatWasWrong", func(t *testing.T) {
		e := newEnv(t)
		r := e.do("POST", ws+"/items/ensure", tokenA, httpapi.EnsureRequest{Key: "", Title: "t"})
		if r.status != 400 || !strings.Contains(string(r.body), "key") {
			t.Fatalf("%d %s", r.status, r.body)
		}
	})
}
