package jira_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/relayr-go/relayr/adapters/jira"
	"github.com/relayr-go/relayr/core/follow/scheduletest"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/jiraemu"
	"github.com/relayr-go/relayr/fixtures/memnet"
)

// schedulePerson acts on the emulation as a person in Jira's web UI
// would, in OPS.
type schedulePerson struct {
	e *jiraemu.Emulator
	p *jiraemu.Person
}

// statusOf is the status a person moves an issue to for a state, in the
// default workflow.
var statusOf = map[tracker.State]string{
	tracker.Backlog: "Backlog", tracker.Todo: "To Do", tracker.Started: "In Progress",
	tracker.Done: "Done", tracker.Cancelled: "Cancelled",
}

func (p schedulePerson) Edit(_ context.Context, id string, patch tracker.Patch) error {
	switch {
	case patch.Title != nil:
		return p.p.Retitle(id, *patch.Title)
	case patch.State != nil:
		is, ok := p.e.Issue(id)
		if !ok {
			return fmt.Errorf("no issue %s", id)
		}
		if is.Status == statusOf[*patch.State] {
			return nil
		}
		return p.p.Transition(id, statusOf[*patch.State])
	case patch.Description != nil:
		// The person's text replaces the description, relayr's marker
		// paragraph and all: the key stays in the issue's property.
		return p.p.EditDescription(id, *patch.Description)
	case patch.Labels != nil:
		return p.p.SetLabels(id, *patch.Labels)
	}
	return fmt.Errorf("jira's person edits nothing else: %w", errors.ErrUnsupported)
}

func (p schedulePerson) Comment(_ context.Context, id, body string) error {
	_, err := p.p.Comment(id, body)
	return err
}

func (p schedulePerson) Delete(_ context.Context, id string) error {
	if !p.e.DeleteIssue(id) {
		return fmt.Errorf("no issue %s to delete", id)
	}
	return nil
}

func (p schedulePerson) Create(_ context.Context, title string) (string, error) {
	return p.p.Create(projectKey, title, "")
}

// scheduleHooks answers the deliveries Jira's emulation rendered about an
// issue (scheduletest.Rendered).
func scheduleHooks(e *jiraemu.Emulator) *scheduletest.Rendered {
	return &scheduletest.Rendered{
		Add: func(secret string) error {
			e.AddWebhook("relayr", "http://127.0.0.1:9/relayr", secret, []string{"jira:issue_created", "jira:issue_updated", "jira:issue_deleted", "comment_created"}, "project = "+projectKey)
			return nil
		},
		Deliveries: func() []scheduletest.Delivery {
			var ds []scheduletest.Delivery
			for _, d := range e.Deliveries() {
				ds = append(ds, scheduletest.Delivery{
					Header: d.Header, Body: d.Body, Signature: d.Header.Get(jira.SignatureHeader),
					Item: d.IssueID, Deleted: d.Event == "jira:issue_deleted",
				})
			}
			return ds
		},
		Sign: jiraemu.Sign,
	}
}

// Every change a person makes is published once, on Jira's emulation: the
// schedules of core's property test (scheduletest), each over a fresh
// emulation served in memory, on virtual time, in each of the emulation's
// positions on what the sheet leaves unknown but one: where a comment does
// not move its issue's updated, a comment on an issue nothing else changes
// is read only when the issue next changes (docs/trackers/jira.md, "What
// it is tested against"), which the schedules rightly count as missed.
func TestEveryChangeAPersonMakesIsPublishedOnce(t *testing.T) {
	for _, pos := range positions {
		if pos.opts.CommentsKeepUpdated {
			if pos.name == "CommentsKeepUpdated" {
				continue
			}
			pos.opts.CommentsKeepUpdated = false
			pos.name += "ButCommentsMoveUpdated"
		}
		t.Run(pos.name, func(t *testing.T) {
			scheduletest.Run(t, func(t *testing.T) scheduletest.Tracker {
				opts := pos.opts
				// No limits: the schedules send many requests at one
				// virtual instant.
				opts.NoLimits, opts.WebhookClient = true, discard()
				e := jiraemu.New(opts)
				srv := memnet.NewServer(e)
				t.Cleanup(func() { srv.Close(); e.Close() })
				e.AddUser(botAccount, "relayr bot", nil)
				e.AddUser(personID, "Ana Person", nil)
				token := e.AddToken(botEmail, botAccount)
				e.CreateProject(projectKey, "Operations", jiraemu.DefaultWorkflow())
				conn, err := jira.NewConnector(jira.Config{BaseURL: srv.URL, Project: projectKey, Email: botEmail, Client: srv.Client()})
				if err != nil {
					t.Fatal(err)
				}
				connect := func() tracker.Driver {
					d, err := conn.Driver(context.Background(), tracker.Credentials{Token: token}, scheduleSource)
					if err != nil {
						t.Fatal(err)
					}
					return d
				}
				return scheduletest.Tracker{
					Connect: connect,
					Person:  schedulePerson{e: e, p: e.Person(personID)},
					Fields:  []string{tracker.FieldTitle, tracker.FieldDescription, tracker.FieldState, tracker.FieldLabels},
					Labels:  []string{"ci", "flaky"},
					Deletes: true,
					Nudge:   scheduleHooks(e).Nudge,
				}
			}, scheduletest.Options{Schedules: 60})
		})
	}
}

// scheduleSource is what the schedules file under.
var scheduleSource = tracker.Source{Tenant: "acme", Workspace: "ops"}
