package writes

import (
	"context"
	"errors"
	"fmt"

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
	// Live reads the item first and sends only what differs from what the
	// tracker holds (ADR-0033's "update reads the item"). Without it the
	// patch is compared with what relayr knows of the item (its last read
	// and relayr's own values since) and only what differs is sent: an
	// edit that changes nothing, a retry among them, sends nothing
	// (ADR-0033's departures).
	Live bool
}

// Update edits the key's item (ADR-0033: edits are keyed): it sends only the
// fields that differ, and records the values it sends on the key's row
// first, for the followers to tell relayr's changes from people's. A refused
// edit puts back the values recorded before it. Update changes only items
// relayr filed.
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

	// The tracker answers what a value reads back as (Holds); making it
	// may cost a connection's reads, which the write spends.
	tr, err := w.conns.Tracker(s.metered(wctx), s.b)
	if err != nil {
		return tracker.Item{}, classify(err)
	}
	want := heldPatch(tr, p.Patch)
	var diff tracker.Patch
	var values map[string]string
	var certain map[string]string
	if !p.Live {
		if certain, err = s.certain(ctx, row); err != nil {
			return tracker.Item{}, err
		}
	}
	if coversAll(certain, want) {
		// Every field named holds a value relayr set, the tracker
		// answered, and nothing since said otherwise: an edit that
		// changes nothing, a retry among them, sends nothing
		// (certain.go, ADR-0033's departures); one that changes something
		// sends what differs.
		diff, values = pick(p.Patch, want, func(f string) bool { return !sameValue(tr, f, want[f], certain[f]) })
		if diff.Empty() {
			known, err := s.known(ctx, row)
			if err != nil {
				return tracker.Item{}, err
			}
			return known, nil
		}
	} else {
		// What relayr can't vouch for is read: the item, and what
		// differs from it is sent (ADR-0033: "update reads the item").
		res, err := s.readRecorded(ctx, wctx, k, row)
		if err != nil {
			return tracker.Item{}, err
		}
		diff, values = pick(p.Patch, want, func(f string) bool { return !sameValue(tr, f, want[f], ledger.Canonical(f, res.Item)) })
		if diff.Empty() {
			// Nothing differs from what the tracker holds: nothing is
			// sent (ADR-0036: no started sent to a Vikunja task already
			// todo).
			return res.Item, nil
		}
	}
	counted, err := s.spendCap(ctx, row.Ref.ID)
	if err != nil {
		return tracker.Item{}, err
	}
	// Record the values first.
	if _, err := w.ledger.SetValues(ctx, k, values); err != nil {
		return tracker.Item{}, s.giveBack(ctx, counted, ledgerFailed(err))
	}
	var updated tracker.Item
	err = s.call(wctx, func(wctx context.Context, t *tracker.Tracker) error {
		var err error
		updated, err = t.Update(wctx, row.Ref.ID, diff)
		return err
	})
	if err != nil {
		w.unland(k, values)
		failed := classify(err)
		if tracker.CertainlyNotTaken(err) {
			// A refused edit puts back the value recorded before it: the
			// change never landed, so relayr's earlier value is still the
			// last one it set (ADR-0033, where it departs); nor does it
			// spend the cap.
			if rerr := w.ledger.RestoreValues(ctx, k, values); rerr != nil {
				failed = errors.Join(failed, rerr)
			}
			failed = s.giveBack(ctx, counted, failed)
		}
		if errors.Is(err, tracker.ErrNotFound) {
			// A deleted one marks the key (ADR-0033).
			if merr := w.ledger.MarkDeleted(ctx, k); merr == nil {
				return tracker.Item{}, wrap(CodeDeleted, fmt.Errorf("the item filed under %s was deleted", tracker.Quote(p.Key)))
			}
		}
		return tracker.Item{}, failed
	}
	// What the tracker answered it holds is recorded beside the
	// prediction, and the edit's values are marked landed.
	if err := s.recordLanded(ctx, k, values, updated); err != nil {
		return tracker.Item{}, ledgerFailed(err)
	}
	w.land(ctx, k, row.Ref.ID, answered(values, updated))
	updated.Ref = mergeRef(row.Ref, updated.Ref)
	return updated, nil
}

// recordedRow answers the key's recorded row, or the error a write to an
// unrecorded key gets.
func (s session) recordedRow(ctx context.Context, k ledger.Key) (ledger.Claim, error) {
	row, err := s.w.ledger.Lookup(ctx, k)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return ledger.Claim{}, wrap(CodeRefused, fmt.Errorf("no item is filed under key %s", tracker.Quote(k.Key)))
	case err != nil:
		return ledger.Claim{}, ledgerFailed(err)
	case row.Deleted:
		return ledger.Claim{}, wrap(CodeDeleted, fmt.Errorf("the item filed under %s was deleted", tracker.Quote(k.Key)))
	case !row.Recorded && s.w.clock.Now().Sub(row.ClaimedAt) <= s.w.opts.RetakeAfter:
		return ledger.Claim{}, &Error{Code: CodeClaimed, RetryAfter: s.w.likelyDone(row.ClaimedAt),
			Err: fmt.Errorf("key %s is being filed by another attempt", tracker.Quote(k.Key))}
	case !row.Recorded:
		// The attempt that claimed the key ended without recording: only
		// ensure resolves it (ADR-0033: it retakes the claim and looks the
		// item up first), so a retry of this write could never succeed.
		return ledger.Claim{}, wrap(CodeRefused, fmt.Errorf("the attempt that filed key %s did not finish: ensure the key again to resolve it", tracker.Quote(k.Key)))
	}
	return row, nil
}

// heldPatch answers the values a patch sets, by field, as the tracker will
// hold them, in canonical JSON.
func heldPatch(t *tracker.Tracker, p tracker.Patch) map[string]string {
	values := map[string]string{}
	if p.Title != nil {
		values[tracker.FieldTitle] = ledger.Canonical(tracker.FieldTitle, tracker.Item{Title: *p.Title})
	}
	if p.Description != nil {
		values[tracker.FieldDescription] = ledger.Canonical(tracker.FieldDescription, tracker.Item{Description: *p.Description})
	}
	if p.State != nil {
		values[tracker.FieldState] = ledger.Canonical(tracker.FieldState, tracker.Item{State: t.Holds(*p.State)})
	}
	if p.Labels != nil {
		values[tracker.FieldLabels] = ledger.Canonical(tracker.FieldLabels, tracker.Item{Labels: *p.Labels})
	}
	return values
}

// pick answers the part of the patch whose fields differ, and the values
// it sets.
func pick(p tracker.Patch, want map[string]string, differs func(field string) bool) (tracker.Patch, map[string]string) {
	var diff tracker.Patch
	values := map[string]string{}
	if p.Title != nil && differs(tracker.FieldTitle) {
		diff.Title = p.Title
	}
	if p.Description != nil && differs(tracker.FieldDescription) {
		diff.Description = p.Description
	}
	if p.State != nil && differs(tracker.FieldState) {
		diff.State = p.State
	}
	if p.Labels != nil && differs(tracker.FieldLabels) {
		diff.Labels = p.Labels
	}
	for f, v := range want {
		if differs(f) {
			values[f] = v
		}
	}
	return diff, values
}

// coversAll reports whether every field of want is known.
func coversAll(known, want map[string]string) bool {
	for f := range want {
		if _, ok := known[f]; !ok {
			return false
		}
	}
	return true
}
