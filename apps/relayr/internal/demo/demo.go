// Package demo tells relayr's story on loopback with no tracker installed:
// the Plane emulation from fixtures, a SQLite ledger in a temporary folder,
// and the service with short intervals. Each step checks what it shows.
package demo

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/relayr-go/relayr/adapters/httpapi"
	"github.com/relayr-go/relayr/apps/relayr/internal/app"
	"github.com/relayr-go/relayr/apps/relayr/internal/config"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/planeemu"
)

const (
	tenant    = "acme"
	workspace = "ops"
	key       = "ci/build-42"
	run       = "run-42"
)

// Run runs the demo, printing what happens to out. It answers an error
// naming the first step that did not hold.
func Run(ctx context.Context, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	start := time.Now()
	d, err := setUp(ctx, out)
	if err != nil {
		return err
	}
	defer d.close()

	steps := []struct {
		title string
		fn    func(context.Context) error
	}{
		{"Three concurrent attempts to file one key make one item", d.fileOnce},
		{"A person closes it in Plane; the event arrives in the run's chain", d.personCloses},
		{"relayr's own edit is not echoed back", d.ownEditNotEchoed},
		{"A loop is stopped at the cap of 20 writes an hour", d.loopStopped},
	}
	for i, s := range steps {
		fmt.Fprintf(out, "\n%d. %s\n", i+1, s.title)
		if err := s.fn(ctx); err != nil {
			fmt.Fprintf(out, "   FAILED: %v (Plane answered %d requests, sent %d webhooks; follower stopped: %v)\n",
				err, d.plane.Total(), len(d.plane.Deliveries()), d.app.Followers.Stopped(tenant, workspace))
			return fmt.Errorf("step %d (%s): %w", i+1, s.title, err)
		}
	}
	fmt.Fprintf(out, "\nEvery step held, in %.1f s. Plane answered %d requests in all.\n", time.Since(start).Seconds(), d.plane.Total())
	return nil
}

type demo struct {
	out    io.Writer
	plane  *planeemu.Server
	planeS *httptest.Server
	app    *app.App
	base   string
	dir    string
	stop   context.CancelFunc
	done   chan error
	itemID string
	after  int64
	// token is the tenant's token, drawn for this run.
	token string
}

func setUp(ctx context.Context, out io.Writer) (*demo, error) {
	dir, err := os.MkdirTemp("", "relayr-demo-")
	if err != nil {
		return nil, err
	}
	var tok [32]byte
	_, _ = rand.Read(tok[:])
	d := &demo{out: out, dir: dir, token: hex.EncodeToString(tok[:])}
	d.plane = planeemu.New(planeemu.Options{Now: time.Now, RateLimit: -1})
	d.planeS = httptest.NewServer(d.plane)

	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	d.base = "http://" + ln.Addr().String()
	// Plane's webhooks reach relayr's webhook route, as a deployment's would.
	hook := d.base + "/relayr/v1/trackers/" + tenant + "/plane"
	d.plane.OnDelivery(func(dl planeemu.Delivery) {
		go func() {
			req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodPost, hook, bytes.NewReader(dl.Body))
			if err != nil {
				return
			}
			req.Header = dl.Header.Clone()
			if res, err := http.DefaultClient.Do(req); err == nil {
				_ = res.Body.Close()
			}
		}()
	})

	c := &config.Config{
		Listen: ln.Addr().String(),
		Ledger: config.Ledger{Driver: "sqlite", Path: filepath.Join(dir, "relayr.db")},
		Timings: config.Timings{
			Poll: dur(time.Second), Debounce: dur(200 * time.Millisecond), Lease: dur(3 * time.Second),
			ShutdownGrace: dur(2 * time.Second),
		},
		Tenants: []config.Tenant{{Name: tenant}},
		Bindings: []config.Binding{{
			Tenant: tenant, Workspace: workspace, Tracker: "plane", BaseURL: d.planeS.URL,
			PlaneWorkspace: d.plane.Workspace, Project: d.plane.Project, Identifier: d.plane.Identifier,
		}},
		Dir: dir,
	}
	secrets := &config.Secrets{
		Tokens:   map[string]string{d.token: tenant},
		Trackers: tracker.StaticCredentials{tenant + "/plane": {Token: d.plane.Bot.Key, WebhookSecret: planeSecret}},
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d.app, err = app.New(ctx, c, secrets, app.Options{Logger: log})
	if err != nil {
		return nil, err
	}
	runCtx, stop := context.WithCancel(ctx)
	d.stop, d.done = stop, make(chan error, 1)
	go func() { d.done <- d.app.Run(runCtx, ln) }()
	fmt.Fprintf(out, "relayr demo: Plane emulation at %s, relayr at %s, SQLite ledger in %s\n", d.planeS.URL, d.base, dir)
	fmt.Fprintf(out, "A run (%s) files the failure of build 42 under the key %q; a person works in Plane.\n", run, key)
	return d, d.waitReady(ctx)
}

