package trackerhttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

func client(t *testing.T, h http.Handler, cfg trackerhttp.Config) *trackerhttp.Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	cfg.BaseURL = srv.URL + "/api/"
	if cfg.Name == "" {
		cfg.Name = "test"
	}
	c, err := trackerhttp.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNewRefusesABaseURLThatIsNotHTTP(t *testing.T) {
	for _, u := range []string{"", "ftp://x", "http://", "not a url"} {
		if _, err := trackerhttp.New(trackerhttp.Config{BaseURL: u}); !errors.Is(err, tracker.ErrInvalid) {
			t.Errorf("New(%q): %v, want ErrInvalid", u, err)
		}
	}
}

func TestDoSendsTheKeyTheBodyAndTheTrackersHeaders(t *testing.T) {
	var got *http.Request
	var body string
	c := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		b, _ := io.ReadAll(r.Body)
		body = string(b)
		_, _ = io.WriteString(w, `{"ok":true}`)
	}), trackerhttp.Config{AuthHeader: "X-Api-Key", AuthValue: "k1", Header: http.Header{"X-Version": {"3"}}})
	a, err := c.Do(context.Background(), trackerhttp.Request{Method: http.MethodPost, Path: "items/", Query: map[string][]string{"a": {"b c"}}, Body: map[string]string{"title": "T"}})
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != 200 || string(a.Body) != `{"ok":true}` {
		t.Fatalf("answer %d %q", a.Status, a.Body)
	}
	if got.URL.Path != "/api/items/" || got.URL.Query().Get("a") != "b c" {
		t.Errorf("sent to %s", got.URL)
	}
	if got.Header.Get("X-Api-Key") != "k1" || got.Header.Get("X-Version") != "3" || got.Header.Get("Accept") != "application/json" || got.Header.Get("Content-Type") != "application/json" {
		t.Errorf("headers %v", got.Header)
	}
	if body != `{"title":"T"}` {
		t.Errorf("body %q", body)
	}
}

func TestDoMapsEveryStatusOntoThePortsErrors(t *testing.T) {
	cases := []struct {
		status int
		header http.Header
		want   error
	}{
		{200, nil, nil},
		{201, nil, nil},
		{204, nil, nil},
		{301, http.Header{"Location": {"/elsewhere"}}, tracker.ErrRefused},
		{400, nil, tracker.ErrRefused},
		{401, nil, tracker.ErrUnauthorized},
		{403, nil, tracker.ErrUnauthorized},
		{403, http.Header{"X-Ratelimit-Remaining": {"0"}}, tracker.ErrRateLimited},
		{404, nil, tracker.ErrNotFound},
		{410, nil, tracker.ErrNotFound},
		{412, nil, tracker.ErrRefused},
		{422, nil, tracker.ErrRefused},
		{429, nil, tracker.ErrRateLimited},
		{500, nil, tracker.ErrUnavailable},
		{503, nil, tracker.ErrUnavailable},
	}
	for _, tc := range cases {
		c := client(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			for k, v := range tc.header {
				w.Header()[k] = v
			}
			w.WriteHeader(tc.status)
			_, _ = io.WriteString(w, `{"message":"because"}`)
		}), trackerhttp.Config{})
		a, err := c.Do(context.Background(), trackerhttp.Request{Method: http.MethodGet, Path: "x"})
		if tc.want == nil {
			if err != nil {
				t.Errorf("%d: %v, want nil", tc.status, err)
			}
			continue
		}
		if !errors.Is(err, tc.want) {
			t.Errorf("%d: %v, want %v", tc.status, err, tc.want)
		}
		if a.Status != tc.status {
			t.Errorf("%d: the answer came back as %d", tc.status, a.Status)
		}
		if !strings.Contains(err.Error(), "because") || !strings.HasPrefix(err.Error(), "test: GET x: ") {
			t.Errorf("%d: the error %q names neither the request nor the tracker's reason", tc.status, err)
		}
	}
}

func TestClassifyOverridesTheDefaultMapping(t *testing.T) {
	c := client(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusPreconditionFailed) }),
		trackerhttp.Config{Classify: func(a trackerhttp.Answer, def error) error {
			if a.Status == http.StatusPreconditionFailed {
				return tracker.ErrNotFound
			}
			return def
		}})
	if _, err := c.Do(context.Background(), trackerhttp.Request{Method: http.MethodGet, Path: "x"}); !errors.Is(err, tracker.ErrNotFound) {
		t.Fatalf("%v, want the override's ErrNotFound", err)
	}
}

