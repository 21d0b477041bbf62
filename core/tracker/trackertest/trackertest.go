// Package trackertest is the Tracker port's contract suite, run over the
// portable tracker.Tracker on each driver. Every adapter runs it, the fake
// first: a rule only one adapter's own tests check is not a rule of the
// port. drivertest holds what each driver promises the portable type.
//
//	func TestContract(t *testing.T) {
//		t.Run("Emulation", func(t *testing.T) {
//			trackertest.Run(t, func(t *testing.T) trackertest.Harness { … })
//		})
//	}
package trackertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
)

// Person acts in the tracker as a person would, outside relayr.
type Person interface {
	Retitle(ctx context.Context, id, title string) error
	Comment(ctx context.Context, id, body string) error
	Delete(ctx context.Context, id string) error
}

// Harness is what the suite needs of one tracker under test.
type Harness struct {
	Tracker *tracker.Tracker
	Person  Person
	// Wait lets the tracker's clock pass d: it steps an emulation's clock,
	// and sleeps against a live tracker.
	Wait func(d time.Duration)
	// Webhook returns a delivery the tracker sends about the item (a change
	// to it), signed with secret: its headers and raw body. Against a live
	// tracker it is a real delivery, received on a listener of the
	// harness's own.
	Webhook func(itemID, secret string) (http.Header, []byte)
	// Deletion deletes the item as a person would and returns the delivery
	// the tracker sends about that, signed with secret. Nil for a tracker
	// that sends no deletion webhook (Plane): its Nudge names no deleted
	// item.
	Deletion func(itemID, secret string) (http.Header, []byte)
	// UnsignedBodies: the tracker's deliveries carry the secret itself,
	// not a signature of their body (GitLab's X-Gitlab-Token without a
	// signing token), so a tampered body cannot be told from the one
	// sent: the webhook case checks the secret alone.
	UnsignedBodies bool
}

// Run runs every rule of the port against trackers newHarness makes, one
// per subtest. Keys are unique per run, so a live tracker's project can be
// shared between runs.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	t.Helper()
	runCases(t, newHarness, false)
}

// RunVirtual is Run with every case in a synctest bubble, harness made
// and all, for a tracker that holds no real socket (the fake): time is
// virtual, so Wait may be time.Sleep and passes at once.
func RunVirtual(t *testing.T, newHarness func(t *testing.T) Harness) {
	t.Helper()
	runCases(t, newHarness, true)
}

func runCases(t *testing.T, newHarness func(t *testing.T) Harness, virtual bool) {
	names := make([]string, len(cases))
	for i, c := range cases {
		names[i] = c.name
	}
	EachCase(t, "tt", names, virtual, func(t *testing.T, i int, key func(string) string) {
		cases[i].fn(t, newHarness(t), key)
	})
}

// EachCase runs check for each of a suite's cases, by name, each in a
// subtest of its own and, virtual, in a synctest bubble, with keys unique
// to the run and the case ("<prefix>-<run>/<name>/<suffix>"), so a live
// tracker's project can be shared between runs. trackertest and
// drivertest run their tables through it.
func EachCase(t *testing.T, prefix string, names []string, virtual bool, check func(t *testing.T, i int, key func(suffix string) string)) {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	run := hex.EncodeToString(b)
	for i, name := range names {
		t.Run(name, func(t *testing.T) {
			key := func(suffix string) string { return prefix + "-" + run + "/" + name + "/" + suffix }
			if virtual {
				synctest.Test(t, func(t *testing.T) { check(t, i, key) })
				return
			}
			check(t, i, key)
		})
	}
}

type keyFn = func(suffix string) string

