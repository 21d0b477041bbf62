package gitlab_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/gitlab"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/gitlabemu"
)

// eventReads counts the requests of resource events since the last reset.
func eventReads(em *emulated) (labels, states int) {
	for route, n := range em.e.RequestCounts() {
		switch {
		case strings.HasSuffix(route, "/resource_label_events"):
			labels += n
		case strings.HasSuffix(route, "/resource_state_events"):
			states += n
		}
	}
	return labels, states
}

// Who made an issue's last change is named by its label or state event at
// its updated_at, read only where its labels or its state changed since
// the version last answered: a title or a comment reads no event.
func TestEventsNameWhoActed(t *testing.T) {
	for _, pos := range positions {
		t.Run(pos.name, func(t *testing.T) {
			em := newEmulated(t, pos.opts, gitlab.Config{})
			d := em.driver(t)
			tr := tracker.New(d)
			ctx := context.Background()
			it, err := tr.Create(ctx, "k", tracker.Draft{Title: "acted on", Labels: []string{"ci"}})
			if err != nil {
				t.Fatal(err)
			}
			n := iid(t, it.Ref.ID)
			// step lets the person act over a minute after the last
			// change (GitLab's throttled touch, §0.5), and reads what
			// changed as the poll does.
			step := func(what string, act func() error) (tracker.Item, int, int) {
				t.Helper()
				em.clock.Advance(time.Hour)
				since := em.clock.Now()
				if err := act(); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				em.clock.Advance(time.Second + em.lag)
				em.e.ResetCounts()
				its := itemsSince(t, d, since)
				if len(its) != 1 {
					t.Fatalf("%s: Items %+v, want the issue", what, its)
				}
				l, s := eventReads(em)
				return its[0], l, s
			}
			got, l, s := step("a label added", func() error { return em.person.AddLabel(n, "urgent") })
			if got.UpdatedBy != human || l != 1 || s != 0 {
				t.Fatalf("a label added: by %q, %d label and %d state event reads; want %s, 1, 0", got.UpdatedBy, l, s, human)
			}
			// Read again, the same version: the same actor, no read.
			em.e.ResetCounts()
			if its := itemsSince(t, d, got.UpdatedAt); len(its) != 1 || its[0].UpdatedBy != human {
				t.Fatalf("read again %+v", its)
			}
			if l, s := eventReads(em); l+s != 0 {
				t.Fatalf("read again: %d event reads, want none", l+s)
			}
			got, l, s = step("a title", func() error { return em.person.Retitle(n, "retitled") })
			if got.UpdatedBy != "" || l+s != 0 {
				t.Fatalf("a title: by %q, %d event reads; want no one and none", got.UpdatedBy, l+s)
			}
			// A label, then a title: the label event is not the last
			// change, and names no one.
			got, l, _ = step("a label then a title", func() error {
				if err := em.person.AddLabel(n, "later"); err != nil {
					return err
				}
				em.clock.Advance(2 * time.Minute)
				return em.person.Retitle(n, "retitled again")
			})
			if got.UpdatedBy != "" || l != 1 {
				t.Fatalf("a label then a title: by %q, %d label event reads; want no one, 1", got.UpdatedBy, l)
			}
			got, l, s = step("a comment", func() error { _, err := em.person.Comment(n, "seen"); return err })
			if got.UpdatedBy != "" || l+s != 0 {
				t.Fatalf("a comment: by %q, %d event reads; want no one and none", got.UpdatedBy, l+s)
			}
			got, l, s = step("closed", func() error { return em.person.Close(n) })
			if got.UpdatedBy != human || got.State != tracker.Done || l+s != 0 {
				t.Fatalf("closed: by %q %s, %d event reads; want %s by closed_by, none", got.UpdatedBy, got.State, l+s, human)
			}
			got, l, s = step("reopened", func() error { return em.person.Reopen(n) })
			if got.UpdatedBy != human || l != 0 || s != 1 {
				t.Fatalf("reopened: by %q, %d label and %d state event reads; want %s, 0, 1", got.UpdatedBy, l, s, human)
			}
			// relayr's own write: its answer is the version, by the bot.
			em.clock.Advance(time.Hour)
			since := em.clock.Now()
			started := tracker.Started
			if _, err := tr.Update(ctx, it.Ref.ID, tracker.Patch{State: &started}); err != nil {
				t.Fatal(err)
			}
			em.clock.Advance(time.Second + em.lag)
			em.e.ResetCounts()
			if its := itemsSince(t, d, since); len(its) != 1 || its[0].UpdatedBy != bot {
				t.Fatalf("relayr's write reads %+v, want by %s", its, bot)
			}
			if l, s := eventReads(em); l+s != 0 {
				t.Fatalf("relayr's write: %d event reads, want none", l+s)
			}
			// A process that answered no version yet reads the events.
			got, l, s = step("after a restart", func() error {
				if err := em.person.RemoveLabel(n, "urgent"); err != nil {
					return err
				}
				c, err := gitlab.NewConnector(gitlab.Config{BaseURL: em.srv.URL, Client: em.srv.Client(), Project: project, Now: em.clock.Now})
				if err != nil {
					return err
				}
				d, err = c.Driver(ctx, tracker.Credentials{Token: em.token}, source)
				return err
			})
			if got.UpdatedBy != human || l != 1 || s != 0 {
				t.Fatalf("after a restart: by %q, %d label and %d state event reads; want %s, 1, 0", got.UpdatedBy, l, s, human)
			}
		})
	}
}

