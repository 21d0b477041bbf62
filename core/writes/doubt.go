package writes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/metrics"
	"github.com/relayr-go/relayr/core/tracker"
)

// A filing in doubt is resolved by relayr, not by the next caller
// (docs/adr/1006-waiting-callers-and-filings-in-doubt.md).
//
// ADR-0033 holds the claim of a write whose fate is unknown (its answer
// lost, its request timed out, the write bound passed) until it lapses, and
// the next caller to retake it looks the item up. Every caller until then
// was told tracker_claimed, and a caller that gave up first left the key
// unfiled. So the attempt that ended in doubt looks the item up itself, as
// soon as it safely can: Settle after its request ended, once the tracker
// can no longer be acting on it (a request is over when its call returns:
// its answer came, or relayr closed its connection). Found, it is recorded
// (with the draft's labels, as under a retaken claim); the tracker
// confirming there is none frees the claim, and the key is filed again at
// once. One look-up a key in doubt, whoever waits for it: the attempt stays
// on the board meanwhile, and every caller of the key waits for its record.
// A look-up that fails is tried again, backing off, until the claim could
// be retaken, when ADR-0033's retake takes over.

// doubt is a filing that ended without knowing what the tracker did; err
// is its failure as a caller would be told it.
type doubt struct{ err error }

func (d *doubt) Error() string { return d.err.Error() }

func (d *doubt) Unwrap() error { return d.err }

// undoubted is err without its doubt, for a write relayr resolves no doubt
// of (a comment: its claim holds until the retake looks it up).
func undoubted(err error) error {
	var d *doubt
	if errors.As(err, &d) {
		return d.err
	}
	return err
}

// Backoff of a look-up that failed.
const (
	firstRelook = time.Second
	maxRelook   = 8 * time.Second
)

// resolve looks up the item a filing in doubt may have made, Settle after
// its request ended, and again with backoff while a look-up fails, until
// the claim could be retaken. It answers whether it found and recorded
// the item; freed, the claim is the next caller's to file.
func (s session) resolve(ctx context.Context, k ledger.Key, nonce string, claimedAt time.Time, d tracker.Draft) bool {
	w := s.w
	labels := metrics.Labels{"tenant": k.Tenant, "workspace": k.Workspace}
	pause := w.opts.Settle
	for {
		if clock.Sleep(ctx, w.clock, pause) != nil {
			return false
		}
		w.m.Add(metrics.DoubtLookups, 1, labels)
		_, err := s.lookUp(ctx, k, nonce, claimedAt, d)
		var again *doubt
		if !errors.As(err, &again) {
			return err == nil
		}
		// Still in doubt: the look-up is tried again while the claim
		// cannot be retaken.
		pause = relook(pause, again.err)
		if w.clock.Now().Add(pause).Sub(claimedAt) > w.opts.RetakeAfter {
			w.m.Add(metrics.DoubtsLeft, 1, labels)
			return false
		}
	}
}

// lookUp is one look-up of a filing in doubt: the item found is recorded;
// none frees the claim (errAgain); a failure is a *doubt.
func (s session) lookUp(ctx context.Context, k ledger.Key, nonce string, claimedAt time.Time, d tracker.Draft) (Result, error) {
	lctx, cancel := s.w.clock.WithTimeout(ctx, s.w.opts.WriteBound)
	defer cancel()
	found, err := s.findInDoubt(lctx, k.Key, claimedAt)
	switch {
	case err == nil:
		return s.adopt(ctx, lctx, k, nonce, found, d)
	case errors.Is(err, tracker.ErrNotFound):
		// The tracker confirms there is none: the claim is freed, and the
		// key filed again at once. A claim retaken meanwhile is its new
		// holder's (ErrNonce): claimed again, the key is answered from it.
		if rerr := s.w.ledger.Release(ctx, k, nonce); rerr != nil && !errors.Is(rerr, ledger.ErrNonce) {
			return Result{}, &doubt{err: ledgerFailed(rerr)}
		}
		return Result{}, errAgain
	default:
		return Result{}, &doubt{err: classify(err)}
	}
}

// relook is the pause before the next look-up: what a rate limit asked
// for, else twice the last, from a second up to eight.
func relook(last time.Duration, err error) time.Duration {
	var we *Error
	if errors.As(err, &we) && we.RetryAfter > 0 {
		return we.RetryAfter
	}
	return min(max(2*last, firstRelook), maxRelook)
}

