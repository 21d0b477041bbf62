package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	rtmetrics "runtime/metrics"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/relayr-go/relayr/adapters/httpapi"
	"github.com/relayr-go/relayr/core/binding"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/faketracker"
	"github.com/relayr-go/relayr/core/integrations"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/ledger/memledger"
	"github.com/relayr-go/relayr/core/metrics"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
)

// Sizes of the hostile batch (the README's "Proof under faults": 10,000
// malformed requests to every route).
const (
	// hostileRequests is how many malformed requests the batch sends.
	hostileRequests = 10_000
	// hostileWarmUp is how many are sent first, so pools, maps and
	// buffers are at their size before the heap is measured.
	hostileWarmUp = 1_000
	// heapSlack is the most the live heap may grow over the batch.
	heapSlack = 8 << 20
	// maxHeaderBytes is httpapi.NewServer's MaxHeaderBytes; net/http reads
	// 4 KB past it before it answers 431.
	maxHeaderBytes = 64 << 10
)

// world is the API over the fake tracker and the in-memory ledger, built
// for a testing.TB so that the fuzz targets share it; the followers have
// asked for their credentials, so webhook signatures are really checked.
type world struct {
	clock    *clock.Fake
	switches *integrations.Switches
	fake     *faketracker.Tracker
	ledger   *memledger.Ledger
	log      *eventlog.Notifying
	waker    *countingWaker
	counters *promLikeCounters
	errs     *errorLog
	api      *httpapi.API
	handler  *serverSide
	// taken are the delivery bodies that woke a follower (FuzzWebhook).
	taken map[string]bool
}

// bound are the workspaces the world binds, by tenant.
var bound = [][2]string{{"acme", "ops"}, {"acme", "dev"}, {"globex", "ops"}}

func newWorld(tb testing.TB, opts ...func(*httpapi.Config)) *world {
	tb.Helper()
	clk := clock.NewFake(t0)
	fake := faketracker.New(faketracker.LikePlane, faketracker.WithClock(clk), faketracker.WithProject("proj", "OPS"))
	led := memledger.New()
	conn := &faketracker.Connector{Fake: fake}
	var bindings []binding.Binding
	for _, b := range bound {
		bindings = append(bindings, binding.Binding{Tenant: b[0], Workspace: b[1], Connector: conn})
	}
	creds := tracker.StaticCredentials{"acme/fake": {Token: "k", WebhookSecret: secret}, "globex/fake": {Token: "k2", WebhookSecret: "other"}}
	conns := binding.NewConnections(clk, creds, bindings...)
	for _, b := range conns.Bindings() {
		if _, err := conns.Tracker(context.Background(), b); err != nil {
			tb.Fatal(err)
		}
	}
	sw := integrations.NewSwitches()
	counters := &promLikeCounters{series: map[string]bool{}}
	errs := &errorLog{}
	log := eventlog.NewNotifying(led)
	wk := &countingWaker{}
	w := writes.New(writes.Config{Ledger: led, Connections: conns, Integrations: sw, Clock: clk, Metrics: counters})
	cfg := httpapi.Config{
		Writes: w, Log: log, Connections: conns, Integrations: sw, Waker: wk, Ledger: led,
		Tokens:        map[string]string{tokenA: "acme", tokenB: "globex"},
		OperatorToken: opTok,
		Metrics:       http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "relayr_up 1\n") }),
		Counters:      counters, Clock: clk,
		Logger: slog.New(errs),
	}
	for _, o := range opts {
		o(&cfg)
	}
	api := httpapi.New(cfg)
	return &world{taken: map[string]bool{}, clock: clk, switches: sw, fake: fake, ledger: led, log: log, waker: wk, counters: counters, errs: errs, api: api, handler: &serverSide{h: api}}
}

// countingWaker counts wake-ups (a fuzz run makes many).
type countingWaker struct{ n atomic.Int64 }

func (w *countingWaker) Wake(binding.Binding, tracker.Nudged) { w.n.Add(1) }

// promLikeCounters counts as Prometheus's client does where hostile input
// matters: a label value that isn't UTF-8 panics (WithLabelValues), and
// every distinct set of labels is a series kept for good.
type promLikeCounters struct {
	mu     sync.Mutex
	series map[string]bool
}

func (c *promLikeCounters) Add(name string, _ float64, l metrics.Labels) {
	keys := make([]string, 0, len(l))
	for k, v := range l {
		if !utf8.ValidString(v) {
			panic(fmt.Sprintf("label %s=%q is not valid UTF-8", k, v))
		}
		keys = append(keys, k+"="+v)
	}
	sort.Strings(keys)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.series[name+"{"+strings.Join(keys, ",")+"}"] = true
}

func (c *promLikeCounters) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.series)
}

// errorLog keeps the API's error records (a recovered panic is one).
type errorLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *errorLog) Enabled(_ context.Context, lv slog.Level) bool { return lv >= slog.LevelError }
func (l *errorLog) WithAttrs([]slog.Attr) slog.Handler            { return l }
func (l *errorLog) WithGroup(string) slog.Handler                 { return l }
func (l *errorLog) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.msgs) < 5 {
		l.msgs = append(l.msgs, b.String())
	}
	return nil
}

func (l *errorLog) first() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.msgs...)
}

// serverSide wraps the API to see every status it answers, also to a
// client that went away, and to know when every handler has returned.
type serverSide struct {
	h        http.Handler
	inflight inflight
	served   atomic.Int64
	mu       sync.Mutex
	fivexx   []string
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// inflight counts the handlers running. Unlike a WaitGroup it may be
// waited on while a handler of a client that went away is still arriving
// (a WaitGroup's Add from zero beside a Wait is a race).
type inflight struct {
	mu   sync.Mutex
	n    int
	idle *sync.Cond
}

func (f *inflight) add(d int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.idle == nil {
		f.idle = sync.NewCond(&f.mu)
	}
	f.n += d
	if f.n == 0 {
		f.idle.Broadcast()
	}
}

// Wait returns once no handler is running.
func (f *inflight) Wait() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.idle == nil {
		f.idle = sync.NewCond(&f.mu)
	}
	for f.n > 0 {
		f.idle.Wait()
	}
}

