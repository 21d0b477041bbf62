package follow_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/faketracker"
	"github.com/relayr-go/relayr/core/follow"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
)

func TestReportedDeletions(t *testing.T) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"AVerifiedDeletionIsPublishedAtOnceAfterOneRead", reportedDeletionPublished},
		{"AForgedDeliveryPublishesNothing", forgedDeletion},
		{"AnItemThatStillExistsIsNotRemoved", deletionOfALiveItem},
		{"AnotherProjectsItemIsNotRemoved", deletionOfAnotherProjectsItem},
		{"AReplayedDeliveryPublishesNothingNewAndAsksNothing", replayedDeletion},
		{"AFailedReadIsCheckedAgainAtTheNextPoll", deletionCheckRetried},
		{"AnItemRelayrFiledThatNoPollReadYetIsRemovedToo", deletionBeforeAnyRead},
		{"ACopyCarryingAnItemsKeyDeletedLeavesTheKeyAlone", deletionOfACopy},
	} {
		t.Run(c.name, func(t *testing.T) { bubble(t, c.run) })
	}
}

// deliver hands the followers a delivery reporting id deleted from project.
func (e *env) deliver(sec, project, id string) error {
	h, body := faketracker.DeletionDelivery(sec, project, id)
	return e.nudge(h, body)
}

// nudge takes a webhook delivery along the HTTP route's path (adapters/
// httpapi's webhook, ADR-0036): the signature checked with the credentials
// the follower last asked for, only then the switch, then the followers'
// Wake. A delivery no switched-on binding of the project verifies is
// refused (the route's 401) with an error matching tracker.ErrUnauthorized.
func (e *env) nudge(h http.Header, body []byte) error {
	tr, creds, ok := e.conns.Cached(e.b)
	if !ok || creds.WebhookSecret == "" {
		return tracker.ErrUnauthorized
	}
	n, err := tr.Nudge(creds.WebhookSecret, h, body)
	if err != nil || tr.Project() != n.Project || !e.cfg.Integrations.Enabled(ctx, tenant, workspace, e.b.Integration()) {
		return tracker.ErrUnauthorized
	}
	e.fs.Wake(e.b, n)
	return nil
}

func (e *env) deleteItem(id string) {
	e.t.Helper()
	if err := e.fake.Delete(ctx, id); err != nil {
		e.t.Fatal(err)
	}
}

// A person's copy of a filed item, marker and all, is deleted: its removal
// names no key, and the original's key still files its item.
func deletionOfACopy(t *testing.T) {
	e := newEnv(t, withFlavour(faketracker.LikeVikunja))
	orig := e.ensure("mine", tracker.Draft{Title: "filed by a run"})
	copied := e.person("a copy")
	if err := e.fake.WriteKey(copied.Ref.ID, "mine"); err != nil {
		t.Fatal(err)
	}
	e.start()
	e.wantEvents(0)
	e.deleteItem(copied.Ref.ID)
	if err := e.deliver(secret, "proj", copied.Ref.ID); err != nil {
		t.Fatal(err)
	}
	e.after(follow.DefaultDebounce)
	evs := e.wantEvents(1)
	if d := e.data(evs[0]); evs[0].Type != follow.TypeItemRemoved || d.Item.ID != copied.Ref.ID || d.Item.Key != "" {
		t.Fatalf("%s %s, want the copy removed with no key", evs[0].Type, evs[0].Data)
	}
	if row := e.row("mine"); row.Deleted || row.Ref.ID != orig.Ref.ID {
		t.Fatalf("the original's key %+v, want it recorded and not deleted", row)
	}
	r, err := e.w.EnsureItem(ctx, writes.EnsureParams{Tenant: tenant, Workspace: workspace, Key: "mine", Draft: tracker.Draft{Title: "again"}})
	if err != nil || r.Item.Ref.ID != orig.Ref.ID {
		t.Fatalf("filing the original's key again: %+v, %v; want the original", r.Item.Ref, err)
	}
}

