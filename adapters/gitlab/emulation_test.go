package gitlab_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/gitlab"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/drivertest"
	"github.com/relayr-go/relayr/core/tracker/trackertest"
	"github.com/relayr-go/relayr/fixtures/gitlabemu"
)

var (
	t0     = time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	source = tracker.Source{Tenant: "t1", Workspace: "w1"}
)

const (
	bot     = "relayr-bot"
	human   = "ana"
	project = "ops/platform"
)

// position is one answer to what the fact sheet leaves unknown
// (docs/trackers/gitlab.md §11.2), or one kind of GitLab: the emulation's
// switches, each run by the driver's tests.
type position struct {
	name string
	opts gitlabemu.Options
	// signed: the hook has a signing token, the secret (Standard
	// Webhooks), beside its secret token.
	signed bool
}

// positions are GitLab.com's limits, a self-managed instance's, each
// switch of the emulation on its own, and all of them at once.
var positions = []position{
	{name: "GitLabCom", opts: gitlabemu.GitLabCom()},
	{name: "SelfManaged", opts: gitlabemu.Options{}},
	{name: "NoKeyset", opts: gitlabemu.Options{NoKeyset: true}},
	{name: "ListsLag3s", opts: gitlabemu.Options{ListLag: 3 * time.Second}},
	{name: "LabelEditsTouch", opts: gitlabemu.Options{LabelEditsTouchAlways: true}},
	{name: "LocalOffset", opts: gitlabemu.Options{Location: time.FixedZone("CEST", 2*3600)}},
	{name: "ResendFailed", opts: gitlabemu.Options{ResendFailed: true}},
	{name: "SigningToken", opts: gitlabemu.Options{}, signed: true},
	// A 304 free of the API throttle (the sheet's unknown, §7
	// "Conditional requests"), on GitLab.com's limits, where it counts.
	{name: "FreeNotModified", opts: func() gitlabemu.Options {
		o := gitlabemu.GitLabCom()
		o.FreeNotModified = true
		return o
	}()},
	{name: "AllAtOnce", opts: func() gitlabemu.Options {
		o := gitlabemu.GitLabCom()
		o.NoKeyset, o.ListLag, o.LabelEditsTouchAlways, o.Location, o.ResendFailed = true, 3*time.Second, true, time.FixedZone("CEST", 2*3600), true
		o.FreeNotModified = true
		return o
	}(), signed: true},
}

// emulated is the driver over a fresh emulation of one project,
// ops/platform, owned by the bot's user, on a clock the test steps.
type emulated struct {
	e      *gitlabemu.Emulator
	clock  *gitlabemu.Clock
	conn   *gitlab.Connector
	token  string
	person *gitlabemu.Person
	srv    *httptest.Server
	signed bool
	lag    time.Duration // the emulation's ListLag
}

func newEmulated(t testing.TB, opts gitlabemu.Options, cfg gitlab.Config) *emulated {
	t.Helper()
	em := &emulated{clock: gitlabemu.NewClock(t0), lag: opts.ListLag}
	if opts.Now == nil {
		opts.Now = em.clock.Now
	}
	if opts.WebhookClient == nil {
		opts.WebhookClient = discard()
	}
	e, srv := gitlabemu.NewServer(opts)
	t.Cleanup(srv.Close)
	t.Cleanup(e.Close)
	em.e, em.srv = e, srv
	e.AddUser(bot)
	e.AddUser(human)
	em.token = e.AddToken(bot)
	e.CreateProject(project, bot)
	em.person = e.Person(human, project)
	cfg.BaseURL, cfg.Client = srv.URL, srv.Client()
	if cfg.Project == "" {
		cfg.Project = project
	}
	if cfg.Now == nil {
		cfg.Now = em.clock.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = func(ctx context.Context, d time.Duration) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			em.clock.Advance(d)
			return nil
		}
	}
	c, err := gitlab.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	em.conn = c
	return em
}

func (em *emulated) driver(t testing.TB) *gitlab.Driver {
	t.Helper()
	d, err := em.conn.Driver(context.Background(), tracker.Credentials{Token: em.token}, source)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func iid(t testing.TB, id string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		t.Fatalf("id %q is no iid", id)
	}
	return n
}

// delivery registers a hook with the secret token, lets act fire the
// event, and answers the delivery of event about the issue.
func (em *emulated) delivery(t testing.TB, id, secret, event string, act func() error) (http.Header, []byte) {
	t.Helper()
	before := len(em.e.Deliveries())
	signing := ""
	if em.signed {
		signing = secret
	}
	em.e.AddHook(project, "http://127.0.0.1:9/hook", secret, signing)
	if err := act(); err != nil {
		t.Fatal(err)
	}
	for _, d := range em.e.Deliveries()[before:] {
		if d.Event == event && d.IID == iid(t, id) && d.Header.Get(gitlab.HookHeader) == secret {
			return d.Header, d.Body
		}
	}
	t.Fatalf("no %s delivery about #%s", event, id)
	return nil, nil
}

// emuPerson acts through the emulation's person, and lets the lists'
// lag pass after each change, as a live run's time would before relayr
// reads it.
type emuPerson struct {
	t  testing.TB
	em *emulated
}

func (p emuPerson) settle(err error) error {
	p.em.clock.Advance(p.em.lag)
	return err
}

func (p emuPerson) Retitle(_ context.Context, id, title string) error {
	return p.settle(p.em.person.Retitle(iid(p.t, id), title))
}

func (p emuPerson) Comment(_ context.Context, id, body string) error {
	_, err := p.em.person.Comment(iid(p.t, id), body)
	return p.settle(err)
}

func (p emuPerson) Delete(_ context.Context, id string) error {
	return p.settle(p.em.person.Delete(iid(p.t, id)))
}

func TestContract(t *testing.T) {
	for _, pos := range positions {
		t.Run(pos.name, func(t *testing.T) {
			trackertest.Run(t, func(t *testing.T) trackertest.Harness {
				em := newEmulated(t, pos.opts, gitlab.Config{})
				em.signed = pos.signed
				return trackertest.Harness{Tracker: tracker.New(em.driver(t)), Person: emuPerson{t, em}, Wait: em.clock.Advance, UnsignedBodies: !pos.signed,
					Webhook: func(id, secret string) (http.Header, []byte) {
						return em.delivery(t, id, secret, "Issue Hook", func() error {
							return em.person.Retitle(iid(t, id), "Changed for a delivery")
						})
					},
				}
			})
		})
	}
}

// TestDriver runs drivertest in each position, and beside it what the
// suite has no case for: the position's deliveries, signed where it signs,
// through the driver's Nudge (nudgesIn).
func TestDriver(t *testing.T) {
	for _, pos := range positions {
		t.Run(pos.name, func(t *testing.T) {
			drivertest.Run(t, func(t *testing.T) drivertest.Harness {
				em := newEmulated(t, pos.opts, gitlab.Config{})
				em.signed = pos.signed
				return drivertest.Harness{Driver: em.driver(t), Person: emuPerson{t, em}, Wait: em.clock.Advance}
			})
			t.Run("Nudges", func(t *testing.T) { nudgesIn(t, pos) })
		})
	}
}

// discard is a webhook client that takes every delivery in memory and
// answers 204: the emulation keeps what it sent (Deliveries).
func discard() *http.Client {
	return &http.Client{Transport: gitlabemu.RoundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
	})}
}
