package vikunja_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/vikunja"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackertest"
	"github.com/relayr-go/relayr/fixtures/vikunjaemu"
)

// emulated is one adapter over a fresh emulation.
type emulated struct {
	tr      *vikunja.Tracker
	e       *vikunjaemu.Emulator
	clock   *vikunjaemu.Clock
	project int64
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
	tr, err := vikunja.New(vikunja.Params{BaseURL: srv.URL, Token: e.Token, Project: pid, Source: source},
		append([]vikunja.Option{vikunja.WithTransport(srv.Client().Transport), vikunja.WithClock(clock.Now)}, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	return emulated{tr: tr, e: e, clock: clock, project: pid}
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
				Deletion: func(itemID, secret string) (http.Header, []byte) {
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
				},
			}
		})
	})
	t.Run("Live", func(t *testing.T) {
		base, token, project := os.Getenv("RELAYR_VIKUNJA_URL"), os.Getenv("RELAYR_VIKUNJA_TOKEN"), os.Getenv("RELAYR_VIKUNJA_PROJECT")
		if base == "" || token == "" || project == "" {
			t.Skip("no live Vikunja: set RELAYR_VIKUNJA_URL, RELAYR_VIKUNJA_TOKEN and RELAYR_VIKUNJA_PROJECT to run the suite against one")
		}
		pid, err := strconv.ParseInt(project, 10, 64)
		if err != nil {
			t.Fatalf("RELAYR_VIKUNJA_PROJECT=%q: %v", project, err)
		}
		trackertest.Run(t, func(t *testing.T) trackertest.Harness {
			tr, err := vikunja.New(vikunja.Params{BaseURL: base, Token: token, Project: pid, Source: source})
			if err != nil {
				t.Fatal(err)
			}
			// Webhook stays nil: a live server's deliveries are not ours to
			// sign, so the suite skips its nudge case.
			return trackertest.Harness{Tracker: tr, Person: livePerson{base: base, token: token}, Wait: time.Sleep}
		})
	})
}

// livePerson acts through a live server's API, as the web UI would.
type livePerson struct{ base, token string }

func (p livePerson) send(ctx context.Context, method, path, ct, body string) error {
	req, err := http.NewRequestWithContext(ctx, method, p.base+path, bytes.NewBufferString(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	if body != "" {
		req.Header.Set("Content-Type", ct)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return nil
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
