package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/relayr-go/relayr/adapters/httpapi"
	relayrmcp "github.com/relayr-go/relayr/adapters/mcp"
	"github.com/relayr-go/relayr/core/binding"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/faketracker"
	"github.com/relayr-go/relayr/core/ledger/memledger"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
)

var t0 = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

const (
	tokenA = "token-of-acme-0123456789abcdef0123"
	tokenB = "token-of-globex-0123456789abcdef01"
)

// world is relayr over a fake tracker and an in-memory ledger, on a fake
// clock, its API (MCP mounted) served on 127.0.0.1.
type world struct {
	t     *testing.T
	clock *clock.Fake
	fake  *faketracker.Tracker
	api   *httpapi.API
	srv   *httptest.Server
}

func newWorld(t *testing.T) *world {
	t.Helper()
	clk := clock.NewFake(t0)
	fake := faketracker.New(faketracker.LikePlane, faketracker.WithClock(clk), faketracker.WithProject("proj", "OPS"))
	led := memledger.New()
	conn := &faketracker.Connector{Fake: fake}
	conns := binding.NewConnections(clk, tracker.StaticCredentials{"acme/fake": {Token: "k"}, "globex/fake": {Token: "k2"}},
		binding.Binding{Tenant: "acme", Workspace: "ops", Connector: conn},
		binding.Binding{Tenant: "globex", Workspace: "ops", Connector: conn})
	w := &world{t: t, clock: clk, fake: fake}
	w.api = httpapi.New(httpapi.Config{
		Writes: writes.New(writes.Config{Ledger: led, Connections: conns, Clock: clk}),
		Log:    eventlog.NewNotifying(led), Connections: conns, Ledger: led, Clock: clk,
		Tokens: map[string]string{tokenA: "acme", tokenB: "globex"},
		MCP:    relayrmcp.Handler(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { w.api.ServeHTTP(rw, r) }), nil),
	})
	w.srv = httptest.NewServer(w.api)
	t.Cleanup(w.srv.Close)
	return w
}

// workspace is acme/ops reached over HTTP, as relayr mcp reaches it.
func (w *world) workspace() relayrmcp.Workspace {
	return relayrmcp.Workspace{URL: w.srv.URL, Tenant: "acme", Workspace: "ops", Token: tokenA, HTTP: w.srv.Client()}
}

// stdio connects an agent to relayr mcp's server over the in-memory
// transport (stdio's newline-delimited JSON-RPC), the server's side
// wrapped by wrap when it is not nil.
func (w *world) stdio(wrap func(gomcp.Transport) gomcp.Transport) *gomcp.ClientSession {
	w.t.Helper()
	ct, st := gomcp.NewInMemoryTransports()
	var server gomcp.Transport = st
	if wrap != nil {
		server = wrap(st)
	}
	ss, err := relayrmcp.NewServer(w.workspace(), nil).Connect(context.Background(), server, nil)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { _ = ss.Close() })
	return w.connect(ct)
}

// streamable connects an agent to the API's MCP route over streamable
// HTTP, with token, through rt when it is not nil.
func (w *world) streamable(token string, rt http.RoundTripper) *gomcp.ClientSession {
	w.t.Helper()
	if rt == nil {
		rt = w.srv.Client().Transport
	}
	hc := &http.Client{Transport: bearerTransport{token: token, next: rt}}
	return w.connect(&gomcp.StreamableClientTransport{
		Endpoint: w.srv.URL + "/relayr/v1/tenants/acme/workspaces/ops/mcp", HTTPClient: hc,
		DisableStandaloneSSE: true, MaxRetries: -1,
	})
}

func (w *world) connect(t gomcp.Transport) *gomcp.ClientSession {
	w.t.Helper()
	c := gomcp.NewClient(&gomcp.Implementation{Name: "agent", Version: "v1"}, nil)
	cs, err := c.Connect(context.Background(), t, nil)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { _ = cs.Close() })
	return cs
}

type bearerTransport struct {
	token string
	next  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func call(t *testing.T, cs *gomcp.ClientSession, tool string, args any) *gomcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &gomcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

func text(res *gomcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*gomcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func itemOf(t *testing.T, res *gomcp.CallToolResult) httpapi.ItemResponse {
	t.Helper()
	if res.IsError {
		t.Fatalf("tool error: %s", text(res))
	}
	var ir httpapi.ItemResponse
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &ir); err != nil {
		t.Fatal(err)
	}
	return ir
}

func toolError(t *testing.T, res *gomcp.CallToolResult) relayrmcp.ToolError {
	t.Helper()
	if !res.IsError {
		t.Fatalf("no tool error: %s", text(res))
	}
	var te relayrmcp.ToolError
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &te); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return te
}

