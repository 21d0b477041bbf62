package ledgertest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
)

// snapshotCases are the rules of the snapshots the tracker followers diff
// against (ADR-0036).
var snapshotCases = []testCase{
	{"SnapshotIsSavedAndRead", snapshotSaved},
	{"SnapshotIsReplaced", snapshotReplaced},
	{"SnapshotIsDeleted", snapshotDeleted},
	{"ARecordSavesTheFilingsSnapshotOnlyWhereThereIsNone", snapshotFiled},
	{"ATombstoneIsReadButNotListed", snapshotTombstone},
	{"SnapshotIDsListsAWorkspaceInByteOrder", snapshotIDsInOrder},
	{"SnapshotIDsWalksALargeWorkspaceAndLetsFnCallTheLedger", snapshotIDsLarge},
}

func snapshotSaved(t *testing.T, l ledger.Ledger) {
	want := snap("ops", "item-1", 1)
	mustNil(t, l.SaveSnapshots(t.Context(), []ledger.SnapshotRow{want, snap("ops", "item-2", 2)}))
	got, err := l.Snapshot(t.Context(), "acme", "ops", "item-1")
	mustNil(t, err)
	if !sameSnapshot(got, want) {
		t.Fatalf("snapshot %+v, want %+v", got, want)
	}
	_, err = l.Snapshot(t.Context(), "acme", "ops", "item-3")
	mustIs(t, err, ledger.ErrNotFound)
	_, err = l.Snapshot(t.Context(), "globex", "ops", "item-1")
	mustIs(t, err, ledger.ErrNotFound)
	mustNil(t, l.SaveSnapshots(t.Context(), nil))
}

func snapshotReplaced(t *testing.T, l ledger.Ledger) {
	mustNil(t, l.SaveSnapshots(t.Context(), []ledger.SnapshotRow{snap("ops", "item-1", 1)}))
	want := snap("ops", "item-1", 7)
	want.CommentsUntil = time.Time{}
	mustNil(t, l.SaveSnapshots(t.Context(), []ledger.SnapshotRow{want}))
	got, err := l.Snapshot(t.Context(), "acme", "ops", "item-1")
	mustNil(t, err)
	if !sameSnapshot(got, want) || !got.CommentsUntil.IsZero() {
		t.Fatalf("snapshot %+v, want %+v", got, want)
	}
}

// snapshotFiled saves a filing's snapshot with its record, where the
// item has none, and never over a follower's snapshot or a tombstone, nor
// when the call records nothing.
func snapshotFiled(t *testing.T, l ledger.Ledger) {
	ctx := t.Context()
	record := func(k string, snap ledger.SnapshotRow, nonce string) (ledger.Claim, error) {
		return l.Record(ctx, ledger.RecordParams{Key: key(k), Nonce: nonce,
			Ref: tracker.ItemRef{ID: snap.ItemID, Key: k}, Now: t0.Add(time.Second), Snapshot: &snap})
	}
	c, _ := claim(t, l, key("k1"), "", t0)
	filed := snap("ops", "item-1", 1)
	_, err := record("k1", filed, c.Nonce)
	mustNil(t, err)
	got, err := l.Snapshot(ctx, "acme", "ops", "item-1")
	if err != nil || !sameSnapshot(got, filed) {
		t.Fatalf("snapshot %+v, %v, want the filing's %+v", got, err, filed)
	}
	// A record that records nothing (the first is kept) saves nothing.
	again := snap("ops", "item-1", 9)
	_, err = record("k1", again, c.Nonce)
	mustNil(t, err)
	if got, err = l.Snapshot(ctx, "acme", "ops", "item-1"); err != nil || !sameSnapshot(got, filed) {
		t.Fatalf("snapshot %+v, %v, want the first record's %+v", got, err, filed)
	}
	// A follower that read the item first keeps its snapshot; so does a
	// tombstone.
	read := snap("ops", "item-2", 5)
	tomb := snap("ops", "item-3", 2)
	tomb.Removed = true
	mustNil(t, l.SaveSnapshots(ctx, []ledger.SnapshotRow{read, tomb}))
	for k, want := range map[string]ledger.SnapshotRow{"k2": read, "k3": tomb} {
		c, _ := claim(t, l, key(k), "", t0)
		_, err := record(k, snap("ops", want.ItemID, 7), c.Nonce)
		mustNil(t, err)
		if got, err := l.Snapshot(ctx, "acme", "ops", want.ItemID); err != nil || !sameSnapshot(got, want) {
			t.Fatalf("%s's snapshot %+v, %v, want the one that stood %+v", k, got, err, want)
		}
	}
	// A claim retaken by another records nothing of its old holder's.
	c4, _ := claim(t, l, key("k4"), "", t0)
	_, err = record("k4", snap("ops", "item-4", 1), c4.Nonce+"-not")
	mustIs(t, err, ledger.ErrNonce)
	_, err = l.Snapshot(ctx, "acme", "ops", "item-4")
	mustIs(t, err, ledger.ErrNotFound)
	// A snapshot of another workspace than the claim's is refused.
	other := snap("other", "item-5", 1)
	_, err = record("k4", other, c4.Nonce)
	mustIs(t, err, ledger.ErrInvalid)
}

