package vikunja

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/memnet"
)

// Every status Vikunja answers maps onto the port's typed errors, as the
// portable Tracker answers it: trackerhttp's mapping, with Vikunja's own
// meaning of a 403 (classify) and its error code in the message.
func TestStatusesAreTyped(t *testing.T) {
	now := time.Unix(1795978000, 0)
	reset := http.Header{"X-Ratelimit-Reset": {"1795978058"}}
	cases := []struct {
		name   string
		status int
		header http.Header
		body   string
		is     error
		wait   time.Duration
		says   string // in the message, when set
	}{
		{"OK", 200, nil, `{"id":1}`, nil, 0, ""},
		{"Created", 201, nil, `{"id":1}`, nil, 0, ""},
		{"BadToken", 401, nil, `{"code":11,"message":"missing, malformed, expired or otherwise invalid token provided"}`, tracker.ErrUnauthorized, 0, "code 11: 401 missing, malformed"},
		{"AnotherUsersTask", 403, nil, `{"code":0,"message":"Forbidden"}`, tracker.ErrUnauthorized, 0, "403 Forbidden"},
		// Vikunja sends X-RateLimit-Remaining with every answer: 0 on the
		// last of a window's says nothing of a 403.
		{"ForbiddenOnTheLastRequestOfAWindow", 403, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"1795978058"}}, `{"code":0,"message":"Forbidden"}`, tracker.ErrUnauthorized, 0, "403 Forbidden"},
		{"Deleted", 404, nil, `{"code":4002,"message":"This task does not exist"}`, tracker.ErrNotFound, 0, "code 4002: 404 This task does not exist"},
		{"V2NotFound", 404, nil, `{"title":"Not Found","status":404,"detail":"This task does not exist","code":4002}`, tracker.ErrNotFound, 0, "code 4002: 404 This task does not exist"},
		{"Archived", 412, nil, `{"code":3008,"message":"This project is archived."}`, tracker.ErrRefused, 0, "code 3008: 412 This project is archived."},
		{"BadModel", 400, nil, `{"code":2004,"message":"Invalid model provided."}`, tracker.ErrRefused, 0, "code 2004"},
		{"RateLimited", 429, reset, `{"message":"Too Many Requests"}`, tracker.ErrRateLimited, 58 * time.Second, "429 Too Many Requests"},
		{"RateLimitedWithoutReset", 429, nil, ``, tracker.ErrRateLimited, DefaultRateWait, ""},
		{"RateLimitedWithGarbageReset", 429, http.Header{"X-Ratelimit-Reset": {"soon"}}, ``, tracker.ErrRateLimited, DefaultRateWait, ""},
		{"RateLimitedResetPassed", 429, http.Header{"X-Ratelimit-Reset": {"1795977990"}}, ``, tracker.ErrRateLimited, time.Second, ""},
		{"RateLimitedResetNow", 429, http.Header{"X-Ratelimit-Reset": {"1795978000"}}, ``, tracker.ErrRateLimited, time.Second, ""},
		{"ServerError", 500, nil, `<html>`, tracker.ErrUnavailable, 0, "500 <html>"},
		{"BadGateway", 502, nil, ``, tracker.ErrUnavailable, 0, ""},
		// A redirect is never followed (a write would lose its body), and
		// sending the request again meets it again (a login wall in front
		// of the server): refused, as trackerhttp maps it.
		{"Redirect", 302, http.Header{"Location": {"/login"}}, ``, tracker.ErrRefused, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := memnet.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, vs := range c.header {
					w.Header()[k] = vs
				}
				w.WriteHeader(c.status)
				_, _ = w.Write([]byte(c.body))
			}))
			defer s.Close()
			tr, err := New(Params{BaseURL: s.URL, Token: "t", Project: 1, Source: src}, WithTransport(s.Transport()),
				WithClock(func() time.Time { return now }))
			if err != nil {
				t.Fatal(err)
			}
			_, err = tr.Item(t.Context(), "1")
			if c.is == nil {
				if err != nil {
					t.Fatalf("err %v", err)
				}
				return
			}
			if !errors.Is(err, c.is) {
				t.Fatalf("err %v, want %v", err, c.is)
			}
			if !strings.HasPrefix(err.Error(), "vikunja: ") || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("err %q, want it to say %q", err, c.says)
			}
			var rl *tracker.RateLimitedError
			if errors.As(err, &rl) != (c.wait > 0) || (rl != nil && rl.RetryAfter != c.wait) {
				t.Fatalf("err %v, want a wait of %s", err, c.wait)
			}
			// A certain refusal releases the claim; an unknown outcome doesn't.
			if tracker.CertainlyNotTaken(err) == errors.Is(err, tracker.ErrUnavailable) {
				t.Fatalf("CertainlyNotTaken(%v) = %v", err, tracker.CertainlyNotTaken(err))
			}
		})
	}
}

