package writes

import (
	"context"
	"errors"

	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
)

// answerRecorded answers a recorded key's item: from the ledger, at no
// cost to the tracker, or read from the tracker when the caller asks for the
// live item (ADR-0033's "a recorded item is read before it is returned").
func (s session) answerRecorded(ctx, wctx context.Context, k ledger.Key, row ledger.Claim, live bool) (Result, error) {
	if live {
		return s.readRecorded(ctx, wctx, k, row)
	}
	it, err := s.known(ctx, row)
	if err != nil {
		return Result{}, err
	}
	return Result{Item: it, How: Existing}, nil
}

// known is what relayr knows of a recorded item without asking the
// tracker: the followers' last read of it (its snapshot), with the values
// relayr set on it since, which no read has seen back yet, laid over it. A
// retried filing or edit is answered from it (ADR-0033's departures:
// retries cost the tracker nothing).
func (s session) known(ctx context.Context, row ledger.Claim) (tracker.Item, error) {
	it := tracker.Item{Ref: row.Ref}
	snap, err := s.w.ledger.Snapshot(ctx, row.Tenant, row.Workspace, row.Ref.ID)
	switch {
	case err == nil && snap.Removed:
		// A removed item's tombstone is no read of it as it is.
	case err == nil:
		if read, derr := ledger.SnapshotItem(snap); derr == nil {
			it = read
			it.Ref = mergeRef(row.Ref, read.Ref)
		}
	case !errors.Is(err, ledger.ErrNotFound):
		return tracker.Item{}, ledgerFailed(err)
	}
	for field, recorded := range row.Values {
		if v := ledger.Last(recorded); v != "" {
			ledger.SetCanonical(&it, field, v)
		}
	}
	return it, nil
}
