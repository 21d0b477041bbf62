package writes

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
)

// UpdateParams edits the item filed under a key.
type UpdateParams struct {
	Tenant      string
	Workspace   string
	Key         string
	Patch       tracker.Patch
	Correlation string
}

// Update edits the key's item (ADR-0033: edits are keyed): it reads the item,
// sends only the fields that differ from what the tracker holds, and records
// the values it sends on the key's row first, for the followers to tell
// relayr's changes from people's. A refused edit puts back the values
// recorded before it. Update changes only items relayr filed.
func (w *Writer) Update(ctx context.Context, p UpdateParams) (tracker.Item, error) {
	if err := tracker.ValidatePatch(p.Patch); err != nil {
		return tracker.Item{}, wrap(CodeInvalid, err)
	}
	s, err := w.begin(ctx, p.Tenant, p.Workspace, p.Key)
	if err != nil {
		return tracker.Item{}, err
	}
	k := ledger.Key{Tenant: p.Tenant, Workspace: p.Workspace, Kind: ledger.KindItem, Key: p.Key}
	row, err := s.recordedRow(ctx, k)
	if err != nil {
		return tracker.Item{}, err
	}
	wctx, cancel := w.clock.WithTimeout(ctx, w.opts.WriteBound)
	defer cancel()

	cur, err := s.readRecorded(ctx, wctx, k, row)
	if err != nil {
		return tracker.Item{}, err
	}
	var tr tracker.Tracker
	if err := s.call(wctx, func(t tracker.Tracker) error { tr = t; return nil }); err != nil {
		return tracker.Item{}, classify(err)
	}
	diff, values := differing(tr, cur.Item, p.Patch)
	if diff.Empty() {
		// Nothing differs from what the tracker holds: nothing is sent
		// (ADR-0036: no started sent to a Vikunja task already todo).
		return cur.Item, nil
	}
	if err := s.spendCap(ctx, row.Ref.ID); err != nil {
		return tracker.Item{}, err
	}
	// Record the values first.
	if _, err := w.ledger.SetValues(ctx, k, values); err != nil {
		return tracker.Item{}, ledgerFailed(err)
	}
	var updated tracker.Item
	err = s.call(wctx, func(t tracker.Tracker) error {
		var err error
		updated, err = t.Update(wctx, row.Ref.ID, diff)
		return err
	})
	if err != nil {
		if tracker.CertainlyNotTaken(err) {
			// A refused edit puts back the value recorded before it: the
			// change never landed, so relayr's earlier value is still the
			// last one it set (ADR-0033, where it departs).
			if rerr := w.ledger.RestoreValues(ctx, k, values); rerr != nil {
				return tracker.Item{}, errors.Join(classify(err), rerr)
			}
		}
		if errors.Is(err, tracker.ErrNotFound) {
			if merr := w.ledger.MarkDeleted(ctx, k); merr == nil {
				return tracker.Item{}, wrap(CodeDeleted, fmt.Errorf("the item filed under %q was deleted", p.Key))
			}
		}
		return tracker.Item{}, classify(err)
	}
	// What the tracker answered it holds is recorded beside the prediction.
	if err := s.recordHeld(ctx, k, values, updated); err != nil {
		return tracker.Item{}, ledgerFailed(err)
	}
	updated.Ref = mergeRef(row.Ref, updated.Ref)
	return updated, nil
}

// recordedRow answers the key's recorded row, or the error a write to an
// unrecorded key gets.
func (s session) recordedRow(ctx context.Context, k ledger.Key) (ledger.Claim, error) {
	row, err := s.w.ledger.Lookup(ctx, k)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return ledger.Claim{}, wrap(CodeRefused, fmt.Errorf("no item is filed under key %q", k.Key))
	case err != nil:
		return ledger.Claim{}, ledgerFailed(err)
	case row.Deleted:
		return ledger.Claim{}, wrap(CodeDeleted, fmt.Errorf("the item filed under %q was deleted", k.Key))
	case !row.Recorded:
		return ledger.Claim{}, wrap(CodeClaimed, fmt.Errorf("key %q is being filed by another attempt", k.Key))
	}
	return row, nil
}

// differing answers the part of the patch that differs from the item as the
// tracker holds it, and the values it sets, as the tracker will hold them.
func differing(t tracker.Tracker, cur tracker.Item, p tracker.Patch) (tracker.Patch, map[string]string) {
	var diff tracker.Patch
	values := map[string]string{}
	if p.Title != nil && *p.Title != cur.Title {
		diff.Title = p.Title
		values[tracker.FieldTitle] = canonical(*p.Title)
	}
	if p.Description != nil {
		held := HeldDescription(t, *p.Description)
		if !sameDescription(t, *p.Description, cur.Description) {
			diff.Description = p.Description
			values[tracker.FieldDescription] = canonical(held)
		}
	}
	if p.State != nil {
		held := t.Holds(*p.State)
		if held != cur.State {
			diff.State = p.State
			values[tracker.FieldState] = canonical(string(held))
		}
	}
	if p.Labels != nil {
		want := sortedSet(*p.Labels)
		if !slices.Equal(want, sortedSet(cur.Labels)) {
			diff.Labels = p.Labels
			values[tracker.FieldLabels] = canonical(want)
		}
	}
	return diff, values
}
