package follow_test

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/core/coretest"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/faketracker"
	"github.com/relayr-go/relayr/core/follow"
	"github.com/relayr-go/relayr/core/integrations"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/metrics"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
)

var ctx = context.Background()

// scope is the env's bound project, as ids name it.
var scope = follow.Scope{Tenant: tenant, Workspace: workspace, Project: "proj", Tracker: "fake"}

func TestTrackerFollower(t *testing.T) {
	for _, c := range followerCases {
		t.Run(c.name, func(t *testing.T) { bubble(t, c.run) })
	}
}

// TestTrackerFollowerReadingProjectComments runs every case again over a
// fake that lists the project's comments in one read, as Gitea's and
// GitHub's repository-wide lists do: a poll reads its items' comments with
// it, and publishes what it publishes item by item.
func TestTrackerFollowerReadingProjectComments(t *testing.T) {
	fakeOptions = []faketracker.Option{faketracker.WithProjectComments()}
	t.Cleanup(func() { fakeOptions = nil })
	for _, c := range followerCases {
		t.Run(c.name, func(t *testing.T) { bubble(t, c.run) })
	}
}

var followerCases = []struct {
	name string
	run  func(t *testing.T)
}{
	{"SeedsANewBindingSilently", seedsSilently},
	{"SincePublishesItemsChangedSinceAsCreated", sincePublishesCreated},
	{"PublishesOneEventPerChangedField", oneEventPerField},
	{"PublishesEachNewCommentOnce", commentsOnce},
	{"EchoIsDroppedAndConsumed", echoDroppedAndConsumed},
	{"APersonsValueReadBackSupersedesRelayrsOverwrittenValue", personOverwritesBeforeARead},
	{"FirstReadConsumesEchoes", firstReadConsumesEchoes},
	{"AnEditReadBackWhileTheNextIsOnItsWayIsAnEcho", echoWhileNextEditOnItsWay},
	{"ADescriptionTheTrackerRewroteIsAnEchoByItsAnswer", rewrittenDescriptionEcho},
	{"ADescriptionWhoseAnswerNeverCameIsAnEchoByTheTrackersComparison", unansweredDescriptionEcho},
	{"ClaimedKeysItemIsNotPublishedAsCreated", claimedNotCreated},
	{"RelayrsCommentsAreNeverPublished", relayrCommentsNeverPublished},
	{"PersonsChangeJoinsTheRunsChain", joinsTheRunsChain},
	{"APersonsChangeBeforeTheFirstReadOfAFiledItemIsPublished", changeBeforeFirstRead},
	{"AFiledItemReadBeforeItsRecordPublishesNoChange", readBeforeTheRecord},
	{"APersonsChangeReadBeforeTheRecordIsPublishedOnceItIsRecorded", changeBeforeTheRecord},
	{"AnItemLeftForTheNextPollHoldsTheCursorSoNoChangeWaitsForTheSweep", deferredHoldsTheCursor},
	{"APersonWhoOverwritesAFiledValueAndSetsItAgainIsHeardBothTimes", filedValueSetAgain},
	{"AKeyNoStoreTakesIsNoKeyAndHoldsUpNoRead", keyNoStoreTakes},
	{"AnItemCarryingAnotherItemsKeyIsAPersons", anotherItemsKey},
	{"ActorIsUnknownWhenRelayrsValueIsAmongTheChanges", actorUnknownWithEcho},
	{"PageReadAgainPublishesNothingNew", pageReadAgain},
	{"LostSnapshotReadsAsNewOnce", lostSnapshotReadsAsNewOnce},
	{"AChangeReadAgainAfterTheItemMovedIsNotPublishedTwice", changeReadAgainAfterMove},
	{"DailySweepTellsDeletedFromArchived/LikePlane", func(t *testing.T) { sweepRemoved(t, faketracker.LikePlane, false) }},
	{"DailySweepTellsDeletedFromArchived/LikeVikunja", func(t *testing.T) { sweepRemoved(t, faketracker.LikeVikunja, false) }},
	{"DailySweepTellsDeletedFromArchived/LikePlane/ReadByIDsTogether", func(t *testing.T) { sweepRemoved(t, faketracker.LikePlane, true) }},
	{"DailySweepTellsDeletedFromArchived/LikeVikunja/ReadByIDsTogether", func(t *testing.T) { sweepRemoved(t, faketracker.LikeVikunja, true) }},
	{"AnItemListedAgainAfterItsRemovalIsCreatedAgain/LikePlane", func(t *testing.T) { listedAgain(t, faketracker.LikePlane) }},
	{"AnItemListedAgainAfterItsRemovalIsCreatedAgain/LikeVikunja", func(t *testing.T) { listedAgain(t, faketracker.LikeVikunja) }},
	{"AnIdleBudgetSweepsEveryMinuteSoADeletionIsFoundWithinTwo", idleSweeps},
	{"ABusyBudgetSweepsOnlyWhenTheDayIsUp", busySweeps},
	{"VikunjaStatesAreComparedAsVikunjaHoldsThem", vikunjaStates},
	{"ACommentInTheSameSecondAsTheLastChangeIsRead", sameSecondComment},
	{"AnOlderVersionReadLateIsNotADiff", olderVersionReadLate},
	{"PollsEvery30sFromTwoMinutesBeforeItsCursor", pollsFromLookback},
	{"OneProcessAtATimeHoldsTheLease", oneHolder},
	{"LostLeaseStopsTheReading", lostLeaseStopsReading},
	{"ARenewalThatHangsLosesTheLeaseWhenItLapses", hungRenewalLosesTheLease},
	{"StopGivesTheLeaseUpAtOnce", stopReleasesLease},
	{"ANudgeAfterAQuietSpellReadsAtOnceAndTheBurstAfterItIsGathered", nudgesDebounced},
	{"UnnudgedCountsChangesNoNudgeAnnounced", unnudgedCounted},
	{"SwitchedOffIsNothing", switchedOffIsNothing},
	{"RateLimitIsWaitedOutWithJitter", rateLimitWaitedOut},
	{"ANudgedPollGoesWhateverWritesSpendAndIsTheIntervals", nudgeGoesWhateverWritesSpend},
	{"AFirstReadsFurtherPagesTakeOnlyWhatIsLeft", spareRunsOutAtAnItem},
	{"ProjectionMapsToTheApplicationsEvent", projectionMaps},
	{"ProjectionErrorDeadLettersOncePerID", projectionErrorDeadLetters},
	{"ProjectionsReservedEventDeadLetters", projectionReservedDeadLetters},
	{"RefusedPublishStopsTheFollowerUntilOpened", refusedPublishStops},
	{"AStoppedFollowerIsOpenedAgainAfterReopenAfter", reopenedAfter},
	{"WakeLeavesTheSwitchToItsCaller", wakeAsksNoSwitch},
	{"CredentialsAreTheOnesLastAskedFor", credentialsLastAskedFor},
	{"IDsAreDerivedAsADR0036Says", idsDerived},
	{"PollOnceReadsNowAndGivesTheLeaseUp", pollOnce},
	{"TheLogSaysWhenAFollowerIsLateAndWhenItPollsAgain", logsLateAndRecovered},
}

func seedsSilently(t *testing.T) {
	e := newEnv(t)
	a := e.person("A")
	if err := e.fake.PersonComment(ctx, a.Ref.ID, "before relayr"); err != nil {
		t.Fatal(err)
	}
	e.ensure("k1", tracker.Draft{Title: "Filed"})
	e.after(time.Minute)
	e.start()
	e.wantEvents(0)
	if c := e.cursor(); !c.Seeded || c.SweptAt.IsZero() {
		t.Fatalf("cursor %+v after the first read, want seeded and swept", c)
	}
	if _, err := e.mem.Snapshot(ctx, tenant, workspace, a.Ref.ID); err != nil {
		t.Fatalf("no snapshot of a seeded item: %v", err)
	}
	// A seeded item's comments until its last change are old.
	if err := e.fake.Retitle(ctx, a.Ref.ID, "A2"); err != nil {
		t.Fatal(err)
	}
	e.poll()
	evs := e.wantEvents(1)
	if evs[0].Type != follow.TypeItemChanged {
		t.Fatalf("event %s, want a change", evs[0].Type)
	}
}

func sincePublishesCreated(t *testing.T) {
	since := time.Now().Add(30 * time.Minute)
	e := newEnv(t, withSince(since))
	e.person("old")
	e.after(time.Hour)
	fresh := e.person("fresh")
	e.ensure("k1", tracker.Draft{Title: "relayr's, claimed"})
	e.start()
	evs := e.wantEvents(1)
	d := e.data(evs[0])
	if evs[0].Type != follow.TypeItemCreated || d.Item.ID != fresh.Ref.ID || d.Title != "fresh" {
		t.Fatalf("event %s %s, want %s created", evs[0].Type, evs[0].Data, fresh.Ref.ID)
	}
	if d.Tracker != "fake" || d.Project != "proj" || d.Item.Name == "" || d.Item.Link == "" || d.Item.Number == 0 {
		t.Fatalf("event data %+v misses the tracker, project or item", d)
	}
}

