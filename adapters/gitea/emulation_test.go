package gitea_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/gitea"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/drivertest"
	"github.com/relayr-go/relayr/core/tracker/trackertest"
	"github.com/relayr-go/relayr/fixtures/giteaemu"
)

// t0 is the emulations' start.
var t0 = time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)

// emulated is the driver over a fresh emulation of one repository,
// relayr/live, with the bot's token.
type emulated struct {
	e      *giteaemu.Emulator
	clock  *giteaemu.Clock
	conn   *gitea.Connector
	token  string
	person *giteaemu.Person
}

func newEmulated(t *testing.T, opts giteaemu.Options) *emulated {
	t.Helper()
	em := &emulated{clock: giteaemu.NewClock(t0)}
	if opts.Now == nil {
		opts.Now = em.clock.Now
	}
	e, srv := giteaemu.NewServer(opts)
	t.Cleanup(srv.Close)
	t.Cleanup(e.Close)
	em.e = e
	e.AddUser("relayr")
	em.token = e.AddToken("relayr", true)
	e.CreateRepo("relayr", "live")
	// A person of the team, who may do anything the owner may.
	em.person = e.Person("relayr", "relayr", "live")
	c, err := gitea.NewConnector(gitea.Config{BaseURL: srv.URL, Repo: "relayr/live", Client: srv.Client(), Now: em.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	em.conn = c
	return em
}

func (em *emulated) driver(t *testing.T) *gitea.Driver {
	t.Helper()
	d, err := em.conn.Driver(context.Background(), tracker.Credentials{Token: em.token}, source)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// delivery registers a hook signed with secret (once), lets act fire the
// event, and answers the delivery of action about issue id.
func (em *emulated) delivery(t *testing.T, id, secret, action string, act func(n int64) error) (http.Header, []byte) {
	t.Helper()
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	before := len(em.e.Deliveries())
	if _, err := em.e.AddHook("relayr", "live", "http://127.0.0.1:9/hook", secret, "issues"); err != nil {
		t.Fatal(err)
	}
	if err := act(n); err != nil {
		t.Fatal(err)
	}
	for _, d := range em.e.Deliveries()[before:] {
		if d.Action == action && d.Header.Get(gitea.SignatureHeader) == giteaemu.Sign(secret, d.Body) {
			return d.Header, d.Body
		}
	}
	t.Fatalf("no %s delivery about #%s", action, id)
	return nil, nil
}

// emuPerson acts through the emulation's server-side person.
type emuPerson struct{ p *giteaemu.Person }

func number(id string) int64 { n, _ := strconv.ParseInt(id, 10, 64); return n }

func (p emuPerson) Retitle(_ context.Context, id, title string) error {
	return p.p.Retitle(number(id), title)
}

func (p emuPerson) Comment(_ context.Context, id, body string) error {
	_, err := p.p.Comment(number(id), body)
	return err
}

func (p emuPerson) Delete(_ context.Context, id string) error { return p.p.Delete(number(id)) }

func TestContract(t *testing.T) {
	trackertest.Run(t, func(t *testing.T) trackertest.Harness {
		em := newEmulated(t, giteaemu.Options{WebhookClient: discard()})
		return trackertest.Harness{Tracker: tracker.New(em.driver(t)), Person: emuPerson{em.person}, Wait: em.clock.Advance,
			Webhook: func(id, secret string) (http.Header, []byte) {
				return em.delivery(t, id, secret, "edited", func(n int64) error { return em.person.Retitle(n, "Changed for a delivery") })
			},
			Deletion: func(id, secret string) (http.Header, []byte) {
				return em.delivery(t, id, secret, "deleted", em.person.Delete)
			},
		}
	})
}

func TestDriver(t *testing.T) {
	drivertest.Run(t, func(t *testing.T) drivertest.Harness {
		em := newEmulated(t, giteaemu.Options{WebhookClient: discard()})
		return drivertest.Harness{Driver: em.driver(t), Person: emuPerson{em.person}, Wait: em.clock.Advance,
			Deletion: func(id, secret string) (http.Header, []byte) {
				return em.delivery(t, id, secret, "deleted", em.person.Delete)
			},
		}
	})
}

// discard is a webhook client that takes every delivery in memory and
// answers 204: the emulation keeps what it sent (Deliveries).
func discard() *http.Client {
	return &http.Client{Transport: giteaemu.RoundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
	})}
}
