package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/relayr-go/relayr/adapters/httpapi"
	"github.com/relayr-go/relayr/adapters/ledgerpg/pgtest"
	"github.com/relayr-go/relayr/adapters/webhook"
	"github.com/relayr-go/relayr/apps/relayr/internal/app"
	"github.com/relayr-go/relayr/apps/relayr/internal/chaos"
	"github.com/relayr-go/relayr/apps/relayr/internal/config"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/follow"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/planeemu"
	"github.com/relayr-go/relayr/fixtures/vikunjaemu"
)

// The chaos run's names and secrets. The secrets reach the replicas only
// through their environment, as the configuration requires.
const (
	chaosTenant     = "acme"
	chaosPlaneWS    = "ops-plane"
	chaosVikunjaWS  = "ops-vikunja"
	chaosToken      = "chaos-token-of-acme-0123456789abcdef"
	chaosPlaneHook  = "plane_wh_chaos0123456789abcdef0123456789"
	chaosVikunjaKey = "vikunja-hook-chaos"
	chaosSubSecret  = "subscriber-secret-chaos"

	// chaosWriteBound shortens relayr's 20 s write bound so a run takes
	// minutes, not hours; a hung tracker request is held chaosHang, just
	// past it, before its connection is dropped.
	chaosWriteBound = 2 * time.Second
	chaosHang       = chaosWriteBound + 500*time.Millisecond
)

// chaosPlan is the size of a run: the short form by default (make test),
// the full one with RELAYR_CHAOS=full (make chaos).
type chaosPlan struct {
	name      string
	keys      int
	clients   int
	kills     int
	faultRate float64
	catchUp   time.Duration
	deadline  time.Duration
	// replicas is how many `relayr serve` run at once: three in the full
	// run (ADR-1002: leases that spread), two in the short one make test
	// runs on two CPUs.
	replicas int
}

func chaosPlanOf(form string) chaosPlan {
	if form == "full" {
		return chaosPlan{name: "full", keys: 2000, clients: 16, kills: 6, faultRate: 0.03, catchUp: 3 * time.Minute, deadline: 15 * time.Minute, replicas: 3}
	}
	return chaosPlan{name: "short", keys: 200, clients: 16, kills: 2, faultRate: 0.04, catchUp: 60 * time.Second, deadline: 100 * time.Second, replicas: 2}
}

