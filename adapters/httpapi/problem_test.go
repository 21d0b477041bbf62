package httpapi_test

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/relayr-go/relayr/adapters/httpapi"
)

// problemOf reads an error answer as an RFC 9457 problem, as a client that
// knows nothing of relayr would: the media type, then the four members of
// the specification with their JSON types (type an absolute URI, status the
// answer's), then relayr's code and its error object as before, which must
// agree with them. It fails the test on anything else.
func problemOf(t *testing.T, status int, h http.Header, body []byte) httpapi.Problem {
	t.Helper()
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil || mt != "application/problem+json" {
		t.Fatalf("an error answered as %q, want application/problem+json: %s", h.Get("Content-Type"), body)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(body, &members); err != nil {
		t.Fatalf("the problem is not a JSON object: %v: %s", err, body)
	}
	var typ, title, detail string
	var st float64
	for name, v := range map[string]any{"type": &typ, "title": &title, "status": &st, "detail": &detail} {
		raw, ok := members[name]
		if !ok {
			t.Fatalf("the problem has no %s: %s", name, body)
		}
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatalf("the problem's %s is %s: %v", name, raw, err)
		}
	}
	if u, err := url.Parse(typ); err != nil || !u.IsAbs() {
		t.Fatalf("type %q is not an absolute URI", typ)
	}
	if int(st) != status || st != float64(int(st)) {
		t.Fatalf("the problem's status %v, the answer's %d", st, status)
	}
	if strings.TrimSpace(title) == "" || strings.TrimSpace(detail) == "" {
		t.Fatalf("a blank title or detail: %s", body)
	}
	var p httpapi.Problem
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("the problem has members the document does not name: %v: %s", err, body)
	}
	switch {
	case p.Code == "" || p.Error.Code != p.Code:
		t.Fatalf("code %q, error.code %q: relayr's code, the same twice", p.Code, p.Error.Code)
	case p.Type != httpapi.ProblemTypeBase+p.Code:
		t.Fatalf("type %q, want %q", p.Type, httpapi.ProblemTypeBase+p.Code)
	case p.Detail != p.Error.Message:
		t.Fatalf("detail %q, error.message %q", p.Detail, p.Error.Message)
	case p.Title != httpapi.ProblemTitle(p.Code, status):
		t.Fatalf("title %q: one title a type", p.Title)
	}
	return p
}