func TestRateWaitReadsRetryAfterThenTheReset(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		h    http.Header
		want time.Duration
	}{
		{http.Header{}, time.Minute},
		{http.Header{"Retry-After": {"7"}}, 7 * time.Second},
		{http.Header{"Retry-After": {"-3"}}, 0},
		{http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second},
		{http.Header{"Retry-After": {"soon"}}, time.Minute},
		{http.Header{"Retry-After": {"999999"}}, time.Minute},
		{http.Header{"X-Ratelimit-Reset": {"1796212830"}}, 30 * time.Second},
		{http.Header{"X-Ratelimit-Reset": {"1796212800"}}, time.Second},
		{http.Header{"X-Ratelimit-Reset": {"garbage"}}, time.Minute},
	}
	if got := time.Unix(1796212800, 0); !got.Equal(now) {
		t.Fatalf("the test's clock is %s, not %s", got.UTC(), now)
	}
	for _, tc := range cases {
		if got := trackerhttp.RateWait(tc.h, time.Minute, now); got != tc.want {
			t.Errorf("RateWait(%v) = %s, want %s", tc.h, got, tc.want)
		}
	}
}

func TestAnAnswerOverTheCapIsUnavailable(t *testing.T) {
	c := client(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("x", 2048))
	}), trackerhttp.Config{MaxResponse: 1024})
	_, err := c.Do(context.Background(), trackerhttp.Request{Method: http.MethodGet, Path: "x"})
	if !errors.Is(err, tracker.ErrUnavailable) || !errors.Is(err, trackerhttp.ErrTooLarge) {
		t.Fatalf("%v, want ErrUnavailable and ErrTooLarge", err)
	}
}

func TestARefusedConnectionIsUnavailableAndADoneContextNotSent(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close() // a closed port on 127.0.0.1
	c, err := trackerhttp.New(trackerhttp.Config{Name: "test", BaseURL: base})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(context.Background(), trackerhttp.Request{Method: http.MethodGet, Path: "/x"}); !errors.Is(err, tracker.ErrUnavailable) || errors.Is(err, tracker.ErrNotSent) {
		t.Fatalf("refused: %v, want ErrUnavailable, not ErrNotSent", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.Do(ctx, trackerhttp.Request{Method: http.MethodGet, Path: "/x"})
	if !errors.Is(err, tracker.ErrNotSent) || !errors.Is(err, context.Canceled) {
		t.Fatalf("done context: %v, want ErrNotSent wrapping context.Canceled", err)
	}
}

func TestConditionalGETsAnswerTheKeptAnswerOn304(t *testing.T) {
	var served, notModified atomic.Int64
	c := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-None-Match") == `"v1"` {
			notModified.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		served.Add(1)
		w.Header().Set("ETag", `"v1"`)
		_, _ = io.WriteString(w, `[1,2,3]`)
	}), trackerhttp.Config{})
	req := trackerhttp.Request{Method: http.MethodGet, Path: "list", Conditional: true}
	var freed atomic.Int64
	ctx := tracker.WithFree(context.Background(), func() { freed.Add(1) })
	first, err := c.Do(ctx, req)
	if err != nil || first.NotModified || string(first.Body) != `[1,2,3]` {
		t.Fatalf("first: %+v %v", first, err)
	}
	if freed.Load() != 0 {
		t.Fatal("a 200 was given back as free")
	}
	again, err := c.Do(ctx, req)
	if err != nil || !again.NotModified || string(again.Body) != `[1,2,3]` || again.Status != http.StatusOK {
		t.Fatalf("second: %+v %v, want the kept answer, NotModified", again, err)
	}
	if freed.Load() != 1 {
		t.Fatalf("the 304 was given back %d times, want once", freed.Load())
	}
	if served.Load() != 1 || notModified.Load() != 1 {
		t.Fatalf("served %d, not modified %d", served.Load(), notModified.Load())
	}
	// A GET that is not conditional sends no validators.
	if _, err := c.Do(context.Background(), trackerhttp.Request{Method: http.MethodGet, Path: "list"}); err != nil || served.Load() != 2 {
		t.Fatalf("plain GET: %v, served %d", err, served.Load())
	}
}

// gate counts its slots and what each request said as it left.
type gate struct {
	entered, reached, answered atomic.Int64
	refuse                     error
}

func (g *gate) Enter(_ context.Context, _ string) (func(bool, int), error) {
	if g.refuse != nil {
		return nil, g.refuse
	}
	g.entered.Add(1)
	return func(reached bool, status int) {
		if reached {
			g.reached.Add(1)
		}
		if status != 0 {
			g.answered.Add(1)
		}
	}, nil
}

