package figures

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/httpapi"
	"github.com/relayr-go/relayr/apps/relayr/internal/app"
	"github.com/relayr-go/relayr/apps/relayr/internal/chaos"
	"github.com/relayr-go/relayr/apps/relayr/internal/config"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/follow"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/planeemu"
	"github.com/relayr-go/relayr/fixtures/vikunjaemu"
)

// The one tenant and workspace every figure files for.
const (
	tenant        = "acme"
	workspace     = "ops"
	token         = "figures-token-of-acme-0123456789abcdef"
	webhookSecret = "figures-webhook-secret-0123456789abcdef"
	// label is on every filing, relayr's and the direct ones, as a run's
	// filing carries one.
	label = "ci"
)

// emulation is one emulated tracker as the figures drive it: served on
// 127.0.0.1, its requests counted, a person acting in it server-side.
type emulation interface {
	// Name is the tracker's name in benchmark names ("Plane").
	Name() string
	Binding() config.Binding
	Credentials() tracker.Credentials
	// Requests is how many requests reached the emulation since the last
	// ResetRequests.
	Requests() int
	ResetRequests()
	PersonCreate(title string) (id string, err error)
	PersonRetitle(id, title string) error
	PersonComment(id, text string) error
	// Forward sends the emulation's webhook deliveries from now on to url
	// (relayr's webhook route), as a deployment's tracker would.
	Forward(url string)
	Close()
}

// emulations are the trackers every figure is measured for, in the table's
// order. now is the emulation's clock.
var emulations = []struct {
	name string
	new  func(now func() time.Time) emulation
	// paced: the tracker limits how fast issues are made (GitHub's 80 a
	// minute, held by its driver), so a figure of filings a second at real
	// time measures the limit; its filing figures run on virtual time in
	// its adapter (BenchmarkSustainedFilings) instead.
	paced bool
}{
	{"Plane", func(now func() time.Time) emulation { return newPlane(now) }, false},
	{"Vikunja", func(now func() time.Time) emulation { return newVikunja(now) }, false},
	{"Gitea", func(now func() time.Time) emulation { return newGitea(now) }, false},
	{"GitHub", func(now func() time.Time) emulation { return newGitHub(now) }, true},
	// Jira answers creates past 100 a second (its burst limit on POST
	// /rest/api/3/issue) 429, relayr's and a direct adapter's alike, each
	// waiting out its Retry-After: its filings figures run at that limit.
	{"Jira", func(now func() time.Time) emulation { return newJira(now) }, false},
	// GitLab's figures run on a self-managed instance with its limits off
	// (newGitLab): GitLab.com's 200 issues a minute would make a figure of
	// filings a second measure the limit, which its adapter's benchmark
	// measures on virtual time instead.
	{"GitLab", func(now func() time.Time) emulation { return newGitLab(now) }, false},
	// Linear's limits are an hour's, 2,500 requests a user, which relayr's
	// budget keeps (budget.TrackerWindows): a figure of filings a second
	// at real time would measure them; its adapter's benchmark
	// (BenchmarkLinearRequests) measures a filing's cost and the filings
	// an hour a key sustains on virtual time instead.
	{"Linear", func(now func() time.Time) emulation { return newLinear(now) }, true},
}

// accounted is an emulation whose tracker's key goes with the account it
// belongs to (Jira's API token with its email): the tenant's
// [tenants.trackers.<kind>] email, beside the key.
type accounted interface{ Email() string }

// delivering is an emulation that sends its webhook deliveries on a
// client of its own, whose idle connections a service closes before it
// stops: see service.close.
type delivering interface{ CloseIdleConnections() }

// validated is an emulation that holds every exchange to the tracker's
// published description of its API (Jira's): a service over it fails
// its figure or test on any that doesn't fit.
type validated interface{ Violations() []string }

// trackerTable is the tenant's [tenants.trackers.<kind>] table for the
// emulation's tracker as the connector reads it (its key is a secret,
// read when a follower connects): the account's email where the key goes
// with one.
func trackerTable(emu emulation) config.TrackerCredentials {
	if a, ok := emu.(accounted); ok {
		return config.TrackerCredentials{Email: a.Email()}
	}
	return config.TrackerCredentials{}
}

// counting is an emulation that counts its items by title itself, for a
// figure that files faster than the tracker's reads could list (Gitea's
// walk by second-wide windows holds at most a thousand issues changed in
// one second; the emulation makes twenty thousand a second).
type counting interface{ Titles() map[string]int }

