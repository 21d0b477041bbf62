package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/relayr-go/relayr/adapters/httpapi"
	"github.com/relayr-go/relayr/adapters/webhook"
	"github.com/relayr-go/relayr/apps/relayr/internal/app"
	"github.com/relayr-go/relayr/apps/relayr/internal/config"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/follow"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/planeemu"
)

const (
	tenant    = "acme"
	workspace = "ops"
	subName   = "rules"
	opToken   = "operator-token-0123456789abcdef0123456789abcdef"
	tenantTok = "tenant-token-0123456789abcdef0123456789abcdef01"
	// planeSecret is the emulation's default webhook secret.
	planeSecret = "plane_wh_0123456789abcdef0123456789abcdef"
)

// chromium finds Debian's chromium. Without one the tests skip, or fail
// under RELAYR_REQUIRE_BROWSER=1.
func chromium(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("RELAYR_CHROMIUM"), "/usr/bin/chromium", "chromium"} {
		if p == "" {
			continue
		}
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("RELAYR_REQUIRE_BROWSER") == "1" {
		t.Fatal("RELAYR_REQUIRE_BROWSER=1 and no chromium is installed (apt-get install -y chromium)")
	}
	t.Skip("no chromium installed; set RELAYR_REQUIRE_BROWSER=1 to fail instead")
	return ""
}

// subscriber is the subscription's endpoint: it takes every POST and counts
// each event id it was given.
type subscriber struct {
	mu  sync.Mutex
	ids map[string]int
}

func (s *subscriber) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	s.mu.Lock()
	s.ids[r.Header.Get(webhook.IdempotencyKeyHeader)]++
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (s *subscriber) count(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids[id]
}

// service is relayr as the demo runs it, on a fake clock.
type service struct {
	t     *testing.T
	clk   *clock.Fake
	plane *planeemu.Server
	app   *app.App
	base  string
	sub   *subscriber
}

func start(t *testing.T) *service {
	t.Helper()
	dir := t.TempDir()
	clk := clock.NewFake(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	s := &service{t: t, clk: clk, sub: &subscriber{ids: map[string]int{}}}
	s.plane = planeemu.New(planeemu.Options{Now: clk.Now, RateLimit: -1})
	planeS := httptest.NewServer(s.plane)
	t.Cleanup(planeS.Close)
	subS := httptest.NewServer(s.sub)
	t.Cleanup(subS.Close)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.base = "http://" + ln.Addr().String()
	c := &config.Config{
		Listen: ln.Addr().String(),
		Holder: "relayr-1",
		Ledger: config.Ledger{Driver: "sqlite", Path: filepath.Join(dir, "relayr.db")},
		Timings: config.Timings{
			// The sweep stays out of the way: polls are what these tests read.
			SweepMin: config.Duration{Duration: 24 * time.Hour}, ShutdownGrace: config.Duration{Duration: 2 * time.Second},
		},
		Tenants: []config.Tenant{{Name: tenant}},
		Bindings: []config.Binding{{
			Tenant: tenant, Workspace: workspace, Tracker: "plane", BaseURL: planeS.URL,
			PlaneWorkspace: s.plane.Workspace, Project: s.plane.Project, Identifier: s.plane.Identifier,
		}},
		Subscriptions: []config.Subscription{{Tenant: tenant, Workspace: workspace, Name: subName, URL: subS.URL}},
		Dir:           dir,
	}
	secrets := &config.Secrets{
		OperatorToken: opToken,
		Tokens:        map[string]string{tenantTok: tenant},
		Trackers:      tracker.StaticCredentials{tenant + "/plane": {Token: s.plane.Bot.Key, WebhookSecret: planeSecret}},
		Subscriptions: map[string]string{tenant + "/" + workspace + "/" + subName: "subscriber-secret"},
	}
	s.app, err = app.New(t.Context(), c, secrets, app.Options{
		Clock: clk, Logger: slog.New(slog.DiscardHandler), UIRefresh: 150 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.app.Run(ctx, ln) }()
	t.Cleanup(func() {
		stop()
		// The shutdown grace is on the fake clock too.
		go func() {
			for range 100 {
				clk.Advance(time.Second)
				time.Sleep(5 * time.Millisecond)
			}
		}()
		if err := <-done; err != nil {
			t.Errorf("relayr stopped with %v", err)
		}
		s.app.Close()
	})
	s.drive("the follower's first read", func() bool {
		cur, err := s.app.Store.Cursor(t.Context(), s.trackerFollower())
		return err == nil && cur.Seeded
	})
	return s
}

func (s *service) trackerFollower() ledger.Follower {
	return ledger.Follower{Kind: ledger.TrackerFollower, Tenant: tenant, Workspace: workspace, Name: "plane"}
}

// drive moves the fake clock a second at a time until cond holds: the
// followers poll, renew and deliver on it, so the service moves only as far
// as the test drives it. It fails after 20 s of real time.
func (s *service) drive(what string, cond func() bool) {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			s.t.Fatalf("%s never came (fake clock at %s)", what, s.clk.Now().Format(time.TimeOnly))
		}
		s.clk.Advance(time.Second)
		time.Sleep(5 * time.Millisecond) // the followers' goroutines act on what fired
	}
}