var cases = []struct {
	name string
	fn   func(t *testing.T, h Harness, key keyFn)
}{
	{"CreateFilesAnItemFindAnswersByItsKey", createThenFind},
	{"FindAnswersNotFoundForAKeyNeverFiled", findUnknown},
	{"FindMatchesTheKeyExactlyNotAPrefixOrAPattern", findExact},
	{"ItemReadsBackWhatWasFiledAsTheTrackerHoldsIt", itemReadsBack},
	{"UpdateChangesOnlyTheFieldsItNames", updateOnlyNamed},
	{"UpdateOfStateReadsBackAsHolds", updateState},
	{"UpdateOfLabelsReplacesTheWholeSet", updateLabels},
	{"CommentsReadBackRelayrsKeyAndNoKeyOnAPersonsComment", commentsKeys},
	{"CommentsSinceLeavesOutOlderComments", commentsSince},
	{"CommentsAnItemIsListedWithAreAllOfItsComments", inlineComments},
	{"ItemsSinceAnswersEveryItemChangedSinceInOrder", itemsSince},
	{"ItemsWithoutSinceAnswersTheWholeProject", itemsAll},
	{"ADeletedItemIsGoneFromEveryRead", deletedGone},
	{"HoldsAnswersAStateThatHoldsItself", holdsStable},
	{"LinkAndNameAreGivenWithoutARequest", linkAndName},
	{"NudgeVerifiesTheSignatureAndNamesTheProject", nudge},
	{"NudgeOfADeletionNamesTheDeletedItem", nudgeDeletion},
	{"ABlankTitleIsRefused", blankTitle},
	{"AKeyTheTrackerWouldTrimIsInvalidAndFilesNothing", trimmedKey},
	{"ACancelledContextFailsEveryCallAndFilesNothing", cancelled},
	{"ConcurrentCreatesOfDistinctKeysAllLand", concurrentCreates},
	{"ASecondCreateUnderAKeyLeavesFindAnsweringTheFirst", guardedKeys},
	{"ADescriptionReadsBackAsTheTrackerSaysItHoldsIt", heldDescription},
}