func oneEventPerField(t *testing.T) {
	e := newEnv(t)
	a := e.person("A")
	e.start()
	if err := e.fake.Edit(a.Ref.ID, tracker.Patch{Title: coretest.Ptr("A2"), State: coretest.Ptr(tracker.Done)}); err != nil {
		t.Fatal(err)
	}
	e.poll()
	evs := e.wantEvents(2)
	for i, want := range []struct{ field, old, new string }{
		{tracker.FieldTitle, `"A"`, `"A2"`},
		{tracker.FieldState, `"todo"`, `"done"`},
	} {
		d := e.data(evs[i])
		if evs[i].Type != follow.TypeItemChanged || d.Field != want.field || string(d.Old) != want.old || string(d.New) != want.new || d.Actor != "person" {
			t.Fatalf("event %d: %s %s, want %s %s -> %s by person", i, evs[i].Type, evs[i].Data, want.field, want.old, want.new)
		}
		if d.Item.Key != "" || evs[i].Correlation != "" {
			t.Fatalf("a person's item's event carries key %q, correlation %q", d.Item.Key, evs[i].Correlation)
		}
	}
	e.poll()
	e.wantEvents(2)
}

func commentsOnce(t *testing.T) {
	e := newEnv(t)
	a := e.person("A")
	e.start()
	for _, body := range []string{"first", "second"} {
		if err := e.fake.PersonComment(ctx, a.Ref.ID, body); err != nil {
			t.Fatal(err)
		}
		e.after(time.Second)
	}
	e.poll()
	e.poll()
	evs := e.wantEvents(2)
	for i, body := range []string{"first", "second"} {
		d := e.data(evs[i])
		if evs[i].Type != follow.TypeItemCommented || d.Comment == nil || d.Comment.Body != body {
			t.Fatalf("event %d: %s %s, want the comment %q", i, evs[i].Type, evs[i].Data, body)
		}
		if evs[i].ID != scope.CommentedID(d.Comment.ID) {
			t.Fatalf("comment event id %s is not derived from the comment", evs[i].ID)
		}
	}
}

func echoDroppedAndConsumed(t *testing.T) {
	e := newEnv(t)
	it := e.ensure("k1", tracker.Draft{Title: "T0"})
	e.start()
	if err := e.update("k1", tracker.Patch{Title: coretest.Ptr("R1")}); err != nil {
		t.Fatal(err)
	}
	if v := ledger.Pending(e.row("k1").Values[tracker.FieldTitle]); len(v) != 1 || v[0] != `"R1"` {
		t.Fatalf("recorded title %q, want \"R1\"", v)
	}
	e.poll()
	e.wantEvents(0)
	if v, ok := e.row("k1").Values[tracker.FieldTitle]; ok {
		t.Fatalf("the echo's value %s is still recorded, want it consumed", v)
	}
	if e.m.Get(metrics.Echoes) != 1 {
		t.Fatalf("echoes counted %v, want 1", e.m.Get(metrics.Echoes))
	}
	// A person who sets relayr's earlier value again is published.
	for _, title := range []string{"P1", "R1"} {
		if err := e.fake.Retitle(ctx, it.Ref.ID, title); err != nil {
			t.Fatal(err)
		}
		e.poll()
	}
	evs := e.wantEvents(2)
	if d := e.data(evs[1]); string(d.New) != `"R1"` {
		t.Fatalf("second change %s, want the person's R1", evs[1].Data)
	}
}

// A person overwrites relayr's values before any poll reads them back, a
// title renamed and a state set back to what the item held before relayr's
// edit: both are changes from relayr's values, which the tracker answered it
// held, and are published though no read showed relayr's (ADR-0036's
// departures). The read that finds the person's values drops relayr's,
// whose edit was answered before the read was sent, so the person setting
// relayr's values again later is published, not dropped as echoes
// (ADR-0036: "kept, it would drop a person's later change to it").
func personOverwritesBeforeARead(t *testing.T) {
	e := newEnv(t)
	it := e.ensure("k1", tracker.Draft{Title: "T0"})
	e.start()
	if err := e.update("k1", tracker.Patch{Title: coretest.Ptr("X"), State: coretest.Ptr(tracker.Done)}); err != nil {
		t.Fatal(err)
	}
	e.after(time.Second)
	if err := e.fake.Retitle(ctx, it.Ref.ID, "Y"); err != nil {
		t.Fatal(err)
	}
	if err := e.fake.SetState(it.Ref.ID, tracker.Backlog); err != nil {
		t.Fatal(err)
	}
	e.poll()
	evs := e.wantEvents(2)
	got := map[string]string{}
	for _, ev := range evs {
		d := e.data(ev)
		got[d.Field] = string(d.Old) + "->" + string(d.New)
	}
	if got[tracker.FieldTitle] != `"X"->"Y"` || got[tracker.FieldState] != `"done"->"backlog"` {
		t.Fatalf("changes %v, want the person's title X to Y and state done to backlog", got)
	}
	if v := e.row("k1").Values; len(v) != 0 {
		t.Fatalf("values %q still recorded after a read found the person's, want relayr's superseded", v)
	}
	if err := e.fake.Retitle(ctx, it.Ref.ID, "X"); err != nil {
		t.Fatal(err)
	}
	if err := e.fake.SetState(it.Ref.ID, tracker.Done); err != nil {
		t.Fatal(err)
	}
	e.poll()
	evs = e.wantEvents(4)
	got = map[string]string{}
	for _, ev := range evs[2:] {
		d := e.data(ev)
		got[d.Field] = string(d.New)
	}
	if got[tracker.FieldTitle] != `"X"` || got[tracker.FieldState] != `"done"` {
		t.Fatalf("the person's later changes %v, want title X and state done published", got)
	}
}

// Two edits of one field between polls: a poll that reads the first while
// the second is recorded and on its way drops the first as an echo and keeps
// the second's value for its own read back (ADR-0036's departures: the
// ADR's consequence that this echo is published no longer holds).
func echoWhileNextEditOnItsWay(t *testing.T) {
	e := newEnv(t)
	e.ensure("k1", tracker.Draft{Title: "T0"})
	e.start()
	if err := e.update("k1", tracker.Patch{Title: coretest.Ptr("R1")}); err != nil {
		t.Fatal(err)
	}
	// The second edit records its value; its request has not landed yet.
	if _, err := e.mem.SetValues(ctx, e.row("k1").Key, map[string]string{tracker.FieldTitle: `"R2"`}); err != nil {
		t.Fatal(err)
	}
	e.poll()
	e.wantEvents(0)
	if v := e.row("k1").Values[tracker.FieldTitle]; v != `"R2"` {
		t.Fatalf("recorded %q after reading R1, want R2 kept", v)
	}
	if err := e.update("k1", tracker.Patch{Title: coretest.Ptr("R2")}); err != nil {
		t.Fatal(err)
	}
	e.poll()
	e.wantEvents(0)
	if v, ok := e.row("k1").Values[tracker.FieldTitle]; ok {
		t.Fatalf("recorded %q after reading R2, want none", v)
	}
}

func firstReadConsumesEchoes(t *testing.T) {
	e := newEnv(t)
	e.ensure("k1", tracker.Draft{Title: "T0", Labels: []string{"ci"}, State: tracker.Todo})
	if len(e.row("k1").Values) == 0 {
		t.Fatal("filing recorded no values")
	}
	// An edit of relayr's read back at the item's first read is an echo,
	// counted as one read since a snapshot is; the creation's own values
	// are not.
	if err := e.update("k1", tracker.Patch{Title: coretest.Ptr("T1")}); err != nil {
		t.Fatal(err)
	}
	e.start()
	e.wantEvents(0)
	if v := e.row("k1").Values; len(v) != 0 {
		t.Fatalf("values %v left recorded after the first read", v)
	}
	if n := e.m.Get(metrics.Echoes); n != 1 {
		t.Fatalf("echoes counted %v, want 1 (the edit's title)", n)
	}
}

func claimedNotCreated(t *testing.T) {
	e := newEnv(t)
	e.start()
	e.ensure("k1", tracker.Draft{Title: "relayr's"})
	p := e.person("a person's")
	e.poll()
	evs := e.wantEvents(1)
	if d := e.data(evs[0]); evs[0].Type != follow.TypeItemCreated || d.Item.ID != p.Ref.ID {
		t.Fatalf("event %s %s, want only the person's item created", evs[0].Type, evs[0].Data)
	}
}

func relayrCommentsNeverPublished(t *testing.T) {
	e := newEnv(t)
	it := e.ensure("k1", tracker.Draft{Title: "T"})
	e.start()
	if _, err := e.w.Comment(ctx, writes.CommentParams{Tenant: tenant, Workspace: workspace, ItemKey: "k1", Key: "c1", Body: "relayr says"}); err != nil {
		t.Fatal(err)
	}
	e.poll()
	e.wantEvents(0)
	if err := e.fake.PersonComment(ctx, it.Ref.ID, "a person says"); err != nil {
		t.Fatal(err)
	}
	e.poll()
	evs := e.wantEvents(1)
	if d := e.data(evs[0]); d.Comment.Body != "a person says" {
		t.Fatalf("published %s, want the person's comment", evs[0].Data)
	}
}

func joinsTheRunsChain(t *testing.T) {
	e := newEnv(t)
	it := e.ensure("k1", tracker.Draft{Title: "T"})
	e.start()
	if err := e.fake.SetState(it.Ref.ID, tracker.Done); err != nil {
		t.Fatal(err)
	}
	if err := e.fake.PersonComment(ctx, it.Ref.ID, "closed it"); err != nil {
		t.Fatal(err)
	}
	e.poll()
	for _, ev := range e.wantEvents(2) {
		if ev.Correlation != "run-k1" {
			t.Fatalf("%s correlation %q, want the run's run-k1", ev.Type, ev.Correlation)
		}
		if d := e.data(ev); d.Item.Key != "k1" {
			t.Fatalf("%s key %q, want k1", ev.Type, d.Item.Key)
		}
	}
}

