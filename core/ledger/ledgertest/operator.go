package ledgertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/ledger"
)

// OperatorStore is a store the Operator contract runs on: the ledger, the
// event log it reads the latest events of, and the operator's queries.
type OperatorStore interface {
	ledger.Ledger
	eventlog.Log
	ledger.Operator
}

// RunOperator runs the Operator port's contract against stores made by
// newStore, one per subtest.
func RunOperator(t *testing.T, newStore func(t *testing.T) OperatorStore) {
	t.Helper()
	for _, c := range operatorCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each case has a store of its own
			c.run(t, newStore(t))
		})
	}
}

type operatorCase struct {
	name string
	run  func(t *testing.T, s OperatorStore)
}

var operatorCases = []operatorCase{
	{"LatestEventsAreNewestFirstAndFilteredByType", latestEvents},
	{"UnrecordedClaimsAreOldestFirstAndOneTenants", unrecorded},
	{"DeletedKeysAreListedByKey", deletedKeys},
	{"ItemsAtTheCapAreThoseTheCapRefuses", atCap},
	{"ADeadLetterIsResolvedOnce", resolveOnce},
	{"RecentDeadLettersAreNewestFirstAndAtMostRows", recentDeadLetters},
	{"ResolvingWhatDoesNotExistIsNotFound", resolveMissing},
	{"ADeadLetterIsLookedUpByItsFollowerAndID", lookupDeadLetter},
	{"BadQueriesAreInvalidAndChangeNothing", badQueries},
	{"ACancelledResolutionChangesNothing", cancelledResolution},
}

func appendEvent(t *testing.T, s OperatorStore, tenant, ws, id, typ string, at time.Time) {
	t.Helper()
	data, _ := json.Marshal(map[string]string{"id": id})
	_, _, err := s.Append(t.Context(), eventlog.AppendParams{Publisher: eventlog.TrackerPublisher, Event: eventlog.Event{
		ID: id, Tenant: tenant, Workspace: ws, Type: typ, Correlation: "run-" + id, Data: data, At: at,
	}})
	mustNil(t, err)
}

func ids(es []eventlog.Event) string {
	var out []string
	for _, e := range es {
		out = append(out, e.ID)
	}
	return strings.Join(out, ",")
}

func latestEvents(t *testing.T, s OperatorStore) {
	ctx := t.Context()
	for i, typ := range []string{"tracker:item_created", "tracker:item_changed", "tracker:item_commented", "tracker:item_changed", "tracker:item_changed"} {
		appendEvent(t, s, "acme", "ops", fmt.Sprintf("e%d", i+1), typ, t0.Add(time.Duration(i)*time.Second))
	}
	appendEvent(t, s, "acme", "infra", "x1", "tracker:item_changed", t0)
	appendEvent(t, s, "globex", "ops", "g1", "tracker:item_changed", t0)

	got, err := s.LatestEvents(ctx, ledger.EventQuery{Tenant: "acme", Workspace: "ops", Limit: 3})
	mustNil(t, err)
	if ids(got) != "e5,e4,e3" {
		t.Fatalf("latest 3: %s, want e5,e4,e3", ids(got))
	}
	if got[0].Seq != 5 || got[0].Correlation != "run-e5" || !got[0].At.Equal(t0.Add(4*time.Second)) ||
		got[0].Tenant != "acme" || got[0].Workspace != "ops" || string(got[0].Data) != `{"id":"e5"}` {
		t.Fatalf("the newest event did not round-trip: %+v", got[0])
	}
	got, err = s.LatestEvents(ctx, ledger.EventQuery{Tenant: "acme", Workspace: "ops", Type: "tracker:item_changed", Limit: 10})
	mustNil(t, err)
	if ids(got) != "e5,e4,e2" {
		t.Fatalf("changes: %s, want e5,e4,e2", ids(got))
	}
	got, err = s.LatestEvents(ctx, ledger.EventQuery{Tenant: "acme", Workspace: "ops", Type: "tracker:item_removed", Limit: 10})
	mustNil(t, err)
	if len(got) != 0 {
		t.Fatalf("a type never appended answered %s", ids(got))
	}
	got, err = s.LatestEvents(ctx, ledger.EventQuery{Tenant: "globex", Workspace: "ops", Limit: 10})
	mustNil(t, err)
	if ids(got) != "g1" {
		t.Fatalf("another tenant's workspace answered %s", ids(got))
	}
	got, err = s.LatestEvents(ctx, ledger.EventQuery{Tenant: "acme", Workspace: "empty", Limit: 10})
	mustNil(t, err)
	if len(got) != 0 {
		t.Fatalf("an empty workspace answered %s", ids(got))
	}
}