// A request that got no answer is ErrUnavailable wrapping its cause (so
// context.Canceled stays matchable), and never certainly not taken.
func TestTransportFailuresAreUnavailable(t *testing.T) {
	cases := []struct {
		name  string
		cause error
		// call runs a write against s, its context ending as the case says.
		call func(tr *tracker.Tracker, started <-chan struct{}) error
	}{
		{"Refused", syscall.ECONNREFUSED, nil},
		{"TimedOut", context.DeadlineExceeded, func(tr *tracker.Tracker, _ <-chan struct{}) error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_, err := tr.Create(ctx, "k", tracker.Draft{Title: "t"})
			return err
		}},
		{"Cancelled", context.Canceled, func(tr *tracker.Tracker, started <-chan struct{}) error {
			ctx, cancel := context.WithCancel(context.Background())
			go func() { <-started; cancel() }()
			_, err := tr.Create(ctx, "k", tracker.Draft{Title: "t"})
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				started := make(chan struct{}, 1)
				s := memnet.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path == "/api/v1/info" {
						_, _ = io.WriteString(w, `{"concurrent_writes":false}`)
						return
					}
					// Read whole, the request's connection is watched: its
					// context ends when the client leaves.
					_, _ = io.Copy(io.Discard, r.Body)
					started <- struct{}{}
					<-r.Context().Done()
				}))
				defer s.Close()
				tr, err := New(Params{BaseURL: s.URL, Token: "t", Project: 1, Source: src},
					WithTransport(s.Transport()), WithWriteGates(NewWriteGates()))
				if err != nil {
					t.Fatal(err)
				}
				if c.call == nil {
					s.Close()
					_, err = tr.Item(t.Context(), "1")
				} else {
					err = c.call(tr, started)
				}
				if !errors.Is(err, tracker.ErrUnavailable) || tracker.CertainlyNotTaken(err) {
					t.Fatalf("err %v, want unavailable and not certainly untaken", err)
				}
				if c.call != nil && !errors.Is(err, c.cause) {
					t.Fatalf("err %v doesn't wrap its cause", err)
				}
			})
		})
	}
}

var src = tracker.Source{Tenant: "t1", Workspace: "w1"}