// A person closes an item relayr filed before the follower read it: the
// change is published once, from the value the filing left, by the person
// (the item's first snapshot is the filing's answer, so relayr's creation
// is not among what the read sees); an item read as filed publishes
// nothing.
func changeBeforeFirstRead(t *testing.T) {
	e := newEnv(t)
	e.start()
	closed := e.ensure("k1", tracker.Draft{Title: "T", Labels: []string{"ci"}, State: tracker.Todo})
	e.ensure("k2", tracker.Draft{Title: "untouched", Labels: []string{"ci"}, State: tracker.Todo})
	if err := e.fake.SetState(closed.Ref.ID, tracker.Done); err != nil {
		t.Fatal(err)
	}
	e.poll()
	evs := e.wantEvents(1)
	d := e.data(evs[0])
	if evs[0].Type != follow.TypeItemChanged || d.Field != tracker.FieldState || string(d.Old) != `"todo"` || string(d.New) != `"done"` ||
		d.Item.Key != "k1" || evs[0].Correlation != "run-k1" || d.Actor != "person" {
		t.Fatalf("event %s %s, want k1's state todo to done, in its run's chain, by the person", evs[0].Type, evs[0].Data)
	}
	e.poll()
	e.wantEvents(1)
	// The next change is from the snapshot, as any.
	if err := e.fake.Retitle(ctx, closed.Ref.ID, "T2"); err != nil {
		t.Fatal(err)
	}
	e.poll()
	if d := e.data(e.wantEvents(2)[1]); d.Field != tracker.FieldTitle || string(d.Old) != `"T"` || string(d.New) != `"T2"` {
		t.Fatalf("the retitling published %+v", d)
	}
}

// A page whose request was sent before relayr recorded its filing may show
// the item half made (Vikunja labels a task after it makes it): what it
// lacks is relayr's filing still on its way, not a person's change.
func readBeforeTheRecord(t *testing.T) {
	e := newEnv(t, withFlavour(faketracker.LikeVikunja))
	e.start()
	e.rec.answerNext(func(ctx context.Context, q tracker.Query) (tracker.Page, error) {
		// The filing lands and is recorded while the page is read, and
		// the page shows the task before its label.
		e.ensure("k1", tracker.Draft{Title: "T", Labels: []string{"ci"}, State: tracker.Todo})
		pg, err := e.fake.Items(ctx, q)
		for i := range pg.Items {
			pg.Items[i].Labels = nil
		}
		return pg, err
	})
	e.poll()
	e.wantEvents(0)
	e.poll() // the next read sees the label: relayr's, an echo
	e.wantEvents(0)
}

// A person's change to relayr's item that a read sees before the filing's
// record is published once the record is there, by the next poll: the
// early read leaves the item unsnapshotted rather than taking the change
// for the filing.
func changeBeforeTheRecord(t *testing.T) {
	e := newEnv(t, withFlavour(faketracker.LikeVikunja))
	e.start()
	e.rec.answerNext(func(ctx context.Context, q tracker.Query) (tracker.Page, error) {
		// The filing lands and is recorded while the page is read, and a
		// person closes it at once.
		it := e.ensure("k1", tracker.Draft{Title: "T", State: tracker.Todo})
		if err := e.fake.SetState(it.Ref.ID, tracker.Done); err != nil {
			t.Fatal(err)
		}
		return e.fake.Items(ctx, q)
	})
	e.poll()
	e.wantEvents(0)
	e.poll()
	evs := e.wantEvents(1)
	if d := e.data(evs[0]); evs[0].Type != follow.TypeItemChanged || d.Field != tracker.FieldState {
		t.Fatalf("event %s %s, want the person's close", evs[0].Type, evs[0].Data)
	}
	e.poll()
	e.wantEvents(1)
}

// A filing read before its answer is left for the next poll, and the
// cursor stays before it: the next poll lists it again however late it
// comes, so a person's change in that moment is published then, not left
// for the day's sweep, though the same read listed a change made minutes
// later (before, the cursor moved past the item to that change's).
func deferredHoldsTheCursor(t *testing.T) {
	e := newEnv(t, withFlavour(faketracker.LikeVikunja))
	z := e.person("Z")
	e.start()
	e.rec.answerNext(func(ctx context.Context, q tracker.Query) (tracker.Page, error) {
		it := e.ensure("k1", tracker.Draft{Title: "T"})
		if err := e.fake.SetState(it.Ref.ID, tracker.Done); err != nil {
			t.Fatal(err)
		}
		// The page is answered late, with a change made since.
		time.Sleep(5 * time.Minute)
		if err := e.fake.Retitle(ctx, z.Ref.ID, "Z2"); err != nil {
			t.Fatal(err)
		}
		return e.fake.Items(ctx, q)
	})
	e.poll()
	// The long read publishes Z's retitling and leaves the filing; the
	// next poll, due already, reads from before the filing.
	e.after(5*time.Minute + time.Second)
	evs := e.wantEvents(2)
	if d := e.data(evs[0]); d.Item.ID != z.Ref.ID {
		t.Fatalf("first event %s, want Z's retitling", evs[0].Data)
	}
	if d := e.data(evs[1]); d.Item.Key != "k1" || d.Field != tracker.FieldState || string(d.New) != `"done"` {
		t.Fatalf("event %s, want the person's close of k1", evs[1].Data)
	}
	if n := len(e.rec.sweeps()); n != 0 {
		t.Fatalf("%d sweeps, want none: the close is read by a poll", n)
	}
}

// A person retitles a filed item before relayr's first read of it, and later
// sets relayr's title again: both are published (before, the filing's title
// stayed recorded, and the second change was dropped as its echo).
func filedValueSetAgain(t *testing.T) {
	e := newEnv(t)
	e.start()
	it := e.ensure("k1", tracker.Draft{Title: "Build failed"})
	if err := e.fake.Retitle(ctx, it.Ref.ID, "Build failed: flaky"); err != nil {
		t.Fatal(err)
	}
	e.poll()
	e.wantEvents(1)
	if err := e.fake.Retitle(ctx, it.Ref.ID, "Build failed"); err != nil {
		t.Fatal(err)
	}
	e.poll()
	evs := e.wantEvents(2)
	if d := e.data(evs[1]); d.Field != tracker.FieldTitle || string(d.New) != `"Build failed"` {
		t.Fatalf("second change %s, want the person's title set back", evs[1].Data)
	}
}

// A key a person wrote that no store takes (Vikunja's marker line, over
// the longest key) is no key: the item is read as a person's, and the
// items after it are read too.
func keyNoStoreTakes(t *testing.T) {
	e := newEnv(t, withFlavour(faketracker.LikeVikunja))
	a := e.person("a")
	e.after(2 * time.Second)
	bad := e.person("bad")
	e.after(2 * time.Second)
	c := e.person("c")
	if err := e.fake.WriteKey(bad.Ref.ID, strings.Repeat("k", ledger.MaxKey+1)); err != nil {
		t.Fatal(err)
	}
	e.start()
	for _, it := range []tracker.Item{a, bad, c} {
		if err := e.fake.Retitle(ctx, it.Ref.ID, it.Title+"2"); err != nil {
			t.Fatal(err)
		}
		e.after(2 * time.Second)
	}
	e.poll()
	for i, ev := range e.wantEvents(3) {
		if d := e.data(ev); d.Field != tracker.FieldTitle || d.Item.Key != "" {
			t.Fatalf("event %d %s, want a title change with no key", i, ev.Data)
		}
	}
}

// A person's item carrying the key of an item relayr filed (a marker
// copied with its description) is the person's: published as created,
// with no key, and changes to it are not checked against the original's
// values.
func anotherItemsKey(t *testing.T) {
	e := newEnv(t, withFlavour(faketracker.LikeVikunja))
	e.start()
	orig := e.ensure("k1", tracker.Draft{Title: "filed", State: tracker.Todo})
	e.poll()
	e.wantEvents(0)
	if err := e.update("k1", tracker.Patch{Title: coretest.Ptr("relayr's title")}); err != nil {
		t.Fatal(err)
	}
	copied := e.person("a copy")
	if err := e.fake.WriteKey(copied.Ref.ID, "k1"); err != nil {
		t.Fatal(err)
	}
	e.poll()
	evs := e.wantEvents(1)
	if d := e.data(evs[0]); evs[0].Type != follow.TypeItemCreated || d.Item.ID != copied.Ref.ID || d.Item.Key != "" || evs[0].Correlation != "" {
		t.Fatalf("event %s %s, want the copy created with no key and no chain", evs[0].Type, evs[0].Data)
	}
	// A person sets the copy's title to the value relayr set on the
	// original: the copy's change, not an echo; the original's echo is
	// still an echo.
	if err := e.fake.Retitle(ctx, copied.Ref.ID, "relayr's title"); err != nil {
		t.Fatal(err)
	}
	e.poll()
	evs = e.wantEvents(2)
	if d := e.data(evs[1]); d.Item.ID != copied.Ref.ID || d.Field != tracker.FieldTitle {
		t.Fatalf("event %s, want the copy's title change", evs[1].Data)
	}
	if e.row("k1").Ref.ID != orig.Ref.ID {
		t.Fatal("the original's record moved")
	}
}

