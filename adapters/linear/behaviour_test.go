package linear_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/linear"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/linearemu"
)

// A comment moves its item's UpdatedAt, whether Linear moves the issue's
// or not, and Item and Items answer the same version.
func TestACommentMovesItsItemWhateverLinearDoes(t *testing.T) {
	for _, moves := range []bool{false, true} {
		// Which end of an issue's comments is the newest is undocumented
		// too (sheet §6): the item moves to its newest comment either way.
		for _, oldest := range []bool{false, true} {
			name := fmt.Sprintf("moves=%v oldestFirst=%v", moves, oldest)
			em := newEmulated(t, linearemu.Options{CommentsMoveUpdatedAt: moves, CommentsOldestFirst: oldest}, linear.Config{})
			d := em.driver(t)
			ctx := context.Background()
			it, err := d.Create(ctx, "k1", tracker.Draft{Title: "commented"})
			if err != nil {
				t.Fatal(err)
			}
			em.clock.Advance(time.Hour)
			if _, err := em.person.Comment(it.Ref.ID, "a person's first word"); err != nil {
				t.Fatal(err)
			}
			em.clock.Advance(time.Hour)
			since := em.clock.Now()
			if _, err := em.person.Comment(it.Ref.ID, "a person's word"); err != nil {
				t.Fatal(err)
			}
			pg, err := d.Items(ctx, tracker.Query{Since: since})
			if err != nil || len(pg.Items) != 1 || pg.Items[0].UpdatedAt.Before(since) {
				t.Fatalf("%s: Items since the comment: %+v %v", name, pg.Items, err)
			}
			one, err := d.Item(ctx, it.Ref.ID)
			if err != nil || !one.UpdatedAt.Equal(pg.Items[0].UpdatedAt) {
				t.Fatalf("%s: Item reads %s, Items %s", name, one.UpdatedAt, pg.Items[0].UpdatedAt)
			}
			cs, ok, err := d.ProjectComments(ctx, since, 3)
			if err != nil || !ok || len(cs) != 1 || cs[0].ItemID != it.Ref.ID || cs[0].Key != "" {
				t.Fatalf("%s: the team's comments %+v %v %v", name, cs, ok, err)
			}
		}
	}
}

// A trashed issue reads as deleted, whether Linear reads it by id or not;
// an archived one as archived; one moved to another team as gone.
func TestTrashedArchivedAndMovedIssues(t *testing.T) {
	for _, notFound := range []bool{false, true} {
		em := newEmulated(t, linearemu.Options{TrashedNotFound: notFound}, linear.Config{})
		other := em.e.AddTeam("OPS", "Operations")
		d := em.driver(t)
		ctx := context.Background()
		var ids []string
		for _, k := range []string{"trashed", "archived", "moved", "kept"} {
			it, err := d.Create(ctx, k, tracker.Draft{Title: k, State: tracker.Done})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, it.Ref.ID)
		}
		if err := em.person.Trash(ids[0]); err != nil {
			t.Fatal(err)
		}
		if err := em.e.AutoArchive(ids[1]); err != nil {
			t.Fatal(err)
		}
		if err := em.person.MoveTeam(ids[2], other); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Item(ctx, ids[0]); !errors.Is(err, tracker.ErrNotFound) {
			t.Errorf("trashed: %v, want not found", err)
		}
		if it, err := d.Item(ctx, ids[1]); err != nil || !it.Archived {
			t.Errorf("archived: %+v %v, want archived", it, err)
		}
		if _, err := d.Item(ctx, ids[2]); !errors.Is(err, tracker.ErrNotFound) {
			t.Errorf("moved: %v, want not found", err)
		}
		if _, err := d.Find(ctx, "trashed"); !errors.Is(err, tracker.ErrNotFound) {
			t.Errorf("Find of the trashed one: %v, want not found", err)
		}
		// Filed again, as by a ledger that lost the keys: the id is held,
		// by the trashed issue and by the one moved away alike, so each
		// key's item exists and reads deleted; nothing new is made.
		for i, k := range []string{"trashed", "moved"} {
			var exists *tracker.ExistsError
			if _, err := d.Create(ctx, k, tracker.Draft{Title: k}); !errors.As(err, &exists) || exists.ID != ids[i*2] {
				t.Errorf("%s filed again: %v, want it exists as %s", k, err, ids[i*2])
			}
		}
		got, err := d.FetchItems(ctx, ids)
		if err != nil || len(got) != 2 || !got[ids[1]].Archived || got[ids[3]].Ref.Key != "kept" {
			t.Errorf("FetchItems %v %v, want the archived and the kept", got, err)
		}
	}
}