func snapshotDeleted(t *testing.T, l ledger.Ledger) {
	mustNil(t, l.SaveSnapshots(t.Context(), []ledger.SnapshotRow{snap("ops", "item-1", 1), snap("ops", "item-2", 2)}))
	mustNil(t, l.DeleteSnapshot(t.Context(), "acme", "ops", "item-1"))
	_, err := l.Snapshot(t.Context(), "acme", "ops", "item-1")
	mustIs(t, err, ledger.ErrNotFound)
	_, err = l.Snapshot(t.Context(), "acme", "ops", "item-2")
	mustNil(t, err)
	mustNil(t, l.DeleteSnapshot(t.Context(), "acme", "ops", "item-1"))
}

// snapshotTombstone keeps a removed item's snapshot as a tombstone: read
// back as saved, listed by no SnapshotIDs, and replaced either way by a
// later save.
func snapshotTombstone(t *testing.T, l ledger.Ledger) {
	ctx := t.Context()
	tomb := snap("ops", "item-1", 1)
	tomb.Removed = true
	mustNil(t, l.SaveSnapshots(ctx, []ledger.SnapshotRow{tomb, snap("ops", "item-2", 2)}))
	got, err := l.Snapshot(ctx, "acme", "ops", "item-1")
	mustNil(t, err)
	if !sameSnapshot(got, tomb) {
		t.Fatalf("tombstone read back as %+v, want %+v", got, tomb)
	}
	if got, want := strings.Join(snapshotIDs(t, l, "ops", 0), ","), "item-2"; got != want {
		t.Fatalf("ids %s, want %s: a tombstone is not listed", got, want)
	}
	// Listed again: a live snapshot replaces the tombstone.
	back := snap("ops", "item-1", 3)
	mustNil(t, l.SaveSnapshots(ctx, []ledger.SnapshotRow{back}))
	if got, err = l.Snapshot(ctx, "acme", "ops", "item-1"); err != nil || !sameSnapshot(got, back) {
		t.Fatalf("snapshot %+v, %v, want %+v", got, err, back)
	}
	if got, want := strings.Join(snapshotIDs(t, l, "ops", 0), ","), "item-1,item-2"; got != want {
		t.Fatalf("ids %s, want %s", got, want)
	}
	// Removed again, then deleted: nothing is left.
	tomb = snap("ops", "item-1", 4)
	tomb.Removed = true
	mustNil(t, l.SaveSnapshots(ctx, []ledger.SnapshotRow{tomb}))
	if got, want := strings.Join(snapshotIDs(t, l, "ops", 0), ","), "item-2"; got != want {
		t.Fatalf("ids %s, want %s", got, want)
	}
	mustNil(t, l.DeleteSnapshot(ctx, "acme", "ops", "item-1"))
	_, err = l.Snapshot(ctx, "acme", "ops", "item-1")
	mustIs(t, err, ledger.ErrNotFound)
}

func snapshotIDsInOrder(t *testing.T, l ledger.Ledger) {
	rows := []ledger.SnapshotRow{snap("ops", "b", 1), snap("ops", "a", 2), snap("ops", "B", 3), snap("ops", "é", 4), snap("ops", "a1", 5), snap("other", "c", 6)}
	mustNil(t, l.SaveSnapshots(t.Context(), rows))
	if got, want := strings.Join(snapshotIDs(t, l, "ops", 0), ","), "B,a,a1,b,é"; got != want {
		t.Fatalf("ids %s, want %s", got, want)
	}
	if got := snapshotIDs(t, l, "ops", 2); len(got) != 2 {
		t.Fatalf("walk went on after fn said stop: %v", got)
	}
	if got := snapshotIDs(t, l, "empty", 0); len(got) != 0 {
		t.Fatalf("empty workspace listed %v", got)
	}
}

func snapshotIDsLarge(t *testing.T, l ledger.Ledger) {
	const n = 1234
	rows := make([]ledger.SnapshotRow, n)
	for i := range rows {
		rows[i] = snap("ops", fmt.Sprintf("item-%05d", i), i)
	}
	mustNil(t, l.SaveSnapshots(t.Context(), rows))
	count := 0
	err := l.SnapshotIDs(t.Context(), "acme", "ops", func(id string) bool {
		if want := fmt.Sprintf("item-%05d", count); id != want {
			t.Fatalf("id %s at %d, want %s", id, count, want)
		}
		count++
		if count%400 == 0 {
			// The follower deletes removed items while it walks.
			if err := l.DeleteSnapshot(t.Context(), "acme", "ops", id); err != nil {
				t.Fatal(err)
			}
		}
		return true
	})
	mustNil(t, err)
	if count != n {
		t.Fatalf("walked %d ids, want %d", count, n)
	}
}

func snapshotIDs(t *testing.T, l ledger.Ledger, ws string, stopAfter int) []string {
	t.Helper()
	var ids []string
	err := l.SnapshotIDs(t.Context(), "acme", ws, func(id string) bool {
		ids = append(ids, id)
		return stopAfter == 0 || len(ids) < stopAfter
	})
	mustNil(t, err)
	return ids
}