func actorUnknownWithEcho(t *testing.T) {
	e := newEnv(t)
	it := e.ensure("k1", tracker.Draft{Title: "T"})
	e.start()
	if err := e.update("k1", tracker.Patch{Title: coretest.Ptr("R1")}); err != nil {
		t.Fatal(err)
	}
	if err := e.fake.SetState(it.Ref.ID, tracker.Started); err != nil {
		t.Fatal(err)
	}
	e.poll()
	evs := e.wantEvents(1)
	if d := e.data(evs[0]); d.Field != tracker.FieldState || d.Actor != "" {
		t.Fatalf("event %s, want the state change with no actor", evs[0].Data)
	}
	if err := e.fake.SetState(it.Ref.ID, tracker.Done); err != nil {
		t.Fatal(err)
	}
	e.poll()
	evs = e.wantEvents(2)
	if d := e.data(evs[1]); d.Actor != "person" {
		t.Fatalf("event %s, want the person as actor", evs[1].Data)
	}
}

func pageReadAgain(t *testing.T) {
	e := newEnv(t)
	a := e.person("A")
	e.start()
	if err := e.fake.Retitle(ctx, a.Ref.ID, "A2"); err != nil {
		t.Fatal(err)
	}
	e.led.FailNextSnapshots(1)
	e.poll() // publishes, then fails to save: the page is read again
	e.wantEvents(1)
	e.poll()
	e.poll()
	e.wantEvents(1)
	if n := e.m.Get(metrics.Published); n != 1 {
		t.Fatalf("published %v, want 1", n)
	}
	// Another process reading the same pages publishes nothing new either.
	fs2, rec2 := e.second("replica-b")
	e.fs.Stop()
	fs2.Start(e.ctx)
	e.poll()
	if len(rec2.first()) == 0 {
		t.Fatal("replica b never read")
	}
	e.wantEvents(1)
}