func unrecorded(t *testing.T, s OperatorStore) {
	ctx := t.Context()
	claim(t, s, key("late"), "run-2", t0.Add(2*time.Second))
	early, _ := claim(t, s, key("early"), "run-1", t0.Add(time.Second))
	done, _ := claim(t, s, key("done"), "", t0)
	record(t, s, done, ref("item-1"), t0)
	mustNil(t, s.MarkDeleted(ctx, key("gone")))
	other := key("other")
	other.Tenant = "globex"
	claim(t, s, other, "", t0)

	got, err := s.Unrecorded(ctx, "acme", 10)
	mustNil(t, err)
	if len(got) != 2 || got[0].Key != early.Key || got[1].Key.Key != "late" {
		t.Fatalf("unrecorded %+v, want early then late", got)
	}
	if !got[0].ClaimedAt.Equal(t0.Add(time.Second)) || got[0].Correlation != "run-1" || got[0].Recorded || got[0].Deleted {
		t.Fatalf("the oldest claim did not round-trip: %+v", got[0])
	}
	got, err = s.Unrecorded(ctx, "acme", 1)
	mustNil(t, err)
	if len(got) != 1 || got[0].Key.Key != "early" {
		t.Fatalf("one row: %+v", got)
	}
	got, err = s.Unrecorded(ctx, "initech", 10)
	mustNil(t, err)
	if len(got) != 0 {
		t.Fatalf("a tenant with no claims answered %+v", got)
	}
}

func deletedKeys(t *testing.T, s OperatorStore) {
	ctx := t.Context()
	c, _ := claim(t, s, key("b"), "run-b", t0)
	record(t, s, c, ref("item-b"), t0)
	mustNil(t, s.MarkDeleted(ctx, key("b")))
	mustNil(t, s.MarkDeleted(ctx, key("a")))
	infra := key("z")
	infra.Workspace = "infra"
	mustNil(t, s.MarkDeleted(ctx, infra))
	claim(t, s, key("alive"), "", t0)
	other := key("c")
	other.Tenant = "globex"
	mustNil(t, s.MarkDeleted(ctx, other))

	got, err := s.DeletedKeys(ctx, "acme", 10)
	mustNil(t, err)
	var keys []string
	for _, c := range got {
		if !c.Deleted {
			t.Fatalf("%s answered, not deleted", c.Key.Key)
		}
		keys = append(keys, c.Workspace+"/"+c.Key.Key)
	}
	if strings.Join(keys, ",") != "infra/z,ops/a,ops/b" {
		t.Fatalf("deleted keys %v, want infra/z, ops/a, ops/b", keys)
	}
	if got[2].Ref.ID != "item-b" || got[2].Correlation != "run-b" {
		t.Fatalf("a recorded key marked deleted lost its item: %+v", got[2])
	}
}

