package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/relayr-go/relayr/apps/relayr/internal/app"
	"github.com/relayr-go/relayr/apps/relayr/internal/config"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/planeemu"
)

// A feed read sent before the service stops is answered, however late the
// server reads it: net/http's Shutdown drops a request it reads after it
// began, which a loaded machine made happen (the read's connection taken,
// its request not yet read, at SIGTERM). Here the server reads the
// request only once the listener is closed, as a goroutine scheduled late
// would.
func TestAFeedReadSentBeforeTheStopIsAnswered(t *testing.T) {
	emu := planeemu.New(planeemu.Options{Now: time.Now, RateLimit: -1})
	ps := httptest.NewServer(emu)
	defer ps.Close()
	dir := t.TempDir()
	const token = "shutdown-token-of-acme-0123456789abcdef"
	c := &config.Config{
		Holder:  "shutdown",
		Ledger:  config.Ledger{Driver: "sqlite", Path: filepath.Join(dir, "relayr.db")},
		Tenants: []config.Tenant{{Name: "acme"}},
		Bindings: []config.Binding{{Tenant: "acme", Workspace: "ops", Tracker: "plane", BaseURL: ps.URL,
			PlaneWorkspace: emu.Workspace, Project: emu.Project, Identifier: emu.Identifier}},
		Dir: dir,
	}
	secrets := &config.Secrets{Tokens: map[string]string{token: "acme"},
		Trackers: tracker.StaticCredentials{"acme/plane": {Token: emu.Bot.Key}}}
	a, err := app.New(t.Context(), c, secrets, app.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &lateReads{Listener: raw, closed: make(chan struct{}), taken: make(chan struct{})}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, ln) }()

	answered := make(chan error, 1)
	go func() {
		url := fmt.Sprintf("http://%s/relayr/v1/tenants/acme/workspaces/ops/events?after=1000&wait=60s", raw.Addr())
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
		if err != nil {
			answered <- err
			return
		}
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
		if err != nil {
			answered <- err
			return
		}
		defer func() { _ = res.Body.Close() }()
		var f struct{ Next int64 }
		if err := json.NewDecoder(res.Body).Decode(&f); err != nil || res.StatusCode != http.StatusOK || f.Next != 1000 {
			answered <- fmt.Errorf("answered %d, next %d, %w; want 200 and next 1000", res.StatusCode, f.Next, err)
			return
		}
		answered <- nil
	}()
	<-ln.taken // the read's connection is taken; its request waits to be read
	stop()
	if err := <-answered; err != nil {
		t.Fatalf("a feed read sent before the stop: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// lateReads is a listener whose connections' first read waits until the
// listener is closed: a server goroutine that reads its request late.
type lateReads struct {
	net.Listener
	once   sync.Once
	closed chan struct{}
	taken  chan struct{}
	took   sync.Once
}

func (l *lateReads) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.took.Do(func() { close(l.taken) })
	return &lateConn{Conn: c, closed: l.closed}, nil
}

func (l *lateReads) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

type lateConn struct {
	net.Conn
	closed <-chan struct{}
	read   sync.Once
}

func (c *lateConn) Read(b []byte) (int, error) {
	c.read.Do(func() { <-c.closed })
	return c.Conn.Read(b)
}