func lostSnapshotReadsAsNewOnce(t *testing.T) {
	e := newEnv(t)
	a := e.person("A")
	e.start()
	if err := e.fake.PersonComment(ctx, a.Ref.ID, "hello"); err != nil {
		t.Fatal(err)
	}
	e.poll()
	e.wantEvents(1)
	if err := e.mem.DeleteSnapshot(ctx, tenant, workspace, a.Ref.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.fake.Retitle(ctx, a.Ref.ID, "A2"); err != nil {
		t.Fatal(err)
	}
	e.poll()
	e.poll()
	evs := e.wantEvents(2)
	if evs[1].Type != follow.TypeItemCreated {
		t.Fatalf("a lost snapshot's item read as %s, want created", evs[1].Type)
	}
}

// sweepRemoved: the sweep tells deleted from archived; over a tracker that
// reads several items by id at once (fetching: Jira's bulkfetch), the
// items its listing no longer shows are read in one request, and a deleted
// one is read no more.
func sweepRemoved(t *testing.T, flavour faketracker.Flavour, fetching bool) {
	// The seeds' sweep alone: once a day.
	opts := []option{withFlavour(flavour)}
	if fetching {
		opts = append(opts, withFetching())
	}
	e := newEnv(t, opts...)
	deleted := e.ensure("deleted", tracker.Draft{Title: "D"})
	archived := e.ensure("archived", tracker.Draft{Title: "A"})
	pDeleted, pArchived := e.person("pD"), e.person("pA")
	e.start()
	for _, id := range []string{deleted.Ref.ID, pDeleted.Ref.ID} {
		if err := e.fake.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{archived.Ref.ID, pArchived.Ref.ID} {
		if err := e.fake.Archive(id); err != nil {
			t.Fatal(err)
		}
	}
	e.after(time.Hour)
	e.wantEvents(0) // only the sweep finds removals, once a day
	items, fetches := e.fake.Calls(faketracker.MethodItem), e.fake.Calls(faketracker.MethodFetchItems)
	e.after(follow.DefaultSweepEvery)
	evs := e.wantEvents(4)
	if fetching {
		// One read of the four; the archived ones read again by id on
		// Vikunja (where the fetch answers them archived), all four on
		// Plane (where an archived item reads missing and its key's
		// look-up tells): none deleted is read twice.
		reads, want := e.fake.Calls(faketracker.MethodItem)-items, 2
		if flavour == faketracker.LikePlane {
			want = 0
		}
		if n := e.fake.Calls(faketracker.MethodFetchItems) - fetches; n != 1 || reads != want {
			t.Fatalf("the sweep read the missing items in %d reads by ids and %d one by one, want 1 and %d", n, reads, want)
		}
	}
	// Vikunja reads an archived item by its id as archived; Plane reads it
	// as missing, and only a key's lookup tells.
	var personArchived *bool
	if flavour == faketracker.LikeVikunja {
		personArchived = coretest.Ptr(false)
	}
	want := map[string]*bool{deleted.Ref.ID: coretest.Ptr(true), archived.Ref.ID: coretest.Ptr(false), pDeleted.Ref.ID: nil, pArchived.Ref.ID: personArchived}
	for _, ev := range evs {
		d := e.data(ev)
		w, ok := want[d.Item.ID]
		if ev.Type != follow.TypeItemRemoved || !ok {
			t.Fatalf("unexpected %s %s", ev.Type, ev.Data)
		}
		if (w == nil) != (d.Deleted == nil) || (w != nil && *w != *d.Deleted) {
			t.Fatalf("%s: deleted %v, want %v", d.Item.ID, d.Deleted, w)
		}
		delete(want, d.Item.ID)
	}
	if e.m.Get(metrics.Unnudged) != 0 {
		t.Fatalf("removals counted unnudged: %v", e.m.Get(metrics.Unnudged))
	}
	// A deleted key is marked: it files nothing again.
	if !e.row("deleted").Deleted || e.row("archived").Deleted {
		t.Fatalf("deleted key marked %v, archived key marked %v", e.row("deleted").Deleted, e.row("archived").Deleted)
	}
	_, err := e.w.EnsureItem(ctx, writes.EnsureParams{Tenant: tenant, Workspace: workspace, Key: "deleted", Draft: tracker.Draft{Title: "D"}})
	if !errors.Is(err, writes.ErrDeleted) {
		t.Fatalf("filing a deleted key again: %v, want deleted", err)
	}
	// A removed item forgets its writes, and its snapshot.
	if _, err := e.mem.CountWrite(ctx, ledger.WriteParams{Tenant: tenant, Workspace: workspace, ItemID: deleted.Ref.ID, Now: time.Now(), Window: time.Hour * 48, Limit: 1}); err != nil {
		t.Fatalf("the removed item's writes are still counted: %v", err)
	}
	if _, err := e.mem.Snapshot(ctx, tenant, workspace, deleted.Ref.ID); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("a deleted item's snapshot: %v, want it forgotten", err)
	}
	// One not known deleted leaves a tombstone, which no sweep lists.
	if s, err := e.mem.Snapshot(ctx, tenant, workspace, pDeleted.Ref.ID); err != nil || !s.Removed {
		t.Fatalf("a removed item's snapshot: %+v, %v, want a tombstone", s, err)
	}
	e.after(follow.DefaultSweepEvery)
	e.wantEvents(4)
}

// listedAgain archives relayr's item and a person's, lets the sweep
// publish their removals, then unarchives them: each is published as
// created again, once, with the comment made while it was archived and
// not the one read before; archived and unarchived again, once more.
func listedAgain(t *testing.T, flavour faketracker.Flavour) {
	e := newEnv(t, withFlavour(flavour))
	mine := e.ensure("mine", tracker.Draft{Title: "M"})
	theirs := e.person("P")
	e.start()
	if err := e.fake.PersonComment(ctx, theirs.Ref.ID, "before"); err != nil {
		t.Fatal(err)
	}
	e.poll()
	e.wantEvents(1) // the comment
	ids := []string{mine.Ref.ID, theirs.Ref.ID}
	for round := 1; round <= 2; round++ {
		for _, id := range ids {
			if err := e.fake.Archive(id); err != nil {
				t.Fatal(err)
			}
		}
		e.after(follow.DefaultSweepEvery)
		base := 1 + (round-1)*5
		evs := e.wantEvents(base + 2)
		for _, ev := range evs[base:] {
			if ev.Type != follow.TypeItemRemoved {
				t.Fatalf("round %d: %s %s, want the removal", round, ev.Type, ev.Data)
			}
		}
		if round == 1 {
			if err := e.fake.PersonComment(ctx, theirs.Ref.ID, "while archived"); err != nil {
				t.Fatal(err)
			}
		}
		e.after(time.Second)
		for _, id := range ids {
			if err := e.fake.Unarchive(id); err != nil {
				t.Fatal(err)
			}
		}
		e.poll()
		e.poll()
		evs = e.events()
		var created []follow.Data
		commented := 0
		for _, ev := range evs[base+2:] {
			d := e.data(ev)
			switch {
			case ev.Type == follow.TypeItemCreated:
				created = append(created, d)
			case ev.Type == follow.TypeItemCommented && d.Comment.Body == "while archived":
				commented++
			default:
				t.Fatalf("round %d: %s %s", round, ev.Type, ev.Data)
			}
		}
		wantCommented := 0
		if round == 1 {
			wantCommented = 1
		}
		if len(created) != 2 || commented != wantCommented {
			t.Fatalf("round %d: %d created and %d comments published, want 2 and %d", round, len(created), commented, wantCommented)
		}
		for _, d := range created {
			if !d.Restored || (d.Item.ID == mine.Ref.ID && d.Item.Key != "mine") {
				t.Fatalf("round %d: created %+v, want it restored, with its key", round, d)
			}
		}
		if len(evs) != base+2+2+wantCommented {
			t.Fatalf("round %d: %d events", round, len(evs))
		}
		// Listed again, each has its snapshot back, which the sweep lists.
		for _, id := range ids {
			if s, err := e.mem.Snapshot(ctx, tenant, workspace, id); err != nil || s.Removed {
				t.Fatalf("round %d: %s's snapshot %+v, %v, want a live one", round, id, s, err)
			}
		}
		e.after(follow.DefaultSweepEvery)
		e.wantEvents(len(evs))
	}
}

func vikunjaStates(t *testing.T) {
	e := newEnv(t, withFlavour(faketracker.LikeVikunja))
	e.ensure("k1", tracker.Draft{Title: "T", State: tracker.Started})
	e.start()
	if v := e.row("k1").Values[tracker.FieldState]; v != "" {
		t.Fatalf("recorded state %s left after the first read", v)
	}
	if err := e.update("k1", tracker.Patch{State: coretest.Ptr(tracker.Cancelled)}); err != nil {
		t.Fatal(err)
	}
	e.poll()
	e.wantEvents(0)
}

func pollsFromLookback(t *testing.T) {
	e := newEnv(t)
	a := e.person("A")
	e.start()
	cursors := []ledger.Cursor{e.cursor()}
	for i := range 3 {
		if err := e.fake.Retitle(ctx, a.Ref.ID, fmt.Sprint("A", i)); err != nil {
			t.Fatal(err)
		}
		e.poll()
		cursors = append(cursors, e.cursor())
	}
	qs := e.rec.first()
	if len(qs) != 4 {
		t.Fatalf("%d polls in 90 s, want 4", len(qs))
	}
	if !qs[0].q.Since.IsZero() {
		t.Fatalf("first read since %v, want the whole project", qs[0].q.Since)
	}
	for i := 1; i < len(qs); i++ {
		if got := qs[i].at.Sub(qs[i-1].at); got != follow.DefaultPollEvery {
			t.Fatalf("poll %d came %v after the one before, want 30s", i, got)
		}
		if want := cursors[i-1].UpdatedAt.Add(-follow.DefaultLookback); !qs[i].q.Since.Equal(want) {
			t.Fatalf("poll %d read since %v, want two minutes before its cursor (%v)", i, qs[i].q.Since, want)
		}
		if cursors[i].UpdatedAt.Before(cursors[i-1].UpdatedAt) {
			t.Fatalf("cursor moved back from %v to %v", cursors[i-1], cursors[i])
		}
	}
}

func oneHolder(t *testing.T) {
	e := newEnv(t)
	fs2, rec2 := e.second("replica-b")
	e.start()
	fs2.Start(e.ctx)
	e.after(150 * time.Second)
	if a, b := len(e.rec.first()), len(rec2.first()); a+b != 6 || (a != 0 && b != 0) {
		t.Fatalf("polls: %d by a, %d by b; want 6 by one of them", a, b)
	}
}

func lostLeaseStopsReading(t *testing.T) {
	e := newEnv(t)
	e.start()
	e.led.SetFailHolder("replica-a") // a's renewals fail from now on
	a := e.person("A")
	fs2, rec2 := e.second("replica-b")
	e.after(time.Second)
	fs2.Start(e.ctx)
	e.after(2 * time.Minute)
	if n := len(e.rec.first()); n != 1 {
		t.Fatalf("replica a polled %d times, want it to stop reading after its renewal failed", n)
	}
	if len(rec2.first()) == 0 {
		t.Fatal("replica b never took the lapsed lease")
	}
	e.led.SetFailHolder("")
	if err := e.fake.Retitle(ctx, a.Ref.ID, "A2"); err != nil {
		t.Fatal(err)
	}
	e.after(2 * time.Minute)
	if n := len(e.rec.first()); n != 1 {
		t.Fatalf("replica a polled %d times while b held the lease", n)
	}
	e.wantEvents(2)
}

// A renewal the ledger never answers (a connection that hangs rather than
// fails) loses the lease when it lapses: another replica may hold the
// binding from then on.
func hungRenewalLosesTheLease(t *testing.T) {
	e := newEnv(t)
	e.start()
	if n := len(e.fs.Local()); n != 1 {
		t.Fatalf("%d bindings held, want the one", n)
	}
	e.led.SetHangHolder("replica-a")
	e.after(time.Minute)
	if n := len(e.fs.Local()); n != 0 {
		t.Fatalf("replica a still holds %d bindings a minute into renewals that never answered", n)
	}
	e.led.SetHangHolder("")
	e.after(time.Minute)
	if n := len(e.fs.Local()); n != 1 {
		t.Fatalf("%d bindings held once the ledger answered again, want the one retaken", n)
	}
}

func stopReleasesLease(t *testing.T) {
	e := newEnv(t)
	fs2, rec2 := e.second("replica-b")
	e.start()
	e.after(5 * time.Second)
	e.fs.Stop()
	start := time.Now()
	fs2.Start(e.ctx)
	synctest.Wait()
	qs := rec2.first()
	if len(qs) != 1 || !qs[0].at.Equal(start) {
		t.Fatalf("replica b polled %v, want at once at %v", qs, start)
	}
}

// A nudge after a quiet spell reads at once; the nudges that follow within
// the debounce are gathered into one poll the debounce after the first
// began (ADR-0036's departures).
func nudgesDebounced(t *testing.T) {
	e := newEnv(t)
	e.start()
	e.after(time.Second)
	first := time.Now()
	for range 3 {
		if n := e.fs.Nudge(ctx, tenant, "fake", "proj"); n != 1 {
			t.Fatalf("nudge woke %d followers, want 1", n)
		}
		e.after(500 * time.Millisecond)
	}
	e.after(3 * time.Second)
	qs := e.rec.first()
	if len(qs) != 3 || !qs[1].at.Equal(first) || !qs[2].at.Equal(first.Add(follow.DefaultDebounce)) {
		t.Fatalf("polls %v, want one at the first nudge (%v) and one for the burst after it, 2 s on", qs, first)
	}
	if n := e.fs.Nudge(ctx, tenant, "fake", "another"); n != 0 {
		t.Fatalf("a nudge for another project woke %d", n)
	}
}

func unnudgedCounted(t *testing.T) {
	e := newEnv(t)
	a := e.person("A")
	e.start()
	if err := e.fake.Retitle(ctx, a.Ref.ID, "nudged"); err != nil {
		t.Fatal(err)
	}
	e.fs.Nudge(ctx, tenant, "fake", "proj")
	e.after(3 * time.Second)
	e.wantEvents(1)
	if n := e.m.Get(metrics.Unnudged); n != 0 {
		t.Fatalf("unnudged %v after a nudged change", n)
	}
	if err := e.fake.Retitle(ctx, a.Ref.ID, "not nudged"); err != nil {
		t.Fatal(err)
	}
	e.poll()
	e.wantEvents(2)
	// Held until the next poll: a nudge may still come for it.
	if n := e.m.Get(metrics.Unnudged); n != 0 {
		t.Fatalf("unnudged %v before the next poll", n)
	}
	e.poll()
	if n := e.m.Get(metrics.Unnudged); n != 1 {
		t.Fatalf("unnudged %v, want 1", n)
	}
	// A change a poll published before its webhook came: the nudge that
	// follows announced it, so it is not counted.
	if err := e.fake.Retitle(ctx, a.Ref.ID, "nudged late"); err != nil {
		t.Fatal(err)
	}
	e.poll()
	e.wantEvents(3)
	e.fs.Nudge(ctx, tenant, "fake", "proj")
	e.after(3 * time.Second)
	e.poll()
	if n := e.m.Get(metrics.Unnudged); n != 1 {
		t.Fatalf("unnudged %v after a change its nudge announced late, want 1 still", n)
	}
}

func switchedOffIsNothing(t *testing.T) {
	e := newEnv(t)
	a := e.person("A")
	e.start()
	e.sw.Set(tenant, workspace, "tracker:fake", false)
	if n := e.fs.Nudge(ctx, tenant, "fake", "proj"); n != 0 {
		t.Fatalf("a switched-off follower was nudged (%d)", n)
	}
	e.after(10 * time.Second) // the next wait asks the switch
	if err := e.fake.Retitle(ctx, a.Ref.ID, "A2"); err != nil {
		t.Fatal(err)
	}
	// Its lease is let go: another holder takes it at once.
	l, err := e.mem.TakeLease(ctx, ledger.LeaseParams{Follower: trackerFollower, Holder: "probe", Now: time.Now(), TTL: time.Second})
	if err != nil {
		t.Fatalf("the switched-off follower kept its lease: %v", err)
	}
	if err := e.mem.ReleaseLease(ctx, trackerFollower, l.Nonce); err != nil {
		t.Fatal(err)
	}
	before := e.fake.TotalCalls()
	e.after(5 * time.Minute)
	if e.fake.TotalCalls() != before {
		t.Fatalf("a switched-off follower made %d requests", e.fake.TotalCalls()-before)
	}
	e.wantEvents(0)
	e.sw.Set(tenant, workspace, "tracker:fake", true)
	e.poll()
	e.wantEvents(1)
}

func rateLimitWaitedOut(t *testing.T) {
	e := newEnv(t, withOptions(follow.Options{SweepMin: -1, Jitter: func(max time.Duration) time.Duration {
		if max != time.Second {
			panic("jitter of up to a second")
		}
		return 700 * time.Millisecond
	}}))
	e.start()
	e.fake.FailNext(faketracker.MethodItems, 1, tracker.RateLimited(10*time.Second))
	e.poll()
	e.after(11 * time.Second)
	qs := e.rec.first()
	if len(qs) != 3 || qs[2].at.Sub(qs[1].at) != 10700*time.Millisecond {
		t.Fatalf("polls %v, want the next one 10.7 s after the 429", qs)
	}
}

func nudgeGoesWhateverWritesSpend(t *testing.T) {
	e := newEnv(t, withBudget(40))
	a := e.person("A")
	e.start()
	if err := e.fake.Retitle(ctx, a.Ref.ID, "A'"); err != nil {
		t.Fatal(err)
	}
	e.bud.Spend("acme/fake", 60) // writes spent past the whole minute
	e.fs.Nudge(ctx, tenant, "fake", "proj")
	e.after(follow.DefaultDebounce + time.Second)
	// Served within its debounce: every poll is the binding's floor.
	e.wantEvents(1)
	if got := e.m.Get(metrics.Unnudged); got != 0 {
		t.Fatalf("the change counted unnudged (%v)", got)
	}
	// The poll was the interval's: the next comes 30 s after it.
	qs := e.rec.first()
	before, nudged := len(qs), qs[len(qs)-1].at
	time.Sleep(time.Until(nudged.Add(follow.DefaultPollEvery - time.Millisecond)))
	synctest.Wait()
	if n := len(e.rec.first()) - before; n != 0 {
		t.Fatalf("%d polls within the interval after a nudged one", n)
	}
	e.after(time.Millisecond)
	if n := len(e.rec.first()) - before; n != 1 {
		t.Fatalf("%d polls an interval after the nudged one, want 1", n)
	}
}

func spareRunsOutAtAnItem(t *testing.T) {
	// A first read's further pages take only what is left: with writes
	// spending the minute, the first page (the floor's) is read, the rest
	// wait for the budget.
	e := newEnv(t, withBudget(40))
	for i := range faketracker.PageSize + 5 {
		e.person(fmt.Sprint("item ", i))
	}
	e.bud.Spend("acme/fake", 60)
	e.fs.Start(e.ctx)
	synctest.Wait()
	if c := e.cursor(); c.Seeded {
		t.Fatal("the first read finished on the floor's page alone")
	}
	if n := e.rec.count(); n != 1 {
		t.Fatalf("%d pages read while writes spent the minute, want the floor's one", n)
	}
	e.after(2 * time.Minute) // the writes' minute passes
	if c := e.cursor(); !c.Seeded {
		t.Fatal("the first read did not finish once the budget had room")
	}
}

func idleSweeps(t *testing.T) {
	e := newEnv(t, withOptions(follow.Options{SweepMin: time.Minute}))
	gone := e.person("gone")
	e.start()
	if err := e.fake.Delete(ctx, gone.Ref.ID); err != nil {
		t.Fatal(err)
	}
	e.after(2 * time.Minute)
	evs := e.wantEvents(1)
	if evs[0].Type != follow.TypeItemRemoved {
		t.Fatalf("event %s, want the removal", evs[0].Type)
	}
	e.after(10 * time.Minute)
	if n := len(e.rec.sweeps()); n < 9 || n > 13 {
		t.Fatalf("%d sweeps in 12 minutes of an idle budget, want about one a minute", n)
	}
}

func busySweeps(t *testing.T) {
	e := newEnv(t, withBudget(40), withOptions(follow.Options{SweepMin: time.Minute}))
	gone := e.person("gone")
	e.start()
	if err := e.fake.Delete(ctx, gone.Ref.ID); err != nil {
		t.Fatal(err)
	}
	// Writes spend 30 requests a minute: more than half the budget, so no
	// sweep comes before its day.
	go func() {
		for {
			e.bud.Spend("acme/fake", 5)
			select {
			case <-e.ctx.Done():
				return
			case <-time.After(10 * time.Second):
			}
		}
	}()
	e.after(time.Hour)
	e.wantEvents(0)
	if n := len(e.rec.sweeps()); n != 0 {
		t.Fatalf("%d sweeps while writes kept the budget busy", n)
	}
	if n := len(e.rec.first()); n < 110 {
		t.Fatalf("%d polls in an hour, want the floor's two a minute", n)
	}
	e.after(follow.DefaultSweepEvery)
	e.wantEvents(1)
}

func projectionMaps(t *testing.T) {
	e := newEnv(t, withProjection(func(ev eventlog.Event) (*eventlog.Event, error) {
		d, err := follow.DataOf(ev)
		if err != nil {
			return nil, err
		}
		if ev.Type != follow.TypeItemChanged || d.Field != tracker.FieldState {
			return nil, nil
		}
		return &eventlog.Event{Type: "app:item_closed", Data: json.RawMessage(`{"item":"` + d.Item.ID + `"}`)}, nil
	}))
	it := e.ensure("k1", tracker.Draft{Title: "T"})
	e.start()
	from, _, _ := e.fake.Snapshot(it.Ref.ID) // the version the change is from
	if err := e.fake.Edit(it.Ref.ID, tracker.Patch{Title: coretest.Ptr("T2"), State: coretest.Ptr(tracker.Done)}); err != nil {
		t.Fatal(err)
	}
	e.poll()
	evs := e.wantEvents(1)
	want := scope.ChangedID(it.Ref.ID, tracker.FieldState, `"backlog"`, `"done"`, from.UpdatedAt)
	if evs[0].Type != "app:item_closed" || evs[0].ID != want || evs[0].Correlation != "run-k1" {
		t.Fatalf("published %+v, want app:item_closed with the change's id %s in the run's chain", evs[0], want)
	}
}

func projectionErrorDeadLetters(t *testing.T) {
	e := newEnv(t, withProjection(func(eventlog.Event) (*eventlog.Event, error) {
		return nil, errors.New("cannot map")
	}))
	a := e.person("A")
	e.start()
	if err := e.fake.Retitle(ctx, a.Ref.ID, "A2"); err != nil {
		t.Fatal(err)
	}
	e.led.FailNextSnapshots(1) // the page is read again
	e.poll()
	e.poll()
	dl, err := e.mem.DeadLetters(ctx, trackerFollower)
	if err != nil {
		t.Fatal(err)
	}
	if len(dl) != 1 || e.m.Get(metrics.DeadLetters) != 1 {
		t.Fatalf("%d dead letters, %v counted; want one", len(dl), e.m.Get(metrics.DeadLetters))
	}
	e.wantEvents(0)
	// The follower goes on.
	if err := e.fake.Retitle(ctx, a.Ref.ID, "A3"); err != nil {
		t.Fatal(err)
	}
	e.poll()
	if dl, _ = e.mem.DeadLetters(ctx, trackerFollower); len(dl) != 2 {
		t.Fatalf("%d dead letters, want the follower to go on", len(dl))
	}
}

func projectionReservedDeadLetters(t *testing.T) {
	e := newEnv(t, withProjection(func(ev eventlog.Event) (*eventlog.Event, error) {
		return &eventlog.Event{Type: "tracker:forged", Data: ev.Data}, nil
	}))
	a := e.person("A")
	e.start()
	if err := e.fake.Retitle(ctx, a.Ref.ID, "A2"); err != nil {
		t.Fatal(err)
	}
	e.poll()
	e.wantEvents(0)
	if dl, _ := e.mem.DeadLetters(ctx, trackerFollower); len(dl) != 1 {
		t.Fatalf("%d dead letters, want the forged event's", len(dl))
	}
}

func refusedPublishStops(t *testing.T) {
	e := newEnv(t)
	a := e.person("A")
	e.start()
	if err := e.fake.Retitle(ctx, a.Ref.ID, "A2"); err != nil {
		t.Fatal(err)
	}
	e.log.Fail(errDisk, nil)
	e.poll()
	if err := e.fs.Stopped(tenant, workspace); !errors.Is(err, follow.ErrStopped) || !errors.Is(err, errDisk) {
		t.Fatalf("Stopped: %v, want a stop for the refused publish", err)
	}
	if e.m.Get(metrics.FollowersStopped) != 1 {
		t.Fatalf("stopped counted %v", e.m.Get(metrics.FollowersStopped))
	}
	polls := len(e.rec.first())
	e.after(2 * time.Minute)
	if len(e.rec.first()) != polls {
		t.Fatal("a stopped follower went on polling")
	}
	e.log.Fail(nil, nil)
	if err := e.fs.Open(ctx, tenant, workspace); err != nil {
		t.Fatal(err)
	}
	e.after(time.Second)
	e.wantEvents(1)
	if e.fs.Stopped(tenant, workspace) != nil {
		t.Fatal("an opened follower still reads as stopped")
	}
}

// wakeAsksNoSwitch: the webhook route asks the switch once, after the
// signature, and only then wakes; Wake asks it no second time.
func wakeAsksNoSwitch(t *testing.T) {
	e := newEnv(t)
	asked := &countingIntegrations{Integrations: e.sw}
	e.cfg.Integrations = asked
	e.fs = follow.New(e.cfg)
	e.start()
	before := asked.n()
	if !e.fs.Wake(e.b, tracker.Nudged{Project: "proj"}) {
		t.Fatal("the running follower of the project was not woken")
	}
	if e.fs.Wake(e.b, tracker.Nudged{Project: "another"}) {
		t.Fatal("a nudge for another project woke the follower")
	}
	if n := asked.n() - before; n != 0 {
		t.Fatalf("Wake asked the switch %d times, want its caller's one ask", n)
	}
	e.after(3 * time.Second)
	if n := len(e.rec.first()); n != 2 {
		t.Fatalf("%d polls, want the wake to bring one forward", n)
	}
	// Nudge asks each follower's switch once, and wakes none switched off.
	before = asked.n()
	e.sw.Set(tenant, workspace, "tracker:fake", false)
	if n := e.fs.Nudge(ctx, tenant, "fake", "proj"); n != 0 {
		t.Fatalf("a switched-off follower was nudged (%d)", n)
	}
	if n := asked.n() - before; n != 1 {
		t.Fatalf("a nudge asked the switch %d times, want once", n)
	}
}

func credentialsLastAskedFor(t *testing.T) {
	e := newEnv(t)
	if _, ok := e.fs.Credentials(tenant, "fake"); ok {
		t.Fatal("credentials answered before any were asked for")
	}
	e.start()
	c, ok := e.fs.Credentials(tenant, "fake")
	if !ok || c.WebhookSecret != secret {
		t.Fatalf("credentials %v %v, want the ones the follower asked for", c, ok)
	}
}

func idsDerived(t *testing.T) {
	plane := follow.Scope{Tenant: "acme", Workspace: "ops", Project: "proj", Tracker: "plane"}
	at := time.Date(2026, 10, 17, 9, 30, 0, 5, time.UTC)
	sum, was := sha256.Sum256([]byte(`"done"`)), sha256.Sum256([]byte(`"todo"`))
	want := eventlog.DeriveID("acme", "ops", "proj", "plane", "it-1", "state", hex.EncodeToString(was[:]), hex.EncodeToString(sum[:]), "2026-10-17T09:30:00.000000005Z")
	if got := plane.ChangedID("it-1", "state", `"todo"`, `"done"`, at); got != want {
		t.Fatalf("ChangedID %s, want %s", got, want)
	}
	if got, want := plane.CreatedID("it-1"), eventlog.DeriveID("acme", "ops", "proj", "plane", "it-1", "created"); got != want {
		t.Fatalf("CreatedID %s, want %s", got, want)
	}
	if got, want := plane.RemovedID("it-1", at), eventlog.DeriveID("acme", "ops", "proj", "plane", "it-1", "removed", "2026-10-17T09:30:00.000000005Z"); got != want {
		t.Fatalf("RemovedID %s, want %s", got, want)
	}
	if got, want := plane.CommentedID("c-1"), eventlog.DeriveID("acme", "ops", "proj", "plane", "comment", "c-1"); got != want {
		t.Fatalf("CommentedID %s, want %s", got, want)
	}
	// And a published event carries it.
	e := newEnv(t)
	a := e.person("A")
	e.start()
	from, _, _ := e.fake.Snapshot(a.Ref.ID)
	if err := e.fake.SetState(a.Ref.ID, tracker.Done); err != nil {
		t.Fatal(err)
	}
	e.poll()
	if evs := e.wantEvents(1); evs[0].ID != scope.ChangedID(a.Ref.ID, "state", ledger.Canonical(tracker.FieldState, from), `"done"`, from.UpdatedAt) {
		t.Fatalf("published id %s is not the derived one", evs[0].ID)
	}
}

// countingIntegrations counts how often the switch is asked.
type countingIntegrations struct {
	integrations.Integrations
	mu    sync.Mutex
	count int
}

func (c *countingIntegrations) Enabled(ctx context.Context, tenant, workspace, key string) bool {
	c.mu.Lock()
	c.count++
	c.mu.Unlock()
	return c.Integrations.Enabled(ctx, tenant, workspace, key)
}

func (c *countingIntegrations) n() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count
}