// TestChaos runs two replicas of the relayr binary built from the tree on
// one PostgreSQL ledger under row-level security, bound to the Plane and
// Vikunja emulations, which answer a share of relayr's requests with rate
// limits, 5xx, hangs past the write bound and dropped connections (before
// the tracker sees a request, and after it took one). Sixteen clients file,
// edit and comment on keys through the HTTP API while a person changes and
// comments on the items in the trackers, and one replica at a time is
// killed with SIGKILL and started again. At the end every key has one item,
// every change of the person is in the feed once and in its run's chain,
// none of relayr's own writes is, and the subscriber got every event in
// order.
func TestChaos(t *testing.T) {
	plan := chaosPlanOf(os.Getenv("RELAYR_CHAOS"))
	ctx, cancel := context.WithTimeout(t.Context(), plan.deadline)
	defer cancel()
	started := time.Now()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("RELAYR_CHAOS_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	rnd := rand.New(rand.NewPCG(seed, 1))
	t.Logf("chaos %s form: %d replicas, %d keys, %d clients, %d kills, fault rate %.0f%%, seed %d (RELAYR_CHAOS_SEED); write_bound shortened to %s, hangs held %s",
		plan.name, plan.replicas, plan.keys, plan.clients, plan.kills, plan.faultRate*100, seed, chaosWriteBound, chaosHang)

	// PostgreSQL first: without it there is no run, and no skipping.
	adminURL := chaosDatabase(t)
	admin := pgtest.Open(t, pgtest.Admin(t))
	schema := pgtest.Schema(t)
	dir := t.TempDir()
	bin := relayrBinary(t)

	// The trackers, on real time, behind the fault injectors.
	plane := planeemu.New(planeemu.Options{Now: time.Now, RateLimit: -1, WebhookSecret: chaosPlaneHook})
	planeFaults := chaos.NewInjector(plane, plan.faultRate, chaosHang, seed+1, chaos.PlaneRateLimited)
	planeSrv := httptest.NewServer(planeFaults)
	t.Cleanup(planeSrv.Close)
	vik := vikunjaemu.New(vikunjaemu.Options{RateLimit: -1})
	t.Cleanup(vik.Close)
	vikProject := vik.CreateProject("Operations", "OPS")
	vikPerson := vik.PersonFor(vik.AddUser("ada"))
	vikFaults := chaos.NewInjector(vik, plan.faultRate, chaosHang, seed+2, chaos.VikunjaRateLimited)
	vikSrv := httptest.NewServer(vikFaults)
	t.Cleanup(vikSrv.Close)

	// The subscriber records every delivery.
	sub := &subscriber{secret: chaosSubSecret, first: map[string][]eventlog.Event{}, seen: map[string]bool{}}
	subSrv := httptest.NewServer(sub)
	t.Cleanup(subSrv.Close)

	// The configuration: two workspaces of one tenant, short timings,
	// secrets named by environment variable only.
	cfgPath := filepath.Join(dir, "relayr.toml")
	cfgText := chaosConfig(schema, planeSrv.URL, plane, vikSrv.URL, vikProject, subSrv.URL)
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatalf("the chaos configuration: %v", err)
	}
	env := append(os.Environ(),
		"RELAYR_CHAOS_TOKEN="+chaosToken,
		"RELAYR_CHAOS_PLANE_KEY="+plane.Bot.Key,
		"RELAYR_CHAOS_PLANE_HOOK="+chaosPlaneHook,
		"RELAYR_CHAOS_VIKUNJA_KEY="+vik.Token,
		"RELAYR_CHAOS_VIKUNJA_HOOK="+chaosVikunjaKey,
		"RELAYR_CHAOS_SUB_SECRET="+chaosSubSecret,
	)

	// `relayr migrate` as the owner, then the replicas as the restricted
	// role row-level security binds.
	migrate := exec.CommandContext(ctx, bin, "migrate", "-config", cfgPath)
	migrate.Env = append(slices.Clone(env), "RELAYR_CHAOS_DSN="+adminURL)
	if out, err := migrate.CombinedOutput(); err != nil {
		t.Fatalf("relayr migrate: %v\n%s", err, out)
	}
	restricted := pgtest.Restricted(t, schema)
	dsn, err := url.Parse(adminURL)
	if err != nil {
		t.Fatal(err)
	}
	dsn.User = url.UserPassword(restricted.ConnConfig.User, restricted.ConnConfig.Password)
	serveEnv := append(slices.Clone(env), "RELAYR_CHAOS_DSN="+dsn.String())

	var replicas []*chaos.Replica
	for i := range plan.replicas {
		addr, err := chaos.FreeAddr(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		logf, err := os.Create(filepath.Join(dir, fmt.Sprintf("replica-%d.log", i+1)))
		if err != nil {
			t.Fatal(err)
		}
		r := &chaos.Replica{Name: fmt.Sprintf("replica-%d", i+1), Bin: bin, Config: cfgPath, Env: serveEnv, Addr: addr, Log: logf}
		replicas = append(replicas, r)
		// Whatever happens, no child outlives the test.
		t.Cleanup(func() {
			_ = r.Kill()
			_ = logf.Close()
		})
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, r := range replicas {
				t.Logf("the end of %s's log:\n%s", r.Name, tail(r.Log.Name(), 40))
			}
		}
	})
	for _, r := range replicas {
		if err := r.Start(ctx, 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}

	// Webhooks reach a live replica, as a load balancer would send them.
	fwd := &forwarder{replicas: replicas, client: &http.Client{Timeout: 5 * time.Second}}
	t.Cleanup(fwd.wait)
	plane.OnDelivery(func(d planeemu.Delivery) {
		fwd.forward("/relayr/v1/trackers/"+chaosTenant+"/plane", d.Header, d.Body)
	})
	hookSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fwd.forward("/relayr/v1/trackers/"+chaosTenant+"/vikunja", r.Header, body)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(hookSrv.Close)
	vik.RegisterWebhook(vikProject, hookSrv.URL, chaosVikunjaKey, "task.created", "task.updated", "task.deleted", "task.comment.created")

	// A person's changes count only once relayr follows the workspaces:
	// a binding's first read seeds silently (ADR-0036).
	waitFor(t, ctx, 30*time.Second, "both tracker followers seeded", func() bool {
		var n int
		err := admin.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema, "relayr_tracker_followers"}.Sanitize()+
			` WHERE tenant = $1 AND seeded`, chaosTenant).Scan(&n)
		return err == nil && n >= 2
	})
	planeFaults.On(true)
	vikFaults.On(true)

	// The run: clients, the person, the killer.
	w := &workload{
		t: t, plan: plan, api: &apiClient{replicas: replicas, token: chaosToken, http: &http.Client{Timeout: 20 * time.Second}},
		keys: make([]*keyState, plan.keys), admin: admin, schema: schema,
		plane: plane, vikPerson: vikPerson, vikProject: vikProject, vikToken: vik.Token,
	}
	for i := range w.keys {
		ws := chaosPlaneWS
		if i%2 == 1 {
			ws = chaosVikunjaWS
		}
		w.keys[i] = &keyState{n: i, key: fmt.Sprintf("chaos/%04d", i), ws: ws, correlation: fmt.Sprintf("run-%04d", i)}
	}
	writesDone := make(chan struct{})
	var bg sync.WaitGroup
	var clientErrs []error
	var clientMu sync.Mutex
	next := atomic.Int64{}
	var clients sync.WaitGroup
	for range plan.clients {
		clients.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(w.keys) || ctx.Err() != nil {
					return
				}
				if err := w.run(ctx, w.keys[i]); err != nil {
					clientMu.Lock()
					clientErrs = append(clientErrs, err)
					clientMu.Unlock()
				}
			}
		})
	}
	bg.Go(func() { w.person(ctx, rand.New(rand.NewPCG(seed, 2)), writesDone) })
	var kills atomic.Int64
	var killErr error
	bg.Go(func() {
		// Kills at random points of the run's progress, one replica at a
		// time, each started again after a moment.
		at := make([]float64, plan.kills)
		for i := range at {
			at[i] = 0.1 + 0.8*rnd.Float64()
		}
		slices.Sort(at)
		for _, frac := range at {
			threshold := int64(frac * float64(plan.keys))
			for w.filed.Load() < threshold {
				select {
				case <-ctx.Done():
					return
				case <-writesDone:
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
			r := replicas[rnd.IntN(len(replicas))]
			if err := r.Kill(); err != nil {
				killErr = err
				return
			}
			kills.Add(1)
			down := time.Duration(200+rnd.IntN(1300)) * time.Millisecond
			t.Logf("killed %s with SIGKILL at %d/%d keys filed; restarting it in %s", r.Name, w.filed.Load(), plan.keys, down)
			select {
			case <-ctx.Done():
				return
			case <-time.After(down):
			}
			if err := r.Start(ctx, 30*time.Second); err != nil {
				killErr = err
				return
			}
		}
	})
	clients.Wait()
	close(writesDone)
	bg.Wait()
	writeTime := time.Since(started)
	planeFaults.On(false)
	vikFaults.On(false)
	if killErr != nil {
		t.Fatalf("killing a replica: %v", killErr)
	}
	for _, err := range clientErrs {
		t.Errorf("a client gave up: %v", err)
	}
	if t.Failed() {
		t.FailNow()
	}
	for _, r := range replicas {
		if !r.Running() {
			if err := r.Start(ctx, 30*time.Second); err != nil {
				t.Fatal(err)
			}
		}
	}

	// Catching up: until every change of the person is in the feed, the
	// subscriber has every event of the feed, and the feed has stopped
	// growing for a while; bounded.
	feed := &feedReader{api: w.api, events: map[string][]eventlog.Event{}, after: map[string]int64{}}
	catchUpStart := time.Now()
	var lastLen int
	lastGrew := time.Now()
	for {
		if err := feed.read(ctx); err != nil {
			t.Fatalf("reading the feed: %v", err)
		}
		n := feed.len()
		if n != lastLen {
			lastLen, lastGrew = n, time.Now()
		}
		missing := w.unseen(feed)
		undelivered := sub.missing(feed)
		if missing == 0 && undelivered == 0 && time.Since(lastGrew) > 3*time.Second {
			break
		}
		if time.Since(catchUpStart) > plan.catchUp || ctx.Err() != nil {
			t.Logf("catching up stopped after %s: %d changes of the person not in the feed, %d events not delivered", plan.catchUp, missing, undelivered)
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
	catchUp := time.Since(catchUpStart)

	// The verdict.
	v := w.verdict(ctx, cfg, feed, sub)
	spread, err := leaseSpread(ctx, admin, schema)
	if err != nil {
		t.Fatalf("reading the lease spread: %v", err)
	}
	line := fmt.Sprintf("keys=%d attempts=%d faults=%d kills=%d duplicates=%d lost=%d echoes=%d lease_spread=%v",
		plan.keys, w.api.attempts.Load(), planeFaults.Total()+vikFaults.Total(), kills.Load(), v.duplicates, v.lost, v.echoes, spread)
	detail := fmt.Sprintf("chaos %s: writes %.1fs, catch-up %.1fs; person changes %d (%d items of their own); feed %d events; deliveries %d (%d redelivered by key after kills); faults plane %v vikunja %v; tracker requests plane %d vikunja %d; write_bound %s (shortened from 20s), hangs held %s",
		plan.name, writeTime.Seconds(), catchUp.Seconds(), len(w.changes), w.ownItems(), feed.len(), sub.total(), sub.redelivered.Load(),
		planeFaults.Counts(), vikFaults.Counts(), planeFaults.Requests(), vikFaults.Requests(), chaosWriteBound, chaosHang)
	fmt.Println(line)
	fmt.Println(detail)
	t.Log(line)
	t.Log(detail)
	for _, p := range v.problems {
		t.Error(p)
	}
	if v.duplicates != 0 || v.lost != 0 || v.echoes != 0 {
		t.Fatalf("duplicates=%d lost=%d echoes=%d: each must be 0", v.duplicates, v.lost, v.echoes)
	}
	if kills.Load() == 0 {
		t.Fatal("no replica was killed")
	}
}

// chaosDatabase answers the admin URL of the PostgreSQL the run uses, and
// fails at once, saying how to point the run at one, when it is not there.
func chaosDatabase(t *testing.T) string {
	t.Helper()
	u := pgtest.URL(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err == nil {
		err = conn.Ping(ctx)
		_ = conn.Close(ctx)
	}
	if err != nil {
		t.Fatalf("the chaos run needs PostgreSQL and cannot reach it: %v\n"+
			"set %s (e.g. postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable) to a server whose user may create schemas and roles",
			err, pgtest.EnvURL)
	}
	return u
}

func chaosConfig(schema, planeURL string, plane *planeemu.Server, vikURL string, vikProject int64, subURL string) string {
	return fmt.Sprintf(`# The chaos run's configuration: short timings, two workspaces of one tenant.
listen = "127.0.0.1:0"

[ledger]
driver = "postgres"
dsn = {env = "RELAYR_CHAOS_DSN"}
rls = true
schema = %q

[timings]
lease = "3s"
poll = "1s"
lookback = "10s"
debounce = "200ms"
retake_after = "4s"
write_bound = %q
budget = 100000
shutdown_grace = "1s"

[log]
level = "warn"

[[tenants]]
name = %q
token = {env = "RELAYR_CHAOS_TOKEN"}

[tenants.trackers.plane]
key = {env = "RELAYR_CHAOS_PLANE_KEY"}
webhook_secret = {env = "RELAYR_CHAOS_PLANE_HOOK"}

[tenants.trackers.vikunja]
key = {env = "RELAYR_CHAOS_VIKUNJA_KEY"}
webhook_secret = {env = "RELAYR_CHAOS_VIKUNJA_HOOK"}

[[bindings]]
tenant = %q
workspace = %q
tracker = "plane"
base_url = %q
plane_workspace = %q
project = %q
identifier = %q

[[bindings]]
tenant = %q
workspace = %q
tracker = "vikunja"
base_url = %q
project = "%d"

[[subscriptions]]
tenant = %q
workspace = %q
name = "chaos-plane"
url = %q
secret = {env = "RELAYR_CHAOS_SUB_SECRET"}

[[subscriptions]]
tenant = %q
workspace = %q
name = "chaos-vikunja"
url = %q
secret = {env = "RELAYR_CHAOS_SUB_SECRET"}
`, schema, chaosWriteBound.String(), chaosTenant,
		chaosTenant, chaosPlaneWS, planeURL, plane.Workspace, plane.Project, plane.Identifier,
		chaosTenant, chaosVikunjaWS, vikURL, vikProject,
		chaosTenant, chaosPlaneWS, subURL,
		chaosTenant, chaosVikunjaWS, subURL)
}

func waitFor(t *testing.T, ctx context.Context, within time.Duration, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waited %s for %s", within, what)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// apiClient calls relayr's HTTP API round-robin across the replicas,
// retrying whatever the API says is retryable: an answer with Retry-After,
// a 5xx, and no answer at all (a killed replica refuses connections).
type apiClient struct {
	replicas []*chaos.Replica
	token    string
	http     *http.Client
	next     atomic.Uint64
	attempts atomic.Int64
}

func (c *apiClient) do(ctx context.Context, method, path string, body, out any) error {
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	backoff := 50 * time.Millisecond
	var last string
	for attempt := 1; ; attempt++ {
		if ctx.Err() != nil {
			return fmt.Errorf("%s %s: %w after %d attempts (last: %s)", method, path, ctx.Err(), attempt-1, last)
		}
		r := c.replicas[c.next.Add(1)%uint64(len(c.replicas))]
		c.attempts.Add(1)
		req, err := http.NewRequestWithContext(ctx, method, r.URL()+path, bytes.NewReader(raw))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+c.token)
		req.Header.Set("Content-Type", "application/json")
		wait := backoff
		res, err := c.http.Do(req)
		if err == nil {
			rb, rerr := io.ReadAll(res.Body)
			_ = res.Body.Close()
			switch {
			case rerr == nil && res.StatusCode/100 == 2:
				return json.Unmarshal(rb, out)
			case res.Header.Get("Retry-After") != "":
				if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil {
					wait = min(time.Duration(s)*time.Second, 5*time.Second)
				}
			case res.StatusCode >= 500 || rerr != nil:
			default:
				return fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, bytes.TrimSpace(rb))
			}
			last = fmt.Sprintf("%d %s", res.StatusCode, bytes.TrimSpace(rb))
		} else {
			last = err.Error()
		}
		backoff = min(backoff*2, time.Second)
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}

func workspacePathOf(ws string) string {
	return "/relayr/v1/tenants/" + chaosTenant + "/workspaces/" + ws
}

// keyState is one key of the run and what relayr wrote under it.
type keyState struct {
	n           int
	key, ws     string
	correlation string
	itemID      string
	titles      []string // every title relayr wrote
	comment     string   // the comment relayr posted, if any
	settled     atomic.Bool
	acted       [3]bool // the person's retitle, state change, comment
}

// change is one change of the person's script, as the feed must carry it.
type change struct {
	ws, itemID  string
	typ         string // item_changed, item_commented, item_created
	field, new  string // item_changed: the field and its new value
	text        string // item_commented: the comment's text
	correlation string // the run's chain, "" for the person's own item
	matched     int
}

type workload struct {
	t          *testing.T
	plan       chaosPlan
	api        *apiClient
	keys       []*keyState
	filed      atomic.Int64
	admin      *pgxpool.Pool
	schema     string
	plane      *planeemu.Server
	vikPerson  *vikunjaemu.Person
	vikProject int64
	vikToken   string

	mu      sync.Mutex
	changes []*change
}

// run files, edits and (for every fourth key) comments through the API,
// as a run retried until it is through would.
func (w *workload) run(ctx context.Context, k *keyState) error {
	path := workspacePathOf(k.ws)
	title := fmt.Sprintf("relayr filed %s", k.key)
	var it httpapi.ItemResponse
	if err := w.api.do(ctx, http.MethodPost, path+"/items/ensure", httpapi.EnsureRequest{
		Key: k.key, Title: title, Description: "filed by the chaos run", Labels: []string{"chaos"}, Correlation: k.correlation,
	}, &it); err != nil {
		return fmt.Errorf("%s: ensure: %w", k.key, err)
	}
	k.itemID = it.Item.ID
	k.titles = append(k.titles, title)
	w.filed.Add(1)
	edits := 1
	if k.n%5 == 0 {
		edits = 2
	}
	for e := 1; e <= edits; e++ {
		title := fmt.Sprintf("relayr edit %d of %s", e, k.key)
		k.titles = append(k.titles, title)
		var up httpapi.ItemResponse
		if err := w.api.do(ctx, http.MethodPost, path+"/items/update", httpapi.UpdateRequest{Key: k.key, Title: &title, Correlation: k.correlation}, &up); err != nil {
			return fmt.Errorf("%s: update: %w", k.key, err)
		}
		if up.Item.ID != k.itemID {
			return fmt.Errorf("%s: the update answered item %s, the ensure %s", k.key, up.Item.ID, k.itemID)
		}
	}
	if k.n%4 == 0 {
		k.comment = fmt.Sprintf("relayr comment on %s", k.key)
		var c httpapi.CommentResponse
		if err := w.api.do(ctx, http.MethodPost, path+"/comments", httpapi.CommentRequest{
			ItemKey: k.key, Key: k.key + "/comment", Body: k.comment, Correlation: k.correlation,
		}, &c); err != nil {
			return fmt.Errorf("%s: comment: %w", k.key, err)
		}
	}
	k.settled.Store(true)
	return nil
}

// snapshotted reports whether relayr has read the item back once: a change
// before that is part of what it first sees, not an event (ADR-0036).
func (w *workload) snapshotted(ctx context.Context, ws, itemID string) bool {
	var one int
	err := w.admin.QueryRow(ctx, `SELECT 1 FROM `+pgx.Identifier{w.schema, "relayr_tracker_snapshots"}.Sanitize()+
		` WHERE tenant = $1 AND workspace = $2 AND item_id = $3`, chaosTenant, ws, itemID).Scan(&one)
	return err == nil
}

// person is the script: while the clients write, a person retitles, closes
// and comments on items relayr filed and is done writing to, each change
// once per item and field, and now and then files an item of their own.
func (w *workload) person(ctx context.Context, rnd *rand.Rand, stop <-chan struct{}) {
	n := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-time.After(time.Duration(5+rnd.IntN(30)) * time.Millisecond):
		}
		n++
		if n%25 == 0 {
			w.personFiles(rnd, n)
			continue
		}
		k := w.keys[rnd.IntN(len(w.keys))]
		if !k.settled.Load() || !w.snapshotted(ctx, k.ws, k.itemID) {
			continue
		}
		var todo []int
		for a, done := range k.acted {
			if !done {
				todo = append(todo, a)
			}
		}
		if len(todo) == 0 {
			continue
		}
		a := todo[rnd.IntN(len(todo))]
		k.acted[a] = true
		c := &change{ws: k.ws, itemID: k.itemID, correlation: k.correlation}
		var err error
		switch a {
		case 0:
			c.typ, c.field = follow.TypeItemChanged, tracker.FieldTitle
			title := fmt.Sprintf("person title %d on %s", n, k.key)
			c.new = jsonString(title)
			if k.ws == chaosPlaneWS {
				err = w.plane.Retitle(k.itemID, title)
			} else {
				err = w.vikPerson.Retitle(vikID(k.itemID), title)
			}
		case 1:
			c.typ, c.field, c.new = follow.TypeItemChanged, tracker.FieldState, jsonString(string(tracker.Done))
			if k.ws == chaosPlaneWS {
				err = w.plane.SetState(k.itemID, "Done")
			} else {
				err = w.vikPerson.SetDone(vikID(k.itemID), true)
			}
		case 2:
			c.typ = follow.TypeItemCommented
			c.text = fmt.Sprintf("person comment %d on %s", n, k.key)
			if k.ws == chaosPlaneWS {
				_, err = w.plane.Comment(k.itemID, "<p>"+c.text+"</p>")
			} else {
				_, err = w.vikPerson.Comment(vikID(k.itemID), c.text)
			}
		}
		if err != nil {
			w.t.Errorf("the person's change on %s: %v", k.key, err)
			continue
		}
		w.mu.Lock()
		w.changes = append(w.changes, c)
		w.mu.Unlock()
	}
}

func (w *workload) personFiles(rnd *rand.Rand, n int) {
	c := &change{typ: follow.TypeItemCreated}
	title := fmt.Sprintf("person's own item %d", n)
	if rnd.IntN(2) == 0 {
		c.ws, c.itemID = chaosPlaneWS, w.plane.CreateItem(title)
	} else {
		id, err := w.vikPerson.CreateTask(w.vikProject, title, "")
		if err != nil {
			w.t.Errorf("the person's own item: %v", err)
			return
		}
		c.ws, c.itemID = chaosVikunjaWS, strconv.FormatInt(id, 10)
	}
	w.mu.Lock()
	w.changes = append(w.changes, c)
	w.mu.Unlock()
}

func (w *workload) ownItems() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, c := range w.changes {
		if c.typ == follow.TypeItemCreated {
			n++
		}
	}
	return n
}

func vikID(s string) int64 {
	id, _ := strconv.ParseInt(s, 10, 64)
	return id
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// matches reports whether a feed event is the change's.
func (c *change) matches(e eventlog.Event, d follow.Data) bool {
	if e.Workspace != c.ws || e.Type != c.typ || d.Item.ID != c.itemID {
		return false
	}
	switch c.typ {
	case follow.TypeItemChanged:
		return d.Field == c.field && canonicalJSON(d.New) == c.new
	case follow.TypeItemCommented:
		return d.Comment != nil && strings.Contains(d.Comment.Body, c.text)
	}
	return true
}

func canonicalJSON(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// unseen counts the person's changes not yet in the feed.
func (w *workload) unseen(f *feedReader) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, c := range w.changes {
		found := false
		for _, e := range f.events[c.ws] {
			d, err := follow.DataOf(e)
			if err == nil && c.matches(e, d) {
				found = true
				break
			}
		}
		if !found {
			n++
		}
	}
	return n
}

type verdict struct {
	duplicates, lost, echoes int
	problems                 []string
}

func (v *verdict) problem(format string, a ...any) {
	if len(v.problems) < 60 {
		v.problems = append(v.problems, fmt.Sprintf(format, a...))
	}
}

// verdict compares the trackers, the feed and the deliveries with what the
// clients and the person did.
func (w *workload) verdict(ctx context.Context, cfg *config.Config, f *feedReader, sub *subscriber) verdict {
	var v verdict
	w.mu.Lock()
	defer w.mu.Unlock()

	// Every key has exactly one item in its tracker.
	byKey := map[string]int{}
	people := 0
	bindings, err := app.Bindings(cfg, nil)
	if err != nil {
		v.problem("bindings: %v", err)
		v.lost++
		return v
	}
	creds := map[string]tracker.Credentials{
		"plane":   {Token: w.plane.Bot.Key},
		"vikunja": {Token: w.vikToken},
	}
	for _, b := range bindings {
		tr, err := b.Connector.Connect(ctx, creds[b.Kind()], b.Source())
		if err != nil {
			v.problem("connecting to %s: %v", b.Name(), err)
			v.lost++
			continue
		}
		page := ""
		for {
			pg, err := tr.Items(ctx, tracker.Query{Page: page})
			if err != nil {
				v.problem("listing %s: %v", b.Name(), err)
				v.lost++
				break
			}
			for _, it := range pg.Items {
				if it.Ref.Key == "" {
					people++
					continue
				}
				byKey[b.Workspace+"\x00"+it.Ref.Key]++
			}
			if pg.Next == "" {
				break
			}
			page = pg.Next
		}
	}
	keyOfItem := map[string]*keyState{}
	relayrTitles := map[string]bool{}
	relayrComments := map[string]bool{}
	for _, k := range w.keys {
		keyOfItem[k.ws+"\x00"+k.itemID] = k
		for _, title := range k.titles {
			relayrTitles[jsonString(title)] = true
		}
		if k.comment != "" {
			relayrComments[k.comment] = true
		}
		switch n := byKey[k.ws+"\x00"+k.key]; {
		case n == 0:
			v.lost++
			v.problem("key %s has no item in %s", k.key, k.ws)
		case n > 1:
			v.duplicates += n - 1
			v.problem("key %s has %d items in %s", k.key, n, k.ws)
		}
		delete(byKey, k.ws+"\x00"+k.key)
	}
	for k, n := range byKey {
		v.duplicates += n
		v.problem("an item under a key no client filed: %q", k)
	}
	own := 0
	for _, c := range w.changes {
		if c.typ == follow.TypeItemCreated {
			own++
		}
	}
	if people != own {
		v.problem("the trackers hold %d items without a key, the person filed %d", people, own)
		v.duplicates += max(0, people-own)
		v.lost += max(0, own-people)
	}

	// Every change of the script is in the feed once, in its run's chain;
	// nothing else is.
	for _, ws := range []string{chaosPlaneWS, chaosVikunjaWS} {
		for _, e := range f.events[ws] {
			d, err := follow.DataOf(e)
			if err != nil {
				v.echoes++
				v.problem("event %s #%d: %v", e.ID, e.Seq, err)
				continue
			}
			var hit *change
			for _, c := range w.changes {
				if c.matches(e, d) {
					hit = c
					break
				}
			}
			if hit != nil {
				hit.matched++
				if hit.matched == 2 {
					v.problem("the person's change is in the feed twice (again as #%d %s): %+v", e.Seq, e.ID, *hit)
				}
				if e.Correlation != hit.correlation {
					v.lost++
					v.problem("event #%d %s %s is in chain %q, not its run's %q", e.Seq, e.ID, e.Type, e.Correlation, hit.correlation)
				}
				continue
			}
			// Not the person's: relayr's own write came back.
			v.echoes++
			k := keyOfItem[ws+"\x00"+d.Item.ID]
			what := "an event nobody's change explains"
			switch {
			case e.Type == follow.TypeItemChanged && relayrTitles[canonicalJSON(d.New)]:
				what = "relayr's own title"
			case e.Type == follow.TypeItemCreated && k != nil:
				what = "the creation of a claimed key"
			case e.Type == follow.TypeItemCommented && d.Comment != nil && relayrComments[d.Comment.Body]:
				what = "relayr's own comment"
			}
			v.problem("echo in %s: %s: #%d %s %s field=%s new=%s (key %q)", ws, what, e.Seq, e.ID, e.Type, d.Field, d.New, d.Item.Key)
		}
	}
	for _, c := range w.changes {
		switch {
		case c.matched == 0:
			v.lost++
			v.problem("the person's change is not in the feed: %+v", *c)
		case c.matched > 1:
			v.duplicates += c.matched - 1
		}
	}

	// The subscriber got every event once, in sequence order per
	// workspace.
	sub.mu.Lock()
	defer sub.mu.Unlock()
	for _, ws := range []string{chaosPlaneWS, chaosVikunjaWS} {
		got := sub.first[ws]
		for i := 1; i < len(got); i++ {
			if got[i].Seq <= got[i-1].Seq {
				v.duplicates++
				v.problem("the subscriber got #%d after #%d in %s", got[i].Seq, got[i-1].Seq, ws)
			}
		}
		delivered := map[string]bool{}
		for _, e := range got {
			delivered[e.ID] = true
		}
		inFeed := map[string]bool{}
		for _, e := range f.events[ws] {
			inFeed[e.ID] = true
			if !delivered[e.ID] {
				v.lost++
				v.problem("event #%d %s of %s never reached the subscriber", e.Seq, e.ID, ws)
			}
		}
		for _, e := range got {
			if !inFeed[e.ID] {
				v.duplicates++
				v.problem("the subscriber got event %s, which the feed of %s lacks", e.ID, ws)
			}
		}
	}
	for _, p := range sub.bad {
		v.echoes++
		v.problem("the subscriber: %s", p)
	}
	return v
}

// feedReader reads both workspaces' feeds through the API.
type feedReader struct {
	api    *apiClient
	events map[string][]eventlog.Event
	after  map[string]int64
}

func (f *feedReader) read(ctx context.Context) error {
	for _, ws := range []string{chaosPlaneWS, chaosVikunjaWS} {
		for {
			var res httpapi.FeedResponse
			if err := f.api.do(ctx, http.MethodGet, fmt.Sprintf("%s/events?after=%d&limit=%d", workspacePathOf(ws), f.after[ws], httpapi.MaxLimit), nil, &res); err != nil {
				return err
			}
			if len(res.Events) == 0 {
				break
			}
			f.events[ws] = append(f.events[ws], res.Events...)
			f.after[ws] = res.Next
		}
	}
	return nil
}

func (f *feedReader) len() int { return len(f.events[chaosPlaneWS]) + len(f.events[chaosVikunjaWS]) }

// signedAsStandard reports whether a delivery carries Standard Webhooks'
// signature of its id, timestamp and body under secret (ADR-1014: what a
// subscription that names no signature gets).
func signedAsStandard(secret string, h http.Header, body []byte) bool {
	k, err := webhook.ParseSecret(secret)
	if err != nil {
		return false
	}
	ts, err := strconv.ParseInt(h.Get(webhook.TimestampHeader), 10, 64)
	if err != nil {
		return false
	}
	return h.Get(webhook.StandardSignatureHeader) == k.Sign(h.Get(webhook.IDHeader), time.Unix(ts, 0), body)
}

// subscriber is the delivery target: it checks each delivery's signature,
// takes an event the first time its Idempotency-Key comes, and answers a
// delivery it already took with 200 and nothing more, as the key asks.
type subscriber struct {
	secret      string
	mu          sync.Mutex
	first       map[string][]eventlog.Event
	seen        map[string]bool
	bad         []string
	redelivered atomic.Int64
}

func (s *subscriber) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var e eventlog.Event
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case !signedAsStandard(s.secret, r.Header, body):
		s.bad = append(s.bad, "a delivery with a bad Standard Webhooks signature")
	case r.Header.Get(webhook.SignatureHeader) != "":
		s.bad = append(s.bad, "a delivery with X-Relayr-Signature, which the subscription did not ask for")
	case json.Unmarshal(body, &e) != nil:
		s.bad = append(s.bad, "a delivery that is not an event")
	case r.Header.Get(webhook.IdempotencyKeyHeader) != e.ID:
		s.bad = append(s.bad, fmt.Sprintf("a delivery keyed %q carrying %q", r.Header.Get(webhook.IdempotencyKeyHeader), e.ID))
	case s.seen[e.ID]:
		s.redelivered.Add(1)
	default:
		s.seen[e.ID] = true
		s.first[e.Workspace] = append(s.first[e.Workspace], e)
	}
	w.WriteHeader(http.StatusOK)
}

