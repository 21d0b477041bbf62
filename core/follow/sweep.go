package follow

import (
	"context"
	"errors"
	"fmt"

	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
)

// finishSweep ends a read of the whole project: every item with a snapshot
// that the read did not list is removed (ADR-0036: "an item no longer listed
// is tracker:item_removed"), then the cursor records the sweep. A removal
// that runs out of budget leaves the sweep to finish at the next poll; the
// items already removed are not found again.
func (f *follower) finishSweep(ctx context.Context, r *reader) error {
	sw := f.sweep
	if sw.seen != nil {
		var missing []string
		err := f.fs.ledger.SnapshotIDs(ctx, f.b.Tenant, f.b.Workspace, func(id string) bool {
			if _, ok := sw.seen[hashID(id)]; !ok {
				missing = append(missing, id)
			}
			return true
		})
		if err != nil {
			return err
		}
		live, err := r.fetchMissing(ctx, missing)
		if err != nil {
			return err
		}
		for _, id := range missing {
			if live[id] {
				continue // passed over by a listing that moved under the read
			}
			if err := r.remove(ctx, id, false); err != nil {
				return err
			}
		}
	}
	pos := sw.pos
	if sw.hold != nil && sw.hold.Before(pos) {
		pos = *sw.hold // an item left for the next poll is listed again
	}
	err := f.fs.ledger.SaveCursor(ctx, f.id, ledger.Cursor{
		UpdatedAt: pos.UpdatedAt, ItemID: pos.ID, Seeded: true, SweptAt: sw.start,
	})
	if err != nil {
		return err
	}
	f.lastSweep = sw.requests
	f.sweep = nil
	return nil
}

// fetchMissing reads the items the sweep's listing no longer shows by
// their ids, a hundred or so a request, where the tracker reads several at
// once (tracker.ItemsFetcher: Jira's bulkfetch): it answers those that
// read back, and notes the others gone (r.gone), so that removing them
// reads nothing more. On any other tracker it answers none, and each is
// read on its own as it is removed.
func (r *reader) fetchMissing(ctx context.Context, missing []string) (map[string]bool, error) {
	live := map[string]bool{}
	if len(missing) == 0 {
		return live, nil
	}
	var found map[string]tracker.Item
	fetched := false
	err := r.f.request(ctx, r.acc, r.pr, func(ctx context.Context, tr *tracker.Tracker) error {
		r.with(tr)
		var err error
		found, fetched, err = tr.FetchItems(ctx, missing)
		return err
	})
	if err != nil || !fetched {
		return live, err
	}
	if r.gone == nil {
		r.gone = map[string]bool{}
	}
	for _, id := range missing {
		if it, ok := found[id]; ok && !it.Archived {
			live[id] = true
		} else if !ok {
			r.gone[id] = true
		}
	}
	return live, nil
}