// planeSecret is the emulation's default webhook secret.
const planeSecret = "plane_wh_0123456789abcdef0123456789abcdef"

func dur(d time.Duration) config.Duration { return config.Duration{Duration: d} }

func (d *demo) close() {
	d.stop()
	if err := <-d.done; err != nil {
		fmt.Fprintf(d.out, "relayr stopped with an error: %v\n", err)
	}
	d.app.Close()
	d.planeS.Close()
	_ = os.RemoveAll(d.dir)
}

func (d *demo) waitReady(ctx context.Context) error {
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.base+"/readyz", nil)
		if err != nil {
			return err
		}
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = res.Body.Close()
			if res.StatusCode == 200 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return errors.New("relayr never became ready")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (d *demo) call(ctx context.Context, path string, body, out any) (int, string, error) {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.base+"/relayr/v1/tenants/"+tenant+"/workspaces/"+workspace+path, bytes.NewReader(b))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+d.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = res.Body.Close() }()
	rb, _ := io.ReadAll(res.Body)
	if res.StatusCode/100 != 2 {
		var e struct {
			Error struct{ Code string } `json:"error"`
		}
		_ = json.Unmarshal(rb, &e)
		return res.StatusCode, e.Error.Code, nil
	}
	return res.StatusCode, "", json.Unmarshal(rb, out)
}

func (d *demo) fileOnce(ctx context.Context) error {
	before := d.plane.Total()
	var wg sync.WaitGroup
	results := make([]string, 3)
	ids := make([]string, 3)
	for i := range 3 {
		wg.Go(func() {
			for attempt := 1; ; attempt++ {
				var r httpapi.ItemResponse
				status, code, err := d.call(ctx, "/items/ensure", httpapi.EnsureRequest{Key: key, Title: "Build 42 failed", Labels: []string{"ci"}, Correlation: run}, &r)
				switch {
				case err != nil:
					results[i] = err.Error()
					return
				case code == "tracker_claimed" && attempt < 50:
					time.Sleep(50 * time.Millisecond) // another attempt holds the claim: retry, as a run would
					continue
				case code != "":
					results[i] = fmt.Sprintf("%d %s", status, code)
					return
				}
				results[i] = fmt.Sprintf("%s %s (%s) after %d attempt(s)", r.How, r.Item.Name, r.Item.ID, attempt)
				ids[i] = r.Item.ID
				return
			}
		})
	}
	wg.Wait()
	for i, r := range results {
		fmt.Fprintf(d.out, "   attempt %d: %s\n", i+1, r)
	}
	if ids[0] == "" || ids[0] != ids[1] || ids[1] != ids[2] {
		return fmt.Errorf("the attempts answered %v", ids)
	}
	d.itemID = ids[0]
	creates := d.plane.Count("POST", "work-items")
	fmt.Fprintf(d.out, "   Plane holds one item: %d create request(s), %d requests for the three attempts\n", creates, d.plane.Total()-before)
	if creates != 1 {
		return fmt.Errorf("%d creates reached Plane", creates)
	}
	return nil
}

// next waits for the workspace's next event of the given type.
func (d *demo) next(ctx context.Context, types ...string) (eventlog.Event, error) {
	for {
		var f httpapi.FeedResponse
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/relayr/v1/tenants/%s/workspaces/%s/events?after=%d&wait=10s", d.base, tenant, workspace, d.after), nil)
		req.Header.Set("Authorization", "Bearer "+d.token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return eventlog.Event{}, err
		}
		err = json.NewDecoder(res.Body).Decode(&f)
		_ = res.Body.Close()
		if err != nil {
			return eventlog.Event{}, err
		}
		if len(f.Events) == 0 {
			return eventlog.Event{}, errors.New("no event arrived within 10 s")
		}
		for _, e := range f.Events {
			d.after = e.Seq
			for _, t := range types {
				if e.Type == t {
					return e, nil
				}
			}
			return e, fmt.Errorf("an unexpected event came first: %s %s", e.Type, e.Data)
		}
	}
}

