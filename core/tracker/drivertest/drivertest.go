// Package drivertest is the conformance suite of tracker drivers: what a
// driver promises the portable tracker.Tracker, above all that its
// Capabilities say the truth. Every driver runs it (the fake first, then
// each adapter over its emulation and, where one runs, a live server),
// beside trackertest, which runs the port's contract over the portable
// type:
//
//	func TestDriver(t *testing.T) {
//		drivertest.Run(t, func(t *testing.T) drivertest.Harness { … })
//	}
//
// The suite calls the driver directly, only with inputs the portable
// tracker would pass it: checked keys, drafts and ids, live contexts.
package drivertest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackertest"
)

// Harness is what the suite needs of one driver under test.
type Harness struct {
	Driver tracker.Driver
	// Person acts in the tracker as a person would.
	Person trackertest.Person
	// Wait lets the tracker's clock pass d (an emulation's step, a live
	// tracker's sleep).
	Wait func(d time.Duration)
	// Deletion deletes the item as a person would and answers the
	// delivery the tracker sends about it, signed with secret; nil for a
	// tracker that sends none (Capabilities.NudgesDeletions false).
	Deletion func(itemID, secret string) (http.Header, []byte)
}

// Run runs every case against drivers newHarness makes, one per subtest.
// Keys are unique per run, so a live tracker's project can be shared.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	t.Helper()
	runCases(t, newHarness, false)
}

// RunVirtual is Run with every case in a synctest bubble, harness made
// and all, for a driver that holds no real socket (the fake): time is
// virtual, so Wait may be time.Sleep and passes at once.
func RunVirtual(t *testing.T, newHarness func(t *testing.T) Harness) {
	t.Helper()
	runCases(t, newHarness, true)
}

func runCases(t *testing.T, newHarness func(t *testing.T) Harness, virtual bool) {
	names := make([]string, len(Cases))
	for i, c := range Cases {
		names[i] = c.Name
	}
	trackertest.EachCase(t, "dt", names, virtual, func(t *testing.T, i int, key func(string) string) {
		Cases[i].Check(t, newHarness(t), key)
	})
}

// Case is one rule of the suite.
type Case struct {
	Name  string
	Check func(t *testing.T, h Harness, key func(suffix string) string)
}

// Cases is the suite's table, in the order Run runs it.
var Cases = []Case{
	{"CapabilitiesAreWholeAndConsistent", capabilitiesWhole},
	{"ACreateAnswersItsKeyAnIDOfTheTrackersShapeAndItsLink", createdRef},
	{"TimesAreUTCAndNoFinerThanTimePrecision", timesPrecise},
	{"EachStateReadsBackAsCapabilitiesHoldIt", statesHeld},
	{"KeysEnforcedSaysWhetherASecondCreateIsRefused", keysEnforced},
	{"AKeyOfCharactersOutsideRewritesReadsBackAsItself", keyCharacters},
	{"AKeyAtTheLengthLimitReadsBackAsItself", keyLength},
	{"NoPageHoldsMoreThanMaxPage", pagesCapped},
	{"ADeletedItemIsNotFoundAndNudgedWhereTheTrackerSaysSo", deletion},
	{"ProjectCommentsAnswerWhatEachItemsCommentsAnswer", projectComments},
	{"ProjectCommentsThatTakeMoreReadsThanAllowedAreNotAnswered", projectCommentsPaged},
	{"FindKeysAnswersWhatFindAnswersForEachKey", findKeys},
	{"FetchItemsAnswersWhatItemAnswersForEachID", fetchItems},
}