func reportedDeletionPublished(t *testing.T) {
	e := newEnv(t, withFlavour(faketracker.LikeVikunja))
	mine := e.ensure("mine", tracker.Draft{Title: "filed by a run"})
	theirs := e.person("filed by a person")
	e.start()
	e.wantEvents(0)
	e.after(follow.DefaultDebounce) // a quiet spell: no poll began within the debounce
	e.deleteItem(mine.Ref.ID)
	e.deleteItem(theirs.Ref.ID)
	items := e.fake.Calls(faketracker.MethodItem)
	finds := e.fake.Calls(faketracker.MethodFind)
	at := time.Now()
	if err := e.deliver(secret, "proj", mine.Ref.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.deliver(secret, "proj", theirs.Ref.ID); err != nil {
		t.Fatal(err)
	}
	// The first delivery reads at once; the second joins that poll, or,
	// had the poll begun before it came, the burst's one a debounce on.
	e.after(follow.DefaultDebounce)
	evs := e.wantEvents(2)
	for i, ev := range evs {
		d := e.data(ev)
		if ev.Type != follow.TypeItemRemoved || d.Deleted == nil || !*d.Deleted {
			t.Fatalf("%s %s, want a removal with deleted: true", ev.Type, ev.Data)
		}
		if i == 0 && !ev.At.Equal(at) {
			t.Fatalf("the first published at %v, want at once after a quiet spell (%v)", ev.At, at)
		}
		if ev.At.After(at.Add(follow.DefaultDebounce)) {
			t.Fatalf("published at %v, want within the debounce of the deliveries (%v)", ev.At, at)
		}
	}
	if n := e.fake.Calls(faketracker.MethodItem) - items; n != 2 {
		t.Fatalf("%d item reads for two deletions, want one each", n)
	}
	if n := e.fake.Calls(faketracker.MethodFind) - finds; n != 0 {
		t.Fatalf("%d lookups by key, want none: the tracker said deleted and the read confirmed it", n)
	}
	// The deleted key files nothing again, and the snapshots are gone.
	if !e.row("mine").Deleted {
		t.Fatal("the deleted item's key is not marked")
	}
	_, err := e.w.EnsureItem(ctx, writes.EnsureParams{Tenant: tenant, Workspace: workspace, Key: "mine", Draft: tracker.Draft{Title: "again"}})
	if !errors.Is(err, writes.ErrDeleted) {
		t.Fatalf("filing the deleted key again: %v, want deleted", err)
	}
	if _, err := e.mem.Snapshot(ctx, tenant, workspace, theirs.Ref.ID); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("the removed item's snapshot: %v, want it forgotten", err)
	}
	// The sweep finds nothing more to remove.
	e.after(follow.DefaultSweepEvery)
	e.wantEvents(2)
}

func forgedDeletion(t *testing.T) {
	e := newEnv(t, withFlavour(faketracker.LikeVikunja))
	a := e.person("A")
	e.start()
	e.deleteItem(a.Ref.ID)
	items := e.fake.Calls(faketracker.MethodItem)
	if err := e.deliver("not the secret", "proj", a.Ref.ID); !errors.Is(err, tracker.ErrUnauthorized) {
		t.Fatalf("a forged delivery: %v, want unauthorized", err)
	}
	e.after(time.Hour)
	e.wantEvents(0)
	if n := e.fake.Calls(faketracker.MethodItem) - items; n != 0 {
		t.Fatalf("a forged delivery cost %d reads", n)
	}
}

func deletionOfALiveItem(t *testing.T) {
	e := newEnv(t, withFlavour(faketracker.LikeVikunja))
	a := e.ensure("a", tracker.Draft{Title: "A"})
	e.start()
	items := e.fake.Calls(faketracker.MethodItem)
	if err := e.deliver(secret, "proj", a.Ref.ID); err != nil {
		t.Fatal(err)
	}
	e.after(time.Hour)
	e.wantEvents(0)
	if n := e.fake.Calls(faketracker.MethodItem) - items; n != 1 {
		t.Fatalf("%d reads of the item, want the one that found it alive", n)
	}
	if e.row("a").Deleted {
		t.Fatal("a live item's key was marked deleted")
	}
	if _, err := e.mem.Snapshot(ctx, tenant, workspace, a.Ref.ID); err != nil {
		t.Fatalf("the live item's snapshot: %v", err)
	}
}

