package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/relayr-go/relayr/adapters/ledgerpg"
	"github.com/relayr-go/relayr/adapters/ledgerpg/pgtest"
	"github.com/relayr-go/relayr/adapters/ledgersqlite"
	"github.com/relayr-go/relayr/adapters/natsjs/natstest"
	"github.com/relayr-go/relayr/apps/relayr/internal/app"
	"github.com/relayr-go/relayr/apps/relayr/internal/chaos"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/fixtures/planeemu"
)

// acmeOnPlane is the tenant acme, its token and Plane key from the
// environment (ACME_TOKEN, ACME_PLANE_KEY), and acme/ops bound to the Plane
// emulation at planeURL: the tables the binary's tests configure alike.
func acmeOnPlane(planeURL string, plane *planeemu.Server) string {
	return fmt.Sprintf(`
[[tenants]]
name = "acme"
token = {env = "ACME_TOKEN"}
[tenants.trackers.plane]
key = {env = "ACME_PLANE_KEY"}

[[bindings]]
tenant = "acme"
workspace = "ops"
tracker = "plane"
base_url = %q
plane_workspace = %q
project = %q
identifier = %q
`, planeURL, plane.Workspace, plane.Project, plane.Identifier)
}

// natsConfig is a configuration with one Plane binding (on the emulation,
// which a new binding seeds silently) and one NATS subscription on stream
// under prefix; ledger is its [ledger] table.
func natsConfig(ledgerTable, planeURL string, plane *planeemu.Server, stream, prefix string) string {
	return fmt.Sprintf(`listen = "127.0.0.1:0"

%s

[timings]
lease = "3s"
poll = "1s"
shutdown_grace = "1s"

[log]
level = "info"
%s
[[subscriptions]]
tenant = "acme"
workspace = "ops"
name = "broker"
[subscriptions.nats]
servers = [%q]
stream = %q
subject_prefix = %q
`, ledgerTable, acmeOnPlane(planeURL, plane), natstest.URL(), stream, prefix)
}