func ctxOf(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func create(t *testing.T, h Harness, key string, d tracker.Draft) tracker.Item {
	t.Helper()
	it, err := h.Driver.Create(ctxOf(t), key, d)
	if err != nil {
		t.Fatalf("Create %q: %v", key, err)
	}
	return it
}

func capabilitiesWhole(t *testing.T, h Harness, _ func(string) string) {
	c := h.Driver.Capabilities()
	if c.Name == "" || strings.ContainsAny(c.Name, ": ") {
		t.Errorf("Name %q: want a short name to prefix errors with", c.Name)
	}
	if c.MaxPage <= 0 {
		t.Errorf("MaxPage %d: want the most items a page holds", c.MaxPage)
	}
	if c.TimePrecision <= 0 || c.TimePrecision > time.Second {
		t.Errorf("TimePrecision %s: want the resolution of the tracker's times, at most a second", c.TimePrecision)
	}
	for from, to := range c.States {
		if !from.Valid() || !to.Valid() {
			t.Errorf("States maps %q to %q: both must be of the five", from, to)
		}
	}
	for _, s := range tracker.States {
		if held := c.Holds(s); c.Holds(held) != held {
			t.Errorf("%s is held as %s, which is held as %s: a held state must hold itself", s, held, c.Holds(held))
		}
	}
	if c.ValidID != nil && c.ValidID("") {
		t.Error("ValidID takes the empty id")
	}
	if _, lists := h.Driver.(tracker.ProjectCommenter); c.ProjectComments && !lists {
		t.Error("ProjectComments is set, but the driver is no ProjectCommenter")
	}
	if c.NudgesDeletions != (h.Deletion != nil) {
		t.Errorf("NudgesDeletions is %v, but the harness's Deletion is set: %v", c.NudgesDeletions, h.Deletion != nil)
	}
	if h.Driver.Project() == "" {
		t.Error("Project is empty")
	}
}

func createdRef(t *testing.T, h Harness, key func(string) string) {
	c := h.Driver.Capabilities()
	k := key("a")
	it := create(t, h, k, tracker.Draft{Title: "Shaped", Labels: []string{"drivertest"}})
	if it.Ref.Key != k || it.Title != "Shaped" {
		t.Errorf("Create answered key %q title %q, want %q %q", it.Ref.Key, it.Title, k, "Shaped")
	}
	if c.ValidID != nil && !c.ValidID(it.Ref.ID) {
		t.Errorf("Create answered id %q, which ValidID refuses: the portable tracker would never ask for it", it.Ref.ID)
	}
	if it.Ref.Link == "" || it.Ref.Link != h.Driver.Link(it.Ref) {
		t.Errorf("the item's link %q, Link answers %q: want the same, not empty", it.Ref.Link, h.Driver.Link(it.Ref))
	}
	if it.Ref.Name == "" {
		t.Error("the item has no name people call it by")
	}
	if len(it.Labels) != 1 || it.Labels[0] != "drivertest" {
		t.Errorf("Create answered labels %q, want the one filed", it.Labels)
	}
	got, err := h.Driver.Find(ctxOf(t), k)
	if err != nil || got.Ref.ID != it.Ref.ID || got.Ref.Key != k {
		t.Errorf("Find of the key: %+v %v, want the item made", got.Ref, err)
	}
}

func precise(t *testing.T, what string, at time.Time, prec time.Duration) {
	t.Helper()
	if at.IsZero() {
		t.Errorf("%s is zero", what)
		return
	}
	if at.Location() != time.UTC {
		t.Errorf("%s %s is not in UTC", what, at)
	}
	if !at.Truncate(prec).Equal(at) {
		t.Errorf("%s %s is finer than TimePrecision %s", what, at.Format(time.RFC3339Nano), prec)
	}
}

func timesPrecise(t *testing.T, h Harness, key func(string) string) {
	prec := h.Driver.Capabilities().TimePrecision
	it := create(t, h, key("a"), tracker.Draft{Title: "Timed"})
	precise(t, "Create's updated_at", it.UpdatedAt, prec)
	got, err := h.Driver.Item(ctxOf(t), it.Ref.ID)
	if err != nil {
		t.Fatal(err)
	}
	precise(t, "Item's updated_at", got.UpdatedAt, prec)
	c, err := h.Driver.Comment(ctxOf(t), it.Ref.ID, key("c"), "timed")
	if err != nil {
		t.Fatal(err)
	}
	precise(t, "Comment's created_at", c.CreatedAt, prec)
	cs, err := h.Driver.Comments(ctxOf(t), it.Ref.ID, time.Time{})
	if err != nil || len(cs) == 0 {
		t.Fatalf("Comments: %d %v", len(cs), err)
	}
	for _, c := range cs {
		precise(t, "a listed comment's created_at", c.CreatedAt, prec)
	}
}

func statesHeld(t *testing.T, h Harness, key func(string) string) {
	c := h.Driver.Capabilities()
	it := create(t, h, key("a"), tracker.Draft{Title: "Stateful"})
	for _, s := range tracker.States {
		up, err := h.Driver.Update(ctxOf(t), it.Ref.ID, tracker.Patch{State: &s})
		if err != nil {
			t.Fatalf("Update to %s: %v", s, err)
		}
		got, err := h.Driver.Item(ctxOf(t), it.Ref.ID)
		if err != nil {
			t.Fatal(err)
		}
		if up.State != c.Holds(s) || got.State != c.Holds(s) {
			t.Errorf("set to %s: Update answered %s, Item reads %s, Capabilities hold it as %s", s, up.State, got.State, c.Holds(s))
		}
	}
	for _, s := range tracker.States {
		filed := create(t, h, key(string(s)), tracker.Draft{Title: "Filed " + string(s), State: s})
		if filed.State != c.Holds(s) {
			t.Errorf("filed as %s, answered %s, Capabilities hold it as %s", s, filed.State, c.Holds(s))
		}
	}
}

func keysEnforced(t *testing.T, h Harness, key func(string) string) {
	first := create(t, h, key("a"), tracker.Draft{Title: "first"})
	h.Wait(time.Second)
	second, err := h.Driver.Create(ctxOf(t), key("a"), tracker.Draft{Title: "second"})
	var ex *tracker.ExistsError
	if h.Driver.Capabilities().KeysEnforced {
		if !errors.As(err, &ex) || ex.ID != first.Ref.ID {
			t.Fatalf("KeysEnforced, and a second create answered %v, want *tracker.ExistsError naming %s", err, first.Ref.ID)
		}
		return
	}
	if err != nil || second.Ref.ID == first.Ref.ID {
		t.Fatalf("keys not enforced, and a second create answered %+v %v, want a second item", second.Ref, err)
	}
}

// tricky are characters a tracker's markup, search or URL handling could
// take for its own.
const tricky = `"'%_*/\#?:;!=+&<>[]{}()|^$~` + "`" + ` é中🙂`

func keyCharacters(t *testing.T, h Harness, key func(string) string) {
	rewrites := h.Driver.Capabilities().Rewrites
	var keep strings.Builder
	for _, r := range tricky {
		if !strings.ContainsRune(rewrites, r) {
			keep.WriteRune(r)
		}
	}
	k := key("x" + keep.String() + "x")
	it := create(t, h, k, tracker.Draft{Title: "Tricky key"})
	got, err := h.Driver.Find(ctxOf(t), k)
	if err != nil || got.Ref.ID != it.Ref.ID || got.Ref.Key != k {
		t.Fatalf("Find of %q: %+v %v, want the item, its key read back as filed: the key holds a character the tracker rewrites that Rewrites (%q) doesn't name", k, got.Ref, err, rewrites)
	}
	if _, err := h.Driver.Comment(ctxOf(t), it.Ref.ID, k+"/c", "tricky"); err != nil {
		t.Fatal(err)
	}
	cs, err := h.Driver.Comments(ctxOf(t), it.Ref.ID, time.Time{})
	if err != nil || len(cs) != 1 || cs[0].Key != k+"/c" {
		t.Fatalf("Comments: %+v %v, want the comment's key read back as posted", cs, err)
	}
}

func keyLength(t *testing.T, h Harness, key func(string) string) {
	prefix := key("")
	n := h.Driver.Capabilities().MaxKeyChars
	var k string
	if n > 0 {
		k = prefix + strings.Repeat("k", n-utf8.RuneCountInString(prefix))
	} else {
		k = prefix + strings.Repeat("k", tracker.MaxKeyBytes-len(prefix))
	}
	it := create(t, h, k, tracker.Draft{Title: "Long key"})
	got, err := h.Driver.Find(ctxOf(t), k)
	if err != nil || got.Ref.ID != it.Ref.ID || got.Ref.Key != k {
		t.Fatalf("Find of a key of %d characters: %+v %v, want it read back as filed", utf8.RuneCountInString(k), got.Ref, err)
	}
}

func pagesCapped(t *testing.T, h Harness, key func(string) string) {
	c := h.Driver.Capabilities()
	create(t, h, key("a"), tracker.Draft{Title: "Paged"})
	seen := 0
	for page, pages := "", 0; ; pages++ {
		if pages > 10000 {
			t.Fatal("the walk never ends")
		}
		p, err := h.Driver.Items(ctxOf(t), tracker.Query{Page: page})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Items) > c.MaxPage {
			t.Fatalf("a page of %d items, over MaxPage %d", len(p.Items), c.MaxPage)
		}
		for _, it := range p.Items {
			if c.ValidID != nil && !c.ValidID(it.Ref.ID) {
				t.Fatalf("a listed item's id %q is refused by ValidID", it.Ref.ID)
			}
		}
		seen += len(p.Items)
		if p.Next == "" {
			break
		}
		if p.Next == page {
			t.Fatalf("page %q answers itself as the next", page)
		}
		page = p.Next
	}
	if seen == 0 {
		t.Fatal("the whole project's walk answered no item")
	}
}