func atCap(t *testing.T, s OperatorStore) {
	ctx := t.Context()
	for i := range capLimit {
		_, err := countWrite(s, ctx, "full", t0.Add(time.Duration(i)*time.Second))
		mustNil(t, err)
	}
	for i := range capLimit - 1 {
		_, err := countWrite(s, ctx, "short", t0.Add(time.Duration(i)*time.Second))
		mustNil(t, err)
	}
	_, err := s.CountWrite(ctx, ledger.WriteParams{Tenant: "globex", Workspace: "ops", ItemID: "full", Now: t0, Window: capWindow, Limit: 1})
	mustNil(t, err)

	now := t0.Add(time.Minute)
	q := ledger.CapQuery{Tenant: "acme", Now: now, Window: capWindow, Limit: capLimit, Rows: 10}
	got, err := s.AtCap(ctx, q)
	mustNil(t, err)
	if len(got) != 1 || got[0].ItemID != "full" || got[0].Workspace != "ops" || got[0].Writes != capLimit || !got[0].Oldest.Equal(t0) {
		t.Fatalf("at the cap %+v, want item full with %d writes from %s", got, capLimit, t0)
	}
	// What AtCap answers is what CountWrite refuses.
	if _, err := countWrite(s, ctx, "full", now); err == nil {
		t.Fatal("an item AtCap answered took a write")
	}
	// The oldest write leaves the window an hour after it was made: the
	// item is no longer at the cap.
	q.Now = t0.Add(capWindow)
	got, err = s.AtCap(ctx, q)
	mustNil(t, err)
	if len(got) != 0 {
		t.Fatalf("once the oldest write left the window, at the cap: %+v", got)
	}
}

// recentDeadLetters: the page reads a follower's latest dead letters, not
// its whole backlog; newest first, the reverse of DeadLetters' order.
func recentDeadLetters(t *testing.T, s OperatorStore) {
	ctx := t.Context()
	f := follower(ledger.LogFollower)
	// Kept out of order, two at one instant (kept order breaks the tie),
	// one with no time (oldest of all), and one of another follower.
	for _, d := range []ledger.DeadLetter{
		deadLetter(ledger.LogFollower, "b", t0.Add(2*time.Minute)),
		deadLetter(ledger.LogFollower, "a", t0.Add(time.Minute)),
		deadLetter(ledger.LogFollower, "c1", t0.Add(3*time.Minute)),
		deadLetter(ledger.LogFollower, "c2", t0.Add(3*time.Minute)),
		deadLetter(ledger.LogFollower, "untimed", time.Time{}),
		deadLetter(ledger.TrackerFollower, "other", t0.Add(time.Hour)),
	} {
		_, err := s.DeadLetter(ctx, d)
		mustNil(t, err)
	}
	all, err := s.DeadLetters(ctx, f)
	mustNil(t, err)
	got, err := s.RecentDeadLetters(ctx, f, ledger.MaxOperatorRows)
	mustNil(t, err)
	if len(got) != len(all) || len(got) != 5 {
		t.Fatalf("%d recent of %d, want all 5 of the follower's", len(got), len(all))
	}
	for i := range got {
		if got[i].ID != all[len(all)-1-i].ID {
			t.Fatalf("recent %v, want DeadLetters' order reversed (%v)", letterIDs(got), letterIDs(all))
		}
	}
	if got[0].ID != "c2" || got[4].ID != "untimed" || string(got[0].Event) == "" {
		t.Fatalf("recent %v, want c2 first and the untimed one last, with their events", letterIDs(got))
	}
	two, err := s.RecentDeadLetters(ctx, f, 2)
	mustNil(t, err)
	if len(two) != 2 || two[0].ID != "c2" || two[1].ID != "c1" {
		t.Fatalf("the 2 most recent: %v, want c2, c1", letterIDs(two))
	}
	for _, rows := range []int{0, ledger.MaxOperatorRows + 1} {
		_, err := s.RecentDeadLetters(ctx, f, rows)
		mustIs(t, err, ledger.ErrInvalid)
	}
}

func letterIDs(ds []ledger.DeadLetter) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.ID)
	}
	return out
}