func deletionOfAnotherProjectsItem(t *testing.T) {
	e := newEnv(t, withFlavour(faketracker.LikeVikunja))
	a := e.person("A")
	e.start()
	e.deleteItem(a.Ref.ID)
	items := e.fake.Calls(faketracker.MethodItem)
	// A delivery about another project wakes nobody here.
	if err := e.deliver(secret, "another", a.Ref.ID); !errors.Is(err, tracker.ErrUnauthorized) {
		t.Fatalf("a delivery about another project: %v, want it refused", err)
	}
	// One naming this project and an item this binding never read (another
	// project's id) reads nothing and publishes nothing.
	if err := e.deliver(secret, "proj", "elsewhere-7"); err != nil {
		t.Fatal(err)
	}
	e.after(time.Hour)
	e.wantEvents(0)
	if n := e.fake.Calls(faketracker.MethodItem) - items; n != 0 {
		t.Fatalf("%d reads for items this binding never read", n)
	}
}

func replayedDeletion(t *testing.T) {
	e := newEnv(t, withFlavour(faketracker.LikeVikunja))
	a := e.person("A")
	e.start()
	e.deleteItem(a.Ref.ID)
	h, body := faketracker.DeletionDelivery(secret, "proj", a.Ref.ID)
	if err := e.nudge(h, body); err != nil {
		t.Fatal(err)
	}
	e.after(time.Minute)
	e.wantEvents(1)
	items := e.fake.Calls(faketracker.MethodItem)
	if err := e.nudge(h, body); err != nil {
		t.Fatal(err)
	}
	e.after(time.Minute)
	e.wantEvents(1)
	if n := e.fake.Calls(faketracker.MethodItem) - items; n != 0 {
		t.Fatalf("a replay cost %d reads", n)
	}
}

func deletionCheckRetried(t *testing.T) {
	e := newEnv(t, withFlavour(faketracker.LikeVikunja))
	a := e.person("A")
	e.start()
	e.deleteItem(a.Ref.ID)
	e.fake.FailNext(faketracker.MethodItem, 1, tracker.ErrUnavailable)
	if err := e.deliver(secret, "proj", a.Ref.ID); err != nil {
		t.Fatal(err)
	}
	e.after(follow.DefaultDebounce)
	e.wantEvents(0)
	e.poll()
	evs := e.wantEvents(1)
	if d := e.data(evs[0]); d.Deleted == nil || !*d.Deleted {
		t.Fatalf("%s, want deleted: true", evs[0].Data)
	}
}

func deletionBeforeAnyRead(t *testing.T) {
	e := newEnv(t, withFlavour(faketracker.LikeVikunja))
	e.start()
	// Filed and deleted between two polls: no poll read it, but its claim
	// recorded it.
	a := e.ensure("a", tracker.Draft{Title: "A"})
	e.deleteItem(a.Ref.ID)
	h, body := faketracker.DeletionDelivery(secret, "proj", a.Ref.ID)
	if err := e.nudge(h, body); err != nil {
		t.Fatal(err)
	}
	e.after(follow.DefaultDebounce)
	evs := e.wantEvents(1)
	if d := e.data(evs[0]); evs[0].Type != follow.TypeItemRemoved || d.Deleted == nil || !*d.Deleted || d.Item.Key != "a" || d.Item.Name != a.Ref.Name {
		t.Fatalf("%s %s, want a's removal with deleted: true, its key and name", evs[0].Type, evs[0].Data)
	}
	if evs[0].Correlation != "run-a" {
		t.Fatalf("correlation %q, want the run's", evs[0].Correlation)
	}
	if !e.row("a").Deleted {
		t.Fatal("the deleted item's key is not marked")
	}
	// A replay finds the key marked and asks nothing.
	items := e.fake.Calls(faketracker.MethodItem)
	if err := e.nudge(h, body); err != nil {
		t.Fatal(err)
	}
	e.after(time.Minute)
	e.wantEvents(1)
	if n := e.fake.Calls(faketracker.MethodItem) - items; n != 0 {
		t.Fatalf("a replay cost %d reads", n)
	}
}