func pollOnce(t *testing.T) {
	e := newEnv(t)
	a := e.person("A")
	if err := e.fs.PollOnce(ctx, tenant, workspace); err != nil {
		t.Fatal(err)
	}
	if err := e.fake.SetState(a.Ref.ID, tracker.Done); err != nil {
		t.Fatal(err)
	}
	if err := e.fs.PollOnce(ctx, tenant, workspace); err != nil {
		t.Fatal(err)
	}
	e.wantEvents(1)
	// It gave the lease up...
	if _, err := e.mem.TakeLease(ctx, ledger.LeaseParams{Follower: trackerFollower, Holder: "probe", Now: time.Now(), TTL: time.Minute}); err != nil {
		t.Fatalf("the lease was kept: %v", err)
	}
	// ...fails while another holds it...
	if err := e.fs.PollOnce(ctx, tenant, workspace); !errors.Is(err, ledger.ErrLeaseHeld) {
		t.Fatalf("PollOnce: %v, want the lease held", err)
	}
	// ...and reads nothing switched off.
	e.sw.Set(tenant, workspace, "tracker:fake", false)
	before := e.fake.TotalCalls()
	if err := e.fs.PollOnce(ctx, tenant, workspace); !errors.Is(err, follow.ErrSwitchedOff) || e.fake.TotalCalls() != before {
		t.Fatalf("PollOnce switched off: %v after %d requests", err, e.fake.TotalCalls()-before)
	}
}

