package github_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/github"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/drivertest"
	"github.com/relayr-go/relayr/core/tracker/trackertest"
	"github.com/relayr-go/relayr/fixtures/githubemu"
)

var (
	t0     = time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	source = tracker.Source{Tenant: "t1", Workspace: "w1"}
)

// emulated is the driver over a fresh emulation of one repository,
// relayr/live, with the bot's token.
type emulated struct {
	e      *githubemu.Emulator
	clock  *githubemu.Clock
	conn   *github.Connector
	token  string
	person *githubemu.Person
}

func newEmulated(t testing.TB, opts githubemu.Options, cfg github.Config) *emulated {
	t.Helper()
	em := &emulated{clock: githubemu.NewClock(t0)}
	if opts.Now == nil {
		opts.Now = em.clock.Now
	}
	if opts.WebhookClient == nil {
		opts.WebhookClient = discard()
	}
	e, srv := githubemu.NewServer(opts)
	t.Cleanup(srv.Close)
	t.Cleanup(e.Close)
	em.e = e
	e.AddUser("relayr-bot")
	em.token = e.AddToken("relayr-bot", true)
	e.CreateRepo("relayr", "live")
	em.person = e.Person("alice")
	cfg.BaseURL = srv.URL + opts.PathPrefix
	cfg.Repo, cfg.Client = "relayr/live", srv.Client()
	if cfg.Now == nil {
		cfg.Now = em.clock.Now
	}
	c, err := github.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	em.conn = c
	return em
}

func (em *emulated) driver(t *testing.T) *github.Driver {
	t.Helper()
	d, err := em.conn.Driver(context.Background(), tracker.Credentials{Token: em.token}, source)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// delivery registers a hook signed with secret, lets act fire the event,
// and answers the delivery of action about issue id.
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
		if d.Action == action && d.Header.Get(github.SignatureHeader) == githubemu.Sign(secret, d.Body) {
			return d.Header, d.Body
		}
	}
	t.Fatalf("no %s delivery about #%s", action, id)
	return nil, nil
}

func (em *emulated) deletion(t *testing.T) func(id, secret string) (http.Header, []byte) {
	return func(id, secret string) (http.Header, []byte) {
		return em.delivery(t, id, secret, "deleted", func(n int64) error {
			em.e.DeleteIssue("relayr", "live", n)
			return nil
		})
	}
}

// emuPerson acts through the emulation's server-side person.
type emuPerson struct {
	e *githubemu.Emulator
	p *githubemu.Person
}

func number(id string) int64 { n, _ := strconv.ParseInt(id, 10, 64); return n }

func (p emuPerson) Retitle(_ context.Context, id, title string) error {
	return p.p.Retitle("relayr", "live", number(id), title)
}

func (p emuPerson) Comment(_ context.Context, id, body string) error {
	_, err := p.p.Comment("relayr", "live", number(id), body)
	return err
}

func (p emuPerson) Delete(_ context.Context, id string) error {
	p.e.DeleteIssue("relayr", "live", number(id))
	return nil
}

func TestContract(t *testing.T) {
	for _, prefix := range []string{"", "/api/v3"} {
		t.Run("Prefix"+prefix, func(t *testing.T) {
			trackertest.Run(t, func(t *testing.T) trackertest.Harness {
				em := newEmulated(t, githubemu.Options{PathPrefix: prefix}, github.Config{})
				return trackertest.Harness{Tracker: tracker.New(em.driver(t)), Person: emuPerson{em.e, em.person}, Wait: em.clock.Advance,
					Webhook: func(id, secret string) (http.Header, []byte) {
						return em.delivery(t, id, secret, "edited", func(n int64) error {
							return em.person.Retitle("relayr", "live", n, "Changed for a delivery")
						})
					},
					Deletion: em.deletion(t),
				}
			})
		})
	}
}

func TestDriver(t *testing.T) {
	drivertest.Run(t, func(t *testing.T) drivertest.Harness {
		em := newEmulated(t, githubemu.Options{}, github.Config{})
		return drivertest.Harness{Driver: em.driver(t), Person: emuPerson{em.e, em.person}, Wait: em.clock.Advance, Deletion: em.deletion(t)}
	})
}

// discard is a webhook client that takes every delivery in memory and
// answers 204: the emulation keeps what it sent (Deliveries).
func discard() *http.Client {
	return &http.Client{Transport: githubemu.RoundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
	})}
}
