package linear_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/linear"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/drivertest"
	"github.com/relayr-go/relayr/core/tracker/trackertest"
	"github.com/relayr-go/relayr/fixtures/linearemu"
)

var (
	t0     = time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	source = tracker.Source{Tenant: "t1", Workspace: "w1"}
)

// position is one answer to what the fact sheet leaves unknown
// (docs/trackers/linear.md §11.2): the emulation's switches, each run by
// the driver's tests.
type position struct {
	name string
	opts linearemu.Options
}

// positions are each switch of the emulation on its own, and all of them
// at once.
var positions = []position{
	{name: "AsDocumented", opts: linearemu.Options{}},
	{name: "DuplicateAnsweredWithTheIssue", opts: linearemu.Options{DuplicateID: linearemu.DuplicateSuccess}},
	{name: "CommentsMoveUpdatedAt", opts: linearemu.Options{CommentsMoveUpdatedAt: true}},
	{name: "CommentsOldestFirst", opts: linearemu.Options{CommentsOldestFirst: true}},
	{name: "FirstAtMost50", opts: linearemu.Options{MaxFirst: 50}},
	{name: "TrashedNotFound", opts: linearemu.Options{TrashedNotFound: true}},
	{name: "TrashSendsUpdate", opts: linearemu.Options{TrashSendsUpdate: true}},
	{name: "TrashedUnlisted", opts: linearemu.Options{TrashedUnlisted: true}},
	{name: "HTMLCommentsDropped", opts: linearemu.Options{DropHTMLComments: true}},
	{name: "RetryKeepsDelivery", opts: linearemu.Options{RetryKeepsDelivery: true}},
	{name: "AllAtOnce", opts: linearemu.Options{DuplicateID: linearemu.DuplicateSuccess, CommentsMoveUpdatedAt: true, CommentsOldestFirst: true, MaxFirst: 50,
		TrashedNotFound: true, TrashSendsUpdate: true, TrashedUnlisted: true, DropHTMLComments: true, RetryKeepsDelivery: true}},
}

// emulated is the driver over a fresh emulation of one team, ENG, with
// the bot's key, on a clock the test steps.
type emulated struct {
	opts   linearemu.Options
	e      *linearemu.Emulator
	clock  *linearemu.Clock
	conn   *linear.Connector
	key    string
	team   string
	person *linearemu.Person
	srv    *httptest.Server
}

func newEmulated(t testing.TB, opts linearemu.Options, cfg linear.Config) *emulated {
	t.Helper()
	em := &emulated{clock: linearemu.NewClock(t0), opts: opts}
	if opts.Now == nil {
		opts.Now = em.clock.Now
	}
	if opts.WebhookClient == nil {
		opts.WebhookClient = discard()
	}
	e, srv := linearemu.NewServer(opts)
	t.Cleanup(srv.Close)
	t.Cleanup(e.Close)
	em.e, em.srv = e, srv
	bot := e.AddUser("relayr bot", true)
	human := e.AddUser("Ana Person", false)
	em.key = e.AddKey(bot)
	em.team = e.AddTeam("ENG", "Engineering")
	em.person = e.Person(human)
	cfg.URL, cfg.Client = srv.URL+"/graphql", srv.Client()
	if cfg.Team == "" {
		cfg.Team = "ENG"
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
	c, err := linear.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	em.conn = c
	return em
}

func (em *emulated) driver(t testing.TB) *linear.Driver {
	t.Helper()
	d, err := em.conn.Driver(context.Background(), tracker.Credentials{Token: em.key}, source)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// delivery registers a webhook with secret, lets act fire the event, and
// answers the delivery of action on the entity.
func (em *emulated) delivery(t testing.TB, id, secret, action string, act func() error) (http.Header, []byte) {
	t.Helper()
	before := len(em.e.Deliveries())
	em.e.AddWebhook(em.team, "http://127.0.0.1:9/hook", secret)
	if err := act(); err != nil {
		t.Fatal(err)
	}
	for _, d := range em.e.Deliveries()[before:] {
		if d.Event == "Issue" && d.Action == action && d.EntityID == id && d.Header.Get(linear.SignatureHeader) == linearemu.Sign(secret, d.Body) {
			return d.Header, d.Body
		}
	}
	t.Fatalf("no Issue %s delivery about %s", action, id)
	return nil, nil
}

func (em *emulated) deletion(t testing.TB) func(id, secret string) (http.Header, []byte) {
	return func(id, secret string) (http.Header, []byte) {
		// A trashing is a "remove", or an "update" saying trashed
		// (linearemu.Options.TrashSendsUpdate).
		action := "remove"
		if em.opts.TrashSendsUpdate {
			action = "update"
		}
		return em.delivery(t, id, secret, action, func() error { return em.person.Trash(id) })
	}
}

// emuPerson acts through the emulation's person.
type emuPerson struct{ p *linearemu.Person }

func (p emuPerson) Retitle(_ context.Context, id, title string) error { return p.p.Retitle(id, title) }

func (p emuPerson) Comment(_ context.Context, id, body string) error {
	_, err := p.p.Comment(id, body)
	return err
}

func (p emuPerson) Delete(_ context.Context, id string) error { return p.p.Trash(id) }

func TestContract(t *testing.T) {
	for _, pos := range positions {
		t.Run(pos.name, func(t *testing.T) {
			trackertest.Run(t, func(t *testing.T) trackertest.Harness {
				em := newEmulated(t, pos.opts, linear.Config{})
				return trackertest.Harness{Tracker: tracker.New(em.driver(t)), Person: emuPerson{em.person}, Wait: em.clock.Advance,
					Webhook: func(id, secret string) (http.Header, []byte) {
						return em.delivery(t, id, secret, "update", func() error { return em.person.Retitle(id, "Changed for a delivery") })
					},
					Deletion: em.deletion(t),
				}
			})
		})
	}
}

func TestDriver(t *testing.T) {
	for _, pos := range positions {
		t.Run(pos.name, func(t *testing.T) {
			drivertest.Run(t, func(t *testing.T) drivertest.Harness {
				em := newEmulated(t, pos.opts, linear.Config{})
				return drivertest.Harness{Driver: em.driver(t), Person: emuPerson{em.person}, Wait: em.clock.Advance, Deletion: em.deletion(t)}
			})
		})
	}
}

// Every operation the driver sends is valid against Linear's schema.
func TestQueriesHoldToLinearsSchema(t *testing.T) {
	for name, q := range linear.Queries {
		if err := linearemu.Validate(q); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// discard is a webhook client that takes every delivery in memory and
// answers 200: the emulation keeps what it sent (Deliveries).
func discard() *http.Client {
	return &http.Client{Transport: linearemu.RoundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
	})}
}