// A process that published a change and died before saving its snapshots
// reads the change again from the same snapshot; the item meanwhile moved
// (a comment bumped it). The change keeps its id and is published once.
func changeReadAgainAfterMove(t *testing.T) {
	e := newEnv(t)
	a := e.person("A")
	e.start()
	if err := e.fake.Retitle(ctx, a.Ref.ID, "A, renamed"); err != nil {
		t.Fatal(err)
	}
	e.led.FailNextSnapshots(1) // publishes, then dies before the snapshots
	e.poll()
	if n := len(e.events()); n != 1 {
		t.Fatalf("%d events after the first read, want the change once", n)
	}
	e.after(time.Second)
	if err := e.fake.PersonComment(ctx, a.Ref.ID, "bumps updated_at"); err != nil {
		t.Fatal(err)
	}
	e.poll()
	evs := e.events()
	titles := 0
	for _, ev := range evs {
		if ev.Type == follow.TypeItemChanged && e.data(ev).Field == tracker.FieldTitle {
			titles++
		}
	}
	if titles != 1 {
		t.Fatalf("the title change was published %d times (events %d), want once", titles, len(evs))
	}
}

// Vikunja keeps time to the second: a comment made in the second of the
// item's last change, after a poll read that change, doesn't move the item.
// The next read, before the item settled, reads its comments again.
func sameSecondComment(t *testing.T) {
	e := newEnv(t, withFlavour(faketracker.LikeVikunja))
	a := e.person("A")
	e.after(10 * time.Second)
	if err := e.fs.PollOnce(ctx, tenant, workspace); err != nil { // the seeding read
		t.Fatal(err)
	}
	e.after(200 * time.Millisecond)
	if err := e.fake.Retitle(ctx, a.Ref.ID, "A2"); err != nil {
		t.Fatal(err)
	}
	e.after(200 * time.Millisecond)
	if err := e.fs.PollOnce(ctx, tenant, workspace); err != nil {
		t.Fatal(err)
	}
	e.wantEvents(1)
	e.after(200 * time.Millisecond)
	before, _, _ := e.fake.Snapshot(a.Ref.ID)
	if err := e.fake.PersonComment(ctx, a.Ref.ID, "same second"); err != nil {
		t.Fatal(err)
	}
	if after, _, _ := e.fake.Snapshot(a.Ref.ID); !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Fatalf("the comment moved the item from %s to %s: the case is not set up", before.UpdatedAt, after.UpdatedAt)
	}
	e.after(3 * time.Second)
	if err := e.fs.PollOnce(ctx, tenant, workspace); err != nil {
		t.Fatal(err)
	}
	evs := e.wantEvents(2)
	if evs[1].Type != follow.TypeItemCommented {
		t.Fatalf("second event %s, want the comment", evs[1].Type)
	}
	// Settled, the item costs no more comment reads.
	e.after(time.Minute)
	if err := e.fs.PollOnce(ctx, tenant, workspace); err != nil {
		t.Fatal(err)
	}
	calls := e.fake.Calls(faketracker.MethodComments)
	e.after(time.Minute)
	if err := e.fs.PollOnce(ctx, tenant, workspace); err != nil {
		t.Fatal(err)
	}
	if got := e.fake.Calls(faketracker.MethodComments); got != calls {
		t.Fatalf("a settled item's comments were read again (%d, then %d)", calls, got)
	}
}

func olderVersionReadLate(t *testing.T) {
	e := newEnv(t)
	a := e.person("A")
	old, _, _ := e.fake.Snapshot(a.Ref.ID)
	e.start()
	if err := e.fake.Retitle(ctx, a.Ref.ID, "A2"); err != nil {
		t.Fatal(err)
	}
	e.poll()
	e.wantEvents(1)
	// The next listing also answers the item as it was before.
	e.fake.AnswerStaleOnce(old)
	e.poll()
	e.wantEvents(1)
}

