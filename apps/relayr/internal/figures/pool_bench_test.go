package figures

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/relayr-go/relayr/apps/relayr/internal/app"
	"github.com/relayr-go/relayr/apps/relayr/internal/config"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/planeemu"
)

// bindings1000 is how many bindings BenchmarkBindings1000 serves.
const bindings1000 = 1000

// BenchmarkBindings1000 runs one replica (app.Run, SQLite) with 1,000
// bindings on one Plane server under one tenant's key and measures, once
// every binding has read its project, what each binding costs the
// replica: goroutines and heap bytes per binding, and the most TCP
// connections the server saw open at once (the pool's bound, tracker_conns,
// ADR-1002). The budget is raised so that every binding polls within the
// run, and polls every 2 s, so the pool is put under load.
//
//	BenchmarkBindings1000 goroutines/binding, bytes/binding, conns
func BenchmarkBindings1000(b *testing.B) {
	for range b.N {
		g, bytes, conns := bindingsFigure(b, bindings1000)
		b.ReportMetric(g, "goroutines/binding")
		b.ReportMetric(bytes, "bytes/binding")
		b.ReportMetric(float64(conns), "conns")
	}
}

// connCounter counts a server's open connections and the most at once.
type connCounter struct {
	mu        sync.Mutex
	open, max int
}

func (c *connCounter) state(_ net.Conn, s http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch s {
	case http.StateNew:
		c.open++
		c.max = max(c.max, c.open)
	case http.StateClosed, http.StateHijacked:
		c.open--
	}
}

func (c *connCounter) most() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.max
}

// bindingsFigure serves n bindings and answers goroutines and heap bytes
// per binding, and the most connections open to the tracker at once.
func bindingsFigure(tb testing.TB, n int) (goroutines, bytes float64, conns int) {
	tb.Helper()
	emu := planeemu.New(planeemu.Options{RateLimit: -1, WebhookSecret: webhookSecret})
	var cc connCounter
	srv := httptest.NewUnstartedServer(emu)
	srv.Config.ConnState = cc.state
	srv.Start()
	defer srv.Close()
	dir := tb.TempDir()
	c := &config.Config{
		Holder: "figures", TrackerConns: app.DefaultTrackerConns,
		Ledger:  config.Ledger{Driver: "sqlite", Path: filepath.Join(dir, "relayr.db")},
		Timings: config.Timings{Poll: config.Duration{Duration: 2 * time.Second}, Budget: 100_000},
		Tenants: []config.Tenant{{Name: tenant}},
		Dir:     dir,
	}
	for i := range n {
		c.Bindings = append(c.Bindings, config.Binding{
			Tenant: tenant, Workspace: fmt.Sprintf("w%04d", i), Tracker: "plane", BaseURL: srv.URL,
			PlaneWorkspace: emu.Workspace, Project: emu.AddProject(fmt.Sprintf("P%d", i), fmt.Sprintf("project %d", i)),
			Identifier: fmt.Sprintf("P%d", i),
		})
	}
	secrets := &config.Secrets{
		Tokens:   map[string]string{token: tenant},
		Trackers: tracker.StaticCredentials{tenant + "/plane": {Token: emu.Bot.Key, WebhookSecret: webhookSecret}},
	}
	base, heap := goroutinesAndHeap()
	ctx, stop := context.WithCancel(context.Background())
	a, err := app.New(ctx, c, secrets, app.Options{Logger: slog.New(slog.DiscardHandler), Transport: loopback()})
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, ln) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			tb.Errorf("relayr stopped with %v", err)
		}
		a.Close()
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for i := 0; i < n; {
		cur, err := a.Store.Cursor(ctx, ledger.Follower{Kind: ledger.TrackerFollower, Tenant: tenant, Workspace: fmt.Sprintf("w%04d", i), Name: "plane"})
		if err == nil && cur.Seeded {
			i++
			continue
		}
		if time.Now().After(deadline) {
			tb.Fatalf("binding %d never read its project", i)
		}
		time.Sleep(20 * time.Millisecond)
	}
	g, h := goroutinesAndHeap()
	return float64(g-base) / float64(n), float64(h-heap) / float64(n), cc.most()
}

// goroutinesAndHeap answers the goroutines running and the heap in use,
// after a collection.
func goroutinesAndHeap() (int, int64) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return runtime.NumGoroutine(), int64(m.HeapAlloc)
}