// appendEvents appends n events to acme/ops's log, as a rule would publish
// them.
func appendEvents(t *testing.T, log eventlog.Log, from, n int) []string {
	t.Helper()
	var ids []string
	for i := from; i < from+n; i++ {
		id := eventlog.DeriveID("nats-test", strconv.Itoa(i))
		_, _, err := log.Append(context.Background(), eventlog.AppendParams{Publisher: "rules", Event: eventlog.Event{
			ID: id, Tenant: "acme", Workspace: "ops", Type: "rules:ticket_triaged", Correlation: "run-" + strconv.Itoa(i),
			Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), At: time.Now(),
		}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// holds waits until the replica's log shows the n-th hold of the test hook:
// the broker acknowledged and the cursor was not saved.
func holds(t *testing.T, r *chaos.Replica, n int) {
	t.Helper()
	waitUntil(t, 60*time.Second, fmt.Sprintf("%s never held after the ack (hold %d):\n%s", r.Name, n, tail(r.Log.Name(), 30)), func() bool {
		b, _ := os.ReadFile(r.Log.Name())
		return strings.Count(string(b), app.HoldLine) >= n
	})
}

// exactlyOnceInOrder checks the stream holds each id once, in the log's
// order, each on its subject with its sequence.
func exactlyOnceInOrder(t *testing.T, js jetstream.JetStream, stream, prefix string, ids []string) {
	t.Helper()
	msgs := natstest.Messages(t, js, stream)
	if len(msgs) != len(ids) {
		seen := map[string]int{}
		for _, m := range msgs {
			seen[m.Header.Get(jetstream.MsgIDHeader)]++
		}
		dups, lost := 0, 0
		for _, id := range ids {
			switch seen[id] {
			case 0:
				lost++
			case 1:
			default:
				dups += seen[id] - 1
			}
		}
		t.Fatalf("the stream holds %d messages for %d events: %d duplicates, %d lost", len(msgs), len(ids), dups, lost)
	}
	for i, m := range msgs {
		if got := m.Header.Get(jetstream.MsgIDHeader); got != ids[i] || m.Header.Get("Relayr-Seq") != strconv.Itoa(i+1) {
			t.Fatalf("message %d is %s (seq %s), want %s (seq %d): out of order", i+1, got, m.Header.Get("Relayr-Seq"), ids[i], i+1)
		}
		if m.Subject != prefix+".acme.ops.rules.ticket_triaged" {
			t.Fatalf("message %d's subject %q", i+1, m.Subject)
		}
	}
}

func natsStream(t *testing.T, js jetstream.JetStream) (stream, prefix string) {
	prefix = natstest.Name("relayrtest")
	st := natstest.Stream(t, js, jetstream.StreamConfig{Subjects: []string{prefix + ".>"}, Duplicates: 2 * time.Minute})
	return st.CachedInfo().Config.Name, prefix
}

func replica(t *testing.T, name, bin, cfg, dir string, env []string) *chaos.Replica {
	t.Helper()
	addr, err := chaos.FreeAddr(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	r := &chaos.Replica{Name: name, Bin: bin, Config: cfg, Env: env, Addr: addr, Log: logf}
	t.Cleanup(func() {
		_ = r.Kill()
		if t.Failed() {
			t.Logf("the end of %s's log:\n%s", name, tail(logf.Name(), 40))
		}
		_ = logf.Close()
	})
	return r
}

// TestNATSKilledBetweenPublishAndCursorSave runs the built binary on a
// SQLite ledger with a NATS subscription, kills it with SIGKILL after the
// broker acknowledged events and before the cursor was saved (twice), and
// starts it again: the stream holds every event exactly once, in order.
func TestNATSKilledBetweenPublishAndCursorSave(t *testing.T) {
	js := natstest.JetStream(t)
	stream, prefix := natsStream(t, js)
	bin := relayrBinary(t)
	plane := planeemu.New(planeemu.Options{Now: time.Now, RateLimit: -1})
	ps := httptest.NewServer(plane)
	defer ps.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "relayr.toml")
	if err := os.WriteFile(cfg, []byte(natsConfig(`[ledger]
driver = "sqlite"`, ps.URL, plane, stream, prefix)), 0o600); err != nil {
		t.Fatal(err)
	}
	led, err := ledgersqlite.Open(t.Context(), filepath.Join(dir, "relayr.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = led.Close() }()
	ids := appendEvents(t, led, 1, 150)
	f := ledger.Follower{Kind: ledger.LogFollower, Tenant: "acme", Workspace: "ops", Name: "broker"}
	env := append(os.Environ(), "ACME_TOKEN="+natsTenantToken, "ACME_PLANE_KEY="+plane.Bot.Key)

	r := replica(t, "relayr", bin, cfg, dir, nil)
	for life, holdAfter := range []int{20, 130} {
		r.Env = append(slices.Clone(env), fmt.Sprintf("%s=%d", app.HoldAfterAckEnv, holdAfter))
		if err := r.Start(t.Context(), 30*time.Second); err != nil {
			t.Fatal(err)
		}
		holds(t, r, life+1)
		if err := r.Kill(); err != nil {
			t.Fatal(err)
		}
		cur, err := led.Cursor(t.Context(), f)
		if err != nil {
			t.Fatal(err)
		}
		stored := len(natstest.Messages(t, js, stream))
		// The window was hit: the broker holds events the cursor is not past.
		if stored != holdAfter || cur.Seq >= int64(holdAfter) {
			t.Fatalf("life %d: killed with %d events in the stream and the cursor at %d; want %d stored and the cursor before them", life+1, stored, cur.Seq, holdAfter)
		}
		t.Logf("life %d: killed after the ack of seq %d, cursor at %d", life+1, holdAfter, cur.Seq)
	}
	r.Env = env
	if err := r.Start(t.Context(), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	ids = append(ids, appendEvents(t, led, 151, 10)...) // appended while it runs
	waitUntil(t, 60*time.Second, "the cursor never reached the log's head", func() bool {
		cur, err := led.Cursor(context.Background(), f)
		return err == nil && cur.Seq == int64(len(ids))
	})
	exactlyOnceInOrder(t, js, stream, prefix, ids)
}

// TestNATSTwoReplicasTakeTheSubscriptionOver runs two replicas of the built
// binary on one PostgreSQL ledger; the one holding the subscription's lease
// is killed after the broker's ack and before the cursor's save, the other
// takes the lease over and is killed the same way, the first comes back:
// every event is in the stream exactly once, in order.
func TestNATSTwoReplicasTakeTheSubscriptionOver(t *testing.T) {
	js := natstest.JetStream(t)
	stream, prefix := natsStream(t, js)
	dsn := chaosDatabase(t)
	schema := pgtest.Schema(t)
	bin := relayrBinary(t)
	plane := planeemu.New(planeemu.Options{Now: time.Now, RateLimit: -1})
	ps := httptest.NewServer(plane)
	defer ps.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "relayr.toml")
	if err := os.WriteFile(cfg, []byte(natsConfig(fmt.Sprintf(`[ledger]
driver = "postgres"
dsn = {env = "RELAYR_TEST_DSN"}
schema = %q`, schema), ps.URL, plane, stream, prefix)), 0o600); err != nil {
		t.Fatal(err)
	}
	led, err := ledgerpg.Open(t.Context(), dsn, ledgerpg.Options{Schema: schema, Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	ids := appendEvents(t, led, 1, 300)
	f := ledger.Follower{Kind: ledger.LogFollower, Tenant: "acme", Workspace: "ops", Name: "broker"}
	env := append(os.Environ(), "ACME_TOKEN="+natsTenantToken, "ACME_PLANE_KEY="+plane.Bot.Key, "RELAYR_TEST_DSN="+dsn)
	a := replica(t, "replica-a", bin, cfg, dir, append(slices.Clone(env), app.HoldAfterAckEnv+"=40"))
	b := replica(t, "replica-b", bin, cfg, dir, append(slices.Clone(env), app.HoldAfterAckEnv+"=150"))

	// A takes the subscription and is killed after the ack of seq 40.
	if err := a.Start(t.Context(), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	holds(t, a, 1)
	if err := b.Start(t.Context(), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := a.Kill(); err != nil {
		t.Fatal(err)
	}
	// B takes the lapsed lease from A's cursor, and is killed after the
	// ack of seq 150.
	holds(t, b, 1)
	if err := b.Kill(); err != nil {
		t.Fatal(err)
	}
	cur, err := led.Cursor(t.Context(), f)
	if err != nil {
		t.Fatal(err)
	}
	if stored := len(natstest.Messages(t, js, stream)); stored != 150 || cur.Seq >= 150 {
		t.Fatalf("B killed with %d events in the stream and the cursor at %d; want 150 and the cursor before them", stored, cur.Seq)
	}
	t.Logf("B killed after the ack of seq 150, cursor at %d", cur.Seq)
	// A comes back, without the hook, and takes the rest over.
	a.Env = env
	if err := a.Start(t.Context(), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 60*time.Second, "the cursor never reached the log's head", func() bool {
		cur, err := led.Cursor(context.Background(), f)
		return err == nil && cur.Seq == int64(len(ids))
	})
	exactlyOnceInOrder(t, js, stream, prefix, ids)
}

// TestNATSAMissingStreamRefusesTheStart: relayr creates a stream only
// when configured to; otherwise it refuses to start, saying what to do.
func TestNATSAMissingStreamRefusesTheStart(t *testing.T) {
	natstest.JetStream(t)
	bin := relayrBinary(t)
	plane := planeemu.New(planeemu.Options{Now: time.Now, RateLimit: -1})
	ps := httptest.NewServer(plane)
	defer ps.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "relayr.toml")
	stream := natstest.Name("RELAYR_TEST_")
	if err := os.WriteFile(cfg, []byte(natsConfig(`[ledger]
driver = "sqlite"`, ps.URL, plane, stream, "relayr")), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, "serve", "-config", cfg)
	cmd.Env = append(os.Environ(), "ACME_TOKEN="+natsTenantToken, "ACME_PLANE_KEY="+plane.Bot.Key)
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != exitFail {
		t.Fatalf("relayr serve with a missing stream: %v\n%s", err, out)
	}
	for _, want := range []string{"stream " + stream + " does not exist", "create_stream = true", `relayr.>`} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("the refusal does not say %q:\n%s", want, out)
		}
	}
}

// TestNATSABrokerDownStopsNothingElse starts relayr while its NATS server
// is down, beside an HTTP subscription of the same workspace: relayr
// serves, the HTTP subscriber gets every event, /metrics counts the NATS
// subscription's failures with their reason; once the broker is up,
// relayr creates the stream (create_stream) and every event arrives in it
// once, in order.
func TestNATSABrokerDownStopsNothingElse(t *testing.T) {
	natstest.JetStream(t) // the machine's server must exist, as for every NATS test
	url := natstest.ClosedURL(t)
	bin := relayrBinary(t)
	plane := planeemu.New(planeemu.Options{Now: time.Now, RateLimit: -1})
	ps := httptest.NewServer(plane)
	defer ps.Close()
	sub := &subscriber{secret: "hook-secret", first: map[string][]eventlog.Event{}, seen: map[string]bool{}}
	subSrv := httptest.NewServer(sub)
	defer subSrv.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "relayr.toml")
	text := natsConfig(`operator_token = {env = "OP_TOKEN"}

[ledger]
driver = "sqlite"`, ps.URL, plane, "RELAYR_EVENTS", "relayr")
	text = strings.Replace(text, natstest.URL(), url, 1) + "create_stream = true\n" + fmt.Sprintf(`
[[subscriptions]]
tenant = "acme"
workspace = "ops"
name = "rules"
url = %q
secret = {env = "HOOK_SECRET"}
`, subSrv.URL)
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	led, err := ledgersqlite.Open(t.Context(), filepath.Join(dir, "relayr.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = led.Close() }()
	ids := appendEvents(t, led, 1, 30)
	env := append(os.Environ(), "ACME_TOKEN="+natsTenantToken, "ACME_PLANE_KEY="+plane.Bot.Key, "OP_TOKEN="+natsOperatorToken, "HOOK_SECRET=hook-secret")
	r := replica(t, "relayr", bin, cfg, dir, env)
	if err := r.Start(t.Context(), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "the HTTP subscriber never got every event", func() bool { sub.mu.Lock(); defer sub.mu.Unlock(); return len(sub.seen) == len(ids) })
	waitUntil(t, 30*time.Second, "/metrics never counted the broker's failures", func() bool {
		m := metricsText(t, r.URL(), natsOperatorToken)
		return strings.Contains(m, `relayr_followers_delivery_failures_total{key="",name="broker",reason="unreachable",tenant="acme",tracker="",workspace="ops"}`) &&
			strings.Contains(m, `relayr_followers_delivered_total{key="",name="rules",reason="",tenant="acme",tracker="",workspace="ops"} 30`)
	})
	f := ledger.Follower{Kind: ledger.LogFollower, Tenant: "acme", Workspace: "ops", Name: "broker"}
	if cur, _ := led.Cursor(t.Context(), f); cur.Seq != 0 {
		t.Fatalf("the NATS subscription's cursor moved to %d with its broker down", cur.Seq)
	}
	natstest.StartAt(t, url)
	waitUntil(t, 60*time.Second, "the NATS subscription never caught up", func() bool {
		cur, err := led.Cursor(context.Background(), f)
		return err == nil && cur.Seq == int64(len(ids))
	})
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(t.Context(), "RELAYR_EVENTS")
	if err != nil {
		t.Fatalf("relayr did not create the stream: %v", err)
	}
	if c := st.CachedInfo().Config; c.Duplicates < 3*time.Second || len(c.Subjects) != 1 || c.Subjects[0] != "relayr.>" {
		t.Fatalf("the stream relayr created: %+v", c)
	}
	exactlyOnceInOrder(t, js, "RELAYR_EVENTS", "relayr", ids)
}

func metricsText(t *testing.T, base, token string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return ""
	}
	defer func() { _ = res.Body.Close() }()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

// TestCheckReachesEachNATSStream: `relayr check` connects to each NATS
// subscription's servers and checks its stream as serve would, creating
// nothing.
func TestCheckReachesEachNATSStream(t *testing.T) {
	js := natstest.JetStream(t)
	stream, prefix := natsStream(t, js)
	plane := planeemu.New(planeemu.Options{Now: time.Now, RateLimit: -1})
	ps := httptest.NewServer(plane)
	defer ps.Close()
	path := filepath.Join(t.TempDir(), "relayr.toml")
	write := func(stream string) {
		if err := os.WriteFile(path, []byte(natsConfig(`[ledger]
driver = "sqlite"`, ps.URL, plane, stream, prefix)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("ACME_TOKEN", natsTenantToken)
	t.Setenv("ACME_PLANE_KEY", plane.Bot.Key)
	write(stream)
	var out strings.Builder
	if code := run(context.Background(), []string{"check", "-config", path}, &out, &out); code != exitOK {
		t.Fatalf("exit %d with a stream that fits:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "acme/ops/broker") || !strings.Contains(out.String(), "stream "+stream+" fits") {
		t.Fatalf("output:\n%s", out.String())
	}
	missing := natstest.Name("RELAYR_TEST_")
	write(missing)
	out.Reset()
	if code := run(context.Background(), []string{"check", "-config", path}, &out, &out); code != exitFail {
		t.Fatalf("exit %d with a missing stream:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "FAILED") || !strings.Contains(out.String(), "does not exist") {
		t.Fatalf("output:\n%s", out.String())
	}
	if _, err := js.Stream(t.Context(), missing); err == nil {
		t.Fatal("relayr check created a stream")
	}
}

// The tokens the NATS runs' configurations read: 32 bytes, as the
// configuration asks of a token.
const (
	natsTenantToken   = "nats-test-tenant-token-of-32-bytes"
	natsOperatorToken = "nats-test-operator-token-32-bytes"
)
