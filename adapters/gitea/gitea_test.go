package gitea_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/giteaemu"
)

const (
	listRoute  = "GET /api/v1/repos/{owner}/{repo}/issues"
	patchRoute = "PATCH /api/v1/repos/{owner}/{repo}/issues/{index}"
)

// walk reads every page of Items since since, calling between after each
// page but the last, and answers the items by id (the last read of each).
func walk(t *testing.T, tr *tracker.Tracker, since time.Time, between func(page int)) map[string]tracker.Item {
	t.Helper()
	seen := map[string]tracker.Item{}
	var last tracker.Cursor
	for page, token := 0, ""; ; page++ {
		p, err := tr.Items(context.Background(), tracker.Query{Since: since, Page: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range p.Items {
			if tracker.Of(it).Before(last) {
				t.Fatalf("page %d: %s at %s is before %s: the walk is not in order", page, it.Ref.ID, it.UpdatedAt, last.UpdatedAt)
			}
			last = tracker.Of(it)
			seen[it.Ref.ID] = it
		}
		if p.Next == "" {
			return seen
		}
		if between != nil {
			between(page)
		}
		token = p.Next
	}
}

// TestAWalkSkipsNoItemWhileOthersMoveUnderIt: Gitea's list is offset-paged
// by creation, so an offset walk skips an item whenever another leaves the
// window under it. 150 issues, each changed in a second of its own; while
// the walk reads, people edit and delete issues it has read and issues it
// hasn't. Every issue left unchanged is read, in order.
func TestAWalkSkipsNoItemWhileOthersMoveUnderIt(t *testing.T) {
	em := newEmulated(t, giteaemu.Options{WebhookClient: discard()})
	tr := tracker.New(em.driver(t))
	var ids []string
	for i := range 150 {
		it, err := tr.Create(context.Background(), fmt.Sprintf("k%03d", i), tracker.Draft{Title: fmt.Sprintf("issue %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, it.Ref.ID)
		em.clock.Advance(time.Second)
	}
	moved := map[string]bool{}
	gone := map[string]bool{}
	seen := walk(t, tr, time.Time{}, func(page int) {
		// One read, one not yet read: edited (moved later) and deleted.
		for _, i := range []int{page * 7 % 150, (page*31 + 100) % 150} {
			id := ids[i]
			if gone[id] || moved[id] {
				continue
			}
			if page%2 == 0 {
				moved[id] = true
				if err := em.person.Retitle(number(id), "moved"); err != nil {
					t.Fatal(err)
				}
			} else {
				gone[id] = true
				if err := em.person.Delete(number(id)); err != nil {
					t.Fatal(err)
				}
			}
		}
		em.clock.Advance(time.Second)
	})
	if len(moved)+len(gone) < 4 {
		t.Fatalf("the walk read %d items in too few pages to be moved under", len(seen))
	}
	for _, id := range ids {
		if _, ok := seen[id]; !ok && !gone[id] && !moved[id] {
			t.Errorf("issue #%s, unchanged, was never read", id)
		}
	}
}

// TestASecondOfMoreThanAPageIsReadWhole: 120 issues changed in one second
// come whole in the page for that second, and the walk goes on past it.
func TestASecondOfMoreThanAPageIsReadWhole(t *testing.T) {
	em := newEmulated(t, giteaemu.Options{WebhookClient: discard()})
	tr := tracker.New(em.driver(t))
	for i := range 120 {
		if _, err := tr.Create(context.Background(), fmt.Sprintf("k%03d", i), tracker.Draft{Title: "burst"}); err != nil {
			t.Fatal(err)
		}
	}
	em.clock.Advance(time.Second)
	late, err := tr.Create(context.Background(), "late", tracker.Draft{Title: "after the burst"})
	if err != nil {
		t.Fatal(err)
	}
	seen := walk(t, tr, t0, nil)
	if len(seen) != 121 {
		t.Fatalf("read %d issues, want 121", len(seen))
	}
	if _, ok := seen[late.Ref.ID]; !ok {
		t.Fatal("the issue after the burst was not read")
	}
}

// TestAnIdlePollIsOneRequest: a poll of a repository where nothing changed
// since the cursor reads one page of one window.
func TestAnIdlePollIsOneRequest(t *testing.T) {
	em := newEmulated(t, giteaemu.Options{WebhookClient: discard()})
	tr := tracker.New(em.driver(t))
	for i := range 80 {
		if _, err := tr.Create(context.Background(), fmt.Sprintf("k%d", i), tracker.Draft{Title: "old"}); err != nil {
			t.Fatal(err)
		}
		em.clock.Advance(time.Second)
	}
	em.clock.Advance(time.Hour)
	em.e.ResetCounts()
	p, err := tr.Items(context.Background(), tracker.Query{Since: em.clock.Now().Add(-2 * time.Minute)})
	if err != nil || len(p.Items) != 0 || p.Next != "" {
		t.Fatalf("%+v %v, want an empty last page", p, err)
	}
	if n := em.e.TotalRequests(); n != 1 {
		t.Fatalf("an idle poll made %d requests, want 1", n)
	}
}

// TestPullRequestsAreNoItems: they share the list and the numbering, and
// are left out of every read; one read by its number is not found.
func TestPullRequestsAreNoItems(t *testing.T) {
	em := newEmulated(t, giteaemu.Options{WebhookClient: discard()})
	tr := tracker.New(em.driver(t))
	it, err := tr.Create(context.Background(), "k", tracker.Draft{Title: "an issue"})
	if err != nil {
		t.Fatal(err)
	}
	pr := em.e.AddPullRequest("relayr", "live", "a pull request", "<!-- lattice-key: lattice:t1/w1/k -->")
	seen := walk(t, tr, time.Time{}, nil)
	if len(seen) != 1 || seen[it.Ref.ID].Title != "an issue" {
		t.Fatalf("read %v, want the issue alone", seen)
	}
	if _, err := tr.Item(context.Background(), fmt.Sprint(pr)); !errors.Is(err, tracker.ErrNotFound) {
		t.Fatalf("Item of pull request #%d: %v, want ErrNotFound", pr, err)
	}
	found, err := tr.Find(context.Background(), "k")
	if err != nil || found.Ref.ID != it.Ref.ID {
		t.Fatalf("Find answered %+v %v, want the issue, not the pull request marked alike", found.Ref, err)
	}
}

// TestLabelsATokenCannotSetAreRefusedBeforeAnythingIsFiled: Gitea would
// drop them silently.
func TestLabelsATokenCannotSetAreRefusedBeforeAnythingIsFiled(t *testing.T) {
	em := newEmulated(t, giteaemu.Options{WebhookClient: discard()})
	em.e.AddUser("reader")
	token := em.e.AddToken("reader", false)
	tr, err := em.conn.Connect(context.Background(), tracker.Credentials{Token: token}, source)
	if err != nil {
		t.Fatal(err)
	}
	em.e.ResetCounts()
	_, err = tr.Create(context.Background(), "k", tracker.Draft{Title: "labelled", Labels: []string{"ci"}})
	if !errors.Is(err, tracker.ErrRefused) || !tracker.CertainlyNotTaken(err) {
		t.Fatalf("%v, want ErrRefused", err)
	}
	if n := em.e.TotalRequests(); n != 0 {
		t.Fatalf("the refusal sent %d requests", n)
	}
	if _, err := tr.Create(context.Background(), "k2", tracker.Draft{Title: "unlabelled"}); err != nil {
		t.Fatalf("a draft without labels: %v", err)
	}
}

// TestAnEditSendsOnlyWhatDiffers: a PATCH of an unchanged body would still
// rewrite it, move updated_at and fire issues/edited.
func TestAnEditSendsOnlyWhatDiffers(t *testing.T) {
	em := newEmulated(t, giteaemu.Options{WebhookClient: discard()})
	tr := tracker.New(em.driver(t))
	it, err := tr.Create(context.Background(), "k", tracker.Draft{Title: "T", Description: "D", State: tracker.Todo, Labels: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	em.clock.Advance(time.Minute)
	em.e.ResetCounts()
	before := len(em.e.Deliveries())
	title, desc, state, labels := "T", "D", tracker.Started, []string{"a"}
	got, err := tr.Update(context.Background(), it.Ref.ID, tracker.Patch{Title: &title, Description: &desc, State: &state, Labels: &labels})
	if err != nil {
		t.Fatal(err)
	}
	if n := em.e.Requests(patchRoute); n != 0 {
		t.Fatalf("an edit to the values held sent %d PATCHes", n)
	}
	if !got.UpdatedAt.Equal(it.UpdatedAt) || len(em.e.Deliveries()) != before {
		t.Fatalf("the issue moved (%s, was %s) or a webhook fired", got.UpdatedAt, it.UpdatedAt)
	}
	desc = "D2"
	got, err = tr.Update(context.Background(), it.Ref.ID, tracker.Patch{Title: &title, Description: &desc})
	if err != nil || got.Description != "D2" || got.Ref.Key != "k" {
		t.Fatalf("%+v %v, want the new description, the key kept", got, err)
	}
	if n := em.e.Requests(patchRoute); n != 1 {
		t.Fatalf("one changed field sent %d PATCHes", n)
	}
}

// TestTimesWithTheServersOffsetReadAsUTC: Gitea renders times in its UI
// location.
func TestTimesWithTheServersOffsetReadAsUTC(t *testing.T) {
	em := newEmulated(t, giteaemu.Options{WebhookClient: discard(), Location: time.FixedZone("CEST", 2*3600)})
	tr := tracker.New(em.driver(t))
	it, err := tr.Create(context.Background(), "k", tracker.Draft{Title: "T"})
	if err != nil {
		t.Fatal(err)
	}
	if it.UpdatedAt.Location() != time.UTC || !it.UpdatedAt.Equal(t0) {
		t.Fatalf("updated %s, want %s in UTC", it.UpdatedAt, t0)
	}
	seen := walk(t, tr, t0, nil)
	if _, ok := seen[it.Ref.ID]; !ok {
		t.Fatal("a poll from the second it was made did not read it")
	}
}

// TestACommentOnADeletedIssueIsNotFound: Gitea answers it 500, which a
// read of the issue tells apart from a failing server.
func TestACommentOnADeletedIssueIsNotFound(t *testing.T) {
	em := newEmulated(t, giteaemu.Options{WebhookClient: discard()})
	tr := tracker.New(em.driver(t))
	it, err := tr.Create(context.Background(), "k", tracker.Draft{Title: "T"})
	if err != nil {
		t.Fatal(err)
	}
	if err := em.person.Delete(number(it.Ref.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Comment(context.Background(), it.Ref.ID, "c", "hello"); !errors.Is(err, tracker.ErrNotFound) {
		t.Fatalf("Comment: %v, want ErrNotFound", err)
	}
	if _, err := tr.Comments(context.Background(), it.Ref.ID, time.Time{}); !errors.Is(err, tracker.ErrNotFound) {
		t.Fatalf("Comments: %v, want ErrNotFound", err)
	}
}

// TestFindReadsTheBotsIssuesNewestFirst: a key filed last is found on the
// first page; one never filed reads every page of the bot's issues, and
// none of a person's.
func TestFindReadsTheBotsIssuesNewestFirst(t *testing.T) {
	em := newEmulated(t, giteaemu.Options{WebhookClient: discard()})
	tr := tracker.New(em.driver(t))
	for i := range 120 {
		if _, err := tr.Create(context.Background(), fmt.Sprintf("k%03d", i), tracker.Draft{Title: "filed"}); err != nil {
			t.Fatal(err)
		}
		em.clock.Advance(time.Second)
	}
	other := em.e.Person("alice", "relayr", "live")
	for range 60 {
		if _, err := other.CreateIssue("a person's", ""); err != nil {
			t.Fatal(err)
		}
	}
	em.e.ResetCounts()
	if _, err := tr.Find(context.Background(), "k119"); err != nil || em.e.Requests(listRoute) != 1 {
		t.Fatalf("the newest key: %v after %d requests, want it on the first page", err, em.e.Requests(listRoute))
	}
	em.e.ResetCounts()
	if _, err := tr.Find(context.Background(), "never"); !errors.Is(err, tracker.ErrNotFound) || em.e.Requests(listRoute) != 3 {
		t.Fatalf("a key never filed: %v after %d requests, want ErrNotFound after 3 (120 issues, 50 a page)", err, em.e.Requests(listRoute))
	}
}

// TestProjectCommentsReadThePagesTheCountSays: the repository's comment
// list answers 50 a page with its count, so a read that would take more
// pages than allowed stops after the first; pull requests' comments are
// left out.
func TestProjectCommentsReadThePagesTheCountSays(t *testing.T) {
	em := newEmulated(t, giteaemu.Options{WebhookClient: discard()})
	tr := tracker.New(em.driver(t))
	since := em.clock.Now()
	var ids []string
	for i := range 3 {
		it, err := tr.Create(context.Background(), fmt.Sprintf("k%d", i), tracker.Draft{Title: "commented"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, it.Ref.ID)
	}
	pr := em.e.AddPullRequest("relayr", "live", "a pull request", "")
	if _, err := em.person.Comment(pr, "on the pull request"); err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		if _, err := em.person.Comment(number(ids[i%3]), fmt.Sprintf("c%d", i)); err != nil {
			t.Fatal(err)
		}
		em.clock.Advance(time.Second)
	}
	em.e.ResetCounts()
	if _, ok, err := tr.ProjectComments(context.Background(), since, 1); ok || err != nil || em.e.TotalRequests() != 1 {
		t.Fatalf("61 comments in one read: ok %v, %v, after %d requests; want not so after 1", ok, err, em.e.TotalRequests())
	}
	em.e.ResetCounts()
	byItem, ok, err := tr.ProjectComments(context.Background(), since, 2)
	if !ok || err != nil || em.e.TotalRequests() != 2 {
		t.Fatalf("61 comments in two reads: ok %v, %v, after %d requests; want them after 2", ok, err, em.e.TotalRequests())
	}
	if len(byItem) != 3 {
		t.Fatalf("comments on %d items, want the 3 issues alone", len(byItem))
	}
	for i, id := range ids {
		if cs := byItem[id]; len(cs) != 20 || cs[0].Body != fmt.Sprintf("c%d", i) || cs[19].Body != fmt.Sprintf("c%d", 57+i) {
			t.Fatalf("item %s: %d comments, want 20 from c%d, oldest first", id, len(cs), i)
		}
	}
}

// TestABurstOfFilingsReadsTheLabelsOnce: callers that wait for another's
// resolution of the same labels find them made, and read the repository's
// labels no more.
func TestABurstOfFilingsReadsTheLabelsOnce(t *testing.T) {
	em := newEmulated(t, giteaemu.Options{WebhookClient: discard()})
	tr := tracker.New(em.driver(t))
	em.e.ResetCounts()
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Go(func() {
			_, err := tr.Create(context.Background(), fmt.Sprintf("k%d", i), tracker.Draft{Title: "build failed", Labels: []string{"ci", "flaky"}})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if reads, made := em.e.Requests("GET /api/v1/repos/{owner}/{repo}/labels"), em.e.Requests("POST /api/v1/repos/{owner}/{repo}/labels"); reads != 1 || made != 2 {
		t.Fatalf("20 filings read the labels %d times and made %d, want 1 and 2", reads, made)
	}
}