// transports runs f over both transports.
func transports(t *testing.T, f func(t *testing.T, w *world, cs *gomcp.ClientSession)) {
	t.Run("stdio", func(t *testing.T) { w := newWorld(t); f(t, w, w.stdio(nil)) })
	t.Run("streamable", func(t *testing.T) { w := newWorld(t); f(t, w, w.streamable(tokenA, nil)) })
}

func (w *world) items(key string) int { return len(w.fake.ItemsByKey(key)) }

func TestToolsListEachWithSchemaAndDescription(t *testing.T) {
	transports(t, func(t *testing.T, _ *world, cs *gomcp.ClientSession) {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]*gomcp.Tool{}
		for _, tool := range res.Tools {
			got[tool.Name] = tool
		}
		for _, name := range []string{"file_item", "update_item", "comment", "read_events"} {
			tool := got[name]
			if tool == nil {
				t.Fatalf("no tool %s", name)
			}
			schema, _ := json.Marshal(tool.InputSchema)
			if !strings.Contains(string(schema), `"properties"`) || tool.Description == "" {
				t.Errorf("%s: schema %s, description %q", name, schema, tool.Description)
			}
		}
		// Each state field takes the five states, as the SDK's client reads
		// the schema back.
		for _, name := range []string{"file_item", "update_item"} {
			var schema struct {
				Properties map[string]struct {
					Enum []string `json:"enum"`
				} `json:"properties"`
			}
			b, _ := json.Marshal(got[name].InputSchema)
			if err := json.Unmarshal(b, &schema); err != nil {
				t.Fatal(err)
			}
			if e := schema.Properties["state"].Enum; !slices.Equal(e, []string{"backlog", "todo", "started", "done", "cancelled"}) {
				t.Errorf("%s's state enum %q, want the five states", name, e)
			}
		}
		schema, _ := json.Marshal(got["file_item"].InputSchema)
		for _, want := range []string{`"required":["key","title"]`, `"cancelled"`, "same key"} {
			if !strings.Contains(string(schema), want) {
				t.Errorf("file_item's schema lacks %s: %s", want, schema)
			}
		}
		if !strings.Contains(got["file_item"].Description, "Safe to retry") {
			t.Errorf("file_item's description: %q", got["file_item"].Description)
		}
	})
}

func TestFilingTwiceWithOneKeyFilesOneItem(t *testing.T) {
	transports(t, func(t *testing.T, w *world, cs *gomcp.ClientSession) {
		args := map[string]any{"key": "agent/flaky-login", "title": "Login test is flaky", "labels": []string{"ci"}, "state": "todo"}
		first := itemOf(t, call(t, cs, "file_item", args))
		second := itemOf(t, call(t, cs, "file_item", args))
		if first.How != "created" || second.How != "existing" || first.Item.ID != second.Item.ID {
			t.Fatalf("first %+v, second %+v", first, second)
		}
		if n := w.items("agent/flaky-login"); n != 1 {
			t.Fatalf("%d items under the key", n)
		}
		up := itemOf(t, call(t, cs, "update_item", map[string]any{"key": "agent/flaky-login", "state": "done"}))
		if up.How != "updated" || up.Item.State != tracker.Done || up.Item.ID != first.Item.ID {
			t.Fatalf("update: %+v", up)
		}
		for range 2 {
			res := call(t, cs, "comment", map[string]any{"item_key": "agent/flaky-login", "key": "agent/flaky-login/fixed", "body": "Fixed by retrying the login."})
			if res.IsError {
				t.Fatal(text(res))
			}
		}
		got, _ := w.fake.Comments(context.Background(), first.Item.ID, time.Time{})
		if len(got) != 1 {
			t.Fatalf("%d comments", len(got))
		}
	})
}

func TestReadEventsFromACursor(t *testing.T) {
	transports(t, func(t *testing.T, w *world, cs *gomcp.ClientSession) {
		res := call(t, cs, "read_events", map[string]any{"after": 0})
		if res.IsError || !strings.Contains(text(res), `"next":0`) {
			t.Fatalf("read: %s", text(res))
		}
		res = call(t, cs, "read_events", map[string]any{"wait_seconds": 61})
		if te := toolError(t, res); te.Retryable || te.Code != "invalid" {
			t.Fatalf("wait 61: %+v", te)
		}
	})
}

// A long poll's wait is the API's: it ends when the fake clock passes it.
func TestReadEventsWaitsBounded(t *testing.T) {
	w := newWorld(t)
	cs := w.stdio(nil)
	done := make(chan *gomcp.CallToolResult, 1)
	go func() {
		res, _ := cs.CallTool(context.Background(), &gomcp.CallToolParams{Name: "read_events", Arguments: map[string]any{"wait_seconds": 30}})
		done <- res
	}()
	res := advanceUntil(w.clock, done, time.Second)
	if res == nil || res.IsError || !strings.Contains(text(res), "0 events") {
		t.Fatalf("read: %+v", res)
	}
}