func resolveOnce(t *testing.T, s OperatorStore) {
	ctx := t.Context()
	d := deadLetter(ledger.LogFollower, "7", t0)
	_, err := s.DeadLetter(ctx, d)
	mustNil(t, err)
	_, err = s.DeadLetter(ctx, deadLetter(ledger.TrackerFollower, "7", t0))
	mustNil(t, err)

	list, err := s.DeadLetters(ctx, d.Follower)
	mustNil(t, err)
	if len(list) != 1 || list[0].Resolution != "" || !list[0].ResolvedAt.IsZero() {
		t.Fatalf("a new dead letter is not open: %+v", list)
	}
	at := t0.Add(time.Minute)
	got, changed, err := s.ResolveDeadLetter(ctx, d.Follower, "7", ledger.Replayed, at)
	mustNil(t, err)
	if !changed || got.Resolution != ledger.Replayed || !got.ResolvedAt.Equal(at) || got.Reason != d.Reason || string(got.Event) != string(d.Event) {
		t.Fatalf("the first resolution: changed %v, %+v", changed, got)
	}
	// A second click, either action, changes nothing.
	for _, r := range []ledger.Resolution{ledger.Replayed, ledger.Skipped} {
		got, changed, err = s.ResolveDeadLetter(ctx, d.Follower, "7", r, at.Add(time.Hour))
		mustNil(t, err)
		if changed || got.Resolution != ledger.Replayed || !got.ResolvedAt.Equal(at) {
			t.Fatalf("a second resolution (%s) changed it: %v %+v", r, changed, got)
		}
	}
	list, err = s.DeadLetters(ctx, d.Follower)
	mustNil(t, err)
	if len(list) != 1 || list[0].Resolution != ledger.Replayed || !list[0].ResolvedAt.Equal(at) {
		t.Fatalf("dead letters after the resolution %+v", list)
	}
	// The tracker follower's dead letter of the same id is its own.
	tl, err := s.DeadLetters(ctx, follower(ledger.TrackerFollower))
	mustNil(t, err)
	if len(tl) != 1 || tl[0].Resolution != "" {
		t.Fatalf("the tracker follower's dead letter was resolved with the log follower's: %+v", tl)
	}
	got, changed, err = s.ResolveDeadLetter(ctx, follower(ledger.TrackerFollower), "7", ledger.Skipped, at)
	mustNil(t, err)
	if !changed || got.Resolution != ledger.Skipped {
		t.Fatalf("skipping: %v %+v", changed, got)
	}
}

func resolveMissing(t *testing.T, s OperatorStore) {
	ctx := t.Context()
	_, _, err := s.ResolveDeadLetter(ctx, follower(ledger.LogFollower), "1", ledger.Skipped, t0)
	mustIs(t, err, ledger.ErrNotFound)
	_, err = s.DeadLetter(ctx, deadLetter(ledger.LogFollower, "1", t0))
	mustNil(t, err)
	_, _, err = s.ResolveDeadLetter(ctx, follower(ledger.LogFollower), "2", ledger.Skipped, t0)
	mustIs(t, err, ledger.ErrNotFound)
	other := follower(ledger.LogFollower)
	other.Tenant = "globex"
	_, _, err = s.ResolveDeadLetter(ctx, other, "1", ledger.Skipped, t0)
	mustIs(t, err, ledger.ErrNotFound)
}

// lookupDeadLetter: one dead letter read by its follower and id, as it
// stands (its event, reason and resolution), and no other follower's.
func lookupDeadLetter(t *testing.T, s OperatorStore) {
	ctx := t.Context()
	f := follower(ledger.LogFollower)
	for _, d := range []ledger.DeadLetter{
		deadLetter(ledger.LogFollower, "a", t0),
		deadLetter(ledger.LogFollower, "b", t0.Add(time.Minute)),
		deadLetter(ledger.TrackerFollower, "c", t0),
	} {
		_, err := s.DeadLetter(ctx, d)
		mustNil(t, err)
	}
	want := deadLetter(ledger.LogFollower, "b", t0.Add(time.Minute))
	got, err := s.LookupDeadLetter(ctx, f, "b")
	mustNil(t, err)
	if got.ID != "b" || got.Follower != f || string(got.Event) != string(want.Event) || got.Reason != want.Reason ||
		!got.At.Equal(want.At) || got.Resolution != "" {
		t.Fatalf("looked up %+v, want %+v", got, want)
	}
	at := t0.Add(time.Hour)
	_, _, err = s.ResolveDeadLetter(ctx, f, "b", ledger.Skipped, at)
	mustNil(t, err)
	got, err = s.LookupDeadLetter(ctx, f, "b")
	mustNil(t, err)
	if got.Resolution != ledger.Skipped || !got.ResolvedAt.Equal(at) {
		t.Fatalf("looked up after its resolution: %+v", got)
	}
	_, err = s.LookupDeadLetter(ctx, f, "c") // the tracker follower's
	mustIs(t, err, ledger.ErrNotFound)
	other := f
	other.Tenant = "globex"
	_, err = s.LookupDeadLetter(ctx, other, "a")
	mustIs(t, err, ledger.ErrNotFound)
	_, err = s.LookupDeadLetter(ctx, f, "")
	mustIs(t, err, ledger.ErrInvalid)
}

