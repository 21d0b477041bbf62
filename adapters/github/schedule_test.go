package github_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/relayr-go/relayr/adapters/github"
	"github.com/relayr-go/relayr/core/follow/scheduletest"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/githubemu"
	"github.com/relayr-go/relayr/fixtures/memnet"
)

// schedulePerson acts on the emulation as a person in GitHub's web UI
// would, in relayr/live.
type schedulePerson struct {
	e *githubemu.Emulator
	p *githubemu.Person
}

// setState closes an issue as completed (done) or not planned
// (cancelled), or reopens it. GitHub takes a reason only as the state
// changes: a closed issue closed again for the other reason is reopened
// first, as a person in the web UI does.
func (p schedulePerson) setState(n int64, s tracker.State) error {
	is, ok := p.e.Issue("relayr", "live", n)
	if !ok {
		return fmt.Errorf("no issue #%d", n)
	}
	reason := map[tracker.State]string{tracker.Done: "completed", tracker.Cancelled: "not_planned"}[s]
	cancelled := is.StateReason == "not_planned" || is.StateReason == "duplicate"
	switch {
	case reason == "" && is.State == "closed":
		return p.p.Reopen("relayr", "live", n)
	case reason == "", is.State == "closed" && cancelled == (s == tracker.Cancelled):
		return nil
	case is.State == "closed":
		if err := p.p.Reopen("relayr", "live", n); err != nil {
			return err
		}
	}
	return p.p.Close("relayr", "live", n, reason)
}

func (p schedulePerson) Edit(_ context.Context, id string, patch tracker.Patch) error {
	n := number(id)
	switch {
	case patch.Title != nil:
		return p.p.Retitle("relayr", "live", n, *patch.Title)
	case patch.State != nil:
		return p.setState(n, *patch.State)
	}
	is, ok := p.e.Issue("relayr", "live", n)
	if !ok {
		return fmt.Errorf("no issue #%d", n)
	}
	if patch.Description != nil {
		// A person editing the text keeps relayr's marker, the body's
		// last line (deleting it takes the key off the issue).
		text := *patch.Description
		if is.Body != nil {
			if key, _ := (tracker.HiddenMarker{Source: scheduleSource}).Unmark(*is.Body); key != "" {
				text = tracker.HiddenMarker{Source: scheduleSource}.Mark(text, key)
			}
		}
		return p.p.EditBody("relayr", "live", n, text)
	}
	if patch.Labels == nil {
		return fmt.Errorf("github's person edits nothing else: %w", errors.ErrUnsupported)
	}
	// The web UI adds and takes off one label at a time.
	for _, name := range is.Labels {
		if !slices.Contains(*patch.Labels, name) {
			if err := p.p.RemoveLabel("relayr", "live", n, name); err != nil {
				return err
			}
		}
	}
	for _, name := range *patch.Labels {
		if !slices.Contains(is.Labels, name) {
			if err := p.p.AddLabel("relayr", "live", n, name); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p schedulePerson) Comment(_ context.Context, id, body string) error {
	_, err := p.p.Comment("relayr", "live", number(id), body)
	return err
}

// Delete deletes the issue as a repository admin does in the web UI (no
// REST delete exists).
func (p schedulePerson) Delete(_ context.Context, id string) error {
	if !p.e.DeleteIssue("relayr", "live", number(id)) {
		return fmt.Errorf("no issue #%s to delete", id)
	}
	return nil
}

func (p schedulePerson) Create(_ context.Context, title string) (string, error) {
	n, err := p.p.CreateIssue("relayr", "live", title, "")
	return fmt.Sprint(n), err
}

// scheduleHooks answers the deliveries GitHub's emulation rendered about
// an issue (scheduletest.Rendered).
func scheduleHooks(e *githubemu.Emulator) *scheduletest.Rendered {
	return &scheduletest.Rendered{
		Add: func(secret string) error {
			_, err := e.AddHook("relayr", "live", "http://hooks.invalid/relayr", secret)
			return err
		},
		Deliveries: func() []scheduletest.Delivery {
			var ds []scheduletest.Delivery
			for _, d := range e.Deliveries() {
				ds = append(ds, scheduletest.Delivery{
					Header: d.Header, Body: d.Body, Signature: d.Header.Get(github.SignatureHeader),
					Item: scheduletest.IssueNumber(d.Body), Deleted: d.Event == "issues" && d.Action == "deleted",
				})
			}
			return ds
		},
		Sign: githubemu.Sign,
	}
}

// Every change a person makes is published once, on GitHub's emulation:
// the schedules of core's property test (scheduletest), each over a fresh
// emulation served in memory, on virtual time (the emulation's clock is
// time.Now by default).
func TestEveryChangeAPersonMakesIsPublishedOnce(t *testing.T) {
	scheduletest.Run(t, func(t *testing.T) scheduletest.Tracker {
		// No limits: the schedules send many requests at one virtual
		// instant.
		e := githubemu.New(githubemu.Options{HourlyLimit: -1, WebhookClient: discard()})
		srv := memnet.NewServer(e)
		t.Cleanup(func() { srv.Close(); e.Close() })
		e.SetBaseURL(srv.URL)
		token := e.AddToken("relayr-bot", true)
		e.CreateRepo("relayr", "live")
		conn, err := github.NewConnector(github.Config{BaseURL: srv.URL, Repo: "relayr/live", Client: srv.Client()})
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
			Person:  schedulePerson{e: e, p: e.Person("alice")},
			Fields:  []string{tracker.FieldTitle, tracker.FieldDescription, tracker.FieldState, tracker.FieldLabels},
			// GitHub makes a missing label by name, for relayr and a
			// person alike.
			Labels:  []string{"ci", "flaky"},
			Deletes: true,
			Nudge:   scheduleHooks(e).Nudge,
		}
	}, scheduletest.Options{Schedules: 300})
}

// scheduleSource is what the schedules file under: the binding's tenant
// and workspace, as the schedules' replicas connect.
var scheduleSource = tracker.Source{Tenant: "acme", Workspace: "ops"}
