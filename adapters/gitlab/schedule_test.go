package gitlab_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/relayr-go/relayr/adapters/gitlab"
	"github.com/relayr-go/relayr/core/follow/scheduletest"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/gitlabemu"
	"github.com/relayr-go/relayr/fixtures/memnet"
)

// schedulePerson acts on the emulation as a person in GitLab's web UI
// would, in ops/platform.
type schedulePerson struct {
	e *gitlabemu.Emulator
	p *gitlabemu.Person
}

func parseIID(id string) (int64, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("id %q is no iid", id)
	}
	return n, nil
}

func (p schedulePerson) Edit(_ context.Context, id string, patch tracker.Patch) error {
	n, err := parseIID(id)
	if err != nil {
		return err
	}
	is, ok := p.e.Issue(project, n)
	if !ok {
		return fmt.Errorf("no issue #%d", n)
	}
	switch {
	case patch.Title != nil:
		return p.p.Retitle(n, *patch.Title)
	case patch.Description != nil:
		// A person editing the text keeps relayr's marker, the
		// description's last line (deleting it takes the key off the
		// issue).
		text := *patch.Description
		marker := tracker.HiddenMarker{Source: scheduleSource}
		if key, _ := marker.Unmark(is.Description); key != "" {
			text = marker.Mark(text, key)
		}
		return p.p.EditDescription(n, text)
	case patch.State != nil:
		// A person moves the issue as relayr's labels say: opened or
		// closed, and the state's label, the others taken off.
		labels := gitlab.DefaultLabels
		want := map[tracker.State]string{tracker.Backlog: labels.Backlog, tracker.Todo: labels.Todo, tracker.Started: labels.Started, tracker.Cancelled: labels.Cancelled}
		var keep []string
		for _, l := range is.Labels {
			if l != labels.Backlog && l != labels.Todo && l != labels.Started && l != labels.Cancelled {
				keep = append(keep, l)
			}
		}
		if l := want[*patch.State]; l != "" {
			keep = append(keep, l)
		}
		closing := *patch.State == tracker.Done || *patch.State == tracker.Cancelled
		if closing && is.State != "closed" {
			if err := p.p.Close(n); err != nil {
				return err
			}
		}
		if !closing && is.State == "closed" {
			if err := p.p.Reopen(n); err != nil {
				return err
			}
		}
		return p.p.SetLabels(n, keep)
	case patch.Labels != nil:
		keep := append([]string(nil), *patch.Labels...)
		for _, l := range is.Labels {
			if gitlabState(l) {
				keep = append(keep, l)
			}
		}
		return p.p.SetLabels(n, keep)
	}
	return fmt.Errorf("gitlab's person edits nothing else: %w", errors.ErrUnsupported)
}

func gitlabState(l string) bool {
	d := gitlab.DefaultLabels
	return l == d.Backlog || l == d.Todo || l == d.Started || l == d.Cancelled
}

func (p schedulePerson) Comment(_ context.Context, id, body string) error {
	n, err := parseIID(id)
	if err != nil {
		return err
	}
	_, err = p.p.Comment(n, body)
	return err
}

func (p schedulePerson) Delete(_ context.Context, id string) error {
	n, err := parseIID(id)
	if err != nil {
		return err
	}
	return p.p.Delete(n)
}

func (p schedulePerson) Create(_ context.Context, title string) (string, error) {
	n, err := p.p.CreateIssue(title, "")
	return strconv.FormatInt(n, 10), err
}

// scheduleHooks answers the deliveries GitLab's emulation rendered about
// an issue (scheduletest.Rendered). A hook carries its secret token as is
// (X-Gitlab-Token); signed (the position's signing token), the hook's
// signing token is the same secret, and each delivery also carries a
// Standard Webhooks signature of its body, which the driver's Nudge
// verifies before the schedule's follower is woken (a delivery that does
// not verify fails the schedule). A delivery of a signed position without
// its signature fails the test.
func scheduleHooks(t *testing.T, e *gitlabemu.Emulator, signed bool) *scheduletest.Rendered {
	return &scheduletest.Rendered{
		Add: func(secret string) error {
			signing := ""
			if signed {
				signing = secret
			}
			e.AddHook(project, "http://127.0.0.1:9/relayr", secret, signing)
			return nil
		},
		Deliveries: func() []scheduletest.Delivery {
			var ds []scheduletest.Delivery
			for _, d := range e.Deliveries() {
				if has := d.Header.Get("webhook-signature") != ""; has != signed {
					t.Errorf("a %s delivery signed %v in a position signed %v", d.Event, has, signed)
				}
				ds = append(ds, scheduletest.Delivery{
					Header: d.Header, Body: d.Body, Signature: d.Header.Get(gitlab.HookHeader),
					Item: strconv.FormatInt(d.IID, 10),
				})
			}
			return ds
		},
		Sign: func(secret string, _ []byte) string { return secret },
	}
}

// Every change a person makes is published once, on GitLab's emulation:
// the schedules of core's property test (scheduletest), each over a fresh
// emulation served in memory, on virtual time, in each of the emulation's
// positions. GitLab's throttled touch (a comment or a label-only edit
// within a minute of an issue's last change leaves its updated_at) is on
// in every position.
func TestEveryChangeAPersonMakesIsPublishedOnce(t *testing.T) {
	for _, pos := range positions {
		t.Run(pos.name, func(t *testing.T) {
			scheduletest.Run(t, func(t *testing.T) scheduletest.Tracker {
				opts := pos.opts
				// GitLab's limits are the pacer's to keep, tested on their
				// own; the schedules send many requests at one instant.
				opts.APILimit, opts.IssuesCreateLimit, opts.NotesCreateLimit = 0, 0, 0
				opts.WebhookClient = discard()
				e := gitlabemu.New(opts)
				srv := memnet.NewServer(e)
				e.SetBaseURL(srv.URL)
				t.Cleanup(func() { srv.Close(); e.Close() })
				e.AddUser(bot)
				e.AddUser(human)
				token := e.AddToken(bot)
				e.CreateProject(project, bot)
				conn, err := gitlab.NewConnector(gitlab.Config{BaseURL: srv.URL, Project: project, Client: srv.Client()})
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
					Person:  schedulePerson{e: e, p: e.Person(human, project)},
					Fields:  []string{tracker.FieldTitle, tracker.FieldDescription, tracker.FieldState, tracker.FieldLabels},
					Labels:  []string{"ci", "flaky"},
					Deletes: true,
					Nudge:   scheduleHooks(t, e, pos.signed).Nudge,
				}
			}, scheduletest.Options{Schedules: 60})
		})
	}
}

// scheduleSource is what the schedules file under.
var scheduleSource = tracker.Source{Tenant: "acme", Workspace: "ops"}