// Every error of the API, whatever the route and the reason, is an RFC
// 9457 problem that names relayr's code, its body as before beside it and
// Retry-After where it was (ADR-1014). want checks every other error of
// these tests the same way.
func TestErrorsAreRFC9457Problems(t *testing.T) {
	noLedger := func(c *httpapi.Config) { c.Ledger, c.Metrics, c.Status = nil, nil, nil }
	for _, c := range []struct {
		name          string
		opts          []func(*httpapi.Config)
		method, path  string
		token         string
		body          any
		status        int
		code          string
		authenticate  bool
		allow, titled string
	}{
		{name: "NoToken", method: "POST", path: ws + "/items/ensure", body: httpapi.EnsureRequest{Key: "k", Title: "t"}, status: 401, code: "unauthorized", authenticate: true},
		{name: "AnotherTenantsToken", method: "POST", path: ws + "/items/ensure", token: tokenB, body: httpapi.EnsureRequest{Key: "k", Title: "t"}, status: 403, code: "not_allowed"},
		{name: "ABadKey", method: "POST", path: ws + "/items/ensure", token: tokenA, body: httpapi.EnsureRequest{Title: "t"}, status: 400, code: "invalid", titled: "Invalid request"},
		{name: "ABadFeedQuery", method: "GET", path: ws + "/events?limit=0", token: tokenA, status: 400, code: "invalid"},
		{name: "NoSuchRoute", method: "GET", path: "/nowhere", status: 404, code: "not_found"},
		{name: "NotThatMethod", method: "DELETE", path: ws + "/items/ensure", token: tokenA, status: 405, code: "method_not_allowed", allow: "POST"},
		{name: "ADotSegment", method: "GET", path: "/relayr/v1/tenants/acme/workspaces/ops/../ops/events", token: tokenA, status: 400, code: "invalid"},
		{name: "ANudgeUnsigned", method: "POST", path: "/relayr/v1/trackers/acme/fake", body: map[string]string{}, status: 401, code: "unauthorized"},
		{name: "MetricsWithoutTheOperatorToken", method: "GET", path: "/metrics", status: 401, code: "unauthorized", authenticate: true},
		{name: "NotReady", opts: []func(*httpapi.Config){noLedger}, method: "GET", path: "/readyz", status: 503, code: "not_ready", titled: "Not ready"},
		{name: "NoMetrics", opts: []func(*httpapi.Config){noLedger}, method: "GET", path: "/metrics", token: opTok, status: 503, code: "not_ready"},
		{name: "NoStatus", opts: []func(*httpapi.Config){noLedger}, method: "GET", path: "/relayr/v1/status", token: opTok, status: 503, code: "not_ready"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, c.opts...)
			r := e.do(c.method, c.path, c.token, c.body)
			if r.status != c.status {
				t.Fatalf("status %d, want %d: %s", r.status, c.status, r.body)
			}
			p := problemOf(t, r.status, r.header, r.body)
			if p.Code != c.code {
				t.Fatalf("code %q, want %q", p.Code, c.code)
			}
			if c.titled != "" && p.Title != c.titled {
				t.Fatalf("title %q, want %q", p.Title, c.titled)
			}
			if c.authenticate && r.header.Get("WWW-Authenticate") == "" {
				t.Fatal("a 401 without WWW-Authenticate")
			}
			if c.allow != "" && r.header.Get("Allow") != c.allow {
				t.Fatalf("Allow %q, want %q", r.header.Get("Allow"), c.allow)
			}
		})
	}

	t.Run("ARetryableProblemKeepsRetryAfter", func(t *testing.T) {
		e := newEnv(t)
		_, _, _ = e.ledger.Claim(t.Context(), claimParams("k"))
		r := e.advancing(func() resp {
			return e.do("POST", ws+"/items/ensure", tokenA, httpapi.EnsureRequest{Key: "k", Title: "t"})
		})
		p := problemOf(t, r.status, r.header, r.body)
		if r.status != 409 || p.Type != "https://github.com/relayr-go/relayr/blob/main/docs/http-api.md#tracker_claimed" || r.header.Get("Retry-After") == "" {
			t.Fatalf("%d %+v Retry-After %q", r.status, p, r.header.Get("Retry-After"))
		}
	})

	t.Run("AClientOfTheOldBodyReadsItAsBefore", func(t *testing.T) {
		e := newEnv(t)
		r := e.do("POST", ws+"/items/ensure", "", httpapi.EnsureRequest{Key: "k", Title: "t"})
		var old struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if err := json.Unmarshal(r.body, &old); err != nil || old.Error.Code != "unauthorized" || old.Error.Message == "" {
			t.Fatalf("%v %+v: %s", err, old, r.body)
		}
	})
}

// The OpenAPI document answers every error as a Problem, in
// application/problem+json, and names every code the API answers.
func TestOpenAPIDescribesEveryErrorAsAProblem(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]struct {
				Content map[string]struct {
					Schema struct {
						Ref string `json:"$ref"`
					} `json:"schema"`
				} `json:"content"`
			} `json:"responses"`
		} `json:"paths"`
		Components struct {
			Schemas map[string]struct {
				Required   []string `json:"required"`
				Properties struct {
					Code struct {
						Enum []string `json:"enum"`
					} `json:"code"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(httpapi.OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	n := 0
	for path, ops := range doc.Paths {
		for method, op := range ops {
			for status, r := range op.Responses {
				if status[0] != '4' && status[0] != '5' {
					continue
				}
				n++
				if got := r.Content["application/problem+json"].Schema.Ref; got != "#/components/schemas/Problem" {
					t.Errorf("%s %s answers %s as %v, not a Problem in application/problem+json", method, path, status, r.Content)
				}
			}
		}
	}
	if n < 20 {
		t.Fatalf("%d error answers documented: the walk missed them", n)
	}
	problem, ok := doc.Components.Schemas["Problem"]
	if !ok || strings.Join(problem.Required, ",") != "type,title,status,detail,code,error" {
		t.Fatalf("the Problem schema: %+v", problem)
	}
	codes := map[string]bool{}
	for _, c := range problem.Properties.Code.Enum {
		codes[c] = true
	}
	for _, c := range []string{"tracker_claimed", "tracker_unavailable", "tracker_loop", "not_allowed", "refused", "deleted", "invalid",
		"unauthorized", "not_found", "method_not_allowed", "too_large", "too_many_requests", "unavailable", "not_ready", "internal"} {
		if !codes[c] {
			t.Errorf("the Problem's code does not name %s", c)
		}
		if httpapi.ProblemTitle(c, 0) == "" {
			t.Errorf("%s has no title", c)
		}
	}
}
