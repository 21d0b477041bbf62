package writes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
)

// CommentParams posts a comment once per key on the item filed under
// ItemKey.
type CommentParams struct {
	Tenant    string
	Workspace string
	// ItemKey is the key the item was filed under.
	ItemKey string
	// Key is the comment's own key: the comment is posted once per key.
	Key         string
	Body        string
	Correlation string
}

// CommentResult is a posted comment and how this attempt came to it.
type CommentResult struct {
	Comment tracker.Comment
	How     string
}

// Comment posts a comment once per key (ADR-0033: comments are claimed the
// same way, as kind = 'comment'). Posting counts as a write to the item
// under the cap.
func (w *Writer) Comment(ctx context.Context, p CommentParams) (CommentResult, error) {
	if strings.TrimSpace(p.Body) == "" {
		return CommentResult{}, wrap(CodeInvalid, &tracker.InvalidError{Field: "body", Reason: "is empty"})
	}
	if err := tracker.ValidateText("body", p.Body); err != nil {
		return CommentResult{}, wrap(CodeInvalid, err)
	}
	if err := tracker.ValidateName("item_key", p.ItemKey); err != nil {
		return CommentResult{}, wrap(CodeInvalid, err)
	}
	if err := checkCorrelation(p.Correlation); err != nil {
		return CommentResult{}, err
	}
	s, err := w.begin(ctx, p.Tenant, p.Workspace, p.Key)
	if err != nil {
		return CommentResult{}, err
	}
	item, err := s.recordedRow(ctx, ledger.Key{Tenant: p.Tenant, Workspace: p.Workspace, Kind: ledger.KindItem, Key: p.ItemKey})
	if err != nil {
		return CommentResult{}, err
	}
	k := ledger.Key{Tenant: p.Tenant, Workspace: p.Workspace, Kind: ledger.KindComment, Key: p.Key}
	// A caller of a comment key another attempt holds waits for it, as a
	// filing's caller does (wait.go).
	deadline := w.answerBy(ctx, w.clock.Now().Add(w.opts.WriteBound))
	for range maxRounds {
		res, err := s.comment(ctx, k, item, p, deadline)
		if !errors.Is(err, errAgain) {
			return res, err
		}
	}
	return CommentResult{}, &Error{Code: CodeClaimed, RetryAfter: time.Second, Err: fmt.Errorf("comment key %s was claimed and given up again and again", tracker.Quote(p.Key))}
}

// comment is one round of Comment: the caller boards the key, or waits
// for the attempt of this process on it, then claims it and posts.
func (s session) comment(ctx context.Context, k ledger.Key, item ledger.Claim, p CommentParams, deadline time.Time) (CommentResult, error) {
	w := s.w
	f, leads := w.board(k)
	if !leads {
		return CommentResult{}, w.await(ctx, k, f, deadline)
	}
	defer w.unboard(k, f)
	row, outcome, err := w.ledger.Claim(ctx, ledger.ClaimParams{
		Key: k, Correlation: p.Correlation, Now: w.clock.Now(), RetakeAfter: w.opts.RetakeAfter,
	})
	if err != nil {
		return CommentResult{}, ledgerFailed(err)
	}
	if outcome == ledger.Held {
		if row, err = w.awaitHolder(ctx, k, row, deadline); err != nil {
			return CommentResult{}, err
		}
		outcome = ledger.Recorded
	}
	switch outcome {
	case ledger.Recorded:
		return CommentResult{Comment: tracker.Comment{ID: row.Ref.ID, ItemID: row.Ref.Key, Body: p.Body, Key: p.Key}, How: Existing}, nil
	case ledger.Deleted:
		return CommentResult{}, wrap(CodeDeleted, fmt.Errorf("the comment filed under %s was deleted", tracker.Quote(p.Key)))
	}
	// The comment is posted on a context of its own, which its caller's end
	// does not cancel: a caller that gives up before the tracker's turn
	// finds it posted and recorded when it comes back (its key makes the
	// retry safe). The caller is answered by its deadline.
	answer := make(chan commented, 1)
	go func() {
		res, err := s.post(context.WithoutCancel(ctx), k, item, p, row, outcome)
		answer <- commented{res, err}
	}()
	wait, cancel := w.clock.WithTimeout(ctx, w.answerBy(ctx, deadline).Sub(w.clock.Now()))
	defer cancel()
	select {
	case a := <-answer:
		return a.res, a.err
	case <-wait.Done():
		if ctx.Err() != nil {
			return CommentResult{}, wrap(CodeUnavailable, fmt.Errorf("the caller gave up; the comment %s goes on: %w", tracker.Quote(p.Key), ctx.Err()))
		}
		return CommentResult{}, &Error{Code: CodeUnavailable, RetryAfter: time.Second,
			Err: fmt.Errorf("comment %s is still being posted; it goes on", tracker.Quote(p.Key))}
	}
}