// Where Linear shows a trashed issue neither by id nor in lists, a key
// filed again (as by a ledger that lost it) after its issue was trashed:
// a create answered "Entity not found: Issue" alone was filed before, and
// its item reads deleted; one answered that the id is taken is refused,
// with Linear's words, never sent again as if nothing held the id.
func TestAKeyWhoseIssueNoReadShows(t *testing.T) {
	for _, dup := range []linearemu.DuplicateAnswer{linearemu.DuplicateSuccess, linearemu.DuplicateError} {
		em := newEmulated(t, linearemu.Options{DuplicateID: dup, TrashedNotFound: true, TrashedUnlisted: true}, linear.Config{})
		d := em.driver(t)
		ctx := context.Background()
		it, err := d.Create(ctx, "k", tracker.Draft{Title: "to trash"})
		if err != nil {
			t.Fatal(err)
		}
		if err := em.person.Trash(it.Ref.ID); err != nil {
			t.Fatal(err)
		}
		_, err = d.Create(ctx, "k", tracker.Draft{Title: "to trash"})
		var exists *tracker.ExistsError
		switch dup {
		case linearemu.DuplicateSuccess:
			if !errors.As(err, &exists) || exists.ID != it.Ref.ID {
				t.Fatalf("answered with the issue it holds: %v, want it exists as %s", err, it.Ref.ID)
			}
			if _, err := d.Item(ctx, it.Ref.ID); !errors.Is(err, tracker.ErrNotFound) {
				t.Fatalf("its item reads %v, want deleted", err)
			}
		default:
			if !errors.Is(err, tracker.ErrRefused) || errors.Is(err, tracker.ErrNotFound) || !strings.Contains(err.Error(), "already exists") {
				t.Fatalf("answered that the id is taken: %v, want refused in Linear's words", err)
			}
		}
	}
}

// A description Linear's Markdown round trip rewrites is the same
// description to the echo filter, and a group label is refused.
func TestMarkdownAndLabels(t *testing.T) {
	em := newEmulated(t, linearemu.Options{DropHTMLComments: true}, linear.Config{})
	tr := tracker.New(em.driver(t))
	ctx := context.Background()
	desc := "Steps:\n\n\n* one   \n+ two\n<!-- note -->"
	it, err := tr.Create(ctx, "k1", tracker.Draft{Title: "md", Description: desc})
	if err != nil {
		t.Fatal(err)
	}
	if it.Description == desc || !tr.SameDescription(desc, it.Description) {
		t.Fatalf("stored %q: not taken as %q", it.Description, desc)
	}
	em.e.AddGroupLabel(em.team, "area")
	if _, err := tr.Update(ctx, it.Ref.ID, tracker.Patch{Labels: &[]string{"area"}}); !errors.Is(err, tracker.ErrRefused) {
		t.Fatalf("a group label: %v, want refused", err)
	}
	got, err := tr.Update(ctx, it.Ref.ID, tracker.Patch{Labels: &[]string{"ci", "flaky"}})
	if err != nil || !tracker.SameLabels(got.Labels, []string{"ci", "flaky"}) {
		t.Fatalf("labels %v %v", got.Labels, err)
	}
}

// Linear's limits: a poll past the writes' share waits for the reset or
// is answered rate-limited, unsent; a write still goes; a RATELIMITED
// answer is a rate limit, never a not-found.
func TestTheWritesKeepTheirShare(t *testing.T) {
	em := newEmulated(t, linearemu.Options{RequestsPerHour: 40}, linear.Config{Sleep: func(context.Context, time.Duration) error { return errors.New("no waiting here") }})
	d := em.driver(t)
	ctx := context.Background()
	it, err := d.Create(ctx, "k1", tracker.Draft{Title: "budget"})
	if err != nil {
		t.Fatal(err)
	}
	var polled, refused int
	for range 60 {
		short, cancel := context.WithTimeout(ctx, time.Second)
		_, err := d.Items(short, tracker.Query{Since: t0})
		cancel()
		if err == nil {
			polled++
			continue
		}
		if !errors.Is(err, tracker.ErrNotSent) || !errors.Is(err, tracker.ErrRateLimited) {
			t.Fatalf("a poll past the share: %v, want rate-limited unsent", err)
		}
		refused++
		break
	}
	if refused == 0 {
		t.Fatalf("%d polls went, none held back", polled)
	}
	title := "written within the writes' share"
	if _, err := d.Update(ctx, it.Ref.ID, tracker.Patch{Title: &title}); err != nil {
		t.Fatalf("a write after the polls stopped: %v", err)
	}
	if n := em.e.Limited(); n != 0 {
		t.Fatalf("Linear answered RATELIMITED %d times", n)
	}
}