// loopback is a transport that keeps enough connections to 127.0.0.1 for
// the figures' parallel clients: the default keeps two per host, and the
// rest would be opened and closed per request.
func loopback() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 512
	t.MaxIdleConnsPerHost = 512
	return t
}

type plane struct {
	s    *planeemu.Server
	srv  *httptest.Server
	hook atomic.Pointer[string]
	// client forwards deliveries; raw sends the plain creates of
	// postWithoutKey.
	client *http.Client
}

func newPlane(now func() time.Time) *plane {
	p := &plane{
		s:      planeemu.New(planeemu.Options{Now: now, RateLimit: -1, WebhookSecret: webhookSecret}),
		client: &http.Client{Transport: loopback(), Timeout: 30 * time.Second},
	}
	p.srv = httptest.NewServer(p.s)
	p.s.OnDelivery(func(d planeemu.Delivery) {
		if url := p.hook.Load(); url != nil {
			// Plane sends its webhooks from a worker, apart from the change.
			go forward(p.client, *url, d.Header, d.Body)
		}
	})
	return p
}

func (p *plane) Name() string { return "Plane" }

func (p *plane) Binding() config.Binding {
	return config.Binding{
		Tenant: tenant, Workspace: workspace, Tracker: "plane", BaseURL: p.srv.URL,
		PlaneWorkspace: p.s.Workspace, Project: p.s.Project, Identifier: p.s.Identifier,
	}
}

func (p *plane) Credentials() tracker.Credentials {
	return tracker.Credentials{Token: p.s.Bot.Key, WebhookSecret: webhookSecret}
}

func (p *plane) Requests() int  { return p.s.Total() }
func (p *plane) ResetRequests() { p.s.ResetCounts() }

func (p *plane) PersonCreate(title string) (string, error) { return p.s.CreateItem(title), nil }
func (p *plane) PersonRetitle(id, title string) error      { return p.s.Retitle(id, title) }
func (p *plane) PersonComment(id, text string) error {
	_, err := p.s.Comment(id, "<p>"+text+"</p>")
	return err
}

func (p *plane) Forward(url string) { p.hook.Store(&url) }

func (p *plane) Close() {
	p.hook.Store(nil)
	p.srv.Close()
}

// postWithoutKey files an item with Plane's API as a script does that
// knows nothing of external_id: a plain POST of a name.
func (p *plane) postWithoutKey(ctx context.Context, title string) error {
	body, _ := json.Marshal(map[string]string{"name": title})
	url := p.srv.URL + "/api/v1/workspaces/" + p.s.Workspace + "/projects/" + p.s.Project + "/work-items/"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("X-Api-Key", p.s.Bot.Key)
	req.Header.Set("Content-Type", "application/json")
	res, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = res.Body.Close() }()
	_, _ = io.Copy(io.Discard, res.Body)
	if res.StatusCode != http.StatusCreated {
		return fmt.Errorf("plane answered %d", res.StatusCode)
	}
	return nil
}

type vikunja struct {
	e       *vikunjaemu.Emulator
	srv     *httptest.Server
	project int64
}

func newVikunja(now func() time.Time) *vikunja {
	e := vikunjaemu.New(vikunjaemu.Options{
		Now: now, RateLimit: -1,
		WebhookClient: &http.Client{Transport: loopback(), Timeout: 30 * time.Second},
	})
	return &vikunja{e: e, srv: httptest.NewServer(e), project: e.CreateProject("Operations", "OPS")}
}

func (v *vikunja) Name() string { return "Vikunja" }

func (v *vikunja) Binding() config.Binding {
	return config.Binding{
		Tenant: tenant, Workspace: workspace, Tracker: "vikunja", BaseURL: v.srv.URL,
		Project: strconv.FormatInt(v.project, 10),
	}
}

func (v *vikunja) Credentials() tracker.Credentials {
	return tracker.Credentials{Token: v.e.Token, WebhookSecret: webhookSecret}
}

func (v *vikunja) Requests() int  { return v.e.TotalRequests() }
func (v *vikunja) ResetRequests() { v.e.ResetCounts() }

func (v *vikunja) PersonCreate(title string) (string, error) {
	id, err := v.e.Person().CreateTask(v.project, title, "")
	return strconv.FormatInt(id, 10), err
}

func (v *vikunja) PersonRetitle(id, title string) error {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return err
	}
	return v.e.Person().Retitle(n, title)
}

func (v *vikunja) PersonComment(id, text string) error {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return err
	}
	_, err = v.e.Person().Comment(n, text)
	return err
}

