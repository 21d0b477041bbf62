package github_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/github"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/githubemu"
)

// walk reads every page of Items since since, calling between after each
// page but the last, and answers the items by id (the last read of each).
func walk(t *testing.T, tr *tracker.Tracker, since time.Time, between func(page int)) map[string]tracker.Item {
	t.Helper()
	seen := map[string]tracker.Item{}
	var last tracker.Cursor
	for page, token := 0, ""; ; page++ {
		if page > 1000 {
			t.Fatal("the walk never ends")
		}
		p, err := tr.Items(context.Background(), tracker.Query{Since: since, Page: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range p.Items {
			if tracker.Of(it).Before(last) && it.UpdatedAt.Before(last.UpdatedAt) {
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

func file(t *testing.T, tr *tracker.Tracker, key string, d tracker.Draft) tracker.Item {
	t.Helper()
	it, err := tr.Create(context.Background(), key, d)
	if err != nil {
		t.Fatalf("Create %s: %v", key, err)
	}
	return it
}

// TestAWalkSkipsNoItemWhileOthersMoveUnderIt: GitHub pages its list by
// number; an issue updated under the walk jumps to the end and every later
// one shifts back. 250 issues, each changed in a second of its own; while
// the walk reads, a person edits issues it has read and issues it hasn't,
// and an admin deletes some. Every issue left alone is read.
func TestAWalkSkipsNoItemWhileOthersMoveUnderIt(t *testing.T) {
	em := newEmulated(t, githubemu.Options{HourlyLimit: -1}, github.Config{})
	tr := tracker.New(em.driver(t))
	var ids []string
	for i := range 250 {
		ids = append(ids, file(t, tr, fmt.Sprintf("k%03d", i), tracker.Draft{Title: "issue"}).Ref.ID)
		em.clock.Advance(time.Second)
	}
	touched := map[string]bool{}
	seen := walk(t, tr, time.Time{}, func(page int) {
		for _, i := range []int{page * 13 % 250, (page*37 + 150) % 250} {
			id := ids[i]
			if touched[id] {
				continue
			}
			touched[id] = true
			if page%2 == 0 {
				if err := em.person.Retitle("relayr", "live", number(id), "moved"); err != nil {
					t.Fatal(err)
				}
			} else {
				em.e.DeleteIssue("relayr", "live", number(id))
			}
		}
		em.clock.Advance(time.Second)
	})
	if len(touched) < 4 {
		t.Fatalf("too few pages (%d touched) to move anything under the walk", len(touched))
	}
	for _, id := range ids {
		if _, ok := seen[id]; !ok && !touched[id] {
			t.Errorf("issue #%s, left alone, was never read", id)
		}
	}
}

// TestAnIdlePollIsAnswered304AndCostsNothing: the follower asks the same
// question while nothing changes, and GitHub doesn't count a 304.
func TestAnIdlePollIsAnswered304AndCostsNothing(t *testing.T) {
	em := newEmulated(t, githubemu.Options{}, github.Config{})
	tr := tracker.New(em.driver(t))
	file(t, tr, "k", tracker.Draft{Title: "T"})
	since := em.clock.Now().Add(-2 * time.Minute)
	if _, err := tr.Items(context.Background(), tracker.Query{Since: since}); err != nil {
		t.Fatal(err)
	}
	used := em.e.Used(em.token)
	for range 5 {
		em.clock.Advance(30 * time.Second)
		p, err := tr.Items(context.Background(), tracker.Query{Since: since})
		if err != nil || len(p.Items) != 1 {
			t.Fatalf("%+v %v, want the one issue, as before", p, err)
		}
	}
	if got := em.e.Used(em.token); got != used {
		t.Fatalf("five idle polls used %d of the hour, want none", got-used)
	}
	if em.e.NotModified() != 5 {
		t.Fatalf("%d answers were 304, want 5", em.e.NotModified())
	}
}

// TestPullRequestsAreNoItems: they are issues to the API, in every list
// and in the numbering.
func TestPullRequestsAreNoItems(t *testing.T) {
	em := newEmulated(t, githubemu.Options{}, github.Config{})
	tr := tracker.New(em.driver(t))
	it := file(t, tr, "k", tracker.Draft{Title: "an issue"})
	pr := em.e.AddPullRequest("relayr", "live", "a pull request", "<!-- lattice-key: lattice:t1/w1/k -->")
	if seen := walk(t, tr, time.Time{}, nil); len(seen) != 1 || seen[it.Ref.ID].Title != "an issue" {
		t.Fatalf("read %v, want the issue alone", seen)
	}
	if _, err := tr.Item(context.Background(), fmt.Sprint(pr)); !errors.Is(err, tracker.ErrNotFound) {
		t.Fatalf("Item of pull request #%d: %v, want ErrNotFound", pr, err)
	}
	if found, err := tr.Find(context.Background(), "k"); err != nil || found.Ref.ID != it.Ref.ID {
		t.Fatalf("Find answered %+v %v, want the issue", found.Ref, err)
	}
}

// TestATransferredIssueIsFollowedAndStaysTheSameItem: a 301 is followed,
// for reads and edits, and the item keeps the id relayr knows it by.
func TestATransferredIssueIsFollowedAndStaysTheSameItem(t *testing.T) {
	em := newEmulated(t, githubemu.Options{}, github.Config{})
	em.e.CreateRepo("relayr", "elsewhere")
	tr := tracker.New(em.driver(t))
	it := file(t, tr, "k", tracker.Draft{Title: "moving"})
	moved := em.e.TransferIssue("relayr", "live", number(it.Ref.ID), "relayr", "elsewhere")
	got, err := tr.Item(context.Background(), it.Ref.ID)
	if err != nil || got.Ref.ID != it.Ref.ID || got.Ref.Key != "k" || !strings.Contains(got.Ref.Link, fmt.Sprintf("elsewhere/issues/%d", moved)) {
		t.Fatalf("%+v %v, want the same item, linked where it went", got.Ref, err)
	}
	title := "moved"
	up, err := tr.Update(context.Background(), it.Ref.ID, tracker.Patch{Title: &title})
	if err != nil || up.Title != "moved" {
		t.Fatalf("Update of a transferred issue: %+v %v", up, err)
	}
	if held, ok := em.e.Issue("relayr", "elsewhere", moved); !ok || held.Title != "moved" {
		t.Fatalf("the edit did not reach the issue where it went: %+v", held)
	}
}

// TestADeletedIssueIsNotFound: GitHub answers it 410.
func TestADeletedIssueIsNotFound(t *testing.T) {
	em := newEmulated(t, githubemu.Options{}, github.Config{})
	tr := tracker.New(em.driver(t))
	it := file(t, tr, "k", tracker.Draft{Title: "gone"})
	em.e.DeleteIssue("relayr", "live", number(it.Ref.ID))
	for name, err := range map[string]error{
		"Item":     func() error { _, err := tr.Item(context.Background(), it.Ref.ID); return err }(),
		"Comment":  func() error { _, err := tr.Comment(context.Background(), it.Ref.ID, "c", "b"); return err }(),
		"Comments": func() error { _, err := tr.Comments(context.Background(), it.Ref.ID, time.Time{}); return err }(),
	} {
		if !errors.Is(err, tracker.ErrNotFound) {
			t.Errorf("%s: %v, want ErrNotFound", name, err)
		}
	}
}

// TestLabelsATokenCannotSetAreRefusedBeforeAnythingIsFiled: GitHub drops
// them silently for a token without push access.
func TestLabelsATokenCannotSetAreRefusedBeforeAnythingIsFiled(t *testing.T) {
	em := newEmulated(t, githubemu.Options{}, github.Config{})
	em.e.AddUser("reader")
	token := em.e.AddToken("reader", false)
	tr, err := em.conn.Connect(context.Background(), tracker.Credentials{Token: token}, source)
	if err != nil {
		t.Fatal(err)
	}
	before := em.e.ContentCreated(token)
	if _, err := tr.Create(context.Background(), "k", tracker.Draft{Title: "labelled", Labels: []string{"ci"}}); !errors.Is(err, tracker.ErrRefused) {
		t.Fatalf("%v, want ErrRefused", err)
	}
	if em.e.ContentCreated(token) != before {
		t.Fatal("the refused draft was filed")
	}
}

// TestABodyOverGitHubsLimitIsRefusedUnsent: the marker counted.
func TestABodyOverGitHubsLimitIsRefusedUnsent(t *testing.T) {
	em := newEmulated(t, githubemu.Options{}, github.Config{})
	tr := tracker.New(em.driver(t))
	em.e.ResetCounts()
	_, err := tr.Create(context.Background(), "k", tracker.Draft{Title: "long", Description: strings.Repeat("é", github.MaxBody-10)})
	if !errors.Is(err, tracker.ErrInvalid) || em.e.TotalRequests() != 0 {
		t.Fatalf("%v after %d requests, want ErrInvalid and none sent", err, em.e.TotalRequests())
	}
	file(t, tr, "k2", tracker.Draft{Title: "fits", Description: strings.Repeat("é", github.MaxBody-100)})
}

// TestAnHourSpentIsKeptUnsentUntilItsReset: once GitHub says the hour's
// requests are spent, the driver answers rate-limited until the reset,
// sending nothing, and goes on after it.
func TestAnHourSpentIsKeptUnsentUntilItsReset(t *testing.T) {
	em := newEmulated(t, githubemu.Options{HourlyLimit: 6}, github.Config{})
	tr := tracker.New(em.driver(t)) // two requests: the repository and the user
	it := file(t, tr, "k", tracker.Draft{Title: "T"})
	// Edits until GitHub says the hour is spent (each a read and a PATCH).
	var err error
	for i := 0; i < 10 && err == nil; i++ {
		em.clock.Advance(time.Second)
		title := fmt.Sprint("T", i)
		_, err = tr.Update(context.Background(), it.Ref.ID, tracker.Patch{Title: &title})
	}
	if !errors.Is(err, tracker.ErrRateLimited) {
		t.Fatalf("%v, want the hour spent within ten edits", err)
	}
	em.e.ResetCounts()
	_, err = tr.Item(context.Background(), it.Ref.ID)
	var rl *tracker.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter <= 0 || rl.RetryAfter > time.Hour || !errors.Is(err, tracker.ErrNotSent) {
		t.Fatalf("%v, want rate-limited until the reset, unsent", err)
	}
	if n := em.e.TotalRequests(); n != 0 {
		t.Fatalf("%d requests sent while the hour was spent", n)
	}
	em.clock.Advance(rl.RetryAfter + time.Second)
	if _, err := tr.Item(context.Background(), it.Ref.ID); err != nil {
		t.Fatalf("after the reset: %v", err)
	}
}

// TestContentCreationIsHeldToGitHubsMinute: the 81st issue or comment of a
// minute is answered rate-limited, unsent, and goes once the minute
// allows.
func TestContentCreationIsHeldToGitHubsMinute(t *testing.T) {
	em := newEmulated(t, githubemu.Options{HourlyLimit: -1}, github.Config{})
	tr := tracker.New(em.driver(t))
	it := file(t, tr, "k", tracker.Draft{Title: "T"})
	for i := range github.CreatesPerMinute - 1 {
		if _, err := tr.Comment(context.Background(), it.Ref.ID, fmt.Sprint("c", i), "b"); err != nil {
			t.Fatalf("comment %d: %v", i, err)
		}
	}
	created := em.e.ContentCreated(em.token)
	_, err := tr.Comment(context.Background(), it.Ref.ID, "one-too-many", "b")
	var rl *tracker.RateLimitedError
	if !errors.As(err, &rl) || !errors.Is(err, tracker.ErrNotSent) || rl.RetryAfter > time.Minute {
		t.Fatalf("%v, want rate-limited within the minute, unsent", err)
	}
	if em.e.ContentCreated(em.token) != created {
		t.Fatal("the 81st creation was sent")
	}
	em.clock.Advance(rl.RetryAfter)
	if _, err := tr.Comment(context.Background(), it.Ref.ID, "one-too-many", "b"); err != nil {
		t.Fatalf("once the minute allows: %v", err)
	}
}

// TestFindReadsTheAccountsIssuesNewestFirst: a key filed last is found on
// the first page; one never filed reads every page of the account's
// issues, and none of a person's.
func TestFindReadsTheAccountsIssuesNewestFirst(t *testing.T) {
	em := newEmulated(t, githubemu.Options{HourlyLimit: -1, NoSecondaryLimits: true}, github.Config{})
	tr := tracker.New(em.driver(t))
	for i := range 150 {
		file(t, tr, fmt.Sprintf("k%03d", i), tracker.Draft{Title: "filed"})
		em.clock.Advance(time.Second)
	}
	for range 120 {
		if _, err := em.person.CreateIssue("relayr", "live", "a person's", ""); err != nil {
			t.Fatal(err)
		}
	}
	const list = "GET /repos/{owner}/{repo}/issues"
	em.e.ResetCounts()
	if _, err := tr.Find(context.Background(), "k149"); err != nil || em.e.Requests(list) != 1 {
		t.Fatalf("the newest key: %v after %d requests, want it on the first page", err, em.e.Requests(list))
	}
	em.e.ResetCounts()
	if _, err := tr.Find(context.Background(), "never"); !errors.Is(err, tracker.ErrNotFound) || em.e.Requests(list) != 2 {
		t.Fatalf("a key never filed: %v after %d requests, want ErrNotFound after 2 (150 issues, 100 a page)", err, em.e.Requests(list))
	}
}

// TestProjectCommentsReadThePagesTheLinkSays: the repository's comment list
// answers 100 a page with Link paging, so a read that would take more
// pages than allowed stops after the first (its rel="last" says how many);
// pull requests' comments are left out.
func TestProjectCommentsReadThePagesTheLinkSays(t *testing.T) {
	em := newEmulated(t, githubemu.Options{}, github.Config{})
	tr := tracker.New(em.driver(t))
	since := em.clock.Now()
	var ids []string
	for i := range 3 {
		ids = append(ids, file(t, tr, fmt.Sprintf("k%d", i), tracker.Draft{Title: "commented"}).Ref.ID)
	}
	pr := em.e.AddPullRequest("relayr", "live", "a pull request", "")
	if _, err := em.person.Comment("relayr", "live", pr, "on the pull request"); err != nil {
		t.Fatal(err)
	}
	for i := range 120 {
		if _, err := em.person.Comment("relayr", "live", number(ids[i%3]), fmt.Sprintf("c%d", i)); err != nil {
			t.Fatal(err)
		}
		em.clock.Advance(time.Second)
	}
	em.e.ResetCounts()
	if _, ok, err := tr.ProjectComments(context.Background(), since, 1); ok || err != nil || em.e.TotalRequests() != 1 {
		t.Fatalf("121 comments in one read: ok %v, %v, after %d requests; want not so after 1", ok, err, em.e.TotalRequests())
	}
	em.e.ResetCounts()
	byItem, ok, err := tr.ProjectComments(context.Background(), since, 2)
	if !ok || err != nil || em.e.TotalRequests() != 2 {
		t.Fatalf("121 comments in two reads: ok %v, %v, after %d requests; want them after 2", ok, err, em.e.TotalRequests())
	}
	if len(byItem) != 3 {
		t.Fatalf("comments on %d items, want the 3 issues alone", len(byItem))
	}
	for i, id := range ids {
		if cs := byItem[id]; len(cs) != 40 || cs[0].Body != fmt.Sprintf("c%d", i) || cs[39].Body != fmt.Sprintf("c%d", 117+i) {
			t.Fatalf("item %s: %d comments, want 40 from c%d, oldest first", id, len(cs), i)
		}
	}
}
