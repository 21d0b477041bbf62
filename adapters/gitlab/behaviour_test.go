package gitlab_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/gitlab"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/gitlabemu"
)

// A description or comment whose lines start with "/" reaches GitLab as
// text, never as quick actions, and reads back as it was written.
func TestQuickActionsNeverRun(t *testing.T) {
	em := newEmulated(t, gitlabemu.Options{}, gitlab.Config{})
	tr := tracker.New(em.driver(t))
	ctx := context.Background()
	desc := "Steps:\n/close\n/label ~urgent\n\\/kept as typed"
	it, err := tr.Create(ctx, "k1", tracker.Draft{Title: "quick", Description: desc})
	if err != nil {
		t.Fatal(err)
	}
	if it.State != tracker.Todo || it.Description != desc || len(it.Labels) != 0 {
		t.Fatalf("filed %q %s %v, want the text kept and nothing run", it.Description, it.State, it.Labels)
	}
	c, err := tr.Comment(ctx, it.Ref.ID, "c1", "/close")
	if err != nil || c.Body != "/close" {
		t.Fatalf("comment %+v %v", c, err)
	}
	is, _ := em.e.Issue(project, iid(t, it.Ref.ID))
	if is.State != "opened" {
		t.Fatalf("the issue is %s: a quick action ran", is.State)
	}
	cs, err := tr.Comments(ctx, it.Ref.ID, time.Time{})
	if err != nil || len(cs) != 1 || cs[0].Body != "/close" || cs[0].Key != "c1" {
		t.Fatalf("comments %+v %v", cs, err)
	}
}