// advanceUntil moves the fake clock by step until done answers: no test
// waits for real time.
func advanceUntil[T any](clk *clock.Fake, done <-chan T, step time.Duration) T {
	for {
		select {
		case v := <-done:
			return v
		default:
			clk.Advance(step)
			runtime.Gosched()
		}
	}
}

func TestRefusalAndRateLimitAreToolErrorsWithHints(t *testing.T) {
	transports(t, func(t *testing.T, w *world, cs *gomcp.ClientSession) {
		w.fake.FailNext(faketracker.MethodCreate, 1, tracker.ErrRefused)
		res := call(t, cs, "file_item", map[string]any{"key": "k1", "title": "t"})
		te := toolError(t, res)
		if te.Code != "refused" || te.Retryable || te.RetryAfterSeconds != 0 || !strings.Contains(text(res), "Do not retry the same call") {
			t.Fatalf("refusal: %+v %s", te, text(res))
		}

		w.fake.FailNext(faketracker.MethodCreate, 1, tracker.RateLimited(7*time.Second))
		res = call(t, cs, "file_item", map[string]any{"key": "k2", "title": "t"})
		te = toolError(t, res)
		if te.Code != "tracker_unavailable" || !te.Retryable || te.RetryAfterSeconds != 7 || !strings.Contains(text(res), "after 7 s") {
			t.Fatalf("rate limit: %+v %s", te, text(res))
		}
		// Retried as the hint says, with the same key: one item.
		w.clock.Advance(7 * time.Second)
		if it := itemOf(t, call(t, cs, "file_item", map[string]any{"key": "k2", "title": "t"})); it.Item.ID == "" {
			t.Fatalf("retry: %+v", it)
		}
		if n := w.items("k2"); n != 1 {
			t.Fatalf("%d items", n)
		}

		res = call(t, cs, "file_item", map[string]any{"key": "k3", "title": "t", "state": "closed"})
		if !res.IsError || !strings.Contains(text(res), "state") {
			t.Fatalf("a state not among the five: %s", text(res))
		}
		res = call(t, cs, "update_item", map[string]any{"key": "never-filed", "title": "t"})
		if te := toolError(t, res); te.Retryable {
			t.Fatalf("update of a key never filed: %+v", te)
		}
	})
}