// withRetry is err with a Retry-After of at least d, for a caller told of
// a doubt still being resolved.
func withRetry(err error, d time.Duration) error {
	var we *Error
	if !errors.As(err, &we) {
		return &Error{Code: CodeUnavailable, RetryAfter: max(d, time.Second), Err: err}
	}
	out := *we
	out.RetryAfter = max(out.RetryAfter, d.Round(time.Second), time.Second)
	return &out
}

// Look-ups of filings in doubt that fall due together on one binding are
// one read where the tracker finds several keys at once
// (tracker.KeysFinder): a proxy that answered a burst's creates late left
// fifteen filings in doubt, each looked up alone.

// gatherLookups is how long the first look-up of a batch waits for the
// next to join before the batch is read, and gatherAtMost how long in all:
// filings in doubt after a burst fall due a write's hold or so apart (a
// tenth of a second at the least, on Vikunja).
const (
	gatherLookups = 250 * time.Millisecond
	gatherAtMost  = time.Second
)

// lookupMargin is how long before its claim a filing in doubt's item may
// seem to have been made, on the tracker's clock.
const lookupMargin = 5 * time.Minute

// keyBatch is the look-ups of one binding's filings in doubt read
// together.
type keyBatch struct {
	keys     []string
	since    time.Time
	done     chan struct{}
	found    map[string]tracker.Item
	complete bool
	err      error
}

// findInDoubt looks up the item a filing in doubt may have made, claimed
// at claimedAt: with the other look-ups of the binding that fall due
// together, in one read, where the tracker allows it; alone otherwise, or
// for a key that read could not settle.
func (s session) findInDoubt(ctx context.Context, key string, claimedAt time.Time) (tracker.Item, error) {
	tr, err := s.w.conns.Tracker(s.metered(ctx), s.b)
	if err != nil || !tr.FindsKeys() {
		return s.find(ctx, key)
	}
	b, leads := s.w.joinLookup(s.b.Name(), key, claimedAt.Add(-lookupMargin))
	if leads {
		// The others that fall due now join, while they come; then the
		// batch is read.
		for waited := time.Duration(0); waited < gatherAtMost; waited += gatherLookups {
			n := s.w.batchSize(b)
			if clock.Sleep(ctx, s.w.clock, gatherLookups) != nil || s.w.batchSize(b) == n {
				break
			}
		}
		keys, since := s.w.takeLookup(s.b.Name(), b)
		b.err = s.call(ctx, func(ctx context.Context, t *tracker.Tracker) error {
			var err error
			b.found, b.complete, err = t.FindKeys(ctx, keys, since)
			return err
		})
		close(b.done)
	} else {
		select {
		case <-b.done:
		case <-ctx.Done():
			return tracker.Item{}, fmt.Errorf("%w: waiting for the look-up of the filings in doubt: %w", tracker.ErrUnavailable, ctx.Err())
		}
	}
	if b.err == nil {
		if it, ok := b.found[key]; ok {
			return it, nil
		}
		if b.complete {
			return tracker.Item{}, fmt.Errorf("%w: no item under key %s", tracker.ErrNotFound, tracker.Quote(key))
		}
	}
	return s.find(ctx, key) // the read failed, or stopped short of this key
}

// joinLookup adds key to the binding's batch of look-ups gathering now,
// making one when there is none (leads is then true).
func (w *Writer) joinLookup(binding, key string, since time.Time) (*keyBatch, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b, ok := w.lookups[binding]
	if !ok {
		b = &keyBatch{since: since, done: make(chan struct{})}
		w.lookups[binding] = b
	}
	if !slices.Contains(b.keys, key) {
		b.keys = append(b.keys, key)
	}
	if since.Before(b.since) {
		b.since = since
	}
	return b, !ok
}

// batchSize is how many keys have joined b.
func (w *Writer) batchSize(b *keyBatch) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(b.keys)
}

// takeLookup closes the binding's batch b to joiners and answers its keys.
func (w *Writer) takeLookup(binding string, b *keyBatch) ([]string, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lookups[binding] == b {
		delete(w.lookups, binding)
	}
	return slices.Clone(b.keys), b.since
}