func deletion(t *testing.T, h Harness, key func(string) string) {
	it := create(t, h, key("a"), tracker.Draft{Title: "Deleted"})
	if h.Deletion == nil {
		if err := h.Person.Delete(ctxOf(t), it.Ref.ID); err != nil {
			t.Fatal(err)
		}
	} else {
		header, body := h.Deletion(it.Ref.ID, "drivertest-secret")
		n, err := h.Driver.Nudge("drivertest-secret", header, body)
		if err != nil {
			t.Fatalf("Nudge of the deletion: %v", err)
		}
		if n.Project != h.Driver.Project() || len(n.Deleted) != 1 || n.Deleted[0] != it.Ref.ID {
			t.Fatalf("Nudge of the deletion: %+v, want project %s and item %s deleted", n, h.Driver.Project(), it.Ref.ID)
		}
	}
	if _, err := h.Driver.Item(ctxOf(t), it.Ref.ID); !errors.Is(err, tracker.ErrNotFound) {
		t.Fatalf("Item of a deleted item: %v, want ErrNotFound", err)
	}
	title := "after"
	if _, err := h.Driver.Update(ctxOf(t), it.Ref.ID, tracker.Patch{Title: &title}); !errors.Is(err, tracker.ErrNotFound) {
		t.Fatalf("Update of a deleted item: %v, want ErrNotFound", err)
	}
}