func TestDecodeTaskReadsBadInputSensiblyOrFails(t *testing.T) {
	tr, _ := newDriver(Params{BaseURL: "http://v", Token: "t", Project: 2, Source: src})
	cases := []struct {
		name, body string
		ok         bool
		check      func(tracker.Item) error
	}{
		{"NullFields", `{"id":3,"title":null,"description":null,"labels":null,"identifier":null,"index":null,"updated":null,"done":null}`, true,
			func(it tracker.Item) error {
				if it.Ref.Name != "#0" || it.State != tracker.Todo || !it.UpdatedAt.IsZero() || it.Ref.Key != "" {
					return fmt.Errorf("%+v", it)
				}
				return nil
			}},
		{"MissingFields", `{"id":3}`, true, nil},
		{"ZeroTime", `{"id":3,"updated":"0001-01-01T00:00:00Z"}`, true, func(it tracker.Item) error {
			if !it.UpdatedAt.IsZero() {
				return fmt.Errorf("updated %s", it.UpdatedAt)
			}
			return nil
		}},
		{"HTMLDescription", `{"id":3,"description":"<p>Body</p><p>lattice-key: lattice:t1/w1/k&amp;1</p>"}`, true, func(it tracker.Item) error {
			if it.Ref.Key != "k&1" {
				return fmt.Errorf("key %q", it.Ref.Key)
			}
			return nil
		}},
		{"MarkerTypedTwice", `{"id":3,"description":"x\n\nlattice-key: lattice:t1/w1/k1\nlattice-key: lattice:t1/w1/k1"}`, true, func(it tracker.Item) error {
			if it.Ref.Key != "k1" || strings.Count(it.Description, "lattice-key") != 1 {
				return fmt.Errorf("key %q description %q", it.Ref.Key, it.Description)
			}
			return nil
		}},
		{"NanosecondsTruncated", `{"id":3,"updated":"2026-11-29T18:45:33.979985164Z"}`, true, func(it tracker.Item) error {
			if it.UpdatedAt != time.Date(2026, 11, 29, 18, 45, 33, 0, time.UTC) {
				return fmt.Errorf("updated %s", it.UpdatedAt)
			}
			return nil
		}},
		{"NoID", `{"title":"x"}`, false, nil},
		{"WrongType", `{"id":"3"}`, false, nil},
		{"BadTime", `{"id":3,"updated":"tomorrow"}`, false, nil},
		{"Garbage", `<html>`, false, nil},
		{"Array", `[]`, false, nil},
		{"Empty", ``, false, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, err := decodeTask([]byte(c.body))
			if (err == nil) != c.ok {
				t.Fatalf("err %v", err)
			}
			if c.ok && c.check != nil {
				if err := c.check(tr.item(w)); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestMarkers(t *testing.T) {
	cases := []struct{ text, key string }{
		{"Body\n\nlattice-key: lattice:t1/w1/k1", "k1"},
		{"lattice-key: lattice:t1/w1/k10", "k10"},
		{"lattice-key: lattice:t1/w2/k1", ""},
		{"lattice-key: other:t1/w1/k1", ""},
		{"<p>lattice-key: lattice:t1/w1/a b</p>", "a b"},
		{"<p>lattice-key: lattice:t1/w1/k1<br></p>", "k1"},
		{"lattice-key:lattice:t1/w1/k1\r\nmore", "k1"},
		{"lattice-key: ", ""},
		{"lattice-key: lattice:t1/w1/", ""},
		{"no marker", ""},
	}
	for _, c := range cases {
		k, ok := KeyOf(c.text, src)
		if k != c.key || ok != (c.key != "") {
			t.Errorf("KeyOf(%q) = %q %v, want %q", c.text, k, ok, c.key)
		}
	}
	for _, body := range []string{"", "Body", "Body\n", "<p>x</p>"} {
		if got := stripMarker(withMarker(body, src, "k"), src, "k"); got != strings.TrimRight(body, "\n") {
			t.Errorf("strip(with(%q)) = %q", body, got)
		}
	}
	if got := stripMarker("<p>Body</p><p>lattice-key: lattice:t1/w1/k</p>", src, "k"); got != "<p>Body</p>" {
		t.Errorf("strip of the web editor's HTML: %q", got)
	}
}

func FuzzDecodeTask(f *testing.F) {
	for _, s := range []string{`{"id":1,"title":"t","description":"lattice-key: lattice:t1/w1/k","labels":[{"id":1,"title":"x"}],"updated":"2026-11-29T18:45:33Z"}`,
		`{"id":null}`, `[]`, `<html>`, `{"id":1,"labels":[null]}`} {
		f.Add([]byte(s))
	}
	tr, _ := newDriver(Params{BaseURL: "http://v", Token: "t", Project: 2, Source: src})
	f.Fuzz(func(t *testing.T, b []byte) {
		w, err := decodeTask(b)
		if err != nil {
			return
		}
		it := tr.item(w)
		if it.Ref.ID == "" || it.Ref.Name == "" {
			t.Fatalf("item without an id or a name: %+v", it)
		}
		_, _ = decodeTasks(b)
	})
}

func FuzzParseMarker(f *testing.F) {
	for _, s := range []string{"lattice-key: lattice:t1/w1/k1", "<p>lattice-key: lattice:t1/w1/k&amp;1</p>", "lattice-key:", "lattice-key: lattice-key: x"} {
		f.Add(s, "k1")
	}
	f.Fuzz(func(t *testing.T, text, key string) {
		_ = ParseMarkers(text)
		_, _ = KeyOf(text, src)
		if tracker.ValidateKeyKept(key, markupRewrites) != nil {
			return
		}
		// A key relayr files reads back from its own marker, whatever
		// precedes it, and strips back to the body.
		body := strings.TrimRight(text, "\n")
		if strings.Contains(body, MarkerLabel) || strings.ContainsAny(body, "\r") {
			return
		}
		marked := withMarker(body, src, key)
		if k, ok := KeyOf(marked, src); !ok || k != key {
			t.Fatalf("KeyOf(%q) = %q %v, want %q", marked, k, ok, key)
		}
		if got := stripMarker(marked, src, key); strings.TrimSpace(body) != "" && got != body {
			t.Fatalf("stripMarker(%q) = %q, want %q", marked, got, body)
		}
	})
}

// FuzzNudge: a delivery verifies under its own signature only, whatever its
// body; a verified one names a project, and the deleted tasks it names are
// task ids of that project, from task.deleted alone; nothing panics and
// every refusal is typed.
func FuzzNudge(f *testing.F) {
	f.Add("s3cret", []byte(`{"event_name":"task.deleted","data":{"project":{"id":2},"task":{"id":5,"project_id":2}}}`))
	f.Add("k", []byte(`{"event_name":"task.deleted","data":{"task":{"id":-1,"project_id":2}}}`))
	f.Add("k", []byte(`{"event_name":"task.updated","data":{"project":{"id":"2"}}}`))
	f.Add("", []byte(`{}`))
	tr, _ := New(Params{BaseURL: "http://v", Token: "t", Project: 2, Source: src})
	f.Fuzz(func(t *testing.T, secret string, body []byte) {
		m := hmac.New(sha256.New, []byte(secret))
		m.Write(body)
		h := http.Header{}
		h.Set(SignatureHeader, hex.EncodeToString(m.Sum(nil)))
		n, err := tr.Nudge(secret, h, body)
		switch {
		case secret == "":
			if !errors.Is(err, tracker.ErrUnauthorized) {
				t.Fatalf("no secret verified: %+v %v", n, err)
			}
			return
		case err != nil:
			if !errors.Is(err, tracker.ErrRefused) {
				t.Fatalf("a body under its own signature: %v", err)
			}
			return
		}
		project, perr := strconv.ParseInt(n.Project, 10, 64)
		if perr != nil || project <= 0 {
			t.Fatalf("a verified delivery named project %q", n.Project)
		}
		var ev struct {
			Event string `json:"event_name"`
		}
		_ = json.Unmarshal(body, &ev)
		for _, id := range n.Deleted {
			if v, err := strconv.ParseInt(id, 10, 64); err != nil || v <= 0 || ev.Event != EventTaskDeleted {
				t.Fatalf("named %q deleted from %s", id, body)
			}
		}
		if got, err := tr.Nudge(secret+"x", h, body); !errors.Is(err, tracker.ErrUnauthorized) || got.Project != "" || got.Deleted != nil {
			t.Fatalf("another secret verified: %+v %v", got, err)
		}
	})
}

// Trackers made on one transport (every binding of a server, each
// Connect) send through it as it is: they share its connections instead of
// each keeping a pool of its own, and the transport is not changed.
func TestTrackersOnOneTransportShareItsConnections(t *testing.T) {
	var conns atomic.Int32
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"id":1,"project_id":1}`))
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	s.Start()
	defer s.Close()
	tr := &http.Transport{MaxConnsPerHost: 3}
	defer tr.CloseIdleConnections()
	a, err := New(Params{BaseURL: s.URL, Token: "k", Project: 1}, WithTransport(tr))
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(Params{BaseURL: s.URL, Token: "k2", Project: 1}, WithTransport(tr))
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []*tracker.Tracker{a, b, a} {
		if _, err := x.Item(t.Context(), "1"); err != nil {
			t.Fatal(err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("three reads by two Trackers on one transport opened %d connections, want one", n)
	}
	if tr.MaxConnsPerHost != 3 || tr.ResponseHeaderTimeout != 0 || tr.DialContext != nil {
		t.Error("the given transport was changed")
	}
}
