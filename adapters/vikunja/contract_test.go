package vikunja_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/vikunja"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/drivertest"
	"github.com/relayr-go/relayr/core/tracker/trackertest"
	"github.com/relayr-go/relayr/fixtures/livehook"
	"github.com/relayr-go/relayr/fixtures/vikunjaemu"
)

// emulated is one adapter over a fresh emulation.
type emulated struct {
	tr      *tracker.Tracker
	d       tracker.Driver
	e       *vikunjaemu.Emulator
	clock   *vikunjaemu.Clock
	project int64
	// url and transport reach the emulation, for a second adapter.
	url       string
	transport http.RoundTripper
}

var source = tracker.Source{Tenant: "t1", Workspace: "w1"}

func newEmulated(t *testing.T, opts vikunjaemu.Options, extra ...vikunja.Option) emulated {
	t.Helper()
	clock := vikunjaemu.NewClock(time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC))
	if opts.Now == nil {
		opts.Now = clock.Now
	}
	e, srv := vikunjaemu.NewServer(opts)
	t.Cleanup(srv.Close)
	t.Cleanup(e.Close)
	pid := e.CreateProject("Lattice", "LAT")
	d, err := vikunja.NewDriver(vikunja.Params{BaseURL: srv.URL, Token: e.Token, Project: pid, Source: source},
		append([]vikunja.Option{vikunja.WithTransport(srv.Client().Transport), vikunja.WithClock(clock.Now)}, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	return emulated{tr: tracker.New(d), d: d, e: e, clock: clock, project: pid, url: srv.URL, transport: srv.Client().Transport}
}

// deletion deletes the task as a person would and answers the emulation's
// task.deleted delivery.
func (em emulated) deletion(t *testing.T) func(itemID, secret string) (http.Header, []byte) {
	return func(itemID, secret string) (http.Header, []byte) {
		n, err := taskID(itemID)
		if err != nil {
			t.Fatal(err)
		}
		if err := em.e.Person().Delete(n); err != nil {
			t.Fatal(err)
		}
		h, b, ok := em.e.DeletionDelivery(n, secret)
		if !ok {
			t.Fatalf("no task %s to deliver about", itemID)
		}
		return h, b
	}
}

// emuPerson acts through the emulation's server-side Person.
type emuPerson struct{ p *vikunjaemu.Person }

func taskID(id string) (int64, error) { return strconv.ParseInt(id, 10, 64) }

func (p emuPerson) Retitle(_ context.Context, id, title string) error {
	n, err := taskID(id)
	if err != nil {
		return err
	}
	return p.p.Retitle(n, title)
}

func (p emuPerson) Comment(_ context.Context, id, body string) error {
	n, err := taskID(id)
	if err != nil {
		return err
	}
	_, err = p.p.Comment(n, body)
	return err
}

func (p emuPerson) Delete(_ context.Context, id string) error {
	n, err := taskID(id)
	if err != nil {
		return err
	}
	return p.p.Delete(n)
}

func TestContract(t *testing.T) {
	t.Run("Emulation", func(t *testing.T) {
		trackertest.Run(t, func(t *testing.T) trackertest.Harness {
			em := newEmulated(t, vikunjaemu.Options{})
			return trackertest.Harness{
				Tracker: em.tr,
				Person:  emuPerson{em.e.Person()},
				Wait:    em.clock.Advance,
				Webhook: func(itemID, secret string) (http.Header, []byte) {
					n, err := taskID(itemID)
					if err != nil {
						t.Fatal(err)
					}
					h, b, ok := em.e.Delivery(n, secret)
					if !ok {
						t.Fatalf("no task %s to deliver about", itemID)
					}
					return h, b
				},
				Deletion: em.deletion(t),
			}
		})
	})
	t.Run("Live", func(t *testing.T) {
		l := liveVikunja(t)
		trackertest.Run(t, func(t *testing.T) trackertest.Harness {
			// Deliveries are the server's own, received on a loopback
			// listener a project webhook points at.
			return trackertest.Harness{Tracker: tracker.New(l.driver(t)), Person: l.person, Wait: time.Sleep,
				Webhook: func(id, secret string) (http.Header, []byte) {
					l.hooks.register(t, secret)
					if err := l.person.Retitle(t.Context(), id, "Changed for a delivery"); err != nil {
						t.Fatal(err)
					}
					return l.hooks.await(t, vikunja.EventTaskUpdated, id)
				},
				Deletion: l.deletion(t),
			}
		})
	})
}

// TestDriver runs the driver conformance suite over the emulation and,
// when one is named, a live Vikunja.
func TestDriver(t *testing.T) {
	t.Run("Emulation", func(t *testing.T) {
		drivertest.Run(t, func(t *testing.T) drivertest.Harness {
			em := newEmulated(t, vikunjaemu.Options{})
			return drivertest.Harness{Driver: em.d, Person: emuPerson{em.e.Person()}, Wait: em.clock.Advance, Deletion: em.deletion(t)}
		})
	})
	t.Run("Live", func(t *testing.T) {
		l := liveVikunja(t)
		drivertest.Run(t, func(t *testing.T) drivertest.Harness {
			return drivertest.Harness{Driver: l.driver(t), Person: l.person, Wait: time.Sleep, Deletion: l.deletion(t)}
		})
	})
}

// live is a Vikunja built from its source and run on 127.0.0.1, named by
// RELAYR_VIKUNJA_URL, RELAYR_VIKUNJA_TOKEN and RELAYR_VIKUNJA_PROJECT.
// Without them the live runs skip; under RELAYR_REQUIRE_LIVE=1 they fail.
type live struct {
	base, token string
	project     int64
	person      livePerson
	hooks       *liveHooks
}

func liveVikunja(t *testing.T) live {
	t.Helper()
	env := livehook.Env(t, "Vikunja", "RELAYR_VIKUNJA_URL", "RELAYR_VIKUNJA_TOKEN", "RELAYR_VIKUNJA_PROJECT")
	base, token, project := env[0], env[1], env[2]
	pid, err := strconv.ParseInt(project, 10, 64)
	if err != nil {
		t.Fatalf("RELAYR_VIKUNJA_PROJECT=%q: %v", project, err)
	}
	p := livePerson{base: base, token: token}
	return live{base: base, token: token, project: pid, person: p, hooks: newLiveHooks(t, p, pid)}
}

func (l live) driver(t *testing.T) tracker.Driver {
	t.Helper()
	d, err := vikunja.NewDriver(vikunja.Params{BaseURL: l.base, Token: l.token, Project: l.project, Source: source})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// deletion deletes the task as a person and answers the server's
// task.deleted delivery.
func (l live) deletion(t *testing.T) func(id, secret string) (http.Header, []byte) {
	return func(id, secret string) (http.Header, []byte) {
		l.hooks.register(t, secret)
		if err := l.person.Delete(t.Context(), id); err != nil {
			t.Fatal(err)
		}
		return l.hooks.await(t, vikunja.EventTaskDeleted, id)
	}
}

// liveHooks registers project webhooks on a live server (one per secret),
// pointed at a loopback receiver, and deletes them when the run ends.
type liveHooks struct {
	rx      *livehook.Receiver
	person  livePerson
	project int64
	// owner is the test the hooks live as long as: each subtest's
	// registration is deleted when the whole run ends, not the subtest.
	owner *testing.T

	mu         sync.Mutex
	registered map[string]bool
}

func newLiveHooks(t *testing.T, p livePerson, project int64) *liveHooks {
	return &liveHooks{rx: livehook.New(t), person: p, project: project, owner: t, registered: map[string]bool{}}
}

// register adds a webhook on the project for task.updated and task.deleted,
// signed with secret, once per secret; it is deleted when the run ends.
func (h *liveHooks) register(t *testing.T, secret string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.registered[secret] {
		return
	}
	body := fmt.Sprintf(`{"target_url":%q,"events":[%q,%q],"secret":%q}`, h.rx.URL, vikunja.EventTaskUpdated, vikunja.EventTaskDeleted, secret)
	out, err := h.person.call(t.Context(), http.MethodPut, fmt.Sprintf("/api/v1/projects/%d/webhooks", h.project), "application/json", body)
	if err != nil {
		t.Fatalf("registering a webhook on project %d: %v", h.project, err)
	}
	var hook struct {
		ID int64 `json:"id"`
	}
	if err := json.Unmarshal(out, &hook); err != nil || hook.ID <= 0 {
		t.Fatalf("registering a webhook answered %s (%v)", out, err)
	}
	h.registered[secret] = true
	path := fmt.Sprintf("/api/v1/projects/%d/webhooks/%d", h.project, hook.ID)
	h.owner.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := h.person.call(ctx, http.MethodDelete, path, "", ""); err != nil {
			h.owner.Errorf("deleting the test's webhook: %v", err)
		}
	})
}