// projectComments: a driver that lists a project's comments in one read
// (Capabilities.ProjectComments) answers, from a time, every comment made since
// on the project's items, each naming its item, as each item's Comments
// answers them, and an item's CreatedAt, where it says one, is no later
// than its first comment. A driver that reads comments only item by item
// answers the portable tracker's ProjectComments "not so" at no cost.
func projectComments(t *testing.T, h Harness, key func(string) string) {
	ctx := ctxOf(t)
	pc, ok := h.Driver.(tracker.ProjectCommenter)
	if !ok || !h.Driver.Capabilities().ProjectComments {
		if _, ok, err := tracker.New(h.Driver).ProjectComments(ctx, time.Now(), 5); ok || err != nil {
			t.Fatalf("ProjectComments of a driver that reads comments item by item: ok %v, %v; want not so", ok, err)
		}
		return
	}
	a := create(t, h, key("a"), tracker.Draft{Title: "Commented by a person"})
	b := create(t, h, key("b"), tracker.Draft{Title: "Commented by relayr"})
	since := a.UpdatedAt.Add(-time.Second)
	if err := h.Person.Comment(ctx, a.Ref.ID, "a person's"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Driver.Comment(ctx, b.Ref.ID, key("b-comment"), "relayr's"); err != nil {
		t.Fatal(err)
	}
	cs, complete, err := pc.ProjectComments(ctx, since, 5)
	if err != nil || !complete {
		t.Fatalf("ProjectComments: complete %v, %v; want all of them", complete, err)
	}
	byItem := map[string][]tracker.Comment{}
	for _, c := range cs {
		if c.ID == "" || c.ItemID == "" {
			t.Fatalf("comment %+v names no id or no item", c)
		}
		byItem[c.ItemID] = append(byItem[c.ItemID], c)
	}
	for _, it := range []tracker.Item{a, b} {
		own, err := h.Driver.Comments(ctx, it.Ref.ID, since)
		if err != nil {
			t.Fatal(err)
		}
		got := byItem[it.Ref.ID]
		if len(own) != 1 || len(got) != len(own) || got[0].ID != own[0].ID || got[0].Body != own[0].Body || got[0].Key != own[0].Key || !got[0].CreatedAt.Equal(own[0].CreatedAt) {
			t.Fatalf("item %s: the project's comments answer %+v, its own %+v", it.Ref.ID, got, own)
		}
		if !it.CreatedAt.IsZero() && own[0].CreatedAt.Before(it.CreatedAt) {
			t.Fatalf("item %s made at %s, its comment at %s", it.Ref.ID, it.CreatedAt, own[0].CreatedAt)
		}
	}
}

// findKeys: a driver that finds several keys in one read
// (tracker.KeysFinder) answers, for each key filed since the time asked,
// the item Find answers, and none for a key never filed: complete, or
// stopped short with what it found right. A driver that finds one key at a
// time answers the portable tracker's FindKeys "look each up" at no cost.
func findKeys(t *testing.T, h Harness, key func(string) string) {
	ctx := ctxOf(t)
	tr := tracker.New(h.Driver)
	if _, ok := h.Driver.(tracker.KeysFinder); !ok {
		found, complete, err := tr.FindKeys(ctx, []string{key("a")}, time.Now())
		if len(found) != 0 || complete || err != nil {
			t.Fatalf("FindKeys of a driver that finds one key at a time: %v, complete %v, %v; want each looked up", found, complete, err)
		}
		return
	}
	a := create(t, h, key("a"), tracker.Draft{Title: "Found with others"})
	b := create(t, h, key("b"), tracker.Draft{Title: "Found with others too"})
	since := a.UpdatedAt.Add(-time.Minute)
	if !a.CreatedAt.IsZero() {
		since = a.CreatedAt.Add(-time.Minute)
	}
	keys := []string{key("a"), key("b"), key("never-filed")}
	found, complete, err := tr.FindKeys(ctx, keys, since)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range []tracker.Item{a, b} {
		got, ok := found[it.Ref.Key]
		if !ok && complete {
			t.Fatalf("%s was filed since %v and not found, the read complete", it.Ref.Key, since)
		}
		if ok && (got.Ref.ID != it.Ref.ID || got.Title != it.Title) {
			t.Fatalf("%s: found %+v, want %+v", it.Ref.Key, got.Ref, it.Ref)
		}
	}
	if _, ok := found[key("never-filed")]; ok {
		t.Fatal("a key never filed was found")
	}
}

// fetchItems: a driver that reads several items by id in one request
// (tracker.ItemsFetcher) answers each id Item answers, as Item answers it,
// and leaves out an id Item answers not found (a deleted item's, one never
// made). A driver that reads one at a time answers the portable
// tracker's FetchItems "read each" at no cost.
func fetchItems(t *testing.T, h Harness, key func(string) string) {
	ctx := ctxOf(t)
	tr := tracker.New(h.Driver)
	if _, ok := h.Driver.(tracker.ItemsFetcher); !ok {
		found, fetched, err := tr.FetchItems(ctx, []string{"1"})
		if len(found) != 0 || fetched || err != nil {
			t.Fatalf("FetchItems of a driver that reads one at a time: %v, fetched %v, %v; want each read", found, fetched, err)
		}
		return
	}
	a := create(t, h, key("a"), tracker.Draft{Title: "Fetched with others"})
	b := create(t, h, key("b"), tracker.Draft{Title: "Deleted before the fetch"})
	if err := h.Person.Delete(ctx, b.Ref.ID); err != nil {
		t.Fatal(err)
	}
	found, fetched, err := tr.FetchItems(ctx, []string{a.Ref.ID, b.Ref.ID})
	if err != nil || !fetched {
		t.Fatalf("FetchItems: %v, fetched %v", err, fetched)
	}
	want, err := h.Driver.Item(ctx, a.Ref.ID)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := found[a.Ref.ID]
	if !ok || got.Ref != want.Ref || got.Title != want.Title || got.State != want.State || !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Fatalf("fetched %+v, Item reads %+v", got, want)
	}
	if _, ok := found[b.Ref.ID]; ok {
		t.Fatal("a deleted item was fetched")
	}
}

