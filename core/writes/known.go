package writes

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
)

// errReleased: the attempt a caller waited for gave its claim up.
var errReleased = errors.New("writes: the claim was released")

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
// retried filing or edit is answered from it (docs/decisions.md: retries
// cost the tracker nothing).
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

// resolvesIn answers how long until an unrecorded claim can resolve, a
// second at the least: the end of its holder's write bound or, past it,
// when the claim can be retaken (ADR-0033); none once it can be retaken,
// when it is older than RetakeAfter.
func (w *Writer) resolvesIn(row ledger.Claim) time.Duration {
	now := w.clock.Now()
	if now.Sub(row.ClaimedAt) > w.opts.RetakeAfter {
		return 0
	}
	resolves := row.ClaimedAt.Add(w.opts.WriteBound).Sub(now)
	if resolves <= 0 {
		resolves = row.ClaimedAt.Add(w.opts.RetakeAfter).Sub(now)
	}
	return max(resolves, time.Second)
}

// waitForHolder answers a key whose fresh claim another attempt holds.
// An attempt of this process is waited for: its writes end within its
// write bound (ADR-0033), so by then it recorded what it made or ended, and
// a caller retrying a key this process is filing gets the item in one round
// trip, at no cost to the tracker. The wait ends when the claim can be
// retaken at the latest, for an attempt held up past its bound (a ledger
// that does not answer). An attempt elsewhere (another replica, or one that
// ended holding the claim) is not waited for. Either way, a claim still held
// answers tracker_claimed with a Retry-After of when it can resolve: the end
// of the holder's write bound or, past it, when the claim can be retaken.
// A claim given up while waited for answers errReleased.
func (w *Writer) waitForHolder(ctx context.Context, k ledger.Key, row ledger.Claim) (ledger.Claim, error) {
	claimed := func(row ledger.Claim) error {
		return &Error{Code: CodeClaimed, RetryAfter: max(w.resolvesIn(row), time.Second),
			Err: fmt.Errorf("key %q is claimed by another attempt", k.Key)}
	}
	for {
		switch {
		case row.Deleted:
			return row, wrap(CodeDeleted, fmt.Errorf("the item filed under %q was deleted", k.Key))
		case row.Recorded:
			return row, nil
		}
		settled, done, local := w.holding(k, row.Nonce)
		if !local {
			return row, claimed(row)
		}
		// The wait is a context the clock cancels at the retake, so that
		// none of it is left on the clock once the holder ends.
		wait, cancel := w.clock.WithTimeout(ctx, row.ClaimedAt.Add(w.opts.RetakeAfter).Sub(w.clock.Now()))
		var err error
		select {
		case <-settled:
		case <-wait.Done():
			err = claimed(row)
			if ctx.Err() != nil {
				err = wrap(CodeUnavailable, ctx.Err())
			}
		}
		cancel()
		done()
		if err != nil {
			return row, err
		}
		next, err := w.ledger.Lookup(ctx, k)
		switch {
		case errors.Is(err, ledger.ErrNotFound):
			return row, errReleased
		case err != nil:
			return row, ledgerFailed(err)
		}
		row = next
	}
}

// hold notes an attempt of this process holding k's claim under nonce,
// until the func it answers is called (the attempt's end), which wakes the
// attempts waiting on it.
func (w *Writer) hold(k ledger.Key, nonce string) func() {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := &settle{nonce: nonce, ch: make(chan struct{})}
	w.settled[k] = st
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		close(st.ch)
		if w.settled[k] == st {
			delete(w.settled, k)
		}
	}
}

// holding answers, when an attempt of this process holds k's claim under
// nonce, a channel closed when it ends, and a func the waiter calls when
// it stops waiting.
func (w *Writer) holding(k ledger.Key, nonce string) (<-chan struct{}, func(), bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st, ok := w.settled[k]
	if !ok || st.nonce != nonce {
		return nil, func() {}, false
	}
	return st.ch, func() {}, true
}

// settle is an attempt of this process that holds a claim.
type settle struct {
	nonce string
	ch    chan struct{}
}