// await answers the first delivery of event about task.
func (h *liveHooks) await(t *testing.T, event, task string) (http.Header, []byte) {
	d := h.rx.Await(t, event+" about task "+task, "A Vikunja delivers to a loopback address only with "+
		"`outgoingrequests.allownonroutableips: true` in its config, and only with webhooks enabled "+
		"(`webhooks.enabled`, on by default).", func(d livehook.Delivery) bool {
		var p struct {
			Event string `json:"event_name"`
			Data  struct {
				Task struct {
					ID int64 `json:"id"`
				} `json:"task"`
			} `json:"data"`
		}
		return json.Unmarshal(d.Body, &p) == nil && p.Event == event && strconv.FormatInt(p.Data.Task.ID, 10) == task
	})
	return d.Header, d.Body
}

// livePerson acts through a live server's API, as the web UI would.
type livePerson struct{ base, token string }

func (p livePerson) send(ctx context.Context, method, path, ct, body string) error {
	_, err := p.call(ctx, method, path, ct, body)
	return err
}

func (p livePerson) call(ctx context.Context, method, path, ct, body string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, p.base+path, bytes.NewBufferString(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	if body != "" {
		req.Header.Set("Content-Type", ct)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return b, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return b, nil
}

func (p livePerson) Retitle(ctx context.Context, id, title string) error {
	return p.send(ctx, http.MethodPatch, "/api/v2/tasks/"+id, "application/merge-patch+json", fmt.Sprintf(`{"title":%q}`, title))
}

func (p livePerson) Comment(ctx context.Context, id, body string) error {
	return p.send(ctx, http.MethodPut, "/api/v1/tasks/"+id+"/comments", "application/json", fmt.Sprintf(`{"comment":%q}`, body))
}

func (p livePerson) Delete(ctx context.Context, id string) error {
	return p.send(ctx, http.MethodDelete, "/api/v1/tasks/"+id, "", "")
}