// maxPagedComments bounds the comments projectCommentsPaged makes while it
// looks for more than one read's worth (GitHub's pages hold 100).
const maxPagedComments = 150

// projectCommentsPaged: a read of the project's comments allowed one
// request answers incomplete once the comments take more (never a part
// of them as if whole), and with reads enough it answers every one.
func projectCommentsPaged(t *testing.T, h Harness, key func(string) string) {
	ctx := ctxOf(t)
	pc, ok := h.Driver.(tracker.ProjectCommenter)
	if !ok || !h.Driver.Capabilities().ProjectComments {
		if _, ok, err := tracker.New(h.Driver).ProjectComments(ctx, time.Now(), 1); ok || err != nil {
			t.Fatalf("ProjectComments of a driver that reads comments item by item: ok %v, %v; want not so", ok, err)
		}
		return
	}
	it := create(t, h, key("a"), tracker.Draft{Title: "Commented at length"})
	since := it.UpdatedAt.Add(-time.Second)
	made := 0
	for ; made < maxPagedComments; made++ {
		if made > 0 && made%10 == 0 {
			if _, complete, err := pc.ProjectComments(ctx, since, 1); err != nil {
				t.Fatal(err)
			} else if !complete {
				break
			}
		}
		// A person's, so that no limit on what relayr creates (GitHub's 80
		// a minute) is met.
		if err := h.Person.Comment(ctx, it.Ref.ID, fmt.Sprintf("comment %d", made)); err != nil {
			t.Fatal(err)
		}
	}
	if made == maxPagedComments {
		t.Fatalf("%d comments still came whole in one read: no page holds that many", made)
	}
	cs, complete, err := pc.ProjectComments(ctx, since, maxPagedComments)
	if err != nil || !complete {
		t.Fatalf("ProjectComments with reads enough: complete %v, %v", complete, err)
	}
	got := 0
	for _, c := range cs {
		if c.ItemID == it.Ref.ID {
			got++
		}
	}
	if got != made {
		t.Fatalf("%d of the item's %d comments answered", got, made)
	}
}