func (v *vikunja) Forward(url string) {
	v.e.RegisterWebhook(v.project, url, webhookSecret, "task.created", "task.updated", "task.comment.created")
}

func (v *vikunja) Close() {
	v.srv.Close()
	v.e.Close()
}

// forward posts one webhook delivery to relayr's webhook route.
func forward(c *http.Client, url string, h http.Header, body []byte) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return
	}
	req.Header = h.Clone()
	if res, err := c.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
	}
}

// direct is the emulation's adapter as a run would use it without relayr:
// made by the connector relayr's binding would use, on its own client.
func direct(tb testing.TB, emu emulation) *tracker.Tracker {
	tb.Helper()
	b := emu.Binding()
	conn, err := app.Connector(b, trackerTable(emu), config.Timings{}, loopback())
	if err != nil {
		tb.Fatal(err)
	}
	tr, err := conn.Connect(context.Background(), emu.Credentials(), tracker.Source{Tenant: tenant, Workspace: workspace})
	if err != nil {
		tb.Fatal(err)
	}
	return tr
}

// service is relayr wired by app.New over an emulation, with a SQLite
// ledger in a temporary folder.
type service struct {
	emu    emulation
	app    *app.App
	base   string
	client *http.Client
	stop   context.CancelFunc
	done   chan error
	// store reads the follower's cursor: the app's, or the binary's
	// ledger file (closeStore closes it).
	store interface {
		Cursor(context.Context, ledger.Follower) (ledger.Cursor, error)
	}
	closeStore func() error
	// proc is the built binary, where the service runs as one.
	proc *chaos.Replica
}

// serviceOptions say how a service runs.
type serviceOptions struct {
	// clock is the service's clock (the system's when nil).
	clock clock.Clock
	// timings override the seeds' defaults where set.
	timings config.Timings
	// serve runs the service as `relayr serve` does (app.Run): followers,
	// delivery and HTTP on 127.0.0.1. Without it the service is only
	// wired, and a figure drives its followers itself.
	serve bool
	// binary runs the built binary, `relayr serve` in a process of its
	// own, configured by its file (binary_test.go); it serves.
	binary bool
}