// commented is a comment's answer.
type commented struct {
	res CommentResult
	err error
}

// post posts the comment under the claim this attempt holds (Fresh or
// Retaken) and records it, all within the write bound.
func (s session) post(ctx context.Context, k ledger.Key, item ledger.Claim, p CommentParams, row ledger.Claim, outcome ledger.Outcome) (CommentResult, error) {
	w := s.w
	wctx, cancel := w.clock.WithTimeout(ctx, w.opts.WriteBound)
	defer cancel()
	switch outcome {
	case ledger.Retaken:
		// An earlier attempt may have posted it: look for the key among
		// the item's comments before posting.
		var found *tracker.Comment
		err := s.call(wctx, func(wctx context.Context, t *tracker.Tracker) error {
			cs, err := t.Comments(wctx, item.Ref.ID, time.Time{})
			for i := range cs {
				if cs[i].Key == p.Key {
					found = &cs[i]
				}
			}
			return err
		})
		if err != nil {
			// An earlier attempt's comment may stand: the claim holds
			// until the retake (relayr resolves no comment in doubt).
			return CommentResult{}, classify(err)
		}
		if found != nil {
			return s.recordComment(ctx, k, row.Nonce, *found, Found)
		}
	case ledger.Fresh:
	}
	counted, err := s.spendCap(ctx, item.Ref.ID)
	if err != nil {
		if rerr := w.ledger.Release(ctx, k, row.Nonce); rerr != nil {
			return CommentResult{}, errors.Join(err, rerr)
		}
		return CommentResult{}, err
	}
	var posted tracker.Comment
	err = s.call(wctx, func(wctx context.Context, t *tracker.Tracker) error {
		var err error
		posted, err = t.Comment(wctx, item.Ref.ID, p.Key, p.Body)
		return err
	})
	if err != nil {
		var failed error
		if tracker.CertainlyNotTaken(err) {
			// A comment the tracker did not take spends no cap: given
			// back before the claim is released, so a write after the
			// release finds the count back.
			failed = s.giveBack(ctx, counted, nil)
		}
		return CommentResult{}, errors.Join(undoubted(s.failed(ctx, k, row.Nonce, err)), failed)
	}
	ctx, done := s.landed(ctx) // the comment stands: it is recorded whatever its caller does
	defer done()
	return s.recordComment(ctx, k, row.Nonce, posted, Created)
}

func (s session) recordComment(ctx context.Context, k ledger.Key, nonce string, c tracker.Comment, how string) (CommentResult, error) {
	row, err := s.w.ledger.Record(ctx, ledger.RecordParams{Key: k, Nonce: nonce, Ref: tracker.ItemRef{ID: c.ID, Key: c.ItemID}, Now: s.w.clock.Now()})
	if err != nil {
		return CommentResult{}, ledgerFailed(err)
	}
	if row.Ref.ID != c.ID {
		return CommentResult{Comment: tracker.Comment{ID: row.Ref.ID, ItemID: row.Ref.Key, Key: k.Key}, How: Existing}, nil
	}
	return CommentResult{Comment: c, How: how}, nil
}