// Where an issue's events run over a page, the last page is read.
func TestEventsReadTheLastPage(t *testing.T) {
	em := newEmulated(t, gitlabemu.Options{}, gitlab.Config{})
	d := em.driver(t)
	it, err := tracker.New(d).Create(context.Background(), "k", tracker.Draft{Title: "busy"})
	if err != nil {
		t.Fatal(err)
	}
	n := iid(t, it.Ref.ID)
	other := em.e.Person("bo", project)
	for i := range 120 {
		em.clock.Advance(2 * time.Minute)
		if err := other.SetLabels(n, []string{"l" + strings.Repeat("x", i%2)}); err != nil {
			t.Fatal(err)
		}
	}
	em.clock.Advance(2 * time.Minute)
	since := em.clock.Now()
	if err := em.person.AddLabel(n, "last"); err != nil {
		t.Fatal(err)
	}
	em.clock.Advance(time.Second)
	em.e.ResetCounts()
	its := itemsSince(t, d, since)
	if len(its) != 1 || its[0].UpdatedBy != human {
		t.Fatalf("Items %+v, want by %s", its, human)
	}
	if l, _ := eventReads(em); l != 2 {
		t.Fatalf("%d label event reads, want 2: the first page and the last", l)
	}
}

// An issue deleted after a list (a replica behind) showed it changed
// names no one, and the poll goes on: the sweep finds it gone.
func TestEventsOfADeletedIssueNameNoOne(t *testing.T) {
	em := newEmulated(t, gitlabemu.Options{ListLag: 3 * time.Second}, gitlab.Config{})
	d := em.driver(t)
	it, err := tracker.New(d).Create(context.Background(), "k", tracker.Draft{Title: "soon gone"})
	if err != nil {
		t.Fatal(err)
	}
	em.clock.Advance(time.Hour)
	since := em.clock.Now()
	if err := em.person.AddLabel(iid(t, it.Ref.ID), "urgent"); err != nil {
		t.Fatal(err)
	}
	em.clock.Advance(4 * time.Second)
	if err := em.e.Person(bot, project).Delete(iid(t, it.Ref.ID)); err != nil {
		t.Fatal(err)
	}
	em.e.ResetCounts()
	its := itemsSince(t, d, since)
	if len(its) != 1 || its[0].UpdatedBy != "" {
		t.Fatalf("Items %+v, want the replica's issue, by no one", its)
	}
	if l, _ := eventReads(em); l != 1 {
		t.Fatalf("%d label event reads, want the one that found it gone", l)
	}
}