func TestAnotherTenantsTokenReachesNothing(t *testing.T) {
	w := newWorld(t)
	c := gomcp.NewClient(&gomcp.Implementation{Name: "agent"}, nil)
	hc := &http.Client{Transport: bearerTransport{token: tokenB, next: w.srv.Client().Transport}}
	_, err := c.Connect(context.Background(), &gomcp.StreamableClientTransport{
		Endpoint: w.srv.URL + "/relayr/v1/tenants/acme/workspaces/ops/mcp", HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1,
	}, nil)
	if err == nil {
		t.Fatal("globex's token connected to acme's workspace")
	}
	// What the SDK's client was answered, before any MCP was read: 403
	// for another tenant's token, 401 for none (docs/mcp.md).
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}}`
	for _, c := range []struct {
		name, token string
		want        int
	}{{"AnotherTenantsToken", tokenB, http.StatusForbidden}, {"NoToken", "", http.StatusUnauthorized}} {
		req, _ := http.NewRequest("POST", w.srv.URL+"/relayr/v1/tenants/acme/workspaces/ops/mcp", strings.NewReader(initialize))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		res, err := w.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		if res.StatusCode != c.want {
			t.Errorf("%s: %d, want %d", c.name, res.StatusCode, c.want)
		}
	}
}

// dropFirstToolAnswer is a server transport that loses the answer to the
// first tools/call, after the server made the call: the agent never hears
// of it.
type dropFirstToolAnswer struct {
	gomcp.Transport
	dropped chan struct{}
}

func (d *dropFirstToolAnswer) Connect(ctx context.Context) (gomcp.Connection, error) {
	c, err := d.Transport.Connect(ctx)
	return &dropConn{Connection: c, d: d, calls: map[string]bool{}}, err
}

type dropConn struct {
	gomcp.Connection
	d     *dropFirstToolAnswer
	mu    sync.Mutex
	calls map[string]bool
	once  sync.Once
}

func (c *dropConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if req, ok := m.(*jsonrpc.Request); ok && req.Method == "tools/call" {
		c.mu.Lock()
		c.calls[idOf(req.ID)] = true
		c.mu.Unlock()
	}
	return m, err
}

func (c *dropConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if res, ok := m.(*jsonrpc.Response); ok {
		c.mu.Lock()
		isCall := c.calls[idOf(res.ID)]
		c.mu.Unlock()
		drop := false
		if isCall {
			c.once.Do(func() { drop = true })
		}
		if drop {
			close(c.d.dropped)
			return nil
		}
	}
	return c.Connection.Write(ctx, m)
}

func idOf(id jsonrpc.ID) string { b, _ := json.Marshal(id.Raw()); return string(b) }

func TestARetryAfterADroppedAnswerFilesOneItem(t *testing.T) {
	args := map[string]any{"key": "agent/disk-full", "title": "Disk full on db-1"}
	t.Run("stdio", func(t *testing.T) {
		w := newWorld(t)
		d := &dropFirstToolAnswer{dropped: make(chan struct{})}
		cs := w.stdio(func(tr gomcp.Transport) gomcp.Transport { d.Transport = tr; return d })
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-d.dropped; cancel() }() // the agent gives up waiting
		if _, err := cs.CallTool(ctx, &gomcp.CallToolParams{Name: "file_item", Arguments: args}); err == nil {
			t.Fatal("the dropped answer arrived")
		}
		if n := w.items("agent/disk-full"); n != 1 {
			t.Fatalf("the first call filed %d items", n)
		}
		again := itemOf(t, call(t, cs, "file_item", args))
		if again.How != "existing" || w.items("agent/disk-full") != 1 {
			t.Fatalf("retry: %+v, %d items", again, w.items("agent/disk-full"))
		}
	})
	t.Run("streamable", func(t *testing.T) {
		w := newWorld(t)
		lose := &loseFirstToolAnswer{next: w.srv.Client().Transport}
		cs := w.streamable(tokenA, lose)
		if _, err := cs.CallTool(context.Background(), &gomcp.CallToolParams{Name: "file_item", Arguments: args}); err == nil {
			t.Fatal("the lost answer arrived")
		}
		if n := w.items("agent/disk-full"); n != 1 {
			t.Fatalf("the first call filed %d items", n)
		}
		again := itemOf(t, call(t, cs, "file_item", args))
		if again.How != "existing" || w.items("agent/disk-full") != 1 {
			t.Fatalf("retry: %+v, %d items", again, w.items("agent/disk-full"))
		}
	})
}

// loseFirstToolAnswer sends every request, and loses the answer to the
// first tools/call on its way back, as a cut connection does.
type loseFirstToolAnswer struct {
	next http.RoundTripper
	mu   sync.Mutex
	lost bool
}

func (l *loseFirstToolAnswer) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	res, err := l.next.RoundTrip(r)
	if err != nil || !bytes.Contains(body, []byte(`"tools/call"`)) {
		return res, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost {
		return res, nil
	}
	l.lost = true
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	return nil, errors.New("connection reset by peer")
}

// Two agents racing one key: the first holds the tracker's create while
// the second calls, and both get the one item.
func TestTwoAgentsRacingOneKeyGetOneItem(t *testing.T) {
	w := newWorld(t)
	a, b := w.stdio(nil), w.streamable(tokenA, nil)
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	w.fake.OnRequest(func() {
		once.Do(func() { close(entered); <-release })
	})
	args := map[string]any{"key": "agent/race", "title": "Raced"}
	results := make(chan *gomcp.CallToolResult, 2)
	go func() { results <- call(t, a, "file_item", args) }()
	<-entered // a holds the key's claim, inside the tracker's create
	go func() { results <- call(t, b, "file_item", args) }()
	// b waits on a's filing on the board (one writer serves both
	// transports), which needs no time to pass: the clock stays still, so
	// a's bound cannot run out under a slow scheduler.
	close(release)
	first, second := <-results, <-results
	ra, rb := itemOf(t, first), itemOf(t, second)
	if ra.Item.ID != rb.Item.ID || w.items("agent/race") != 1 {
		t.Fatalf("a %+v, b %+v, %d items", ra, rb, w.items("agent/race"))
	}
	hows := ra.How + "," + rb.How
	if !strings.Contains(hows, "created") {
		t.Fatalf("hows %s", hows)
	}
}

// The quick start's curl: a tools/call posted alone (stateless, no
// initialize), twice, files one item.
func TestAToolsCallPostedAloneFilesOnce(t *testing.T) {
	w := newWorld(t)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"file_item","arguments":{"key":"agent/build-1042","title":"Build 1042 failed"}}}`
	for i, want := range []string{`\"how\":\"created\"`, `\"how\":\"existing\"`} {
		req, _ := http.NewRequest("POST", w.srv.URL+"/relayr/v1/tenants/acme/workspaces/ops/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tokenA)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		res, err := w.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if res.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Fatalf("call %d: %d %s", i+1, res.StatusCode, b)
		}
	}
	if n := w.items("agent/build-1042"); n != 1 {
		t.Fatalf("%d items", n)
	}
}
