package writes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
)

// How a retried caller meets the attempt that holds its key
// (docs/adr/1006-waiting-callers-and-filings-in-doubt.md).
//
// ADR-0033 fails a caller whose key another attempt holds, to be retried
// (tracker_claimed). Told so at once, a CI job and its re-run, arriving
// together, waited the end of the holder's write bound for an item filed a
// third of a second later. So a caller waits for the holder instead, up to
// the write bound from its arrival, and is answered the item as soon as it
// is recorded:
//
//   - In one process, an attempt is on the board (flights) before its
//     claim is taken, so no caller of the key can read the claim and miss
//     the attempt; it leaves the board only once what the tracker did is
//     known (recorded, released, or left to the retake).
//   - Across replicas, a caller whose claim is held by no attempt of its
//     own process reads the claim's row again, backing off from 10 ms to
//     100 ms, until it is recorded, released, deleted or can be retaken:
//     it is answered within 100 ms and one read of the record. A row read
//     is one indexed read of the ledger; a filing of a second costs a
//     waiter about 14, a wait of the whole 20 s bound about 200 (make
//     bench has the second caller's wait).
//
// A caller still waiting at its bound answers tracker_claimed, with a
// Retry-After of when the holder is likely done (what this process's
// filings take now), never more than the bound.

// errAgain: what the caller waited for ended (an attempt of this process
// left the board, or the holder gave the claim up); the key is claimed
// again, and answered from what the ledger says now.
var errAgain = errors.New("writes: the key is to be claimed again")

// Backoff of a caller reading again the row of a claim another replica
// holds.
const (
	firstReread = 10 * time.Millisecond
	maxReread   = 100 * time.Millisecond
)

// flight is an attempt of this process on a key: on the board from before
// its claim is taken until what the tracker did is known.
type flight struct {
	done  chan struct{}
	began time.Time
}

// board puts an attempt on k on the board, or answers the attempt of this
// process already on it (leads is then false).
func (w *Writer) board(k ledger.Key) (f *flight, leads bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if f, ok := w.flights[k]; ok {
		return f, false
	}
	f = &flight{done: make(chan struct{}), began: w.clock.Now()}
	w.flights[k] = f
	return f, true
}

// unboard takes f off the board and wakes the callers waiting on it.
func (w *Writer) unboard(k ledger.Key, f *flight) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.flights[k] == f {
		delete(w.flights, k)
	}
	close(f.done)
}

// await waits for another attempt of this process on k to end, up to the
// caller's deadline: errAgain when it ended, tracker_claimed at the
// deadline, unavailable when the caller gave up.
func (w *Writer) await(ctx context.Context, k ledger.Key, f *flight, deadline time.Time) error {
	wait, cancel := w.clock.WithTimeout(ctx, deadline.Sub(w.clock.Now()))
	defer cancel()
	select {
	case <-f.done:
		return errAgain
	case <-wait.Done():
		if ctx.Err() != nil {
			return wrap(CodeUnavailable, ctx.Err())
		}
		return w.claimed(k, f.began)
	}
}

// awaitHolder waits for a claim held by an attempt of another process
// (another replica, or one that died holding it), reading its row again
// with backoff: the row as recorded or deleted, errAgain once it is
// released or can be retaken, tracker_claimed at the caller's deadline.
func (w *Writer) awaitHolder(ctx context.Context, k ledger.Key, row ledger.Claim, deadline time.Time) (ledger.Claim, error) {
	backoff := firstReread
	for {
		switch {
		case row.Deleted:
			return row, wrap(CodeDeleted, fmt.Errorf("the item filed under %s was deleted", tracker.Quote(k.Key)))
		case row.Recorded:
			return row, nil
		case w.clock.Now().Sub(row.ClaimedAt) > w.opts.RetakeAfter:
			return row, errAgain
		}
		left := deadline.Sub(w.clock.Now())
		if left <= 0 {
			return row, w.claimed(k, row.ClaimedAt)
		}
		// Never past the moment the claim can be retaken.
		pause := min(backoff, left, row.ClaimedAt.Add(w.opts.RetakeAfter).Sub(w.clock.Now())+time.Millisecond)
		if err := clock.Sleep(ctx, w.clock, pause); err != nil {
			return row, wrap(CodeUnavailable, err)
		}
		backoff = min(2*backoff, maxReread)
		next, err := w.ledger.Lookup(ctx, k)
		switch {
		case errors.Is(err, ledger.ErrNotFound):
			return row, errAgain
		case err != nil:
			return row, ledgerFailed(err)
		}
		row = next
	}
}

// AnswerMargin is how long before its caller's deadline (its context's) a
// caller still waiting is answered: retryable, with the Retry-After of
// when its item is likely there, so the answer reaches a caller that
// times out rather than its timeout reaching it first.
const AnswerMargin = 500 * time.Millisecond

// answerBy is when a caller waiting on ctx is answered at the latest: at
// until, or AnswerMargin before ctx's deadline when that is sooner (a
// caller that said how long it waits: an HTTP client's Prefer: wait).
func (w *Writer) answerBy(ctx context.Context, until time.Time) time.Time {
	if dl, ok := ctx.Deadline(); ok {
		if by := dl.Add(-AnswerMargin); by.Before(until) {
			return by
		}
	}
	return until
}

// claimed is tracker_claimed for a key whose holder claimed it at
// claimedAt, with the Retry-After of when it is likely done.
func (w *Writer) claimed(k ledger.Key, claimedAt time.Time) error {
	return &Error{Code: CodeClaimed, RetryAfter: w.likelyDone(claimedAt),
		Err: fmt.Errorf("key %s is claimed by another attempt", tracker.Quote(k.Key))}
}

// likelyDone answers how long until an attempt that claimed at claimedAt
// is likely done, in whole seconds, one at the least: what this process's
// filings take now (typicalFiling), less what it has
// taken, and never more than what is left of its bound and of the look-up
// a filing in doubt ends with. Past that, the time until its claim can be
// retaken (ADR-0033).
func (w *Writer) likelyDone(claimedAt time.Time) time.Duration {
	now := w.clock.Now()
	age := now.Sub(claimedAt)
	bound := w.opts.WriteBound + w.opts.Settle
	var left time.Duration
	switch {
	case age >= w.opts.RetakeAfter:
		left = 0
	case age >= bound:
		left = w.opts.RetakeAfter - age
	default:
		left = min(w.typicalFiling()-age, bound-age)
	}
	return max(left.Round(time.Second), time.Second)
}

// recentFilings is how many filings' durations a Writer keeps for
// likelyDone.
const recentFilings = 32

// noteFiling keeps how long a filing took, claim to record.
func (w *Writer) noteFiling(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.filings) == recentFilings {
		w.filings = w.filings[1:]
	}
	w.filings = append(w.filings, d)
}

// typicalFiling is the 90th percentile of the recent filings (a second
// when none was seen): a caller told to come back then finds nine filings
// in ten done, and one slow filing does not lengthen every wait.
func (w *Writer) typicalFiling() time.Duration {
	w.mu.Lock()
	sorted := slices.Clone(w.filings)
	w.mu.Unlock()
	if len(sorted) == 0 {
		return time.Second
	}
	slices.Sort(sorted)
	return sorted[len(sorted)*9/10]
}