// The polls leave the writes their share of Linear's complexity points
// too: a team's polls stop short of the last tenth, and a filing made then
// is answered.
func TestTheWritesKeepTheirShareOfPoints(t *testing.T) {
	em := newEmulated(t, linearemu.Options{ComplexityPerHour: 30000}, linear.Config{Sleep: func(context.Context, time.Duration) error { return errors.New("no waiting here") }})
	d := em.driver(t)
	ctx := context.Background()
	if _, err := d.Create(ctx, "k1", tracker.Draft{Title: "budget"}); err != nil {
		t.Fatal(err)
	}
	polled := 0
	for {
		short, cancel := context.WithTimeout(ctx, time.Second)
		_, err := d.Items(short, tracker.Query{Since: t0})
		cancel()
		if err != nil {
			if !errors.Is(err, tracker.ErrNotSent) || !errors.Is(err, tracker.ErrRateLimited) {
				t.Fatalf("a poll past the points' share: %v, want rate-limited unsent", err)
			}
			break
		}
		if polled++; polled > 100 {
			t.Fatal("100 polls went, none held back by the points")
		}
	}
	for i := range 5 {
		if _, err := d.Create(ctx, fmt.Sprint("w", i), tracker.Draft{Title: "filed within the writes' share"}); err != nil {
			t.Fatalf("filing %d after %d polls stopped: %v", i, polled, err)
		}
	}
	if n := em.e.Limited(); n != 0 {
		t.Fatalf("Linear answered RATELIMITED %d times", n)
	}
}

// A RATELIMITED answer holds the next request until the reset Linear
// names, which then goes through; no request is sent in between.
func TestARateLimitedAnswerHoldsUntilItsReset(t *testing.T) {
	var slept []time.Duration
	var em *emulated
	em = newEmulated(t, linearemu.Options{RequestsPerHour: 3}, linear.Config{Sleep: func(_ context.Context, d time.Duration) error {
		slept = append(slept, d)
		em.clock.Advance(d)
		return nil
	}})
	d := em.driver(t)
	ctx := context.Background()
	var err error
	n := 0
	for ; n < 10; n++ {
		if _, err = d.Create(ctx, fmt.Sprint("k", n), tracker.Draft{Title: "filed"}); err != nil {
			break
		}
	}
	// The filing answered RATELIMITED was not made: the driver's read of
	// its id, which decides, waited for the reset rather than being sent
	// into the limit again.
	if !errors.Is(err, tracker.ErrRateLimited) || em.e.Limited() != 1 {
		t.Fatalf("after %d filings: %v, %d RATELIMITED; want the one RATELIMITED answer", n, err, em.e.Limited())
	}
	if len(slept) == 0 {
		t.Fatal("nothing waited for the reset Linear named")
	}
	if _, err := d.Create(ctx, fmt.Sprint("k", n), tracker.Draft{Title: "filed after the reset"}); err != nil {
		t.Fatalf("the filing after RATELIMITED: %v", err)
	}
	if em.e.Limited() != 1 {
		t.Fatalf("%d RATELIMITED answers, want the one: a held request was sent into the limit", em.e.Limited())
	}
}

func TestRateLimitedIsNeverNotFound(t *testing.T) {
	em := newEmulated(t, linearemu.Options{RequestsPerHour: 3}, linear.Config{Sleep: func(context.Context, time.Duration) error { return errors.New("no waiting here") }})
	d := em.driver(t)
	var err error
	for range 5 {
		if _, err = d.Item(context.Background(), "6ba7b810-9dad-41d1-80b4-00c04fd430c8"); errors.Is(err, tracker.ErrRateLimited) {
			break
		}
	}
	if !errors.Is(err, tracker.ErrRateLimited) || errors.Is(err, tracker.ErrNotFound) {
		t.Fatalf("reads past the limit: %v, want rate-limited", err)
	}
}

// A workspace over its plan's issues refuses the filing, not a rate
// limit to wait out.
func TestAUsageLimitIsARefusal(t *testing.T) {
	em := newEmulated(t, linearemu.Options{UsageLimit: 1}, linear.Config{})
	d := em.driver(t)
	if _, err := d.Create(context.Background(), "k1", tracker.Draft{Title: "one"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Create(context.Background(), "k2", tracker.Draft{Title: "two"}); !errors.Is(err, tracker.ErrRefused) || errors.Is(err, tracker.ErrRateLimited) {
		t.Fatalf("a create over the plan: %v, want refused", err)
	}
}

// A delivery is verified by its signature and its time, names the team,
// and a remove names the issue deleted.
func TestNudgeVerifiesSignatureAndTime(t *testing.T) {
	em := newEmulated(t, linearemu.Options{}, linear.Config{})
	tr := tracker.New(em.driver(t))
	it, err := tr.Create(context.Background(), "k1", tracker.Draft{Title: "hooked"})
	if err != nil {
		t.Fatal(err)
	}
	h, body := em.delivery(t, it.Ref.ID, "s3cret", "remove", func() error { return em.person.Trash(it.Ref.ID) })
	n, err := tr.Nudge("s3cret", h, body)
	if err != nil || n.Project != em.team || !slices.Equal(n.Deleted, []string{it.Ref.ID}) {
		t.Fatalf("nudged %+v %v", n, err)
	}
	em.clock.Advance(2 * time.Minute)
	if _, err := tr.Nudge("s3cret", h, body); !errors.Is(err, tracker.ErrUnauthorized) {
		t.Fatalf("a delivery two minutes old: %v, want refused", err)
	}
	if _, err := tr.Nudge("s3cret", http.Header{}, body); !errors.Is(err, tracker.ErrUnauthorized) {
		t.Fatalf("an unsigned delivery: %v", err)
	}
}