func ctxOf(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func mustCreate(t *testing.T, h Harness, key string, d tracker.Draft) tracker.Item {
	t.Helper()
	it, err := h.Tracker.Create(ctxOf(t), key, d)
	if err != nil {
		t.Fatalf("Create(%q): %v", key, err)
	}
	if it.Ref.ID == "" {
		t.Fatalf("Create(%q) answered an item without an id", key)
	}
	return it
}

func createThenFind(t *testing.T, h Harness, key keyFn) {
	k := key("a")
	made := mustCreate(t, h, k, tracker.Draft{Title: "Filed once", Description: "Body"})
	if made.Ref.Key != k {
		t.Errorf("created ref key %q, want %q", made.Ref.Key, k)
	}
	got, err := h.Tracker.Find(ctxOf(t), k)
	if err != nil {
		t.Fatalf("Find: %v", err)
	}
	if got.Ref.ID != made.Ref.ID {
		t.Fatalf("Find answered %s, created %s", got.Ref.ID, made.Ref.ID)
	}
	if got.Ref.Key != k {
		t.Errorf("found ref key %q, want %q", got.Ref.Key, k)
	}
	if got.Title != "Filed once" {
		t.Errorf("found title %q", got.Title)
	}
}

func findUnknown(t *testing.T, h Harness, key keyFn) {
	_, err := h.Tracker.Find(ctxOf(t), key("never"))
	if !errors.Is(err, tracker.ErrNotFound) {
		t.Fatalf("Find of an unknown key: %v, want ErrNotFound", err)
	}
}

func findExact(t *testing.T, h Harness, key keyFn) {
	k1 := key("k1")
	k10 := mustCreate(t, h, key("k10"), tracker.Draft{Title: "ten"})
	if _, err := h.Tracker.Find(ctxOf(t), k1); !errors.Is(err, tracker.ErrNotFound) {
		t.Fatalf("Find(k1) with only k10 filed: %v, want ErrNotFound", err)
	}
	one := mustCreate(t, h, k1, tracker.Draft{Title: "one"})
	for _, c := range []struct{ k, want string }{{k1, one.Ref.ID}, {key("k10"), k10.Ref.ID}} {
		got, err := h.Tracker.Find(ctxOf(t), c.k)
		if err != nil {
			t.Fatalf("Find(%q): %v", c.k, err)
		}
		if got.Ref.ID != c.want {
			t.Fatalf("Find(%q) answered %s, want %s", c.k, got.Ref.ID, c.want)
		}
	}
	for _, pattern := range []string{key("k_"), key("k%"), key("k")} {
		if _, err := h.Tracker.Find(ctxOf(t), pattern); !errors.Is(err, tracker.ErrNotFound) {
			t.Fatalf("Find(%q) matched a pattern: %v", pattern, err)
		}
	}
}

func itemReadsBack(t *testing.T, h Harness, key keyFn) {
	d := tracker.Draft{Title: "Read me back", Description: "A body", State: tracker.Started, Labels: []string{"relayr-a", "relayr-b"}}
	made := mustCreate(t, h, key("a"), d)
	got, err := h.Tracker.Item(ctxOf(t), made.Ref.ID)
	if err != nil {
		t.Fatalf("Item: %v", err)
	}
	if got.Title != d.Title {
		t.Errorf("title %q, want %q", got.Title, d.Title)
	}
	if !strings.Contains(got.Description, "A body") {
		t.Errorf("description %q lost the body", got.Description)
	}
	if want := h.Tracker.Holds(d.State); got.State != want {
		t.Errorf("state %q, want %q (Holds(%q))", got.State, want, d.State)
	}
	if !tracker.SameLabels(got.Labels, d.Labels) {
		t.Errorf("labels %v, want %v", got.Labels, d.Labels)
	}
	if got.UpdatedAt.IsZero() {
		t.Error("updated_at is zero")
	}
	if got.Ref.Key != key("a") {
		t.Errorf("ref key %q", got.Ref.Key)
	}
}

func updateOnlyNamed(t *testing.T, h Harness, key keyFn) {
	d := tracker.Draft{Title: "Before", Description: "Keep me", State: tracker.Done, Labels: []string{"relayr-keep"}}
	made := mustCreate(t, h, key("a"), d)
	title := "After"
	if _, err := h.Tracker.Update(ctxOf(t), made.Ref.ID, tracker.Patch{Title: &title}); err != nil {
		t.Fatalf("Update: %v", err)
	}
	got, err := h.Tracker.Item(ctxOf(t), made.Ref.ID)
	if err != nil {
		t.Fatalf("Item: %v", err)
	}
	if got.Title != "After" {
		t.Errorf("title %q, want After", got.Title)
	}
	if !strings.Contains(got.Description, "Keep me") {
		t.Errorf("description blanked: %q", got.Description)
	}
	if want := h.Tracker.Holds(tracker.Done); got.State != want {
		t.Errorf("state %q, want %q", got.State, want)
	}
	if !tracker.SameLabels(got.Labels, d.Labels) {
		t.Errorf("labels %v, want %v", got.Labels, d.Labels)
	}
	if f, err := h.Tracker.Find(ctxOf(t), key("a")); err != nil || f.Ref.ID != made.Ref.ID {
		t.Errorf("the key no longer finds the item after an update: %v", err)
	}
}

func updateState(t *testing.T, h Harness, key keyFn) {
	made := mustCreate(t, h, key("a"), tracker.Draft{Title: "States"})
	for _, s := range tracker.States {
		if _, err := h.Tracker.Update(ctxOf(t), made.Ref.ID, tracker.Patch{State: &s}); err != nil {
			t.Fatalf("Update state %s: %v", s, err)
		}
		got, err := h.Tracker.Item(ctxOf(t), made.Ref.ID)
		if err != nil {
			t.Fatalf("Item: %v", err)
		}
		if want := h.Tracker.Holds(s); got.State != want {
			t.Errorf("set %s, reads back %s, Holds says %s", s, got.State, want)
		}
	}
}

func updateLabels(t *testing.T, h Harness, key keyFn) {
	made := mustCreate(t, h, key("a"), tracker.Draft{Title: "Labels", Labels: []string{"relayr-x", "relayr-y"}})
	labels := []string{"relayr-y", "relayr-z"}
	if _, err := h.Tracker.Update(ctxOf(t), made.Ref.ID, tracker.Patch{Labels: &labels}); err != nil {
		t.Fatalf("Update labels: %v", err)
	}
	got, err := h.Tracker.Item(ctxOf(t), made.Ref.ID)
	if err != nil {
		t.Fatalf("Item: %v", err)
	}
	if !tracker.SameLabels(got.Labels, labels) {
		t.Errorf("labels %v, want %v", got.Labels, labels)
	}
}

func commentsKeys(t *testing.T, h Harness, key keyFn) {
	made := mustCreate(t, h, key("a"), tracker.Draft{Title: "Comments"})
	ck := key("comment-1")
	c, err := h.Tracker.Comment(ctxOf(t), made.Ref.ID, ck, "relayr says hi")
	if err != nil {
		t.Fatalf("Comment: %v", err)
	}
	if c.ID == "" {
		t.Fatal("Comment answered no id")
	}
	h.Wait(time.Second)
	if err := h.Person.Comment(ctxOf(t), made.Ref.ID, "a person says hi"); err != nil {
		t.Fatalf("person comment: %v", err)
	}
	got, err := h.Tracker.Comments(ctxOf(t), made.Ref.ID, time.Time{})
	if err != nil {
		t.Fatalf("Comments: %v", err)
	}
	var mine, theirs int
	for _, x := range got {
		switch {
		case x.ID == c.ID:
			mine++
			if x.Key != ck {
				t.Errorf("relayr's comment reads back key %q, want %q", x.Key, ck)
			}
			if !strings.Contains(x.Body, "relayr says hi") {
				t.Errorf("relayr's comment body %q", x.Body)
			}
		case strings.Contains(x.Body, "a person says hi"):
			theirs++
			if x.Key != "" {
				t.Errorf("a person's comment reads back key %q", x.Key)
			}
		}
	}
	if mine != 1 || theirs != 1 {
		t.Fatalf("comments %+v: want relayr's and the person's once each", got)
	}
	for i := 1; i < len(got); i++ {
		if got[i].CreatedAt.Before(got[i-1].CreatedAt) {
			t.Error("comments are not oldest first")
		}
	}
}

func commentsSince(t *testing.T, h Harness, key keyFn) {
	made := mustCreate(t, h, key("a"), tracker.Draft{Title: "Comments since"})
	if err := h.Person.Comment(ctxOf(t), made.Ref.ID, "old comment"); err != nil {
		t.Fatal(err)
	}
	all, err := h.Tracker.Comments(ctxOf(t), made.Ref.ID, time.Time{})
	if err != nil || len(all) != 1 {
		t.Fatalf("Comments: %v %v", all, err)
	}
	h.Wait(2 * time.Second)
	if err := h.Person.Comment(ctxOf(t), made.Ref.ID, "new comment"); err != nil {
		t.Fatal(err)
	}
	got, err := h.Tracker.Comments(ctxOf(t), made.Ref.ID, all[0].CreatedAt.Add(time.Second))
	if err != nil {
		t.Fatalf("Comments since: %v", err)
	}
	if len(got) != 1 || !strings.Contains(got[0].Body, "new comment") {
		t.Fatalf("comments since %s: %+v, want only the new one", all[0].CreatedAt, got)
	}
}

// collect walks every page of an Items query.
func collect(t *testing.T, tr *tracker.Tracker, since time.Time) []tracker.Item {
	t.Helper()
	var out []tracker.Item
	q := tracker.Query{Since: since}
	for pages := 0; ; pages++ {
		if pages > 10000 {
			t.Fatal("Items never answered a last page")
		}
		p, err := tr.Items(ctxOf(t), q)
		if err != nil {
			t.Fatalf("Items: %v", err)
		}
		out = append(out, p.Items...)
		if p.Next == "" {
			return out
		}
		q.Page = p.Next
	}
}

func itemsSince(t *testing.T, h Harness, key keyFn) {
	a := mustCreate(t, h, key("a"), tracker.Draft{Title: "A"})
	b := mustCreate(t, h, key("b"), tracker.Draft{Title: "B"})
	h.Wait(3 * time.Second)
	var mark time.Time
	for _, it := range collect(t, h.Tracker, time.Time{}) {
		if it.UpdatedAt.After(mark) {
			mark = it.UpdatedAt
		}
	}
	h.Wait(2 * time.Second)
	if err := h.Person.Retitle(ctxOf(t), a.Ref.ID, "A, renamed by a person"); err != nil {
		t.Fatal(err)
	}
	since := mark.Add(time.Second)
	got := collect(t, h.Tracker, since)
	var found bool
	for i, it := range got {
		if i > 0 && tracker.Of(it).Before(tracker.Of(got[i-1])) {
			t.Fatalf("items out of (updated_at, id) order at %d: %+v after %+v", i, tracker.Of(it), tracker.Of(got[i-1]))
		}
		if it.Ref.ID == a.Ref.ID {
			found = true
			if it.Title != "A, renamed by a person" {
				t.Errorf("changed item reads title %q", it.Title)
			}
			if it.Ref.Key != key("a") {
				t.Errorf("changed item reads key %q", it.Ref.Key)
			}
		}
	}
	if !found {
		t.Fatalf("Items since %s missed the changed item; answered %d items", since, len(got))
	}
	if it, err := h.Tracker.Item(ctxOf(t), b.Ref.ID); err != nil || !it.UpdatedAt.Before(since) {
		t.Fatalf("B was not changed, yet reads updated at %s (%v)", it.UpdatedAt, err)
	}
}

func itemsAll(t *testing.T, h Harness, key keyFn) {
	want := map[string]bool{}
	for _, s := range []string{"a", "b", "c"} {
		want[mustCreate(t, h, key(s), tracker.Draft{Title: s}).Ref.ID] = true
	}
	seen := map[string]int{}
	for _, it := range collect(t, h.Tracker, time.Time{}) {
		seen[it.Ref.ID]++
	}
	for id := range want {
		if seen[id] != 1 {
			t.Errorf("item %s listed %d times, want once", id, seen[id])
		}
	}
}

func deletedGone(t *testing.T, h Harness, key keyFn) {
	made := mustCreate(t, h, key("a"), tracker.Draft{Title: "Doomed"})
	if err := h.Person.Delete(ctxOf(t), made.Ref.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Tracker.Item(ctxOf(t), made.Ref.ID); !errors.Is(err, tracker.ErrNotFound) {
		t.Errorf("Item of a deleted item: %v, want ErrNotFound", err)
	}
	if _, err := h.Tracker.Find(ctxOf(t), key("a")); !errors.Is(err, tracker.ErrNotFound) {
		t.Errorf("Find of a deleted item's key: %v, want ErrNotFound", err)
	}
	title := "Too late"
	if _, err := h.Tracker.Update(ctxOf(t), made.Ref.ID, tracker.Patch{Title: &title}); !errors.Is(err, tracker.ErrNotFound) {
		t.Errorf("Update of a deleted item: %v, want ErrNotFound", err)
	}
	for _, it := range collect(t, h.Tracker, time.Time{}) {
		if it.Ref.ID == made.Ref.ID {
			t.Error("a deleted item is still listed")
		}
	}
}

func holdsStable(t *testing.T, h Harness, _ keyFn) {
	for _, s := range tracker.States {
		held := h.Tracker.Holds(s)
		if !held.Valid() {
			t.Errorf("Holds(%s) = %q, not a state", s, held)
		}
		if again := h.Tracker.Holds(held); again != held {
			t.Errorf("Holds(%s) = %s but Holds(%s) = %s", s, held, held, again)
		}
	}
	if h.Tracker.Holds(tracker.Done) == h.Tracker.Holds(tracker.Todo) {
		t.Error("Holds folds done and todo together: nothing could be read back")
	}
}

func linkAndName(t *testing.T, h Harness, key keyFn) {
	made := mustCreate(t, h, key("a"), tracker.Draft{Title: "Named"})
	if made.Ref.Name == "" || made.Ref.Number == 0 {
		t.Errorf("ref %+v lacks a name or number", made.Ref)
	}
	if made.Ref.Link == "" || h.Tracker.Link(made.Ref) != made.Ref.Link {
		t.Errorf("link %q, Link answers %q", made.Ref.Link, h.Tracker.Link(made.Ref))
	}
	got, err := h.Tracker.Item(ctxOf(t), made.Ref.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Ref.Name != made.Ref.Name || got.Ref.Number != made.Ref.Number {
		t.Errorf("read back ref %+v, created %+v", got.Ref, made.Ref)
	}
}

func nudge(t *testing.T, h Harness, key keyFn) {
	if h.Webhook == nil {
		t.Skip("this harness makes no webhook deliveries (a live tracker's are not ours to send)")
	}
	made := mustCreate(t, h, key("a"), tracker.Draft{Title: "Nudged"})
	header, body := h.Webhook(made.Ref.ID, "s3cret")
	n, err := h.Tracker.Nudge("s3cret", header, body)
	if err != nil {
		t.Fatalf("Nudge: %v", err)
	}
	if n.Project != h.Tracker.Project() {
		t.Errorf("Nudge named project %q, want %q", n.Project, h.Tracker.Project())
	}
	if len(n.Deleted) != 0 {
		t.Errorf("a delivery about a live item names %v deleted", n.Deleted)
	}
	if _, err := h.Tracker.Nudge("other", header, body); !errors.Is(err, tracker.ErrUnauthorized) {
		t.Errorf("Nudge with the wrong secret: %v, want ErrUnauthorized", err)
	}
	tampered := append(slices.Clone(body), ' ')
	if _, err := h.Tracker.Nudge("s3cret", header, tampered); !h.UnsignedBodies && !errors.Is(err, tracker.ErrUnauthorized) {
		t.Errorf("Nudge of a tampered body: %v, want ErrUnauthorized", err)
	}
	if _, err := h.Tracker.Nudge("s3cret", http.Header{}, body); !errors.Is(err, tracker.ErrUnauthorized) {
		t.Errorf("Nudge without a signature: %v, want ErrUnauthorized", err)
	}
}

// nudgeDeletion: a tracker that reports deletions names the deleted item in
// its delivery's Nudged.Deleted, and the item then reads as ErrNotFound, so
// a follower can check it with one read and publish its removal at once.
func nudgeDeletion(t *testing.T, h Harness, key keyFn) {
	if h.Deletion == nil {
		t.Skip("this tracker sends no deletion webhook: its deletions are found by the sweep")
	}
	made := mustCreate(t, h, key("a"), tracker.Draft{Title: "Deleted by a person"})
	other := mustCreate(t, h, key("b"), tracker.Draft{Title: "Left alone"})
	header, body := h.Deletion(made.Ref.ID, "s3cret")
	n, err := h.Tracker.Nudge("s3cret", header, body)
	if err != nil {
		t.Fatalf("Nudge of a deletion: %v", err)
	}
	if n.Project != h.Tracker.Project() {
		t.Errorf("Nudge named project %q, want %q", n.Project, h.Tracker.Project())
	}
	if !slices.Equal(n.Deleted, []string{made.Ref.ID}) {
		t.Errorf("Nudge named %v deleted, want [%s]", n.Deleted, made.Ref.ID)
	}
	if _, err := h.Tracker.Item(ctxOf(t), made.Ref.ID); !errors.Is(err, tracker.ErrNotFound) {
		t.Errorf("Item of the deleted item: %v, want ErrNotFound", err)
	}
	if _, err := h.Tracker.Item(ctxOf(t), other.Ref.ID); err != nil {
		t.Errorf("Item of an item the delivery doesn't name: %v", err)
	}
	if _, err := h.Tracker.Nudge("other", header, body); !errors.Is(err, tracker.ErrUnauthorized) {
		t.Errorf("Nudge of a deletion with the wrong secret: %v, want ErrUnauthorized", err)
	}
}

func blankTitle(t *testing.T, h Harness, key keyFn) {
	_, err := h.Tracker.Create(ctxOf(t), key("a"), tracker.Draft{Title: ""})
	if !errors.Is(err, tracker.ErrRefused) && !errors.Is(err, tracker.ErrInvalid) {
		t.Fatalf("Create with a blank title: %v, want ErrRefused or ErrInvalid", err)
	}
	if _, err := h.Tracker.Find(ctxOf(t), key("a")); !errors.Is(err, tracker.ErrNotFound) {
		t.Fatalf("a refused create filed something: %v", err)
	}
}

// trimmedKey: both trackers trim a key at its ends, so such a key would
// read back as another and never be found again (tracker.ValidateKeyKept);
// it is refused as the caller's, before anything is filed.
func trimmedKey(t *testing.T, h Harness, key keyFn) {
	made := mustCreate(t, h, key("a"), tracker.Draft{Title: "Live"})
	for _, k := range []string{key("b") + " ", " " + key("b")} {
		if _, err := h.Tracker.Create(ctxOf(t), k, tracker.Draft{Title: "never"}); !errors.Is(err, tracker.ErrInvalid) {
			t.Fatalf("Create under %q: %v, want ErrInvalid", k, err)
		}
		if _, err := h.Tracker.Find(ctxOf(t), k); !errors.Is(err, tracker.ErrInvalid) {
			t.Fatalf("Find of %q: %v, want ErrInvalid", k, err)
		}
		if _, err := h.Tracker.Comment(ctxOf(t), made.Ref.ID, k, "never"); !errors.Is(err, tracker.ErrInvalid) {
			t.Fatalf("Comment under %q: %v, want ErrInvalid", k, err)
		}
	}
	if _, err := h.Tracker.Find(ctxOf(t), key("b")); !errors.Is(err, tracker.ErrNotFound) {
		t.Fatalf("a refused create filed something: %v", err)
	}
}

func cancelled(t *testing.T, h Harness, key keyFn) {
	made := mustCreate(t, h, key("a"), tracker.Draft{Title: "Live"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	title := "never"
	calls := map[string]func() error{
		"Find":     func() error { _, err := h.Tracker.Find(ctx, key("a")); return err },
		"Create":   func() error { _, err := h.Tracker.Create(ctx, key("b"), tracker.Draft{Title: "never"}); return err },
		"Item":     func() error { _, err := h.Tracker.Item(ctx, made.Ref.ID); return err },
		"Update":   func() error { _, err := h.Tracker.Update(ctx, made.Ref.ID, tracker.Patch{Title: &title}); return err },
		"Comment":  func() error { _, err := h.Tracker.Comment(ctx, made.Ref.ID, key("c"), "never"); return err },
		"Items":    func() error { _, err := h.Tracker.Items(ctx, tracker.Query{}); return err },
		"Comments": func() error { _, err := h.Tracker.Comments(ctx, made.Ref.ID, time.Time{}); return err },
	}
	for name, call := range calls {
		err := call()
		if err == nil {
			t.Errorf("%s with a cancelled context succeeded", name)
			continue
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: %v, want it to wrap context.Canceled", name, err)
		}
	}
	if _, err := h.Tracker.Find(ctxOf(t), key("b")); !errors.Is(err, tracker.ErrNotFound) {
		t.Errorf("a cancelled create filed an item: %v", err)
	}
	got, err := h.Tracker.Item(ctxOf(t), made.Ref.ID)
	if err != nil || got.Title != "Live" {
		t.Errorf("a cancelled update changed the item: %q %v", got.Title, err)
	}
}

func concurrentCreates(t *testing.T, h Harness, key keyFn) {
	const n = 8
	var wg sync.WaitGroup
	ids := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			it, err := h.Tracker.Create(ctxOf(t), key(string(rune('a'+i))), tracker.Draft{Title: "concurrent"})
			ids[i], errs[i] = it.Ref.ID, err
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("create %d: %v", i, errs[i])
		}
		if seen[ids[i]] {
			t.Fatalf("two creates answered the same id %s", ids[i])
		}
		seen[ids[i]] = true
		got, err := h.Tracker.Find(ctxOf(t), key(string(rune('a'+i))))
		if err != nil || got.Ref.ID != ids[i] {
			t.Fatalf("Find of concurrent key %d: %v (got %s want %s)", i, err, got.Ref.ID, ids[i])
		}
	}
}

// guardedKeys: a tracker that enforces keys (Capabilities.KeysEnforced)
// answers a second create under a key with *tracker.ExistsError naming the
// first item, and files nothing; the write path skips its lookup on that
// word. One that doesn't (Vikunja) files the second item, which only the
// ledger's claim prevents, and Find still answers the first: the lookup of
// a retaken claim finds the item its predecessor filed.
func guardedKeys(t *testing.T, h Harness, key keyFn) {
	first := mustCreate(t, h, key("a"), tracker.Draft{Title: "first"})
	h.Wait(time.Second)
	second, err := h.Tracker.Create(ctxOf(t), key("a"), tracker.Draft{Title: "second"})
	if h.Tracker.Capabilities().KeysEnforced {
		var ex *tracker.ExistsError
		if !errors.As(err, &ex) || ex.ID != first.Ref.ID {
			t.Fatalf("a second create: %v, want *tracker.ExistsError naming %s", err, first.Ref.ID)
		}
	} else if err != nil || second.Ref.ID == first.Ref.ID {
		t.Fatalf("a second create on a tracker that doesn't guard keys: %+v %v, want a second item", second.Ref, err)
	}
	got, err := h.Tracker.Find(ctxOf(t), key("a"))
	if err != nil || got.Ref.ID != first.Ref.ID || got.Title != "first" {
		t.Fatalf("after the second create the key finds %+v (%v), want the first item", got.Ref, err)
	}
}

// heldDescription: relayr records a description as the tracker will hold it
// (as filed) and, once a write is answered, as the answer says it holds it;
// the follower compares what it reads back with those records, as the
// tracker says (Tracker.SameDescription). The answer
// of a create or an edit is what later reads answer, the prediction is the
// same as it by the tracker's comparison, and a different text is not: or
// relayr's own descriptions come back as people's changes.
func heldDescription(t *testing.T, h Harness, key keyFn) {
	for i, d := range []string{"A plain line", "<p>Some <b>HTML</b></p>", "Two\nlines", `See <a href="https://example.com/x">the log</a>`} {
		want := d
		made := mustCreate(t, h, key(string(rune('a'+i))), tracker.Draft{Title: "described", Description: d})
		got, err := h.Tracker.Item(ctxOf(t), made.Ref.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Description != made.Description {
			t.Errorf("filed %q: Create answered %q, Item reads %q", d, made.Description, got.Description)
		}
		if !h.Tracker.SameDescription(want, got.Description) {
			t.Errorf("filed %q, reads back %q, which the tracker says is not the %q it holds it as", d, got.Description, want)
		}
		if h.Tracker.SameDescription("Another text altogether", got.Description) {
			t.Errorf("filed %q, reads back %q, which the tracker says is the same as another text", d, got.Description)
		}
		edited := d + " (edited)"
		up, err := h.Tracker.Update(ctxOf(t), made.Ref.ID, tracker.Patch{Description: &edited})
		if err != nil {
			t.Fatal(err)
		}
		again, err := h.Tracker.Item(ctxOf(t), made.Ref.ID)
		if err != nil {
			t.Fatal(err)
		}
		if up.Description != again.Description || !h.Tracker.SameDescription(edited, again.Description) {
			t.Errorf("edited to %q: Update answered %q, Item reads %q", edited, up.Description, again.Description)
		}
		if h.Tracker.SameDescription(want, again.Description) {
			t.Errorf("edited to %q, reads back %q, which the tracker says is still the %q filed", edited, again.Description, want)
		}
	}
}

// inlineComments: a tracker that answers an item's comments with it in
// Items (tracker.Item.Comments) answers all of them, as Comments does from
// the beginning; the followers then ask for none. A tracker that doesn't
// answers nil, which this checks nothing of.
func inlineComments(t *testing.T, h Harness, key keyFn) {
	made := mustCreate(t, h, key("a"), tracker.Draft{Title: "Listed with its comments"})
	ck := key("comment-1")
	if _, err := h.Tracker.Comment(ctxOf(t), made.Ref.ID, ck, "relayr says hi"); err != nil {
		t.Fatalf("Comment: %v", err)
	}
	h.Wait(time.Second)
	if err := h.Person.Comment(ctxOf(t), made.Ref.ID, "a person says hi"); err != nil {
		t.Fatalf("person comment: %v", err)
	}
	h.Wait(time.Second)
	asked, err := h.Tracker.Comments(ctxOf(t), made.Ref.ID, time.Time{})
	if err != nil {
		t.Fatalf("Comments: %v", err)
	}
	for page := ""; ; {
		pg, err := h.Tracker.Items(ctxOf(t), tracker.Query{Page: page})
		if err != nil {
			t.Fatalf("Items: %v", err)
		}
		for _, it := range pg.Items {
			if it.Ref.ID != made.Ref.ID || it.Comments == nil {
				continue
			}
			if len(it.Comments) != len(asked) {
				t.Fatalf("listed with %d comments, Comments answers %d", len(it.Comments), len(asked))
			}
			for i := range asked {
				a, b := asked[i], it.Comments[i]
				if a.ID != b.ID || a.Key != b.Key || a.Body != b.Body || !a.CreatedAt.Equal(b.CreatedAt) {
					t.Fatalf("listed comment %d is %+v, Comments answers %+v", i, b, a)
				}
			}
		}
		if page = pg.Next; page == "" {
			return
		}
	}
}