// ensure files an item once by key through the API, as a run would.
func (s *service) ensure(key, title, correlation string) string {
	s.t.Helper()
	body, _ := json.Marshal(httpapi.EnsureRequest{Key: key, Title: title, Correlation: correlation})
	req, _ := http.NewRequestWithContext(s.t.Context(), http.MethodPost, s.base+"/relayr/v1/tenants/"+tenant+"/workspaces/"+workspace+"/items/ensure", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tenantTok)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	var r httpapi.ItemResponse
	if err := json.NewDecoder(res.Body).Decode(&r); err != nil || res.StatusCode/100 != 2 {
		s.t.Fatalf("ensure answered %d (%v)", res.StatusCode, err)
	}
	return r.Item.ID
}

// browse starts headless Chromium: nothing is downloaded, no profile is
// kept.
func browse(t *testing.T, exe string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-component-update", true), chromedp.Flag("no-pings", true),
		chromedp.Flag("hide-scrollbars", true), chromedp.WindowSize(1280, 900),
	)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(cancelCtx)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// step runs browser actions within 15 s.
func step(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := chromedp.Do(sctx, actions...); err != nil {
		// Say where the browser is and what it shows.
		lctx, lcancel := context.WithTimeout(ctx, 5*time.Second)
		defer lcancel()
		where, _ := chromedp.Run(lctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText.slice(0, 2000)`))
		t.Fatalf("%s: %v; the browser shows %s", what, err, where)
	}
}

// navigate runs actions that navigate (a form's submit, a button's
// click), waits for the page they lead to, and answers its status.
func navigate(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) int {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	res, err := chromedp.RunResponse(sctx, actions...)
	if err != nil || res == nil {
		t.Fatalf("%s: %v", what, err)
	}
	return int(res.Status)
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	v, err := chromedp.Run(sctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluating %.60s: %v", js, err)
	}
	return v
}

func TestOperatorPage(t *testing.T) {
	exe := chromium(t)
	s := start(t)
	ctx := browse(t, exe)

	t.Run("SignIn", func(t *testing.T) {
		step(t, ctx, "the sign-in page",
			chromedp.Navigate(s.base+"/relayr/ui/"),
			chromedp.WaitVisible(chromedp.CSS("#token")),
		)
		// A wrong token gets the 401 page, and no session.
		if status := navigate(t, ctx, "a wrong token", chromedp.SendKeys(chromedp.CSS("#token"), "not-the-token"),
			chromedp.Submit(chromedp.CSS("#token"))); status != http.StatusUnauthorized {
			t.Fatalf("a wrong token answered %d", status)
		}
		if status := navigate(t, ctx, "signing in", chromedp.SendKeys(chromedp.CSS("#token"), opToken),
			chromedp.Submit(chromedp.CSS("#token"))); status != http.StatusOK {
			t.Fatalf("signing in answered %d", status)
		}
		step(t, ctx, "the page", chromedp.WaitVisible(chromedp.CSS(`tr.binding[data-binding="acme/ops"]`)))
		if got := eval[string](t, ctx, `document.cookie`); got != "" {
			t.Fatalf("the session cookie is readable by script: %q", got)
		}
	})

	t.Run("AnEventAppearsAfterAPersonsChange", func(t *testing.T) {
		id := s.ensure("ci/build-42", "Build 42 failed", "run-42")
		s.drive("relayr's read back of the item", func() bool {
			_, err := s.app.Store.Snapshot(t.Context(), tenant, workspace, id)
			return err == nil
		})
		// The page refreshes itself, in place: a mark set on the
		// window survives the refresh.
		eval[bool](t, ctx, `window.__stayed = true`)
		if err := s.plane.SetState(id, "Done"); err != nil {
			t.Fatal(err)
		}
		s.drive("the person's change in the log", func() bool {
			evs, _ := s.app.Store.LatestEvents(t.Context(), ledger.EventQuery{Tenant: tenant, Workspace: workspace, Type: follow.TypeItemChanged, Limit: 1})
			return len(evs) == 1
		})
		sel := `table.events tr.event[data-type="tracker:item_changed"]`
		step(t, ctx, "the event on the page", chromedp.WaitVisible(chromedp.CSS(sel)))
		row := eval[string](t, ctx, `document.querySelector('`+sel+`').innerText`)
		for _, want := range []string{"OPS-1", "state", "done", "run-42"} {
			if !strings.Contains(strings.ToLower(row), strings.ToLower(want)) {
				t.Errorf("the event's row %q lacks %q", row, want)
			}
		}
		if !eval[bool](t, ctx, `window.__stayed === true`) {
			t.Fatal("the page reloaded rather than refreshing its sections")
		}
	})

	t.Run("ReplayADeadLetterOnce", func(t *testing.T) {
		// An event the subscription's follower dead-lettered, never
		// delivered.
		e := eventlog.Event{ID: eventlog.DeriveID("browser", "dead"), Seq: 99, Tenant: tenant, Workspace: workspace,
			Type: follow.TypeItemChanged, Correlation: "run-7", Data: json.RawMessage(`{"field":"state"}`), At: s.clk.Now()}
		raw, _ := json.Marshal(e)
		f := ledger.Follower{Kind: ledger.LogFollower, Tenant: tenant, Workspace: workspace, Name: subName}
		if _, err := s.app.Store.DeadLetter(t.Context(), ledger.DeadLetter{Follower: f, ID: "99", Seq: 99, Event: raw,
			Reason: "projection failed: the rule refused it", At: s.clk.Now()}); err != nil {
			t.Fatal(err)
		}
		row := `tr.dead-letter[data-id="99"]`
		step(t, ctx, "the dead letter on the page", chromedp.WaitVisible(chromedp.CSS(row+` button.replay`)))
		// Keep the form as it was, to send it again after the click.
		eval[bool](t, ctx, `(() => { const p = new URLSearchParams(new FormData(document.querySelector('`+row+` form')));
			p.set('action', 'replay'); sessionStorage.setItem('replay', p.toString()); return true })()`)
		if status := navigate(t, ctx, "replaying", chromedp.Click(chromedp.CSS(row+` button.replay`))); status != http.StatusOK {
			t.Fatalf("the replay answered %d", status)
		}
		step(t, ctx, "the replay on the page", chromedp.WaitVisible(chromedp.CSS(row+`[data-resolution="replayed"]`)))
		if n := s.sub.count(e.ID); n != 1 {
			t.Fatalf("the subscriber took the replayed event %d times", n)
		}
		// A second click of the same form changes nothing.
		status := eval[int](t, ctx, `fetch('/relayr/ui/dead-letters', {method: 'POST', credentials: 'same-origin',
			headers: {'Content-Type': 'application/x-www-form-urlencoded'}, body: sessionStorage.getItem('replay')}).then(r => r.status)`)
		if status != http.StatusOK {
			t.Fatalf("the second click answered %d", status)
		}
		list, err := s.app.Store.DeadLetters(t.Context(), f)
		if err != nil || len(list) != 1 || list[0].Resolution != ledger.Replayed {
			t.Fatalf("dead letters %+v %v", list, err)
		}
		if n := s.sub.count(e.ID); n != 1 {
			t.Fatalf("after a second click the subscriber took the event %d times", n)
		}
	})

	t.Run("LagTurnsRedWhenTheFollowerStarves", func(t *testing.T) {
		if eval[bool](t, ctx, `document.querySelector('td.lag.late') !== null`) {
			t.Fatal("the binding is late while its follower polls")
		}
		// Plane answers nothing but 503 from now on: no poll completes.
		s.plane.FailNext(1<<20, http.StatusServiceUnavailable, "down")
		s.drive("the binding late in the status", func() bool {
			bs, _ := s.app.Followers.Status(t.Context())
			return len(bs) == 1 && bs[0].Late
		})
		step(t, ctx, "the lag red on the page", chromedp.WaitVisible(chromedp.CSS(`tr.binding[data-binding="acme/ops"] td.lag.late`)))
		color := eval[string](t, ctx, `getComputedStyle(document.querySelector('td.lag.late')).backgroundColor`)
		if color != "rgb(176, 0, 32)" {
			t.Fatalf("the late lag's background is %s, not red", color)
		}
		screenshots(t, ctx)
	})
}

// screenshots saves the page at a laptop's width and a phone's when
// RELAYR_UI_SCREENSHOTS names a folder.
func screenshots(t *testing.T, ctx context.Context) {
	dir := os.Getenv("RELAYR_UI_SCREENSHOTS")
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct {
		name          string
		width, height int64
		mobile        bool
	}{{"laptop", 1280, 900, false}, {"phone", 390, 844, true}} {
		opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(1)}
		if v.mobile {
			opts = append(opts, chromedp.EmulateMobile)
		}
		step(t, ctx, "the "+v.name+" viewport", chromedp.EmulateViewport(v.width, v.height, opts...),
			chromedp.WaitVisible(chromedp.CSS(`td.lag.late`)))
		eval[bool](t, ctx, `(() => { window.scrollTo(0, 0); return true })()`)
		sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		png, err := chromedp.Run(sctx, chromedp.CaptureScreenshot())
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, fmt.Sprintf("operator-%s.png", v.name))
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("saved %s (%d KB)", path, len(png)/1024)
	}
}
