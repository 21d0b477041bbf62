package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/ledgersqlite"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/fixtures/planeemu"
)

// TestSIGTERMGivesTheLeasesUpAtOnce runs `relayr serve` on a SQLite ledger
// bound to the Plane emulation, waits until its follower holds the
// workspace's lease, sends SIGTERM while a client's feed read waits, and
// checks that the read is answered, that the process ends well within its
// grace, and that it leaves the lease free: another replica takes over at
// once, without waiting 30 s for it to lapse.
func TestSIGTERMGivesTheLeasesUpAtOnce(t *testing.T) {
	bin := relayrBinary(t)
	plane := planeemu.New(planeemu.Options{Now: time.Now, RateLimit: -1})
	ps := httptest.NewServer(plane)
	defer ps.Close()

	dir := t.TempDir()
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	cfg := fmt.Sprintf(`listen = %q
holder = "replica-a"
operator_token = {env = "OP_TOKEN"}

[timings]
poll = "1s"
`, addr) + acmeOnPlane(ps.URL, plane)
	path := filepath.Join(dir, "relayr.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cmd := exec.CommandContext(t.Context(), bin, "serve", "-config", path)
	const opToken = "sigterm-operator-token-0123456789abcdef"
	const tenantToken = "sigterm-token-of-acme-0123456789abcdef"
	cmd.Env = append(os.Environ(), "ACME_TOKEN="+tenantToken, "ACME_PLANE_KEY="+plane.Bot.Key, "OP_TOKEN="+opToken)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	// Ready, and the follower has read the project once (its lease held).
	waitUntil(t, 20*time.Second, "relayr never became ready", func() bool {
		res, err := http.Get("http://" + addr + "/readyz") //nolint:noctx // a test's probe
		if err != nil {
			return false
		}
		_ = res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	// The status says when the first read completed (its cursor saved).
	waitUntil(t, 20*time.Second, "the follower never completed its first read", func() bool {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+"/relayr/v1/status", nil)
		if err != nil {
			return false
		}
		req.Header.Set("Authorization", "Bearer "+opToken)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer func() { _ = res.Body.Close() }()
		var st struct {
			Bindings []struct {
				PolledAt *time.Time `json:"polled_at"`
			} `json:"bindings"`
		}
		if res.StatusCode != http.StatusOK || json.NewDecoder(res.Body).Decode(&st) != nil {
			return false
		}
		return len(st.Bindings) == 1 && st.Bindings[0].PolledAt != nil && !st.Bindings[0].PolledAt.IsZero()
	})

	// A client follows the feed: its read waits up to a minute, longer
	// than the grace. Shutting down answers it at once with what it has.
	polled := make(chan error, 1)
	sent := make(chan struct{})
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	go func() {
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{
			WroteRequest: func(httptrace.WroteRequestInfo) { close(sent) },
		}), http.MethodGet, "http://"+addr+"/relayr/v1/tenants/acme/workspaces/ops/events?after=1000&wait=60s", nil)
		if err != nil {
			polled <- err
			return
		}
		req.Header.Set("Authorization", "Bearer "+tenantToken)
		// A connection of its own: one kept alive from the probes above
		// could be closed as idle under the request, and the request
		// sent again to a closed listener.
		res, err := fresh.Do(req)
		if err != nil {
			polled <- err
			return
		}
		defer func() { _ = res.Body.Close() }()
		var f struct{ Next int64 }
		if err := json.NewDecoder(res.Body).Decode(&f); err != nil || res.StatusCode != http.StatusOK || f.Next != 1000 {
			polled <- fmt.Errorf("the waiting read answered %d, next %d, %w; want 200 and next 1000", res.StatusCode, f.Next, err)
			return
		}
		polled <- nil
	}()
	<-sent
	// The server takes connections in the order they came: once a later
	// one is answered, the read's was taken, and shutting down waits for
	// it (a connection still in the listener's queue would be reset).
	probe, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+"/healthz", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := fresh.Do(probe)
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()

	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("relayr exited with %v after SIGTERM:\n%s", err, logs.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("relayr did not stop within 20 s of SIGTERM:\n%s", logs.String())
	}
	t.Logf("stopped %s after SIGTERM", time.Since(start).Round(time.Millisecond))
	if err := <-polled; err != nil {
		t.Fatalf("a feed read waiting at SIGTERM: %v\n%s", err, logs.String())
	}

	led, err := ledgersqlite.Open(context.Background(), filepath.Join(dir, "relayr.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = led.Close() }()
	f := ledger.Follower{Kind: ledger.TrackerFollower, Tenant: "acme", Workspace: "ops", Name: "plane"}
	cur, err := led.Cursor(context.Background(), f)
	if err != nil || !cur.Seeded {
		t.Fatalf("cursor %+v %v: the follower never saved its first read", cur, err)
	}
	// Another replica takes the lease now: it was given up, not left to lapse.
	if _, err := led.TakeLease(context.Background(), ledger.LeaseParams{Follower: f, Holder: "replica-b", Now: time.Now(), TTL: 30 * time.Second}); err != nil {
		if errors.Is(err, ledger.ErrLeaseHeld) {
			t.Fatal("the stopped replica still holds its lease: another must wait for it to lapse")
		}
		t.Fatal(err)
	}
}

func waitUntil(t *testing.T, d time.Duration, msg string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal(msg)
		}
		time.Sleep(20 * time.Millisecond) // polling a real process; no clock to step
	}
}