func TestTheGateIsEnteredAndToldWhatReachedTheServer(t *testing.T) {
	g := &gate{}
	c := client(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) }), trackerhttp.Config{Gate: g})
	if _, err := c.Do(context.Background(), trackerhttp.Request{Method: http.MethodPut, Path: "x", Body: 1}); err != nil {
		t.Fatal(err)
	}
	if g.entered.Load() != 1 || g.reached.Load() != 1 || g.answered.Load() != 1 {
		t.Fatalf("entered %d reached %d answered %d", g.entered.Load(), g.reached.Load(), g.answered.Load())
	}
	g.refuse = tracker.NotSent(context.DeadlineExceeded)
	if _, err := c.Do(context.Background(), trackerhttp.Request{Method: http.MethodPut, Path: "x", Body: 1}); !errors.Is(err, tracker.ErrNotSent) {
		t.Fatalf("a gate that refuses: %v, want its error", err)
	}
}

func TestVerifySHA256(t *testing.T) {
	body := []byte(`{"a":1}`)
	sig := trackerhttp.SignSHA256("s3cret", body)
	if !trackerhttp.VerifySHA256("s3cret", "", sig, body) || !trackerhttp.VerifySHA256("s3cret", "sha256=", "sha256="+sig, body) {
		t.Fatal("a good signature does not verify")
	}
	for name, ok := range map[string]bool{
		"empty secret":  trackerhttp.VerifySHA256("", "", sig, body),
		"other secret":  trackerhttp.VerifySHA256("other", "", sig, body),
		"other body":    trackerhttp.VerifySHA256("s3cret", "", sig, []byte(`{"a":2}`)),
		"no prefix":     trackerhttp.VerifySHA256("s3cret", "sha256=", sig, body),
		"not hex":       trackerhttp.VerifySHA256("s3cret", "", "zz"+sig[2:], body),
		"cut":           trackerhttp.VerifySHA256("s3cret", "", sig[:10], body),
		"empty":         trackerhttp.VerifySHA256("s3cret", "", "", body),
		"upper is same": !trackerhttp.VerifySHA256("s3cret", "", strings.ToUpper(sig), body),
	} {
		if ok {
			t.Errorf("%s verifies", name)
		}
	}
}

func TestAnAbsoluteURLMustBeOnTheBaseURLsHost(t *testing.T) {
	var got string
	c := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.String()
		_, _ = io.WriteString(w, "[]")
	}), trackerhttp.Config{AuthValue: "Bearer secret"})
	base := c.BaseURL()
	if _, err := c.Do(context.Background(), trackerhttp.Request{Method: http.MethodGet, URL: base + "repositories/7/issues?page=2"}); err != nil {
		t.Fatal(err)
	}
	if got != "/api/repositories/7/issues?page=2" {
		t.Fatalf("sent to %s", got)
	}
	for _, u := range []string{"http://127.0.0.1:1/elsewhere", "https" + strings.TrimPrefix(base, "http"), "http://user:pw@" + strings.TrimPrefix(base, "http://")} {
		if _, err := c.Do(context.Background(), trackerhttp.Request{Method: http.MethodGet, URL: u}); !errors.Is(err, tracker.ErrRefused) || !tracker.CertainlyNotTaken(err) {
			t.Errorf("%s: %v, want refused unsent", u, err)
		}
	}
}

func TestTheBudgetAdmitsEveryRequestAndHearsTheTrackersLimit(t *testing.T) {
	var served atomic.Int64
	c := client(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		served.Add(1)
		w.Header().Set("X-Ratelimit-Remaining", "41")
		w.Header().Set("X-Ratelimit-Reset", "1796212800")
		_, _ = io.WriteString(w, "{}")
	}), trackerhttp.Config{})
	var remaining int
	var reset time.Time
	refuse := error(nil)
	ctx := tracker.WithAdmit(context.Background(), func() error { return refuse },
		func(n int, at time.Time) { remaining, reset = n, at })
	if _, err := c.Do(ctx, trackerhttp.Request{Method: http.MethodGet, Path: "x"}); err != nil {
		t.Fatal(err)
	}
	if remaining != 41 || !reset.Equal(time.Unix(1796212800, 0)) {
		t.Fatalf("the budget heard %d until %s", remaining, reset)
	}
	refuse = tracker.NotSent(tracker.RateLimited(time.Minute))
	if _, err := c.Do(ctx, trackerhttp.Request{Method: http.MethodPost, Path: "x", Body: 1}); !errors.Is(err, tracker.ErrRateLimited) || served.Load() != 1 {
		t.Fatalf("%v after %d served, want the budget's refusal, unsent", err, served.Load())
	}
}