func startService(tb testing.TB, emu emulation, o serviceOptions) *service {
	tb.Helper()
	if o.binary {
		s := &service{emu: emu, client: &http.Client{Transport: loopback(), Timeout: 90 * time.Second}}
		tb.Cleanup(func() { s.close(tb) })
		startBinary(tb, s, o)
		return s
	}
	dir := tb.TempDir()
	kind := emu.Binding().Tracker
	c := &config.Config{
		Holder:  "figures",
		Ledger:  config.Ledger{Driver: "sqlite", Path: filepath.Join(dir, "relayr.db")},
		Timings: o.timings,
		Tenants: []config.Tenant{{Name: tenant, Trackers: map[string]config.TrackerCredentials{
			kind: trackerTable(emu),
		}}},
		Bindings: []config.Binding{emu.Binding()},
		Dir:      dir,
	}
	secrets := &config.Secrets{
		Tokens:   map[string]string{token: tenant},
		Trackers: tracker.StaticCredentials{tenant + "/" + kind: emu.Credentials()},
	}
	ctx := context.Background()
	a, err := app.New(ctx, c, secrets, app.Options{
		Clock: o.clock, Logger: slog.New(slog.DiscardHandler), Transport: loopback(),
	})
	if err != nil {
		tb.Fatal(err)
	}
	s := &service{emu: emu, app: a, store: a.Store, client: &http.Client{Transport: loopback(), Timeout: 90 * time.Second}}
	tb.Cleanup(func() { s.close(tb) })
	if !o.serve {
		return s
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s.base = "http://" + ln.Addr().String()
	runCtx, stop := context.WithCancel(ctx)
	s.stop, s.done = stop, make(chan error, 1)
	go func() { s.done <- a.Run(runCtx, ln) }()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.waitSeeded(wctx); err != nil {
		tb.Fatal(err)
	}
	return s
}

func (s *service) close(tb testing.TB) {
	// A client's idle connections go first: one dialled in a race for a
	// request another connection took never sent one, and the server's
	// shutdown waits for such fresh connections (seconds) before it drops
	// them.
	s.client.CloseIdleConnections()
	if d, ok := s.emu.(delivering); ok {
		d.CloseIdleConnections()
	}
	if s.stop != nil {
		s.stop()
		if err := <-s.done; err != nil {
			tb.Errorf("relayr stopped with %v", err)
		}
	}
	if s.proc != nil {
		s.stopBinary(tb)
	}
	if s.closeStore != nil {
		_ = s.closeStore()
	}
	if s.app != nil {
		s.app.Close()
	}
	if v, ok := s.emu.(validated); ok {
		if bad := v.Violations(); len(bad) > 0 {
			tb.Errorf("%s: exchanges outside the API's description:\n%s", s.emu.Name(), strings.Join(bad, "\n"))
		}
	}
	s.emu.Close()
}

// follower names the binding's tracker follower in the ledger.
func (s *service) follower() ledger.Follower {
	return ledger.Follower{Kind: ledger.TrackerFollower, Tenant: tenant, Workspace: workspace, Name: s.emu.Binding().Tracker}
}

// waitSeeded waits for the follower's first read of the project, after
// which it knows every item there is and webhooks are verified.
func (s *service) waitSeeded(ctx context.Context) error {
	for {
		cur, err := s.store.Cursor(ctx, s.follower())
		if err == nil && cur.Seeded {
			return nil
		}
		select {
		case <-ctx.Done():
			if s.app == nil {
				return errors.New("the follower never read the project")
			}
			if err := s.app.Followers.Stopped(tenant, workspace); err != nil {
				return fmt.Errorf("the follower stopped before it read the project: %w", err)
			}
			return errors.New("the follower never read the project")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// hookURL is relayr's webhook route for the emulation's tracker.
func (s *service) hookURL() string {
	return s.base + "/relayr/v1/trackers/" + tenant + "/" + s.emu.Binding().Tracker
}

// ensure files key through the write API, as a run does, and answers how
// the item came to be ("created", "existing").
func (s *service) ensure(ctx context.Context, key, correlation string) (string, error) {
	body, _ := json.Marshal(httpapi.EnsureRequest{Key: key, Title: title(key), Labels: []string{label}, Correlation: correlation})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/relayr/v1/tenants/"+tenant+"/workspaces/"+workspace+"/items/ensure", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := s.client.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = res.Body.Close() }()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return "", err
	}
	if res.StatusCode/100 != 2 {
		return "", fmt.Errorf("ensure %s: %d %s", key, res.StatusCode, raw)
	}
	var r httpapi.ItemResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return "", err
	}
	return r.How, nil
}

// events reads the workspace's feed after a sequence number, waiting up to
// wait for something to arrive, as a consumer's long poll does.
func (s *service) events(ctx context.Context, after int64, wait time.Duration) ([]eventlog.Event, error) {
	url := fmt.Sprintf("%s/relayr/v1/tenants/%s/workspaces/%s/events?after=%d&wait=%s", s.base, tenant, workspace, after, wait)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = res.Body.Close() }()
	if res.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(res.Body)
		return nil, fmt.Errorf("feed: %d %s", res.StatusCode, raw)
	}
	var f httpapi.FeedResponse
	if err := json.NewDecoder(res.Body).Decode(&f); err != nil {
		return nil, err
	}
	return f.Events, nil
}

// awaitItemEvent reads the feed's next event after *after, waiting for it,
// checks it is about the item, and moves *after to it. Any other event first is an
// error: a figure's changes are the only ones made.
func (s *service) awaitItemEvent(ctx context.Context, after *int64, itemID string) error {
	evs, err := s.events(ctx, *after, httpapi.MaxWait)
	if err != nil {
		return err
	}
	if len(evs) == 0 {
		return errors.New("no event arrived within a minute")
	}
	e := evs[0]
	*after = e.Seq
	var d follow.Data
	if err := json.Unmarshal(e.Data, &d); err != nil || d.Item.ID != itemID {
		return fmt.Errorf("an event about something else came first: %s %s", e.Type, e.Data)
	}
	return nil
}

// title is the title a key is filed under, by relayr and directly alike,
// so the items filed per key can be counted by title.
func title(key string) string { return "figures " + key }

// itemsPerTitle lists the project through the adapter and counts its items
// per title.
func itemsPerTitle(ctx context.Context, tr *tracker.Tracker) (map[string]int, error) {
	out := map[string]int{}
	page := ""
	for {
		pg, err := tr.Items(ctx, tracker.Query{Page: page})
		if err != nil {
			return nil, err
		}
		for _, it := range pg.Items {
			out[it.Title]++
		}
		if pg.Next == "" {
			return out, nil
		}
		page = pg.Next
	}
}

// failed reports whether err is a direct create's failure: anything but
// the tracker refusing a key's second create (Plane's 409), which is how a
// retry is answered there.
func failed(attempt int, err error) bool {
	return err != nil && (attempt == 0 || !errors.Is(err, tracker.ErrExists))
}