func (s *serverSide) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.inflight.add(1)
	defer s.inflight.add(-1)
	sw := &statusWriter{ResponseWriter: w}
	defer func() {
		s.served.Add(1)
		if sw.status >= 500 {
			s.mu.Lock()
			if len(s.fivexx) < 5 {
				s.fivexx = append(s.fivexx, fmt.Sprintf("%d to %s %.200s", sw.status, r.Method, r.URL))
			}
			s.mu.Unlock()
		}
	}()
	s.h.ServeHTTP(sw, r)
}

// hostile is one malformed request.
type hostile struct {
	kind   string // what is wrong with it, for a failure's message
	method string
	target string // path and query, already escaped
	header http.Header
	body   func() io.Reader // nil: none
	length int64            // the declared Content-Length; -1: unsaid (chunked)
	// wire sends it through the real server: huge headers and slow
	// bodies only mean something there.
	wire bool
	// cut: the server may drop the connection rather than answer (a body
	// or header over its limit, a client that stalls).
	cut bool
	// slow trickles the body, then stalls until the client gives up.
	slow bool
	// raw is sent as is on a TCP connection (what no client would send).
	raw []byte
}

// gen makes the batch's requests from a seeded source, and keeps the keys
// its bodies name, which must not be in the ledger afterwards.
type gen struct {
	rng  *rand.Rand
	keys map[string]bool
}

func newGen(seed uint64) *gen {
	return &gen{rng: rand.New(rand.NewPCG(seed, 8)), keys: map[string]bool{}}
}

func (g *gen) pick(s ...string) string { return s[g.rng.IntN(len(s))] }

// key is a valid key, kept to check the ledger later.
func (g *gen) key() string {
	k := fmt.Sprintf("hostile/%d", g.rng.IntN(200))
	g.keys[k] = true
	return k
}

// badKey is a key the write path refuses: NUL, control characters, empty,
// too long.
func (g *gen) badKey() string {
	switch g.rng.IntN(6) {
	case 0:
		return "k\x00" + strconv.Itoa(g.rng.IntN(100))
	case 1:
		return string(rune(1+g.rng.IntN(0x1f))) + "key"
	case 2:
		return "key\x7f"
	case 3:
		return "key\u0085next" // a C1 control
	case 4:
		return ""
	default:
		return strings.Repeat("k", tracker.MaxKeyBytes+1+g.rng.IntN(100))
	}
}

// writeRoute is one of the write API's routes under tenant/workspace, with
// a body it would accept from the right tenant.
func (g *gen) writeRoute(tenant, workspace string) (string, string) {
	base := "/relayr/v1/tenants/" + tenant + "/workspaces/" + workspace
	switch g.rng.IntN(3) {
	case 0:
		return base + "/items/ensure", fmt.Sprintf(`{"key":%q,"title":"Build failed","labels":["ci"]}`, g.key())
	case 1:
		return base + "/items/update", fmt.Sprintf(`{"key":%q,"state":"done"}`, g.key())
	default:
		return base + "/comments", fmt.Sprintf(`{"item_key":%q,"key":%q,"body":"hello"}`, g.key(), g.key())
	}
}

// badToken is an Authorization header that names no tenant.
func (g *gen) badToken() string {
	switch g.rng.IntN(11) {
	case 0:
		return ""
	case 1:
		return "Bearer"
	case 2:
		return "Bearer "
	case 3:
		return "Bearer " + strings.Repeat("t", 1+g.rng.IntN(16<<10))
	case 4:
		return "Bearer tökén-of-ácme"
	case 5:
		return "Basic YWNtZTp0b2tlbi1vZi1hY21l"
	case 6:
		return "Basic " + tokenA
	case 7:
		return "Bearer " + opTok
	case 8:
		return "Bearer " + tokenA + "x"
	case 9:
		return "Token " + tokenA
	default:
		return "Bearer\t" + tokenA[:5]
	}
}

// badJSON is a body the strict decoder refuses: broken, truncated, deeply
// nested, huge numbers, wrong types, unknown fields, more than one value.
func (g *gen) badJSON() string {
	good := fmt.Sprintf(`{"key":%q,"title":"Build failed","labels":["ci"]}`, g.key())
	switch g.rng.IntN(16) {
	case 0:
		return good[:g.rng.IntN(len(good)-1)] // truncated
	case 1:
		n := 1 + g.rng.IntN(12_000) // encoding/json stops at 10,000
		return strings.Repeat("[", n) + strings.Repeat("]", n)
	case 2:
		n := 1 + g.rng.IntN(12_000)
		return `{"key":` + strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) + `,"title":"t"}`
	case 3:
		return `{"key":"k","title":"t","labels":` + strings.Repeat("[", 11_000) + `]}`
	case 4:
		return `{"key":1e999999,"title":"t"}`
	case 5:
		return `{"key":"k","title":` + strings.Repeat("9", 1+g.rng.IntN(30_000)) + `}`
	case 6:
		return `{"key":["k"],"title":"t"}`
	case 7:
		return `{"key":"k","title":"t","labels":"ci"}`
	case 8:
		return `{"key":"k","title":"t","state":7}`
	case 9:
		return `{"key":"k","title":"t","bogus":` + strconv.Itoa(g.rng.IntN(9)) + `}`
	case 10:
		return `{"Key":"k","Title":"t","__proto__":{}}`
	case 11:
		return good + good
	case 12:
		return good + "\x00"
	case 13:
		return "\xef\xbb\xbf" + good // a byte-order mark
	case 14:
		return `{"key":"\xff\xfe","title":"t"` // not UTF-8, and unclosed
	default:
		return g.pick("", "null", "[]", `"k"`, "0", "{", "}", "{}{", `{"key"}`, `{"key":"k",}`, "\x00\x01\x02")
	}
}

// controlKeys is JSON that decodes but names a key the write path refuses.
func (g *gen) controlKeys(route string) string {
	switch route {
	case "ensure":
		return fmt.Sprintf(`{"key":%q,"title":"t"}`, g.badKey())
	case "update":
		return fmt.Sprintf(`{"key":%q,"title":"t"}`, g.badKey())
	default:
		return fmt.Sprintf(`{"item_key":%q,"key":%q,"body":"b"}`, g.badKey(), g.badKey())
	}
}

// over is a body just over limit, made as it is read.
func over(limit int64, extra int64) func() io.Reader {
	return func() io.Reader { return io.LimitReader(repeatReader('x'), limit+extra) }
}

// repeatReader reads x without end.
type repeatReader byte

var xs = bytes.Repeat([]byte("x"), 32<<10)

func (repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		n += copy(p[n:], xs)
	}
	return n, nil
}