// A service sets ReopenAfter: a follower stopped by a failure that passes
// reads again from its cursor, and what it had not published is published.
func reopenedAfter(t *testing.T) {
	e := newEnv(t, withOptions(follow.Options{SweepMin: -1, ReopenAfter: time.Minute}))
	a := e.person("A")
	e.start()
	if err := e.fake.Retitle(ctx, a.Ref.ID, "A2"); err != nil {
		t.Fatal(err)
	}
	e.log.Fail(errDisk, nil)
	e.poll()
	if err := e.fs.Stopped(tenant, workspace); !errors.Is(err, follow.ErrStopped) {
		t.Fatalf("Stopped: %v, want a stop", err)
	}
	e.log.Fail(nil, nil) // the disk is back
	e.after(30 * time.Second)
	e.wantEvents(0) // still stopped: ReopenAfter has not passed
	e.after(31 * time.Second)
	e.wantEvents(1)
	if err := e.fs.Stopped(tenant, workspace); err != nil {
		t.Fatalf("still stopped: %v", err)
	}
}

// records keeps what a follower logs, for a test to read.
type records struct {
	mu   sync.Mutex
	list []slog.Record
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, rec)
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

func (r *records) count(level slog.Level, msg string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, rec := range r.list {
		if rec.Level == level && rec.Message == msg {
			n++
		}
	}
	return n
}

func logsLateAndRecovered(t *testing.T) {
	logs := &records{}
	e := newEnv(t, withLogger(slog.New(logs)))
	e.start()
	if n := logs.count(slog.LevelInfo, "tracker follower took its lease"); n != 1 {
		t.Fatalf("the lease taken was logged %d times at info, want once", n)
	}
	if n := logs.count(slog.LevelDebug, "tracker poll"); n == 0 {
		t.Fatal("no poll was logged at debug")
	}
	// The tracker stops answering: no poll completes for three intervals.
	e.fake.FailNext(faketracker.MethodItems, 6, tracker.ErrUnavailable)
	e.after(2 * follow.DefaultPollEvery)
	if n := logs.count(slog.LevelWarn, "tracker follower completed no poll in three intervals"); n != 0 {
		t.Fatalf("late after two intervals: logged %d times", n)
	}
	e.after(2 * follow.DefaultPollEvery)
	if n := logs.count(slog.LevelWarn, "tracker follower completed no poll in three intervals"); n != 1 {
		t.Fatalf("a follower late three intervals was warned of %d times, want once", n)
	}
	st, err := e.fs.Status(ctx)
	if err != nil || !st[0].Late || st[0].LastError == "" {
		t.Fatalf("status %+v, %v: want late, with its last failure", st, err)
	}
	e.after(4 * follow.DefaultPollEvery)
	if n := logs.count(slog.LevelInfo, "tracker follower polls again"); n != 1 {
		t.Fatalf("the recovery was logged %d times at info, want once", n)
	}
	if st, _ := e.fs.Status(ctx); st[0].Late {
		t.Fatalf("status %+v: still late after polling again", st[0])
	}
}

// listingProjectComments is an env over a fake that lists the project's
// comments in one read.
func listingProjectComments(t *testing.T) *env {
	fakeOptions = []faketracker.Option{faketracker.WithProjectComments()}
	defer func() { fakeOptions = nil }()
	return newEnv(t)
}

// commentOn has a person comment on each item, body "on <id>" unless one
// is given.
func (e *env) commentOn(body string, ids ...string) {
	e.t.Helper()
	for _, id := range ids {
		if err := e.fake.PersonComment(ctx, id, cmp.Or(body, "on "+id)); err != nil {
			e.t.Fatal(err)
		}
	}
}

// pollReading polls once and wants it to have read the project's comments
// project times and items' comments items times.
func (e *env) pollReading(project, items int) {
	e.t.Helper()
	e.fake.ResetCalls()
	e.poll()
	if p, c := e.fake.Calls(faketracker.MethodProjectComments), e.fake.Calls(faketracker.MethodComments); p != project || c != items {
		e.t.Fatalf("%d reads of the project's comments and %d of items', want %d and %d", p, c, project, items)
	}
}

// TestProjectCommentsInOneRead: where the tracker lists the project's
// comments in one read, a poll with several changed items reads their
// comments in one request, the items relayr just filed included, and
// publishes each person's comment once, an item changed for the first
// time in an hour included; a poll with one such item reads its own.
func TestProjectCommentsInOneRead(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := listingProjectComments(t)
		old := e.person("old")
		e.after(time.Hour)
		var ids []string
		for i := range 3 {
			ids = append(ids, e.person(fmt.Sprintf("P%d", i)).Ref.ID)
		}
		e.start()
		e.wantEvents(0) // the seeding read
		for i := range 3 {
			ids = append(ids, e.ensure(fmt.Sprintf("k%d", i), tracker.Draft{Title: "filed"}).Ref.ID)
		}
		e.commentOn("", ids...)
		e.pollReading(1, 0)
		for i, ev := range e.wantEvents(len(ids)) {
			if d := e.data(ev); ev.Type != follow.TypeItemCommented || d.Comment == nil || d.Comment.Body != "on "+d.Item.ID {
				t.Fatalf("event %d: %s %s, want the comment on its item", i, ev.Type, ev.Data)
			}
		}
		e.poll()
		e.wantEvents(len(ids))

		// The old item, changed now for the first time in an hour, and one
		// read in the last poll: the polls before read every comment made
		// before this one's start, so one read from there holds both.
		e.commentOn("late", old.Ref.ID, ids[0])
		e.pollReading(1, 0)
		e.wantEvents(len(ids) + 2)
		// One item alone: a read of the project's is no cheaper.
		e.commentOn("alone", old.Ref.ID)
		e.pollReading(0, 1)
		e.wantEvents(len(ids) + 3)
	})
}

// TestProjectCommentsTooManyForOneReadAreReadItemByItem: where the
// project's comments would take more requests than the items' own reads,
// the follower reads each item's, and publishes every comment once.
func TestProjectCommentsTooManyForOneReadAreReadItemByItem(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := listingProjectComments(t)
		a, b := e.person("A"), e.person("B")
		e.start()
		for i := range faketracker.PageSize {
			e.commentOn(fmt.Sprint("c", i), a.Ref.ID, b.Ref.ID)
		}
		e.pollReading(1, 2) // two pages to read: one spent to learn so
		e.wantEvents(2 * faketracker.PageSize)
	})
}

// TestProjectCommentsOfAProjectEmptyAtItsFirstRead: a binding seeded on an
// empty project polls from the project's beginning (no cursor to look back
// from), and still reads the comments of the items filed since in one
// request, from their creation.
func TestProjectCommentsOfAProjectEmptyAtItsFirstRead(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := listingProjectComments(t)
		e.start()
		if c := e.cursor(); !c.Seeded || !c.UpdatedAt.IsZero() {
			t.Fatalf("cursor %+v after reading an empty project, want seeded at no item", c)
		}
		var ids []string
		for i := range 40 {
			ids = append(ids, e.ensure(fmt.Sprintf("k%d", i), tracker.Draft{Title: "filed"}).Ref.ID)
		}
		e.commentOn("", ids[:3]...)
		e.pollReading(1, 0)
		e.wantEvents(3)
	})
}

// TestAPollWhoseReadsWaitForTheMinuteIsDeferred: a poll whose comment
// reads wait for room in the key's minute is one the budget deferred, in
// the log's line and the metric, though its first request went at once.
func TestAPollWhoseReadsWaitForTheMinuteIsDeferred(t *testing.T) {
	bubble(t, func(t *testing.T) {
		var logged strings.Builder
		var mu sync.Mutex
		e := newEnv(t, withBudget(10), withLogger(slog.New(slog.NewTextHandler(lockedWriter{&mu, &logged}, &slog.HandlerOptions{Level: slog.LevelDebug}))))
		var ids []string
		for i := range 12 {
			ids = append(ids, e.person(fmt.Sprintf("P%d", i)).Ref.ID)
		}
		e.start()
		e.after(time.Minute) // the seeding read's minute is past
		e.commentOn("", ids...)
		e.after(3 * time.Minute)
		e.wantEvents(len(ids))
		mu.Lock()
		defer mu.Unlock()
		for _, line := range strings.Split(logged.String(), "\n") {
			if strings.Contains(line, `msg="tracker poll"`) && strings.Contains(line, "published=12") {
				if strings.Contains(line, "waited=0s") {
					t.Fatalf("the poll that read 12 comments on a minute of 10 says it waited for nothing: %s", line)
				}
				return
			}
		}
		t.Fatalf("no poll published the 12 comments:\n%s", logged.String())
	})
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestEveryRequestOfTheFollowersIsCountedAsARead: the polls, their comment
// reads and the sweep's requests are each one metrics.Reads, so writes and
// reads together are every request a replica sends a tracker.
func TestEveryRequestOfTheFollowersIsCountedAsARead(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := newEnv(t)
		a := e.person("A")
		e.fake.ResetCalls()
		e.start()
		e.commentOn("", a.Ref.ID)
		e.poll()
		e.wantEvents(1)
		if got, want := e.m.Get(metrics.Reads), float64(e.fake.TotalCalls()); got != want || got == 0 {
			t.Fatalf("%v reads counted, the fake answered %v", got, want)
		}
	})
}
