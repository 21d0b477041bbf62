package linear_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/linear"
	"github.com/relayr-go/relayr/core/follow/scheduletest"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/linearemu"
	"github.com/relayr-go/relayr/fixtures/memnet"
)

// schedulePerson acts on the emulation as a person in Linear's app would,
// in the team.
type schedulePerson struct {
	p    *linearemu.Person
	team string
}

// typeOf is the workflow state type a person moves an issue to for a
// state.
var typeOf = map[tracker.State]string{
	tracker.Backlog: "backlog", tracker.Todo: "unstarted", tracker.Started: "started", tracker.Done: "completed", tracker.Cancelled: "canceled",
}

func (p schedulePerson) Edit(_ context.Context, id string, patch tracker.Patch) error {
	switch {
	case patch.Title != nil:
		return p.p.Retitle(id, *patch.Title)
	case patch.Description != nil:
		return p.p.EditDescription(id, *patch.Description)
	case patch.State != nil:
		return p.p.SetStateType(id, typeOf[*patch.State])
	case patch.Labels != nil:
		return p.p.SetLabels(id, *patch.Labels)
	}
	return fmt.Errorf("linear's person edits nothing else: %w", errors.ErrUnsupported)
}

func (p schedulePerson) Comment(_ context.Context, id, body string) error {
	_, err := p.p.Comment(id, body)
	return err
}

func (p schedulePerson) Delete(_ context.Context, id string) error { return p.p.Trash(id) }

func (p schedulePerson) Create(_ context.Context, title string) (string, error) {
	return p.p.CreateIssue(p.team, title, "")
}

// scheduleHooks answers the deliveries Linear's emulation rendered about
// an issue (scheduletest.Rendered).
func scheduleHooks(e *linearemu.Emulator, team string) *scheduletest.Rendered {
	return &scheduletest.Rendered{
		Add: func(secret string) error {
			e.AddWebhook(team, "http://127.0.0.1:9/relayr", secret)
			return nil
		},
		Deliveries: func() []scheduletest.Delivery {
			var ds []scheduletest.Delivery
			for _, d := range e.Deliveries() {
				if d.Event != "Issue" {
					continue
				}
				ds = append(ds, scheduletest.Delivery{
					Header: d.Header, Body: d.Body, Signature: d.Header.Get(linear.SignatureHeader),
					Item: d.EntityID, Deleted: d.Action == "remove",
				})
			}
			return ds
		},
		Sign: linearemu.Sign,
	}
}

// restamped answers a rendered delivery stamped now and signed again, as
// Linear stamps each attempt (webhookTimestamp is "when the webhook was
// sent", §9): a schedule's nudge may come long after the event, which a
// delivery of Linear's does only as a retry, stamped anew.
func restamped(nudge func(id string, deleted bool, secret string) (http.Header, []byte, bool)) func(string, bool, string) (http.Header, []byte, bool) {
	return func(id string, deleted bool, secret string) (http.Header, []byte, bool) {
		h, body, ok := nudge(id, deleted, secret)
		if !ok {
			return h, body, ok
		}
		var p map[string]any
		if err := json.Unmarshal(body, &p); err != nil {
			return h, body, ok
		}
		p["webhookTimestamp"] = time.Now().UnixMilli()
		b, err := json.Marshal(p)
		if err != nil {
			return h, body, ok
		}
		h = h.Clone()
		h.Set(linear.SignatureHeader, linearemu.Sign(secret, b))
		return h, b, true
	}
}

// Every change a person makes is published once, on Linear's emulation:
// the schedules of core's property test (scheduletest), each over a fresh
// emulation served in memory, on virtual time, in each of the emulation's
// positions on what the sheet leaves unknown.
func TestEveryChangeAPersonMakesIsPublishedOnce(t *testing.T) {
	for _, pos := range positions {
		t.Run(pos.name, func(t *testing.T) {
			scheduletest.Run(t, func(t *testing.T) scheduletest.Tracker {
				opts := pos.opts
				opts.WebhookClient = discard()
				e := linearemu.New(opts)
				srv := memnet.NewServer(e)
				t.Cleanup(func() { srv.Close(); e.Close() })
				bot := e.AddUser("relayr bot", true)
				human := e.AddUser("Ana Person", false)
				key := e.AddKey(bot)
				team := e.AddTeam("ENG", "Engineering")
				conn, err := linear.NewConnector(linear.Config{URL: srv.URL + "/graphql", Team: "ENG", Client: srv.Client()})
				if err != nil {
					t.Fatal(err)
				}
				connect := func() tracker.Driver {
					d, err := conn.Driver(context.Background(), tracker.Credentials{Token: key}, scheduleSource)
					if err != nil {
						t.Fatal(err)
					}
					return d
				}
				return scheduletest.Tracker{
					Connect: connect,
					Person:  schedulePerson{p: e.Person(human), team: team},
					Fields:  []string{tracker.FieldTitle, tracker.FieldDescription, tracker.FieldState, tracker.FieldLabels},
					Labels:  []string{"ci", "flaky"},
					Deletes: true,
					Nudge:   restamped(scheduleHooks(e, team).Nudge),
				}
			}, scheduletest.Options{Schedules: 60})
		})
	}
}

// scheduleSource is what the schedules file under.
var scheduleSource = tracker.Source{Tenant: "acme", Workspace: "ops"}