func (d *demo) personCloses(ctx context.Context) error {
	// Changes are level-triggered (ADR-0036): a change made before relayr
	// first reads the item back is part of what it first sees. Wait for
	// that first read, as a person a second later would.
	for {
		if _, err := d.app.Store.Snapshot(ctx, tenant, workspace, d.itemID); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return errors.New("relayr never read the item back")
		case <-time.After(50 * time.Millisecond):
		}
	}
	fmt.Fprintln(d.out, "   relayr has read the item back once (its snapshot)")
	before := d.plane.Total()
	t0 := time.Now()
	if err := d.plane.SetState(d.itemID, "Done"); err != nil {
		return err
	}
	fmt.Fprintln(d.out, "   the person moves the item to Done in Plane; Plane's webhook nudges relayr")
	e, err := d.next(ctx, "tracker:item_changed")
	if err != nil {
		return err
	}
	var data struct {
		Field string          `json:"field"`
		New   json.RawMessage `json:"new"`
	}
	_ = json.Unmarshal(e.Data, &data)
	fmt.Fprintf(d.out, "   event %s #%d %s field=%s new=%s correlation=%s, %d ms after the change, %d Plane requests\n",
		e.ID, e.Seq, e.Type, data.Field, data.New, e.Correlation, time.Since(t0).Milliseconds(), d.plane.Total()-before)
	if data.Field != tracker.FieldState || !strings.Contains(string(data.New), "done") {
		return fmt.Errorf("the event says %s=%s", data.Field, data.New)
	}
	if e.Correlation != run {
		return fmt.Errorf("the event is in chain %q, not the run's %q", e.Correlation, run)
	}
	return nil
}

func (d *demo) ownEditNotEchoed(ctx context.Context) error {
	title := "Build 42 failed: flaky test quarantined"
	var r httpapi.ItemResponse
	if _, code, err := d.call(ctx, "/items/update", httpapi.UpdateRequest{Key: key, Title: &title, Correlation: run}, &r); err != nil || code != "" {
		return fmt.Errorf("the edit: %w %s", err, code)
	}
	fmt.Fprintf(d.out, "   relayr retitles %s; Plane's webhook for that edit nudges relayr too\n", r.Item.Name)
	// Let the edit's nudge and poll pass, then have the person comment: the
	// comment's event must be the next one, with no echo of the title
	// before it.
	time.Sleep(1500 * time.Millisecond)
	if _, err := d.plane.Comment(d.itemID, "<p>Looks fixed to me</p>"); err != nil {
		return err
	}
	e, err := d.next(ctx, "tracker:item_commented")
	if err != nil {
		return fmt.Errorf("relayr's own edit came back, or nothing came: %w", err)
	}
	fmt.Fprintf(d.out, "   next event: %s %s (the person's comment); relayr's title was dropped as an echo\n", e.ID, e.Type)
	return nil
}

func (d *demo) loopStopped(ctx context.Context) error {
	fmt.Fprintln(d.out, "   a rule answers every change with a write to the same item…")
	for i := 1; i <= 25; i++ {
		title := fmt.Sprintf("Build 42 failed (rule write %d)", i)
		var r httpapi.ItemResponse
		status, code, err := d.call(ctx, "/items/update", httpapi.UpdateRequest{Key: key, Title: &title, Correlation: run}, &r)
		if err != nil {
			return err
		}
		if code == "tracker_loop" {
			// The create, the demo's edit and the rule's writes: 20 in the hour.
			fmt.Fprintf(d.out, "   write %d answered %d tracker_loop: 20 writes to the item within the hour (the filing, one edit and %d rule writes); nothing more is sent\n", i, status, i-1)
			if i-1 != 18 {
				return fmt.Errorf("the cap came after %d rule writes, want 18", i-1)
			}
			return nil
		}
		if code != "" {
			return fmt.Errorf("write %d: %d %s", i, status, code)
		}
	}
	return errors.New("no loop was stopped")
}
