package plane_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/plane"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/drivertest"
	"github.com/relayr-go/relayr/core/tracker/trackertest"
	"github.com/relayr-go/relayr/fixtures/livehook"
	"github.com/relayr-go/relayr/fixtures/planeemu"
)

// emulated is an adapter over a fresh emulation, served on loopback: the
// portable tracker and the driver under it.
type emulated struct {
	emu  *planeemu.Server
	conn *plane.Connector
	tr   *tracker.Tracker
	d    *plane.Driver
	url  string
}

func newEmulated(t *testing.T, opts planeemu.Options, cfg plane.Config) *emulated {
	t.Helper()
	emu := planeemu.New(opts)
	srv := httptest.NewServer(emu)
	t.Cleanup(srv.Close)
	cfg.BaseURL, cfg.Workspace, cfg.Project = srv.URL, emu.Workspace, emu.Project
	if cfg.WebURL == "" {
		cfg.WebURL = "https://plane.example.com"
	}
	conn, err := plane.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d, err := conn.ConnectDriver(context.Background(), tracker.Credentials{Token: emu.Bot.Key}, tracker.Source{Tenant: "acme", Workspace: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	return &emulated{emu: emu, conn: conn, tr: tracker.New(d), d: d, url: srv.URL}
}

// emuPerson acts through the emulation's web-app side.
type emuPerson struct{ emu *planeemu.Server }

func (p emuPerson) Retitle(_ context.Context, id, title string) error {
	return p.emu.Retitle(id, title)
}
func (p emuPerson) Comment(_ context.Context, id, body string) error {
	_, err := p.emu.Comment(id, body)
	return err
}
func (p emuPerson) Delete(_ context.Context, id string) error { return p.emu.Delete(id) }

func TestContract(t *testing.T) {
	for _, c := range []struct {
		name     string
		pageSize int
	}{{"Emulation", 0}, {"EmulationPagesOfThree", 3}} {
		t.Run(c.name, func(t *testing.T) {
			trackertest.Run(t, func(t *testing.T) trackertest.Harness {
				// Plane's own rate limit, 60 a minute per key, stays on.
				e := newEmulated(t, planeemu.Options{}, plane.Config{PageSize: c.pageSize})
				return trackertest.Harness{
					Tracker: e.tr,
					Person:  emuPerson{e.emu},
					Wait:    e.emu.Advance,
					Webhook: func(id, secret string) (http.Header, []byte) {
						h, b, _ := e.emu.ItemDelivery(id, secret)
						return h, b
					},
				}
			})
		})
	}
	t.Run("Plane", func(t *testing.T) {
		l := newLive(t)
		trackertest.Run(t, func(t *testing.T) trackertest.Harness {
			tr, err := l.conn.Connect(context.Background(), l.creds, l.source)
			if err != nil {
				t.Fatal(err)
			}
			// A live Plane's clock passes on its own.
			return trackertest.Harness{Tracker: tr, Person: l.person, Wait: time.Sleep}
		})
	})
}

// live is a Plane the environment names, for the contract and the
// conformance suite.
type live struct {
	conn   *plane.Connector
	creds  tracker.Credentials
	source tracker.Source
	person livePerson
}

func newLive(t *testing.T) live {
	t.Helper()
	names := []string{"RELAYR_PLANE_URL", "RELAYR_PLANE_KEY", "RELAYR_PLANE_WORKSPACE", "RELAYR_PLANE_PROJECT"}
	env := map[string]string{}
	for i, v := range livehook.Env(t, "Plane", names...) {
		env[names[i]] = v
	}
	conn, err := plane.NewConnector(plane.Config{
		BaseURL: env["RELAYR_PLANE_URL"], Workspace: env["RELAYR_PLANE_WORKSPACE"], Project: env["RELAYR_PLANE_PROJECT"],
	})
	if err != nil {
		t.Fatal(err)
	}
	return live{
		conn:   conn,
		creds:  tracker.Credentials{Token: env["RELAYR_PLANE_KEY"]},
		source: tracker.Source{Tenant: "relayr-contract", Workspace: "live"},
		person: livePerson{
			base: env["RELAYR_PLANE_URL"] + "/api/v1/workspaces/" + env["RELAYR_PLANE_WORKSPACE"] + "/projects/" + env["RELAYR_PLANE_PROJECT"] + "/work-items/",
			key:  env["RELAYR_PLANE_KEY"],
		},
	}
}

// TestDriver runs the drivers' conformance suite over the emulation, and a
// live Plane when the environment names one: what the Capabilities say of
// Plane is what it does.
func TestDriver(t *testing.T) {
	for _, c := range []struct {
		name     string
		pageSize int
	}{{"Emulation", 0}, {"EmulationPagesOfThree", 3}} {
		t.Run(c.name, func(t *testing.T) {
			drivertest.Run(t, func(t *testing.T) drivertest.Harness {
				e := newEmulated(t, planeemu.Options{}, plane.Config{PageSize: c.pageSize})
				// Plane sends no deletion webhook: Deletion stays nil.
				return drivertest.Harness{Driver: e.d, Person: emuPerson{e.emu}, Wait: e.emu.Advance}
			})
		})
	}
	t.Run("Plane", func(t *testing.T) {
		l := newLive(t)
		drivertest.Run(t, func(t *testing.T) drivertest.Harness {
			d, err := l.conn.ConnectDriver(context.Background(), l.creds, l.source)
			if err != nil {
				t.Fatal(err)
			}
			return drivertest.Harness{Driver: d, Person: l.person, Wait: time.Sleep}
		})
	})
}

// livePerson acts through Plane's API with the same key: it is not a
// different user, but its writes carry no external id.
type livePerson struct{ base, key string }

func (p livePerson) call(ctx context.Context, method, path string, body any) error {
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.base+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("X-Api-Key", p.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode >= 300 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return nil
}

func (p livePerson) Retitle(ctx context.Context, id, title string) error {
	return p.call(ctx, http.MethodPatch, id+"/", map[string]any{"name": title})
}
func (p livePerson) Comment(ctx context.Context, id, body string) error {
	return p.call(ctx, http.MethodPost, id+"/comments/", map[string]any{"comment_html": body})
}
func (p livePerson) Delete(ctx context.Context, id string) error {
	return p.call(ctx, http.MethodDelete, id+"/", nil)
}

// A burst of filings that each meet a state the catalog has not read (the
// catalog cold, every create answering a state id) reads the project's
// states once, not once a filing.
func TestABurstThatMissesTheStatesReadsThemOnce(t *testing.T) {
	em := newEmulated(t, planeemu.Options{}, plane.Config{})
	before := em.emu.Count("GET", "states")
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if _, err := em.tr.Create(t.Context(), fmt.Sprintf("burst-%d", i), tracker.Draft{Title: "burst"}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := em.emu.Count("GET", "states") - before; n > 1 {
		t.Fatalf("the states read %d times for a burst of 20 filings, want once at the most", n)
	}
}