func (s *subscriber) missing(f *feedReader) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, evs := range f.events {
		for _, e := range evs {
			if !s.seen[e.ID] {
				n++
			}
		}
	}
	return n
}

func (s *subscriber) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen) + int(s.redelivered.Load())
}

// forwarder posts the trackers' webhook deliveries to a live replica's
// webhook route, as a load balancer in front of the replicas would.
type forwarder struct {
	replicas []*chaos.Replica
	client   *http.Client
	wg       sync.WaitGroup
	next     atomic.Uint64
}

func (f *forwarder) forward(path string, h http.Header, body []byte) {
	h = h.Clone()
	f.wg.Go(func() {
		start := f.next.Add(1)
		for i := range uint64(len(f.replicas)) {
			r := f.replicas[(start+i)%uint64(len(f.replicas))]
			req, err := http.NewRequest(http.MethodPost, r.URL()+path, bytes.NewReader(body))
			if err != nil {
				return
			}
			req.Header = h.Clone()
			res, err := f.client.Do(req)
			if err != nil {
				continue
			}
			_, _ = io.Copy(io.Discard, res.Body)
			_ = res.Body.Close()
			return
		}
	})
}

func (f *forwarder) wait() { f.wg.Wait() }

// leaseSpread answers how many tracker followers' leases each live replica
// holds, most first: the replicas by their heartbeats in relayr_holders,
// the leases unexpired in relayr_tracker_followers (ADR-1002).
func leaseSpread(ctx context.Context, admin *pgxpool.Pool, schema string) ([]int, error) {
	s := pgx.Identifier{schema}.Sanitize()
	rows, err := admin.Query(ctx, `SELECT count(f.holder) FROM `+s+`.relayr_holders h
		LEFT JOIN `+s+`.relayr_tracker_followers f ON f.holder = h.holder AND f.expires > now()
		WHERE h.expires > now() GROUP BY h.holder ORDER BY 1 DESC`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int])
}
