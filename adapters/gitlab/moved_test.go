package gitlab_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/gitlab"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/gitlabemu"
)

// elsewhere is a project of another namespace the bot files nothing in
// but reads, where a person moves issues.
const elsewhere = "infra/elsewhere"

// itemsSince reads every page of Items since since.
func itemsSince(t *testing.T, d *gitlab.Driver, since time.Time) []tracker.Item {
	t.Helper()
	var out []tracker.Item
	page := ""
	for {
		pg, err := d.Items(context.Background(), tracker.Query{Since: since, Page: page})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, pg.Items...)
		if page = pg.Next; page == "" {
			return out
		}
	}
}

func byID(its []tracker.Item, id string) (tracker.Item, int) {
	var found tracker.Item
	n := 0
	for _, it := range its {
		if it.Ref.ID == id {
			found, n = it, n+1
		}
	}
	return found, n
}

// A moved issue is followed: read by the original's id it is the new
// issue, under the same id and key, named and linked where it went; the
// original's closing is no change of the item; Update and Comment write
// where it went, and Comments answers each comment once, the ones made
// before the move under their first ids.
func TestAMovedIssueIsFollowed(t *testing.T) {
	for _, pos := range positions {
		t.Run(pos.name, func(t *testing.T) {
			em := newEmulated(t, pos.opts, gitlab.Config{})
			em.e.CreateProject(elsewhere, human)
			em.e.AddMember(elsewhere, bot, gitlabemu.Reporter)
			d := em.driver(t)
			tr := tracker.New(d)
			ctx := context.Background()
			it, err := tr.Create(ctx, "m", tracker.Draft{Title: "to move", Description: "the build broke", Labels: []string{"ci"}, State: tracker.Started})
			if err != nil {
				t.Fatal(err)
			}
			before, err := tr.Comment(ctx, it.Ref.ID, "c1", "relayr says")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := em.person.Comment(iid(t, it.Ref.ID), "a person says"); err != nil {
				t.Fatal(err)
			}
			em.clock.Advance(time.Hour)
			since := em.clock.Now()
			n, err := em.person.Move(iid(t, it.Ref.ID), elsewhere)
			if err != nil {
				t.Fatal(err)
			}
			em.clock.Advance(10 * time.Second)

			got, err := tr.Item(ctx, it.Ref.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Ref.ID != it.Ref.ID || got.Ref.Key != "m" || got.State != tracker.Started || got.Title != "to move" ||
				got.Description != "the build broke" || !slices.Equal(got.Labels, []string{"ci"}) {
				t.Fatalf("the moved issue reads %+v, want the item as it was, where it went", got)
			}
			if got.Ref.Name != elsewhere+"#1" || !strings.HasSuffix(got.Ref.Link, "/"+elsewhere+"/-/issues/1") || n != 1 {
				t.Fatalf("named %q linked %q, want the new place", got.Ref.Name, got.Ref.Link)
			}

			its := itemsSince(t, d, since)
			if m, k := byID(its, it.Ref.ID); k != 1 || m.State != tracker.Started || m.Ref.Key != "m" {
				t.Fatalf("Items %+v: want the item once, still started and keyed", its)
			}
			if len(its) != 1 {
				t.Fatalf("Items %+v: want no other item", its)
			}
			m, err := d.FetchItems(ctx, []string{it.Ref.ID})
			if err != nil || m[it.Ref.ID].Ref.Name != elsewhere+"#1" || m[it.Ref.ID].State != tracker.Started {
				t.Fatalf("FetchItems %v %v, want the item where it went", m, err)
			}

			title, done := "retitled by relayr", tracker.Done
			up, err := tr.Update(ctx, it.Ref.ID, tracker.Patch{Title: &title, State: &done})
			if err != nil || up.Ref.ID != it.Ref.ID || up.Title != title || up.State != tracker.Done || up.Ref.Key != "m" {
				t.Fatalf("Update %+v %v", up, err)
			}
			if is, _ := em.e.Issue(elsewhere, n); is.Title != title || is.State != "closed" {
				t.Fatalf("the new issue holds %+v, want the update", is)
			}
			if is, _ := em.e.Issue(project, iid(t, it.Ref.ID)); is.Title != "to move" {
				t.Fatalf("the original holds %+v, want it untouched", is)
			}
			after, err := tr.Comment(ctx, it.Ref.ID, "c2", "relayr says again")
			if err != nil || after.ItemID != it.Ref.ID {
				t.Fatalf("Comment %+v %v", after, err)
			}
			if is, _ := em.e.Issue(elsewhere, n); is.UserNotesCount != 3 {
				t.Fatalf("the new issue has %d comments, want the two copied and relayr's new one", is.UserNotesCount)
			}
			cs, err := tr.Comments(ctx, it.Ref.ID, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			var bodies []string
			for _, c := range cs {
				bodies = append(bodies, c.Body+"/"+c.Key)
			}
			if want := []string{"relayr says/c1", "a person says/", "relayr says again/c2"}; !slices.Equal(bodies, want) {
				t.Fatalf("comments %v, want %v", bodies, want)
			}
			if cs[0].ID != before.ID {
				t.Fatalf("the comment made before the move reads as %s, want its first id %s", cs[0].ID, before.ID)
			}
			// Read since after the move: the original's comments are not read.
			em.e.ResetCounts()
			cs, err = tr.Comments(ctx, it.Ref.ID, em.clock.Now())
			if err != nil || len(cs) != 1 || cs[0].Key != "c2" {
				t.Fatalf("comments since now %+v %v", cs, err)
			}
			if n := em.e.TotalRequests(); n != 1 {
				t.Fatalf("%d requests, want one, of the new place's notes", n)
			}
		})
	}
}

// A person's change to the moved issue is in Items, under the original's
// id, and so is a move of it again, whichever reads learnt of the first
// move: the sweep's FetchItems, or a connector that learnt nothing yet.
func TestAChangeToAMovedIssueIsRead(t *testing.T) {
	em := newEmulated(t, gitlabemu.Options{}, gitlab.Config{})
	em.e.CreateProject(elsewhere, human)
	em.e.AddMember(elsewhere, bot, gitlabemu.Reporter)
	em.e.CreateProject("infra/third", human)
	em.e.AddMember("infra/third", bot, gitlabemu.Reporter)
	d := em.driver(t)
	tr := tracker.New(d)
	ctx := context.Background()
	it, err := tr.Create(ctx, "m", tracker.Draft{Title: "to move"})
	if err != nil {
		t.Fatal(err)
	}
	em.clock.Advance(time.Hour)
	n, err := em.person.Move(iid(t, it.Ref.ID), elsewhere)
	if err != nil {
		t.Fatal(err)
	}
	// The sweep's read learns where it went.
	if m, err := d.FetchItems(ctx, []string{it.Ref.ID}); err != nil || len(m) != 1 {
		t.Fatalf("FetchItems %v %v", m, err)
	}
	em.clock.Advance(time.Hour)
	since := em.clock.Now()
	there := em.e.Person(human, elsewhere)
	if err := there.Retitle(n, "retitled where it went"); err != nil {
		t.Fatal(err)
	}
	em.clock.Advance(time.Second)
	em.e.ResetCounts()
	its := itemsSince(t, d, since)
	got, k := byID(its, it.Ref.ID)
	if k != 1 || len(its) != 1 || got.Title != "retitled where it went" || got.Ref.Key != "m" || got.Ref.Name != elsewhere+"#1" {
		t.Fatalf("Items %+v, want the person's change under the original's id", its)
	}
	// The list of the project (empty), and one read of the moved issue.
	if n := em.e.TotalRequests(); n != 2 {
		t.Fatalf("%d requests, want 2: the list, and one GET of the followed issue", n)
	}
	// Nothing changed: not answered again.
	em.clock.Advance(time.Hour)
	if its := itemsSince(t, d, em.clock.Now()); len(its) != 0 {
		t.Fatalf("Items %+v, want nothing", its)
	}

	// Moved on, within the namespace (the note names the project's path
	// alone): followed through both moves.
	em.clock.Advance(time.Hour)
	since = em.clock.Now()
	n2, err := there.Move(n, "infra/third")
	if err != nil {
		t.Fatal(err)
	}
	em.clock.Advance(time.Second)
	its = itemsSince(t, d, since)
	if got, k := byID(its, it.Ref.ID); k != 1 || len(its) != 1 || got.Ref.Name != "infra/third#1" || got.Title != "retitled where it went" || got.State != tracker.Todo {
		t.Fatalf("Items %+v, want the item at its third place", its)
	}
	if err := em.e.Person(human, "infra/third").Close(n2); err != nil {
		t.Fatal(err)
	}
	// A connector that learnt nothing follows the chain from the original.
	fresh, err := gitlab.NewConnector(gitlab.Config{BaseURL: em.srv.URL, Client: em.srv.Client(), Project: project, Now: em.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	d2, err := fresh.Driver(ctx, tracker.Credentials{Token: em.token}, source)
	if err != nil {
		t.Fatal(err)
	}
	got, err = tracker.New(d2).Item(ctx, it.Ref.ID)
	if err != nil || got.Ref.Name != "infra/third#1" || got.State != tracker.Done || got.Ref.Key != "m" || got.UpdatedBy != human {
		t.Fatalf("a fresh read %+v %v, want the third place, done by %s", got, err, human)
	}

	// A connector that learnt nothing comments by the original's id, as
	// relayr does after a restart: the comment lands where the issue
	// went, not on the closed original.
	restarted, err := gitlab.NewConnector(gitlab.Config{BaseURL: em.srv.URL, Client: em.srv.Client(), Project: project, Now: em.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	d3, err := restarted.Driver(ctx, tracker.Credentials{Token: em.token}, source)
	if err != nil {
		t.Fatal(err)
	}
	orig, _ := em.e.Issue(project, iid(t, it.Ref.ID))
	third, _ := em.e.Issue("infra/third", n2)
	if _, err := tracker.New(d3).Comment(ctx, it.Ref.ID, "after-restart", "pipeline failed again"); err != nil {
		t.Fatal(err)
	}
	origAfter, _ := em.e.Issue(project, iid(t, it.Ref.ID))
	thirdAfter, _ := em.e.Issue("infra/third", n2)
	if origAfter.UserNotesCount != orig.UserNotesCount || thirdAfter.UserNotesCount != third.UserNotesCount+1 {
		t.Fatalf("the comment after a restart: original %d → %d notes, third place %d → %d; want it on the third place",
			orig.UserNotesCount, origAfter.UserNotesCount, third.UserNotesCount, thirdAfter.UserNotesCount)
	}
}

// An issue moved where the bot cannot read is gone, as a deletion: Item
// answers not found, the sweep leaves it out, and the poll doesn't
// answer the original's closing.
func TestAMoveWhereTheBotCannotReadIsGone(t *testing.T) {
	em := newEmulated(t, gitlabemu.Options{}, gitlab.Config{})
	em.e.CreateProject("secret/vault", human)
	d := em.driver(t)
	tr := tracker.New(d)
	ctx := context.Background()
	it, err := tr.Create(ctx, "m", tracker.Draft{Title: "to hide"})
	if err != nil {
		t.Fatal(err)
	}
	stays, err := tr.Create(ctx, "s", tracker.Draft{Title: "stays"})
	if err != nil {
		t.Fatal(err)
	}
	em.clock.Advance(time.Hour)
	since := em.clock.Now()
	if _, err := em.person.Move(iid(t, it.Ref.ID), "secret/vault"); err != nil {
		t.Fatal(err)
	}
	em.clock.Advance(time.Second)
	if _, err := tr.Item(ctx, it.Ref.ID); !errors.Is(err, tracker.ErrNotFound) {
		t.Fatalf("Item: %v, want not found", err)
	}
	m, err := d.FetchItems(ctx, []string{it.Ref.ID, stays.Ref.ID})
	if _, ok := m[it.Ref.ID]; err != nil || ok || len(m) != 1 {
		t.Fatalf("FetchItems %v %v, want the moved one left out", m, err)
	}
	if its := itemsSince(t, d, since); len(its) != 0 {
		t.Fatalf("Items %+v, want the original's closing unanswered", its)
	}
	title := "x"
	if _, err := tr.Update(ctx, it.Ref.ID, tracker.Patch{Title: &title}); !errors.Is(err, tracker.ErrNotFound) {
		t.Fatalf("Update: %v, want not found", err)
	}
}

// On the project an issue was moved to, a binding of another workspace
// reads it as a person's issue (it is new there), its description
// without the source workspace's marker, which its writes keep.
func TestAMovedInIssueCarriesNoForeignMarker(t *testing.T) {
	em := newEmulated(t, gitlabemu.Options{}, gitlab.Config{})
	em.e.CreateProject(elsewhere, bot)
	d := em.driver(t)
	ctx := context.Background()
	it, err := tracker.New(d).Create(ctx, "m", tracker.Draft{Title: "to move", Description: "the build broke"})
	if err != nil {
		t.Fatal(err)
	}
	n, err := em.person.Move(iid(t, it.Ref.ID), elsewhere)
	if err != nil {
		t.Fatal(err)
	}
	other, err := gitlab.NewConnector(gitlab.Config{BaseURL: em.srv.URL, Client: em.srv.Client(), Project: elsewhere, Now: em.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	d2, err := other.Driver(ctx, tracker.Credentials{Token: em.token}, tracker.Source{Tenant: "t1", Workspace: "w2"})
	if err != nil {
		t.Fatal(err)
	}
	tr2 := tracker.New(d2)
	got, err := tr2.Item(ctx, "1")
	if err != nil || got.Ref.Key != "" || got.Description != "the build broke" {
		t.Fatalf("the other binding reads %+v %v, want no key and the text alone", got, err)
	}
	desc := "edited by the other workspace"
	if _, err := tr2.Update(ctx, "1", tracker.Patch{Description: &desc}); err != nil {
		t.Fatal(err)
	}
	is, _ := em.e.Issue(elsewhere, n)
	if !strings.HasPrefix(is.Description, desc+"\n\n<!-- lattice-key: ") {
		t.Fatalf("the new issue holds %q, want the source's marker kept", is.Description)
	}
	if got, err := tracker.New(d).Item(ctx, it.Ref.ID); err != nil || got.Ref.Key != "m" || got.Description != desc {
		t.Fatalf("the source binding reads %+v %v, want its key and the new text", got, err)
	}
}