// Each state change is one PUT; the labels a person added stay.
func TestStatesAreOnePutEach(t *testing.T) {
	em := newEmulated(t, gitlabemu.Options{}, gitlab.Config{})
	tr := tracker.New(em.driver(t))
	ctx := context.Background()
	it, err := tr.Create(ctx, "k1", tracker.Draft{Title: "states", Labels: []string{"ci"}, State: tracker.Backlog})
	if err != nil || it.State != tracker.Backlog {
		t.Fatalf("%+v %v", it, err)
	}
	n := iid(t, it.Ref.ID)
	if err := em.person.SetLabels(n, []string{"ci", gitlab.DefaultLabels.Backlog, "team::infra"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []tracker.State{tracker.Started, tracker.Cancelled, tracker.Done, tracker.Todo, tracker.Backlog} {
		em.e.ResetCounts()
		got, err := tr.Update(ctx, it.Ref.ID, tracker.Patch{State: &s})
		if err != nil || got.State != s {
			t.Fatalf("to %s: %s %v", s, got.State, err)
		}
		if puts := em.e.Requests(routePut); puts != 1 {
			t.Fatalf("to %s: %d PUTs, want one", s, puts)
		}
		if !slices.Equal(got.Labels, []string{"ci", "team::infra"}) {
			t.Fatalf("to %s: labels %v, want the person's kept", s, got.Labels)
		}
		is, _ := em.e.Issue(project, n)
		if want := map[bool]string{true: "closed", false: "opened"}[s == tracker.Done || s == tracker.Cancelled]; is.State != want {
			t.Fatalf("to %s: GitLab holds %s", s, is.State)
		}
	}
	if _, err := tr.Update(ctx, it.Ref.ID, tracker.Patch{Labels: &[]string{gitlab.DefaultLabels.Started}}); !errors.Is(err, tracker.ErrRefused) {
		t.Fatalf("a state label set as a label: %v, want refused", err)
	}
	if _, err := tr.Update(ctx, it.Ref.ID, tracker.Patch{Labels: &[]string{"a,b"}}); !errors.Is(err, tracker.ErrRefused) {
		t.Fatalf("a label with a comma: %v, want refused", err)
	}
}

// A closed draft is filed opened and closed by one PUT after it.
func TestAClosedDraftIsClosedAfterItsCreate(t *testing.T) {
	em := newEmulated(t, gitlabemu.Options{}, gitlab.Config{})
	tr := tracker.New(em.driver(t))
	it, err := tr.Create(context.Background(), "k1", tracker.Draft{Title: "done already", State: tracker.Cancelled})
	if err != nil || it.State != tracker.Cancelled {
		t.Fatalf("%+v %v", it, err)
	}
	if em.e.Requests(routeCreate) != 1 || em.e.Requests(routePut) != 1 {
		t.Fatalf("requests %v", em.e.RequestCounts())
	}
}

// Comments leave out system notes: a person's retitle is a system note,
// not a comment.
func TestSystemNotesAreNoComments(t *testing.T) {
	em := newEmulated(t, gitlabemu.Options{}, gitlab.Config{})
	tr := tracker.New(em.driver(t))
	ctx := context.Background()
	it, err := tr.Create(ctx, "k1", tracker.Draft{Title: "notes"})
	if err != nil {
		t.Fatal(err)
	}
	n := iid(t, it.Ref.ID)
	if err := em.person.Retitle(n, "renamed"); err != nil {
		t.Fatal(err)
	}
	if err := em.person.Close(n); err != nil {
		t.Fatal(err)
	}
	if _, err := em.person.Comment(n, "a person's word"); err != nil {
		t.Fatal(err)
	}
	cs, err := tr.Comments(ctx, it.Ref.ID, time.Time{})
	if err != nil || len(cs) != 1 || cs[0].Body != "a person's word" || cs[0].Author != human {
		t.Fatalf("comments %+v %v, want the person's one", cs, err)
	}
}

// A moved issue is followed: read by its first id it is the issue where
// it went (open there), never deleted; a deleted one is missing from
// FetchItems.
func TestAMovedIssueReadsWhereItWentADeletedOneMissing(t *testing.T) {
	em := newEmulated(t, gitlabemu.Options{}, gitlab.Config{})
	em.e.CreateProject("ops/elsewhere", bot)
	d := em.driver(t)
	tr := tracker.New(d)
	ctx := context.Background()
	moved, err := tr.Create(ctx, "m", tracker.Draft{Title: "to move"})
	if err != nil {
		t.Fatal(err)
	}
	gone, err := tr.Create(ctx, "g", tracker.Draft{Title: "to delete"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := em.e.Person(bot, project).Move(iid(t, moved.Ref.ID), "ops/elsewhere"); err != nil {
		t.Fatal(err)
	}
	if err := em.e.Person(bot, project).Delete(iid(t, gone.Ref.ID)); err != nil {
		t.Fatal(err)
	}
	got, err := tr.Item(ctx, moved.Ref.ID)
	if err != nil || got.State != tracker.Todo || got.Ref.Key != "m" || got.Ref.ID != moved.Ref.ID || got.Ref.Name != "ops/elsewhere#1" {
		t.Fatalf("the moved issue reads %+v %v, want it where it went, open, still keyed", got, err)
	}
	if _, err := tr.Item(ctx, gone.Ref.ID); !errors.Is(err, tracker.ErrNotFound) {
		t.Fatalf("the deleted issue reads %v, want not found", err)
	}
	m, err := d.FetchItems(ctx, []string{moved.Ref.ID, gone.Ref.ID})
	if err != nil || len(m) != 1 || m[moved.Ref.ID].State != tracker.Todo || m[moved.Ref.ID].Ref.Name != "ops/elsewhere#1" {
		t.Fatalf("FetchItems %v %v, want the moved one alone", m, err)
	}
}

// Items reads every changed issue once, ordered, across pages, however
// many share a millisecond, and whether GitLab pages by keyset or offset.
func TestItemsReadsEveryIssueOnceInOrder(t *testing.T) {
	for _, pos := range []position{{name: "Keyset", opts: gitlabemu.Options{}}, {name: "Offset", opts: gitlabemu.Options{NoKeyset: true}}} {
		t.Run(pos.name, func(t *testing.T) {
			em := newEmulated(t, pos.opts, gitlab.Config{})
			tr := tracker.New(em.driver(t))
			ctx := context.Background()
			want := 0
			// 150 issues made in one millisecond, then 250 a few
			// milliseconds apart.
			for i := range 150 {
				if _, err := em.person.CreateIssue(fmt.Sprintf("same %d", i), ""); err != nil {
					t.Fatal(err)
				}
				want++
			}
			for i := range 250 {
				em.clock.Advance(time.Duration(i%3) * time.Millisecond)
				if _, err := em.person.CreateIssue(fmt.Sprintf("apart %d", i), ""); err != nil {
					t.Fatal(err)
				}
				want++
			}
			em.clock.Advance(time.Second)
			seen := map[string]int{}
			var last tracker.Cursor
			page := ""
			for {
				pg, err := tr.Items(ctx, tracker.Query{Page: page})
				if err != nil {
					t.Fatal(err)
				}
				for _, it := range pg.Items {
					c := tracker.Of(it)
					if c.Before(last) {
						t.Fatalf("%s answered after %v", it.Ref.ID, last)
					}
					last = c
					seen[it.Ref.ID]++
				}
				if page = pg.Next; page == "" {
					break
				}
			}
			if len(seen) != want {
				t.Fatalf("read %d issues, want %d", len(seen), want)
			}
			for id, n := range seen {
				if n != 1 {
					t.Fatalf("#%s read %d times", id, n)
				}
			}
		})
	}
}

// A delivery is verified by its token, names the project by its path,
// and is named by its Idempotency-Key, which a resend keeps.
func TestNudgeTakesTheTokenAndTheIdempotencyKey(t *testing.T) {
	em := newEmulated(t, gitlabemu.Options{}, gitlab.Config{})
	tr := tracker.New(em.driver(t))
	it, err := tr.Create(context.Background(), "k1", tracker.Draft{Title: "hooked"})
	if err != nil {
		t.Fatal(err)
	}
	h, body := em.delivery(t, it.Ref.ID, "s3cret", "Issue Hook", func() error { return em.person.Retitle(iid(t, it.Ref.ID), "again") })
	n, err := tr.Nudge("s3cret", h, body)
	if err != nil || n.Project != project || n.Delivery == "" || len(n.Deleted) != 0 {
		t.Fatalf("nudged %+v %v", n, err)
	}
	if _, err := tr.Nudge("other", h, body); !errors.Is(err, tracker.ErrUnauthorized) {
		t.Fatalf("a wrong token: %v, want unauthorized", err)
	}
	bare := h.Clone()
	bare.Del(gitlab.HookHeader)
	if _, err := tr.Nudge("s3cret", bare, body); !errors.Is(err, tracker.ErrUnauthorized) {
		t.Fatalf("no token: %v, want unauthorized", err)
	}
	ds := em.e.Deliveries()
	if err := em.e.Resend(len(ds) - 1); err != nil {
		t.Fatal(err)
	}
	again := em.e.Deliveries()[len(em.e.Deliveries())-1]
	n2, err := tr.Nudge("s3cret", again.Header, again.Body)
	if err != nil || n2.Delivery != n.Delivery {
		t.Fatalf("the resend: %+v %v, want the same delivery %q", n2, err, n.Delivery)
	}
	if _, err := tr.Nudge("s3cret", http.Header{gitlab.HookHeader: {"s3cret"}}, []byte(`{"object_kind":"issue"}`)); !errors.Is(err, tracker.ErrRefused) {
		t.Fatalf("a delivery naming no project: %v, want refused", err)
	}
}
