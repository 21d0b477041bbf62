package vikunja

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
)

func TestClassify(t *testing.T) {
	now := time.Unix(1795978000, 0)
	reset := http.Header{"X-Ratelimit-Reset": {"1795978058"}}
	cases := []struct {
		name   string
		status int
		header http.Header
		body   string
		err    error
		is     error
		wait   time.Duration
	}{
		{"OK", 200, nil, `{}`, nil, nil, 0},
		{"Created", 201, nil, `{}`, nil, nil, 0},
		{"BadToken", 401, nil, `{"code":11,"message":"missing, malformed, expired or otherwise invalid token provided"}`, nil, tracker.ErrUnauthorized, 0},
		{"AnotherUsersTask", 403, nil, `{"code":0,"message":"Forbidden"}`, nil, tracker.ErrUnauthorized, 0},
		{"Deleted", 404, nil, `{"code":4002,"message":"This task does not exist"}`, nil, tracker.ErrNotFound, 0},
		{"V2NotFound", 404, nil, `{"title":"Not Found","status":404,"detail":"This task does not exist","code":4002}`, nil, tracker.ErrNotFound, 0},
		{"Archived", 412, nil, `{"code":3008,"message":"This project is archived."}`, nil, tracker.ErrRefused, 0},
		{"BadModel", 400, nil, `{"code":2004,"message":"Invalid model provided."}`, nil, tracker.ErrRefused, 0},
		{"RateLimited", 429, reset, `{"message":"Too Many Requests"}`, nil, tracker.ErrRateLimited, 58 * time.Second},
		{"RateLimitedWithoutReset", 429, nil, ``, nil, tracker.ErrRateLimited, DefaultRateWait},
		{"RateLimitedWithGarbageReset", 429, http.Header{"X-Ratelimit-Reset": {"soon"}}, ``, nil, tracker.ErrRateLimited, DefaultRateWait},
		{"RateLimitedResetPassed", 429, http.Header{"X-Ratelimit-Reset": {"1795977990"}}, ``, nil, tracker.ErrRateLimited, time.Second},
		{"RateLimitedResetNow", 429, http.Header{"X-Ratelimit-Reset": {"1795978000"}}, ``, nil, tracker.ErrRateLimited, time.Second},
		{"ServerError", 500, nil, `<html>`, nil, tracker.ErrUnavailable, 0},
		{"BadGateway", 502, nil, ``, nil, tracker.ErrUnavailable, 0},
		{"Redirect", 302, nil, ``, nil, tracker.ErrUnavailable, 0},
		{"Refused", 0, nil, ``, syscall.ECONNREFUSED, tracker.ErrUnavailable, 0},
		{"TimedOut", 0, nil, ``, context.DeadlineExceeded, tracker.ErrUnavailable, 0},
		{"Cancelled", 0, nil, ``, context.Canceled, tracker.ErrUnavailable, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := classify(c.status, c.header, []byte(c.body), c.err, now)
			if c.is == nil {
				if err != nil {
					t.Fatalf("err %v", err)
				}
				return
			}
			if !errors.Is(err, c.is) {
				t.Fatalf("err %v, want %v", err, c.is)
			}
			if c.err != nil && !errors.Is(err, c.err) {
				t.Fatalf("err %v doesn't wrap its cause", err)
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

var src = tracker.Source{Tenant: "t1", Workspace: "w1"}

func TestDecodeTaskReadsBadInputSensiblyOrFails(t *testing.T) {
	tr, _ := New(Params{BaseURL: "http://v", Token: "t", Project: 2, Source: src})
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
	tr, _ := New(Params{BaseURL: "http://v", Token: "t", Project: 2, Source: src})
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

func TestTrackersOnOneTransportShareItsConnections(t *testing.T) {
	tr := &http.Transport{MaxConnsPerHost: 3}
	a, err := New(Params{BaseURL: "http://127.0.0.1:1", Token: "k", Project: 1}, WithTransport(tr))
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(Params{BaseURL: "http://127.0.0.1:1", Token: "k2", Project: 2}, WithTransport(tr))
	if err != nil {
		t.Fatal(err)
	}
	if a.client.Transport != b.client.Transport {
		t.Error("two Trackers on one transport each cloned a pool of their own")
	}
	if a.client.Transport == http.RoundTripper(tr) {
		t.Error("the given transport was changed instead of cloned")
	}
	if got := a.client.Transport.(*http.Transport); got.MaxConnsPerHost != 3 || got.ResponseHeaderTimeout != DefaultTimeout {
		t.Errorf("clone lost the bound or the timeouts: %d %s", got.MaxConnsPerHost, got.ResponseHeaderTimeout)
	}
}