// failingReader answers some bytes, then the error a dropped connection
// gives.
type failingReader struct{ r io.Reader }

func (f *failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

func text(s string) func() io.Reader { return func() io.Reader { return strings.NewReader(s) } }

const hook = "/relayr/v1/trackers/acme/fake"

// next is the i-th request of the batch.
func (g *gen) next(i int) hostile {
	h := hostile{method: http.MethodPost, header: http.Header{}, length: 0}
	withBody := func(s string) {
		h.body, h.length = text(s), int64(len(s))
	}
	routes := []string{"ensure", "update", "comments"}
	wsPath := "/relayr/v1/tenants/acme/workspaces/" + g.pick("ops", "dev")
	switch i % 20 {
	case 0: // a delivery over 1 MB, by its header or once read
		h.kind, h.target, h.cut = "webhook body over the limit", hook, true
		h.body, h.length = over(httpapi.MaxNudgeBody, 1+int64(g.rng.IntN(4096))), httpapi.MaxNudgeBody+1
		if g.rng.IntN(4) == 0 { // reading 1 MB is the slow part of the batch
			h.kind, h.length = "webhook body over the limit, chunked", -1
		}
		h.wire = g.rng.IntN(10) == 0
	case 1, 2: // bad or missing signatures, wrong tenants and trackers
		h.kind = "webhook with a bad signature"
		tenant := g.pick("acme", "acme", "globex", "nobody", "%00", "%ff%fe", strings.Repeat("t", 300))
		kind := g.pick("fake", "fake", "plane", "vikunja", "%ff", "%00", "x"+strconv.Itoa(g.rng.IntN(1<<30)), strings.Repeat("k", 1+g.rng.IntN(2000)))
		h.target = "/relayr/v1/trackers/" + tenant + "/" + kind
		body := []byte(`{"project":"proj"}`)
		if g.rng.IntN(3) == 0 {
			body = []byte(g.badJSON())
		}
		switch g.rng.IntN(7) {
		case 0: // missing
		case 1:
			h.header.Set(faketracker.SignatureHeader, faketracker.Sign("wrong", body))
		case 2: // signed, then changed
			h.header.Set(faketracker.SignatureHeader, faketracker.Sign(secret, body))
			body = append(body, ' ')
		case 3:
			h.header.Set(faketracker.SignatureHeader, strings.ToUpper(faketracker.Sign(secret, body)))
		case 4:
			h.header.Set(faketracker.SignatureHeader, "sha256="+faketracker.Sign(secret, body))
		case 5:
			h.header.Set(faketracker.SignatureHeader, "")
		default: // signed right, on a delivery naming no project of ours
			body = []byte(g.pick(`{"project":"other"}`, `{}`, `{"project":""}`, `{"project":null}`, `[]`, ``))
			h.header.Set(faketracker.SignatureHeader, faketracker.Sign(secret, body))
		}
		withBody(string(body))
	case 3, 4: // unknown, malformed and huge tokens on bodies that would write
		var body string
		h.target, body = g.writeRoute("acme", g.pick("ops", "dev"))
		h.kind = "write with a bad token"
		if a := g.badToken(); a != "" {
			h.header.Set("Authorization", a)
		}
		withBody(body)
	case 5: // another tenant's token, or a tenant that doesn't exist
		var body string
		switch g.rng.IntN(4) {
		case 0:
			h.target, body = g.writeRoute("globex", "ops")
			h.header.Set("Authorization", "Bearer "+tokenA)
		case 1:
			h.target, body = g.writeRoute("nobody", "ops")
			h.header.Set("Authorization", "Bearer "+tokenA)
		case 2:
			h.target, body = g.writeRoute("ACME", "ops")
			h.header.Set("Authorization", "Bearer "+tokenA)
		default:
			h.target, body = g.writeRoute("acme", "ops")
			h.header.Set("Authorization", "Bearer "+tokenB)
		}
		h.kind = "write with another tenant's token"
		withBody(body)
	case 6, 7, 8: // the right token, a body the decoder refuses
		h.kind = "write with bad JSON"
		h.target = wsPath + "/" + map[string]string{"ensure": "items/ensure", "update": "items/update", "comments": "comments"}[g.pick(routes...)]
		h.header.Set("Authorization", "Bearer "+tokenA)
		withBody(g.badJSON())
		if g.rng.IntN(4) == 0 {
			h.length = -1
		}
	case 9: // the right token, NUL and control characters in keys
		h.kind = "write with a control character in a key"
		r := g.pick(routes...)
		h.target = wsPath + "/" + map[string]string{"ensure": "items/ensure", "update": "items/update", "comments": "comments"}[r]
		h.header.Set("Authorization", "Bearer "+tokenA)
		withBody(g.controlKeys(r))
	case 10: // the right token, a body over the limit
		h.kind, h.cut = "write body over the limit", true
		h.target = wsPath + "/items/ensure"
		h.header.Set("Authorization", "Bearer "+tokenA)
		h.body, h.length = over(httpapi.MaxBody, 1+int64(g.rng.IntN(4096))), httpapi.MaxBody+1
		if g.rng.IntN(2) == 0 {
			h.kind, h.length = "write body over the limit, chunked", -1
		}
		h.wire = g.rng.IntN(10) == 0
	case 11: // a body that breaks off
		h.kind = "body that breaks off"
		h.target = g.pick(hook, wsPath+"/items/ensure", wsPath+"/comments")
		h.header.Set("Authorization", "Bearer "+tokenA)
		h.header.Set(faketracker.SignatureHeader, faketracker.Sign(secret, []byte(`{"project":"proj"}`)))
		s := `{"project":"proj","key":"` + g.key() + `","title":"t"}`
		h.body = func() io.Reader { return &failingReader{strings.NewReader(s[:len(s)/2])} }
		h.length = int64(len(s))
	case 12, 13: // the feed's bad query parameters
		h.kind, h.method = "feed with a bad parameter", http.MethodGet
		h.header.Set("Authorization", "Bearer "+tokenA)
		q := g.pick("after=-1", "after=x", "after=9223372036854775808", "after=1e3", "after=0x10", "after=%20",
			"limit=0", "limit=1001", "limit=-5", "limit=99999999999999999999", "limit=1.5", "limit=+",
			"wait=forever", "wait=61s", "wait=-1s", "wait=1e9h", "wait=NaN", "wait=9999999999999999999h", "wait=1", "wait=%00",
			"after=x&after=1", "limit=%ff", "after=\u0661") // an Arabic-Indic one
		h.target = wsPath + "/events?" + q
		if g.rng.IntN(2) == 0 {
			h.target = wsPath + "/events?" + url.PathEscape(q)
		}
		if g.rng.IntN(3) == 0 {
			// Valid, and never reached: a bad parameter answers first
			// (a long poll would wait on the fake clock for good).
			h.target += "&wait=30s"
		}
	case 14: // unknown routes and methods
		h.kind = "unknown route or method"
		switch g.rng.IntN(3) {
		case 0:
			rt := httpapi.Routes()[g.rng.IntN(len(httpapi.Routes()))]
			h.target = strings.NewReplacer("{tenant}", "acme", "{workspace}", "ops", "{tracker}", "fake").Replace(rt.Pattern)
			h.method = g.pick("PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "PROPFIND", "FOO", "CONNECT-ISH")
			if rt.Method == http.MethodGet {
				h.method = g.pick(h.method, http.MethodPost)
			}
		case 1:
			h.method = g.pick("GET", "POST", "DELETE")
			h.target = g.pick("/", "/nowhere", "/relayr", "/relayr/v1", "/relayr/v1/tenants/acme", "/relayr/v1/tenants/acme/workspaces/ops/items",
				"/relayr/v1/tenants/acme/workspaces/ops/items/delete", "/relayr/v1/trackers/acme", "/relayr/v1/trackers//fake",
				"/relayr/v1/tenants//workspaces/ops/events", "/relayr/v1/tenants/acme/workspaces/ops/events/", "/healthz/", "/metrics/x",
				"/relayr/v1/tenants/acme/workspaces/ops/../../globex/workspaces/ops/events", "//relayr/v1/openapi.json",
				"/relayr/v1/tenants/acme/workspaces/%00/events", "/relayr/v1/tenants/acme%2Fworkspaces%2Fops/events",
				"/%ff%fe", "/"+strings.Repeat("a/", 1+g.rng.IntN(2000)))
		default:
			h.target = "/relayr/v1/trackers/acme/fake/" + g.pick("x", "..", "%2e%2e")
		}
		h.header.Set("Authorization", "Bearer "+tokenA)
		if h.method != http.MethodGet {
			withBody(g.badJSON())
		}
	case 15: // metrics without the operator token
		h.kind, h.method, h.target = "metrics with a bad token", http.MethodGet, "/metrics"
		if a := g.pick(g.badToken(), "Bearer "+tokenA, "Bearer "+opTok+" "+opTok); a != "" {
			h.header.Set("Authorization", a)
		}
	case 16: // an authenticated read of a workspace not bound
		h.kind, h.method = "feed of a workspace not bound", http.MethodGet
		h.header.Set("Authorization", "Bearer "+tokenA)
		// Short names a log keeps, and long ones it refuses.
		name := fmt.Sprintf("w%d-%s", i, strings.Repeat("w", g.rng.IntN(200)))
		if g.rng.IntN(2) == 0 {
			name += strings.Repeat("W", g.rng.IntN(96<<10))
		}
		h.target = "/relayr/v1/tenants/acme/workspaces/" + name + "/events"
	case 17: // huge headers, near and over the server's limit
		h.kind, h.wire = "huge header", true
		h.method, h.target = g.pick("GET", "POST"), g.pick(wsPath+"/events?after=x", hook, "/healthz", wsPath+"/items/ensure")
		size := maxHeaderBytes - 2048 - g.rng.IntN(8<<10) // near, under
		if g.rng.IntN(2) == 0 {
			h.kind, h.cut = "huge header over the limit", true
			size = maxHeaderBytes + 4096 + g.rng.IntN(64<<10)
		}
		switch g.rng.IntN(3) {
		case 0:
			h.header.Set("Authorization", "Bearer "+strings.Repeat("A", size))
		case 1:
			h.header.Set("X-Padding", strings.Repeat("p", size))
			h.header.Set("Authorization", "Bearer "+tokenB)
		default:
			for n := 0; n < size/1024; n++ {
				h.header.Set("X-Pad-"+strconv.Itoa(n), strings.Repeat("q", 1000))
			}
			h.header.Set(faketracker.SignatureHeader, "00")
		}
		if h.method == http.MethodPost {
			withBody(g.badJSON())
		}
	case 18: // a body that trickles, then stalls
		h.kind, h.wire, h.slow, h.cut = "slow body", true, true, true
		h.target = g.pick(hook, wsPath+"/items/ensure", wsPath+"/items/update", wsPath+"/comments")
		h.header.Set("Authorization", "Bearer "+tokenA)
		h.length = -1
		if g.rng.IntN(2) == 0 {
			h.length = 4096
		}
	default: // what no client would send
		// Left out: an HTTP version other than 1.x and a Transfer-Encoding
		// other than chunked, which net/http answers 505 and 501 itself,
		// as RFC 9110 says, before any handler runs.
		h.kind, h.wire, h.cut = "raw malformed HTTP", true, true
		h.raw = []byte(g.pick(
			"GARBAGE\r\n\r\n",
			"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Bad: a\x00b\r\n\r\n",
			"GET /healthz HTTP/1.1\r\nHost: x\r\nBad Name: v\r\n\r\n",
			"GET /\x01\x02 HTTP/1.1\r\nHost: x\r\n\r\n",
			"GET /healthz HTTP/1.1\r\n\r\n", // no Host
			"POST "+hook+" HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
			"POST "+hook+" HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
			"POST "+hook+" HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
			"POST "+hook+" HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nxx\r\n0\r\n\r\n",
			"POST "+hook+" HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\nGET / HTTP/1.1\r\n\r\n",
			"POST "+wsPath+"/items/ensure HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+tokenA+"\r\nContent-Length: 1048577\r\n\r\n{\"key\":",
			"POST "+wsPath+"/items/ensure HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+tokenA+"\r\nContent-Length: 100\r\n\r\n{\"key\":\"k\x00\"",
			"GET "+wsPath+"/events?after=x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \xff\xfe\r\n\r\n",
			"GET "+wsPath+"/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+tokenA+"\r\n\tfolded\r\n\r\n",
		))
	}
	return h
}

// hostileRun sends requests to a world, in-process or through a real
// http.Server on a loopback listener.
type hostileRun struct {
	t      *testing.T
	w      *world
	addr   string
	client *http.Client
}

func startHostile(t *testing.T) *hostileRun {
	w := newWorld(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httpapi.NewServer(ln.Addr().String(), w.handler)
	if srv.MaxHeaderBytes != maxHeaderBytes {
		t.Fatalf("NewServer's MaxHeaderBytes is %d; the huge headers are sized for %d", srv.MaxHeaderBytes, maxHeaderBytes)
	}
	srv.ErrorLog = nil
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	tr := &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &hostileRun{t: t, w: w, addr: ln.Addr().String(), client: &http.Client{
		Transport: tr,
		// A redirect (a path cleaned by the mux) is an answer, not a
		// request to follow.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// send sends h and answers the status the client saw (0 when the server
// dropped the connection, which h.cut allows).
func (r *hostileRun) send(h hostile) (int, error) {
	if h.raw != nil {
		return r.sendRaw(h.raw)
	}
	var body io.Reader
	if h.body != nil {
		body = h.body()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stalled chan struct{}
	if h.slow {
		stalled = make(chan struct{})
		body = &stallingReader{ctx: ctx, stalled: stalled, trickle: []string{`{"ke`, `y":"`, `slow`}}
	}
	base := "http://relayr.test"
	if h.wire {
		base = "http://" + r.addr
	}
	req, err := http.NewRequestWithContext(ctx, h.method, base+h.target, body)
	if err != nil {
		return 0, fmt.Errorf("building the request: %w", err)
	}
	req.Header = h.header
	req.ContentLength = h.length
	if body == nil {
		req.ContentLength = 0
	}
	if !h.wire {
		req.RequestURI = h.target
		rec := httptest.NewRecorder()
		r.w.handler.ServeHTTP(rec, req)
		return rec.Code, nil
	}
	type answer struct {
		status int
		err    error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := r.client.Do(req)
		if err != nil {
			done <- answer{0, err}
			return
		}
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		done <- answer{res.StatusCode, nil}
	}()
	if stalled != nil {
		// The client gives up once the body stalls, or the server
		// answered before reading it all.
		select {
		case <-stalled:
		case a := <-done:
			cancel()
			return a.status, a.err
		}
		cancel()
	}
	a := <-done
	return a.status, a.err
}

// stallingReader trickles a few bytes, then blocks until its client gives
// up.
type stallingReader struct {
	ctx     context.Context
	stalled chan struct{}
	trickle []string
	once    sync.Once
}

func (s *stallingReader) Read(p []byte) (int, error) {
	if len(s.trickle) > 0 {
		n := copy(p, s.trickle[0])
		s.trickle = s.trickle[1:]
		return n, nil
	}
	s.once.Do(func() { close(s.stalled) })
	<-s.ctx.Done()
	return 0, s.ctx.Err()
}

// sendRaw writes b on a TCP connection, half-closes it so the server never
// waits for more, and reads the status line it answers, if any.
func (r *hostileRun) sendRaw(b []byte) (int, error) {
	c, err := net.Dial("tcp", r.addr)
	if err != nil {
		return 0, err
	}
	defer func() { _ = c.Close() }()
	// Only a safety net: the server answers at once, or closes.
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := c.Write(b); err != nil {
		return 0, nil // refused while writing: no answer, no 5xx
	}
	_ = c.(*net.TCPConn).CloseWrite()
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return 0, nil // closed without an answer
	}
	f := strings.Fields(line)
	if len(f) < 2 {
		return 0, fmt.Errorf("a status line %q", line)
	}
	return strconv.Atoi(f[1])
}

// batch sends n requests starting at the i-th; it answers how many went
// over the wire.
func (r *hostileRun) batch(g *gen, from, n int) (wire int) {
	r.t.Helper()
	for i := from; i < from+n; i++ {
		h := g.next(i)
		if h.wire {
			wire++
		}
		status, err := r.send(h)
		switch {
		case err != nil && !h.cut:
			r.t.Fatalf("request %d (%s, %s %.120s): %v", i, h.kind, h.method, h.target, err)
		case status >= 500:
			r.t.Fatalf("request %d (%s, %s %.120s) answered %d; logged: %q", i, h.kind, h.method, h.target, status, r.w.errs.first())
		case status == 0 && !h.cut && err == nil:
			r.t.Fatalf("request %d (%s) had no answer", i, h.kind)
		}
	}
	// Every handler has returned, also those whose client went away.
	r.w.handler.inflight.Wait()
	return wire
}

func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func TestHostileInput(t *testing.T) {
	t.Run("TenThousandMalformedRequestsGetNo5xxWriteNothingAndLeaveTheHeapAsItWas", func(t *testing.T) {
		r := startHostile(t)
		g := newGen(8)
		r.batch(g, 0, hostileWarmUp)
		r.client.CloseIdleConnections()
		before := liveHeap()

		began := time.Now()
		wire := r.batch(g, hostileWarmUp, hostileRequests)
		took := time.Since(began)
		r.client.CloseIdleConnections()
		after := liveHeap()

		w := r.w
		if got := w.errs.first(); len(got) > 0 {
			t.Fatalf("the API logged errors (a recovered panic is one): %q", got)
		}
		w.handler.mu.Lock()
		fivexx := w.handler.fivexx
		w.handler.mu.Unlock()
		if len(fivexx) > 0 {
			t.Fatalf("the server answered 5xx: %q", fivexx)
		}
		if n := w.fake.TotalCalls(); n != 0 {
			t.Fatalf("the tracker was called %d times", n)
		}
		if n := w.waker.n.Load(); n != 0 {
			t.Fatalf("unverified deliveries woke %d followers", n)
		}
		nothingInTheLedger(t, w, g.keys)
		// Every tracker kind a path names would otherwise be a series of
		// its own, kept for good.
		if n := w.counters.count(); n > 4 {
			t.Fatalf("%d metric series after the batch; labels must not come from what a request says", n)
		}
		growth := int64(after) - int64(before)
		t.Logf("%d requests (%d through the real server, %d handled) in %v; heap %d KB before, %d KB after (%+d KB)",
			hostileRequests, wire, w.handler.served.Load(), took.Round(time.Millisecond), before>>10, after>>10, growth>>10)
		if growth > heapSlack {
			t.Fatalf("the heap grew by %d KB over the batch, more than %d KB", growth>>10, heapSlack>>10)
		}
	})
}

// nothingInTheLedger checks no key a body named is claimed in any bound
// workspace, and no workspace has an event.
func nothingInTheLedger(t *testing.T, w *world, keys map[string]bool) {
	t.Helper()
	ctx := context.Background()
	for _, b := range bound {
		evs, err := w.log.Read(ctx, b[0], b[1], 0, 10)
		if err != nil || len(evs) != 0 {
			t.Fatalf("events of %s/%s: %v %v", b[0], b[1], evs, err)
		}
		for k := range keys {
			for _, kind := range []ledger.Kind{ledger.KindItem, ledger.KindComment} {
				row, err := w.ledger.Lookup(ctx, ledger.Key{Tenant: b[0], Workspace: b[1], Kind: kind, Key: k})
				if !errors.Is(err, ledger.ErrNotFound) {
					t.Fatalf("%s/%s %s %q: %+v %v, want not found", b[0], b[1], kind, k, row, err)
				}
			}
		}
	}
}

// countingBody is a request body that counts what was read of it.
type countingBody struct {
	r    io.Reader
	read atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.read.Add(int64(n))
	return n, err
}

// heldBody is a request body that says when it is first read, then holds
// until released.
type heldBody struct {
	reading chan struct{}
	release chan struct{}
	once    sync.Once
	body    io.Reader
}

func newHeldBody(body []byte) *heldBody {
	return &heldBody{reading: make(chan struct{}), release: make(chan struct{}), body: bytes.NewReader(body)}
}

func (b *heldBody) Read(p []byte) (int, error) {
	b.once.Do(func() { close(b.reading) })
	<-b.release
	return b.body.Read(p)
}

// postDelivery posts a delivery to path in-process, signed with sec.
func postDelivery(w *world, path, sec string, body io.Reader, length int64, sign []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "http://relayr.test"+path, body)
	req.ContentLength = length
	if sign != nil {
		req.Header.Set(faketracker.SignatureHeader, faketracker.Sign(sec, sign))
	}
	rec := httptest.NewRecorder()
	w.handler.ServeHTTP(rec, req)
	return rec
}

// signedDelivery posts body signed with acme's secret.
func signedDelivery(w *world, body string) int {
	return postDelivery(w, hook, secret, strings.NewReader(body), int64(len(body)), []byte(body)).Code
}

func TestHostileWebhooks(t *testing.T) {
	t.Run("NoBodyIsReadForATenantOrTrackerNoBindingCouldVerify", func(t *testing.T) {
		w := newWorld(t)
		for _, path := range []string{
			"/relayr/v1/trackers/nobody/fake",  // no such tenant
			"/relayr/v1/trackers/acme/plane",   // a tracker acme has no binding of
			"/relayr/v1/trackers/initech/fake", // and both
		} {
			body := &countingBody{r: io.LimitReader(repeatReader('x'), httpapi.MaxNudgeBody-1)}
			rec := postDelivery(w, path, secret, body, httpapi.MaxNudgeBody-1, nil)
			if rec.Code != http.StatusUnauthorized {
				t.Fatalf("%s: %d, want the one 401", path, rec.Code)
			}
			if n := body.read.Load(); n != 0 {
				t.Fatalf("%s: %d bytes of the body were read before the tenant was known", path, n)
			}
		}
	})

	t.Run("DeliveriesPastTheBoundsAre429AndUnread", func(t *testing.T) {
		w := newWorld(t, func(c *httpapi.Config) {
			c.Limits.Webhooks, c.Limits.WebhooksPerTenant = 3, 2
		})
		good := []byte(`{"project":"proj"}`)
		var held []*heldBody
		var wg sync.WaitGroup
		hold := func(path, sec string) {
			b := newHeldBody(good)
			held = append(held, b)
			wg.Go(func() {
				if rec := postDelivery(w, path, sec, b, int64(len(good)), good); rec.Code >= 500 {
					t.Errorf("a held delivery answered %d", rec.Code)
				}
			})
			<-b.reading
		}
		// Two of acme's are read at once: the tenant's bound.
		hold(hook, secret)
		hold(hook, secret)
		third := &countingBody{r: bytes.NewReader(good)}
		rec := postDelivery(w, hook, secret, third, int64(len(good)), good)
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
			t.Fatalf("acme's third delivery at once: %d %q, want 429 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
		}
		if p := problemOf(t, rec.Code, rec.Header(), rec.Body.Bytes()); p.Code != "too_many_requests" {
			t.Fatalf("code %q", p.Code)
		}
		if third.read.Load() != 0 {
			t.Fatal("a delivery past the bound was read")
		}
		// Another tenant still has room, up to the bound over all.
		hold("/relayr/v1/trackers/globex/fake", "other")
		rec = postDelivery(w, "/relayr/v1/trackers/globex/fake", "other", bytes.NewReader(good), int64(len(good)), good)
		if rec.Code != http.StatusTooManyRequests {
			t.Fatalf("a fourth delivery over all: %d, want 429", rec.Code)
		}
		for _, b := range held {
			close(b.release)
		}
		wg.Wait()
		// The slots are given back.
		if code := signedDelivery(w, `{"project":"proj","n":1}`); code != http.StatusNoContent {
			t.Fatalf("after the held ones ended: %d", code)
		}
	})

	t.Run("AReplayedDeliveryNeverReachesTheWaker", func(t *testing.T) {
		w := newWorld(t)
		const first = `{"project":"proj","delivery":1}`
		for i := range 140 {
			if code := signedDelivery(w, first); code != http.StatusNoContent {
				t.Fatalf("replay %d: %d, want 204 (taken before)", i, code)
			}
		}
		// acme binds the project in two workspaces: one delivery wakes both.
		if n := w.waker.n.Load(); n != 2 {
			t.Fatalf("140 deliveries of one body woke %d followers, want 2", n)
		}
		// Another delivery is no replay.
		if code := signedDelivery(w, `{"project":"proj","delivery":2}`); code != http.StatusNoContent || w.waker.n.Load() != 4 {
			t.Fatalf("a new delivery: %d, woken %d, want 4", code, w.waker.n.Load())
		}
		// Past the window, the first is taken again.
		w.clock.Advance(httpapi.ReplayWindow)
		if code := signedDelivery(w, first); code != http.StatusNoContent || w.waker.n.Load() != 6 {
			t.Fatalf("after the window: %d, woken %d, want 6", code, w.waker.n.Load())
		}
	})

	t.Run("ADeliveryOfAnEventTakenBeforeIsAReplayWhateverItsBody", func(t *testing.T) {
		// GitLab keeps an event's Idempotency-Key across a retry and a
		// resend (tracker.Nudged.Delivery); the body may differ.
		w := newWorld(t)
		if code := signedDelivery(w, `{"project":"proj","event":"e-1","attempt":1}`); code != http.StatusNoContent || w.waker.n.Load() != 2 {
			t.Fatalf("the first: %d, woken %d", code, w.waker.n.Load())
		}
		if code := signedDelivery(w, `{"project":"proj","event":"e-1","attempt":2}`); code != http.StatusNoContent || w.waker.n.Load() != 2 {
			t.Fatalf("its resend: %d, woken %d, want no one woken again", code, w.waker.n.Load())
		}
		if code := signedDelivery(w, `{"project":"proj","event":"e-2","attempt":2}`); code != http.StatusNoContent || w.waker.n.Load() != 4 {
			t.Fatalf("another event: %d, woken %d, want 4", code, w.waker.n.Load())
		}
	})

	t.Run("ADeliveryRefusedIsNoReplayWhenSentAgain", func(t *testing.T) {
		w := newWorld(t)
		const body = `{"project":"proj","delivery":3}`
		w.switches.Set("acme", "ops", "tracker:fake", false)
		w.switches.Set("acme", "dev", "tracker:fake", false)
		if code := signedDelivery(w, body); code != http.StatusUnauthorized {
			t.Fatalf("switched off: %d", code)
		}
		w.switches.Set("acme", "ops", "tracker:fake", true)
		if code := signedDelivery(w, body); code != http.StatusNoContent || w.waker.n.Load() != 1 {
			t.Fatalf("sent again once switched on: %d, woken %d", code, w.waker.n.Load())
		}
	})

	t.Run("AnUnsignedCopyLeavesTheRealDeliveryToBeTaken", func(t *testing.T) {
		w := newWorld(t)
		const body = `{"project":"proj","delivery":4}`
		rec := postDelivery(w, hook, "wrong", strings.NewReader(body), int64(len(body)), []byte(body))
		if rec.Code != http.StatusUnauthorized {
			t.Fatalf("badly signed: %d", rec.Code)
		}
		if code := signedDelivery(w, body); code != http.StatusNoContent || w.waker.n.Load() != 2 {
			t.Fatalf("the real one: %d, woken %d", code, w.waker.n.Load())
		}
	})
}

// The webhook flood's size (ADR-0036's departures: 300 connections each
// sending just under 1 MB took the process from 26 MB to 374 MB).
const (
	floodDeliveries = 300
	floodBody       = httpapi.MaxNudgeBody - 1
	// floodBound is the most the heap and the goroutines' stacks may grow
	// under one flood, as the README states it.
	floodBound = 32 << 20
)

// BenchmarkHostileWebhookFlood sends floodDeliveries deliveries of floodBody
// bytes at once through the real server, each on its own connection, and
// asserts that the memory they take at the peak (the heap's live objects and
// the goroutines' stacks, sampled every millisecond) stays within
// floodBound. The clients are another process (startFloodClient), so what
// is measured is the server's alone.
func BenchmarkHostileWebhookFlood(b *testing.B) {
	for _, c := range []struct {
		name, path string
	}{
		// The cheap checks answer before any body is read.
		{"UnknownTenant", "/relayr/v1/trackers/nobody/plane"},
		// A bound tenant, bad signatures: at most MaxWebhooksPerTenant
		// bodies are read at once, the rest answered 429 unread.
		{"KnownTenantBadSignature", hook},
	} {
		b.Run(c.name, func(b *testing.B) {
			w := newWorld(b)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			srv := httpapi.NewServer(ln.Addr().String(), w.handler)
			// The server's connections, to wait between floods: net/http
			// keeps a connection it answered before reading its body for
			// half a second (to spare the client a reset), and floods sent
			// back to back would be measured several at once.
			var open sync.WaitGroup
			srv.ConnState = func(_ net.Conn, s http.ConnState) {
				switch s {
				case http.StateNew:
					open.Add(1)
				case http.StateClosed, http.StateHijacked:
					open.Done()
				}
			}
			go func() { _ = srv.Serve(ln) }()
			b.Cleanup(func() { _ = srv.Close() })
			addr := ln.Addr().String()

			// The base is what is live once an earlier run's garbage is
			// collected.
			runtime.GC()
			base := memoryInUse()
			var peak atomic.Uint64
			stop := make(chan struct{})
			sampled := make(chan struct{})
			go func() {
				defer close(sampled)
				t := time.NewTicker(time.Millisecond)
				defer t.Stop()
				for {
					if m := memoryInUse(); m > peak.Load() {
						peak.Store(m)
					}
					select {
					case <-stop:
						return
					case <-t.C:
					}
				}
			}()
			client := startFloodClient(b, addr, c.path)
			statuses := map[int]int{}
			b.ResetTimer()
			for b.Loop() {
				for status, n := range client.flood(b) {
					statuses[status] += n
				}
				// Every delivery is answered, so every connection is
				// accepted: the next flood starts when they are closed.
				b.StopTimer()
				open.Wait()
				b.StartTimer()
			}
			b.StopTimer()
			close(stop)
			<-sampled
			w.handler.inflight.Wait()
			grew := int64(peak.Load()) - int64(base)
			b.ReportMetric(float64(grew)/(1<<20), "peak-MB")
			b.Logf("%d deliveries of %d bytes at once, %d rounds: answered %v (0: cut before an answer); memory in use %d MB before, %+d MB at the peak",
				floodDeliveries, floodBody, b.N, statuses, base>>20, grew>>20)
			for status := range statuses {
				if status != 0 && status != http.StatusUnauthorized && status != http.StatusTooManyRequests {
					b.Fatalf("a flood delivery answered %d", status)
				}
			}
			if n := w.waker.n.Load(); n != 0 {
				b.Fatalf("the flood woke %d followers", n)
			}
			if grew > floodBound {
				b.Fatalf("the flood took %d MB at its peak, over the bound of %d MB", grew>>20, floodBound>>20)
			}
		})
	}
}

// TestMain runs the test binary as the flood's clients when
// startFloodClient starts it so.
func TestMain(m *testing.M) {
	if addr := os.Getenv(floodClientEnv); addr != "" {
		os.Exit(runFloodClient(addr, os.Getenv(floodPathEnv)))
	}
	os.Exit(m.Run())
}

// The flood's clients' process is told the server's address and path.
const (
	floodClientEnv = "RELAYR_TEST_FLOOD_CLIENT"
	floodPathEnv   = "RELAYR_TEST_FLOOD_PATH"
)

// floodClient is the process that sends a flood each time it is asked.
type floodClient struct {
	in  io.WriteCloser
	out *bufio.Scanner
}

// startFloodClient starts the test binary as the flood's clients, on
// 127.0.0.1 (addr), stopped when b ends.
func startFloodClient(b *testing.B, addr, path string) *floodClient {
	b.Helper()
	cmd := exec.Command(os.Args[0]) //nolint:gosec // G204: the test binary itself
	cmd.Env = append(os.Environ(), floodClientEnv+"="+addr, floodPathEnv+"="+path)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = in.Close()
		if err := cmd.Wait(); err != nil {
			b.Errorf("the flood's clients: %v", err)
		}
	})
	return &floodClient{in: in, out: bufio.NewScanner(out)}
}

// flood has the clients send one flood, and answers how many deliveries
// were answered each status.
func (c *floodClient) flood(b *testing.B) map[int]int {
	b.Helper()
	if _, err := io.WriteString(c.in, "flood\n"); err != nil {
		b.Fatal(err)
	}
	if !c.out.Scan() {
		b.Fatalf("the flood's clients stopped: %v", c.out.Err())
	}
	var statuses map[int]int
	if err := json.Unmarshal(c.out.Bytes(), &statuses); err != nil {
		b.Fatalf("the flood's clients answered %q: %v", c.out.Text(), err)
	}
	return statuses
}

// runFloodClient sends floodDeliveries deliveries at once to addr for each
// line read from stdin, and writes how they were answered as one line of
// JSON; it answers the exit code.
func runFloodClient(addr, path string) int {
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		statuses := map[int]int{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range floodDeliveries {
			wg.Go(func() {
				status := floodOne(addr, path)
				mu.Lock()
				statuses[status]++
				mu.Unlock()
			})
		}
		wg.Wait()
		line, err := json.Marshal(statuses)
		if err != nil {
			return 1
		}
		if _, err := fmt.Printf("%s\n", line); err != nil {
			return 1
		}
	}
	return 0
}

// floodOne sends one delivery of floodBody bytes on a connection of its
// own and answers the status, 0 when the server closed it first.
func floodOne(addr, path string) int {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(60 * time.Second))
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: relayr.test\r\nContent-Type: application/json\r\n%s: 00\r\nContent-Length: %d\r\n\r\n",
		path, faketracker.SignatureHeader, floodBody)
	if _, err := io.WriteString(c, head); err != nil {
		return 0
	}
	for left := floodBody; left > 0; {
		n, err := c.Write(xs[:min(left, len(xs))])
		if err != nil {
			break // the server answered and closed
		}
		left -= n
	}
	var line [64]byte
	n, _ := io.ReadAtLeast(c, line[:], len("HTTP/1.1 200"))
	f := strings.Fields(string(line[:n]))
	if len(f) < 2 {
		return 0
	}
	status, _ := strconv.Atoi(f[1])
	return status
}

// memoryInUse is what the process holds: the heap's live objects, as
// the last collection marked them, and the goroutines' stacks, read
// without stopping the world. The heap's garbage is left out: how much
// of it builds up between two collections is the collector's pacing
// (it lets the heap grow by what is live before it runs), not what the
// flood holds, and the peak of it over b.N rounds grew with b.N.
func memoryInUse() uint64 {
	s := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	rtmetrics.Read(s)
	return s[0].Value.Uint64() + s[1].Value.Uint64()
}

func TestHostileLongPolls(t *testing.T) {
	t.Run("ATokenHoldsAtMostItsCapOfWaitingReadsAndThenGetsA429", func(t *testing.T) {
		w := newWorld(t, func(c *httpapi.Config) { c.Limits.LongPollsPerToken = 2 })
		feed := "/relayr/v1/tenants/acme/workspaces/ops/events"
		get := func(token, path string) *httptest.ResponseRecorder {
			req := httptest.NewRequest(http.MethodGet, "http://relayr.test"+path, nil)
			req.Header.Set("Authorization", "Bearer "+token)
			rec := httptest.NewRecorder()
			w.handler.ServeHTTP(rec, req)
			return rec
		}
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				if rec := get(tokenA, feed+"?wait=30s"); rec.Code != http.StatusOK {
					t.Errorf("a long-poll within the cap: %d %s", rec.Code, rec.Body)
				}
			})
		}
		// Each waits on its deadline and on the poll timer.
		if err := w.clock.BlockUntil(context.Background(), 4); err != nil {
			t.Fatal(err)
		}
		// The third answers at once: it never waits on the clock.
		third := make(chan *httptest.ResponseRecorder, 1)
		go func() { third <- get(tokenA, feed+"?wait=30s") }()
		waiting := make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			if w.clock.BlockUntil(ctx, 6) == nil {
				close(waiting)
			}
		}()
		var rec *httptest.ResponseRecorder
		select {
		case rec = <-third:
			cancel()
		case <-waiting:
			t.Fatal("a third long-poll of one token is waiting")
		}
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" ||
			!strings.Contains(rec.Body.String(), "too_many_requests") {
			t.Fatalf("a third long-poll: %d %q %s, want 429 with Retry-After", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
		}
		problemOf(t, rec.Code, rec.Header(), rec.Body.Bytes())
		// A read that doesn't wait is no long-poll, and another token has
		// its own cap.
		if rec := get(tokenA, feed); rec.Code != http.StatusOK {
			t.Fatalf("a read without wait: %d", rec.Code)
		}
		wg.Go(func() {
			if rec := get(tokenB, "/relayr/v1/tenants/globex/workspaces/ops/events?wait=30s"); rec.Code != http.StatusOK {
				t.Errorf("another token's long-poll: %d %s", rec.Code, rec.Body)
			}
		})
		if err := w.clock.BlockUntil(context.Background(), 6); err != nil { // two waiting reads and this one
			t.Fatal(err)
		}
		w.clock.Advance(httpapi.MaxWait)
		wg.Wait()
		// The slots are given back when the reads end.
		stale := w.clock.Waiters() // poll timers of the reads that ended
		wg.Go(func() {
			if rec := get(tokenA, feed+"?wait=2s"); rec.Code != http.StatusOK {
				t.Errorf("a long-poll once the others ended: %d %s", rec.Code, rec.Body)
			}
		})
		if err := w.clock.BlockUntil(context.Background(), stale+2); err != nil {
			t.Fatal(err)
		}
		w.clock.Advance(2 * time.Second)
		wg.Wait()
	})
}