// remove tells what became of an item the sweep no longer lists, publishes
// its removal, and forgets it. The item is read first: one that reads back
// live was only passed over by a listing that moved under the read, and
// stays. reported is set when a verified delivery reported the item deleted
// (tracker.Nudged.Deleted): then a read answering ErrNotFound confirms the
// deletion, with no lookup by key. An item this binding knows nothing of
// (another project's, or one already removed) is left alone (lastRead).
func (r *reader) remove(ctx context.Context, id string, reported bool) error {
	fs := r.f.fs
	last, srow, known, err := r.lastRead(ctx, id, reported)
	if err != nil || !known {
		return err
	}
	row, key, err := r.keyRow(ctx, last)
	if err != nil {
		return err
	}
	last.Ref.Key = key
	var read tracker.Item
	byID := false // a read by id answering not found says deleted
	if r.gone[id] {
		// The sweep's read by ids did not answer it: not found, read once.
		byID = r.tr != nil && r.tr.Capabilities().NudgesDeletions
		err = fmt.Errorf("%w: not answered by the read of the sweep's missing items", tracker.ErrNotFound)
	} else {
		err = r.f.request(ctx, r.acc, r.pr, func(ctx context.Context, tr *tracker.Tracker) error {
			r.with(tr)
			byID = tr.Capabilities().NudgesDeletions
			var err error
			read, err = tr.Item(ctx, id)
			return err
		})
	}
	var deleted *bool
	switch {
	case err == nil && !read.Archived:
		return nil
	case err == nil:
		deleted = new(false)
	case !errors.Is(err, tracker.ErrNotFound):
		return err
	case reported, byID && key != "":
		// The tracker said it deleted the item, and reading it confirms it
		// gone: a tracker that reports deletions reads a deleted item as
		// missing, never an archived one (tracker.Nudged). So too for an
		// item relayr filed that such a tracker reads missing unreported:
		// its key's lookup could only say the same (and Jira's waits out
		// its search's lag).
		deleted = new(true)
		if key != "" {
			// A deleted item's key is marked, so it files nothing again.
			k := ledger.Key{Tenant: r.f.b.Tenant, Workspace: r.f.b.Workspace, Kind: ledger.KindItem, Key: key}
			if err := fs.ledger.MarkDeleted(ctx, k); err != nil {
				return err
			}
		}
	case key != "":
		// For an item relayr filed, its key's lookup tells deleted from
		// archived (ADR-0036); Plane reads an archived item as missing by
		// its id and finds it by its key.
		var found tracker.Item
		ferr := r.f.request(ctx, r.acc, r.pr, func(ctx context.Context, tr *tracker.Tracker) error {
			var err error
			found, err = tr.Find(ctx, key)
			return err
		})
		switch {
		case ferr == nil && found.Ref.ID == id:
			deleted = new(false)
		case ferr == nil:
			deleted = new(true) // the key names another item; this one is gone
		case errors.Is(ferr, tracker.ErrNotFound):
			deleted = new(true)
			// A deleted item's key is marked, so it files nothing again.
			k := ledger.Key{Tenant: r.f.b.Tenant, Workspace: r.f.b.Workspace, Kind: ledger.KindItem, Key: key}
			if err := fs.ledger.MarkDeleted(ctx, k); err != nil {
				return err
			}
		default:
			return ferr
		}
	}
	correlation := ""
	if row != nil {
		correlation = row.Correlation
	}
	if err := r.publish(ctx, r.scope.removed(last, key, deleted, correlation, fs.clock.Now())); err != nil {
		return err
	}
	// An item not known deleted (archived on Plane, or gone with no way to
	// tell) keeps a tombstone of its last read, so that, listed again, it
	// is published as created again (ADR-1005: tombstones); a deleted one is
	// forgotten.
	if deleted == nil || !*deleted {
		if err := fs.ledger.SaveSnapshots(ctx, []ledger.SnapshotRow{r.tombstone(srow, last)}); err != nil {
			return err
		}
	} else if err := fs.ledger.DeleteSnapshot(ctx, r.f.b.Tenant, r.f.b.Workspace, id); err != nil {
		return err
	}
	// An item the sweep removes forgets its writes, and so its count under
	// the cap (ADR-0036's consequences).
	return fs.ledger.ForgetWrites(ctx, r.f.b.Tenant, r.f.b.Workspace, id)
}

// lastRead answers the item as the binding last knew it, and whether it
// knows it at all: its snapshot, or, for an item a delivery reported
// deleted that no poll has read yet (filed by relayr moments before), the
// item its claim recorded. An item with neither, or whose key is already
// marked deleted, is not the binding's to remove.
func (r *reader) lastRead(ctx context.Context, id string, reported bool) (tracker.Item, *ledger.SnapshotRow, bool, error) {
	l := r.f.fs.ledger
	srow, err := l.Snapshot(ctx, r.f.b.Tenant, r.f.b.Workspace, id)
	switch {
	case err == nil && srow.Removed:
		// Removed before: a tombstone is known only as a deletion reported.
		if !reported {
			return tracker.Item{}, nil, false, nil
		}
	case err == nil:
		last := tracker.Item{Ref: tracker.ItemRef{ID: id}, UpdatedAt: srow.UpdatedAt}
		if snap, err := decodeSnapshot(srow); err == nil {
			last = snap.Item
		}
		return last, &srow, true, nil
	case !errors.Is(err, ledger.ErrNotFound):
		return tracker.Item{}, nil, false, err
	case !reported:
		return tracker.Item{}, nil, false, nil
	}
	row, err := l.LookupItem(ctx, r.f.b.Tenant, r.f.b.Workspace, id)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return tracker.Item{}, nil, false, nil
	case err != nil:
		return tracker.Item{}, nil, false, err
	case row.Deleted || !row.Recorded:
		return tracker.Item{}, nil, false, nil
	}
	return tracker.Item{Ref: row.Ref}, nil, true, nil
}

// tombstone is the snapshot kept of a removed item: its last snapshot,
// or for an item no poll had read, its item as last known.
func (r *reader) tombstone(srow *ledger.SnapshotRow, last tracker.Item) ledger.SnapshotRow {
	if srow != nil {
		t := *srow
		t.Removed = true
		return t
	}
	t, _ := snapshot{Item: last}.Row(r.f.b.Tenant, r.f.b.Workspace) // a tracker.Item always encodes
	t.Removed = true
	return t
}
