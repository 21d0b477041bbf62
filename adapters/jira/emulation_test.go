package jira_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/jira"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/drivertest"
	"github.com/relayr-go/relayr/core/tracker/trackertest"
	"github.com/relayr-go/relayr/fixtures/jiraemu"
)

var (
	t0     = time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	source = tracker.Source{Tenant: "t1", Workspace: "w1"}
)

const (
	botEmail   = "relayr-bot@example.com"
	botAccount = "5b10a2844c20165700ede21g"
	personID   = "5b10ac8d82e05b22cc7d4ef5"
	projectKey = "OPS"
)

// position is one answer to what the fact sheet leaves unknown
// (docs/trackers/jira.md §11.2): the emulation's switches, each run by
// the driver's tests.
type position struct {
	name string
	opts jiraemu.Options
}

// positions are every switch of the emulation, one at a time, and all of
// them at once.
var positions = []position{
	{"AsDocumented", jiraemu.Options{}},
	{"SearchLags20s", jiraemu.Options{SearchLag: 20 * time.Second}},
	{"CommentsKeepUpdated", jiraemu.Options{CommentsKeepUpdated: true}},
	{"ADFRewritten", jiraemu.Options{RewriteADF: true}},
	{"EpochToTheMinute", jiraemu.Options{JQLEpochToMinute: true}},
	{"AllAtOnce", jiraemu.Options{SearchLag: 20 * time.Second, CommentsKeepUpdated: true, RewriteADF: true, JQLEpochToMinute: true}},
}

// emulated is the driver over a fresh emulation of one project, OPS, with
// the bot's token, on a clock the test steps.
type emulated struct {
	e      *jiraemu.Emulator
	clock  *jiraemu.Clock
	conn   *jira.Connector
	token  string
	person *jiraemu.Person
	srv    *httptest.Server
}

func newEmulated(t testing.TB, opts jiraemu.Options, cfg jira.Config) *emulated {
	t.Helper()
	em := &emulated{clock: jiraemu.NewClock(t0)}
	if opts.Now == nil {
		opts.Now = em.clock.Now
	}
	if opts.WebhookClient == nil {
		opts.WebhookClient = discard()
	}
	e, srv := jiraemu.NewServer(opts)
	t.Cleanup(srv.Close)
	t.Cleanup(e.Close)
	t.Cleanup(func() {
		if v := e.Violations(); len(v) > 0 {
			t.Errorf("exchanges outside Atlassian's description:\n%s", strings.Join(v, "\n"))
		}
	})
	em.e, em.srv = e, srv
	e.AddUser(botAccount, "relayr bot", nil)
	e.AddUser(personID, "Ana Person", nil)
	em.token = e.AddToken(botEmail, botAccount)
	e.CreateProject(projectKey, "Operations", jiraemu.DefaultWorkflow())
	em.person = e.Person(personID)
	cfg.BaseURL, cfg.Project, cfg.Email, cfg.Client = srv.URL, projectKey, botEmail, srv.Client()
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
	c, err := jira.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	em.conn = c
	return em
}

func (em *emulated) driver(t *testing.T) *jira.Driver {
	t.Helper()
	d, err := em.conn.Driver(context.Background(), tracker.Credentials{Token: em.token}, source)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// delivery registers a webhook signed with secret, lets act fire the
// event, and answers the delivery of event about issue id.
func (em *emulated) delivery(t *testing.T, id, secret, event string, act func() error) (http.Header, []byte) {
	t.Helper()
	before := len(em.e.Deliveries())
	em.e.AddWebhook("relayr", "http://127.0.0.1:9/hook", secret, []string{"jira:issue_created", "jira:issue_updated", "jira:issue_deleted", "comment_created"}, "project = "+projectKey)
	if err := act(); err != nil {
		t.Fatal(err)
	}
	for _, d := range em.e.Deliveries()[before:] {
		if d.Event == event && d.IssueID == id && d.Header.Get(jira.SignatureHeader) == jiraemu.Sign(secret, d.Body) {
			return d.Header, d.Body
		}
	}
	t.Fatalf("no %s delivery about %s", event, id)
	return nil, nil
}

func (em *emulated) deletion(t *testing.T) func(id, secret string) (http.Header, []byte) {
	return func(id, secret string) (http.Header, []byte) {
		return em.delivery(t, id, secret, "jira:issue_deleted", func() error {
			if !em.e.DeleteIssue(id) {
				return fmt.Errorf("no issue %s", id)
			}
			return nil
		})
	}
}

// emuPerson acts through the emulation's person.
type emuPerson struct {
	e *jiraemu.Emulator
	p *jiraemu.Person
}

func (p emuPerson) Retitle(_ context.Context, id, title string) error { return p.p.Retitle(id, title) }

func (p emuPerson) Comment(_ context.Context, id, body string) error {
	_, err := p.p.Comment(id, body)
	return err
}

func (p emuPerson) Delete(_ context.Context, id string) error {
	if !p.e.DeleteIssue(id) {
		return fmt.Errorf("no issue %s", id)
	}
	return nil
}

func TestContract(t *testing.T) {
	for _, pos := range positions {
		t.Run(pos.name, func(t *testing.T) {
			trackertest.Run(t, func(t *testing.T) trackertest.Harness {
				em := newEmulated(t, pos.opts, jira.Config{})
				return trackertest.Harness{Tracker: tracker.New(em.driver(t)), Person: emuPerson{em.e, em.person}, Wait: em.clock.Advance,
					Webhook: func(id, secret string) (http.Header, []byte) {
						return em.delivery(t, id, secret, "jira:issue_updated", func() error {
							return em.person.Retitle(id, "Changed for a delivery")
						})
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
				em := newEmulated(t, pos.opts, jira.Config{})
				return drivertest.Harness{Driver: em.driver(t), Person: emuPerson{em.e, em.person}, Wait: em.clock.Advance, Deletion: em.deletion(t)}
			})
		})
	}
}

// discard is a webhook client that takes every delivery in memory and
// answers 204: the emulation keeps what it sent (Deliveries).
func discard() *http.Client {
	return &http.Client{Transport: jiraemu.RoundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
	})}
}