func badQueries(t *testing.T, s OperatorStore) {
	ctx := t.Context()
	_, err := s.DeadLetter(ctx, deadLetter(ledger.LogFollower, "1", t0))
	mustNil(t, err)
	f := follower(ledger.LogFollower)
	calls := map[string]func() error{
		"LatestEvents no limit": func() error {
			_, err := s.LatestEvents(ctx, ledger.EventQuery{Tenant: "acme", Workspace: "ops"})
			return err
		},
		"LatestEvents too many": func() error {
			_, err := s.LatestEvents(ctx, ledger.EventQuery{Tenant: "acme", Workspace: "ops", Limit: ledger.MaxOperatorRows + 1})
			return err
		},
		"LatestEvents no workspace": func() error {
			_, err := s.LatestEvents(ctx, ledger.EventQuery{Tenant: "acme", Limit: 1})
			return err
		},
		"LatestEvents NUL type": func() error {
			_, err := s.LatestEvents(ctx, ledger.EventQuery{Tenant: "acme", Workspace: "ops", Type: "a\x00", Limit: 1})
			return err
		},
		"Unrecorded no tenant": func() error {
			_, err := s.Unrecorded(ctx, "", 1)
			return err
		},
		"DeletedKeys zero rows": func() error {
			_, err := s.DeletedKeys(ctx, "acme", 0)
			return err
		},
		"AtCap no window": func() error {
			_, err := s.AtCap(ctx, ledger.CapQuery{Tenant: "acme", Now: t0, Limit: 1, Rows: 1})
			return err
		},
		"Resolve unknown resolution": func() error {
			_, _, err := s.ResolveDeadLetter(ctx, f, "1", "forgotten", t0)
			return err
		},
		"Resolve no time": func() error {
			_, _, err := s.ResolveDeadLetter(ctx, f, "1", ledger.Skipped, time.Time{})
			return err
		},
		"Resolve bad follower": func() error {
			_, _, err := s.ResolveDeadLetter(ctx, ledger.Follower{Kind: "other", Tenant: "acme", Workspace: "ops", Name: "x"}, "1", ledger.Skipped, t0)
			return err
		},
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	list, err := s.DeadLetters(ctx, f)
	mustNil(t, err)
	if len(list) != 1 || list[0].Resolution != "" {
		t.Fatalf("a refused resolution changed the dead letter: %+v", list)
	}
}

func cancelledResolution(t *testing.T, s OperatorStore) {
	_, err := s.DeadLetter(t.Context(), deadLetter(ledger.LogFollower, "1", t0))
	mustNil(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, err := s.ResolveDeadLetter(ctx, follower(ledger.LogFollower), "1", ledger.Replayed, t0); err == nil {
		t.Fatal("a cancelled resolution answered no error")
	}
	list, err := s.DeadLetters(t.Context(), follower(ledger.LogFollower))
	mustNil(t, err)
	if len(list) != 1 || list[0].Resolution != "" {
		t.Fatalf("a cancelled resolution changed the dead letter: %+v", list)
	}
}
