package writes

import (
	"context"
	"errors"
	"time"

	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
)

// Code is a write's failure as a client sees it: stable, and telling whether
// a retry can succeed.
type Code string

// The codes of ADR-0033 and ADR-0036.
const (
	// CodeClaimed: another attempt holds a fresh claim on the key. Retry.
	CodeClaimed Code = "tracker_claimed"
	// CodeUnavailable: the tracker (or the ledger) didn't answer in time,
	// or asked for a wait. Retry, after RetryAfter when it is set.
	CodeUnavailable Code = "tracker_unavailable"
	// CodeLoop: the item took the cap's writes this hour. Don't retry.
	CodeLoop Code = "tracker_loop"
	// CodeNotAllowed: the tracker is switched off in the workspace, or the
	// workspace isn't bound. Don't retry.
	CodeNotAllowed Code = "not_allowed"
	// CodeRefused: the tracker refused the write as it stands. Don't retry.
	CodeRefused Code = "refused"
	// CodeDeleted: the key's item was deleted. Don't retry.
	CodeDeleted Code = "deleted"
	// CodeInvalid: the request itself is bad (a key, a title). Don't retry.
	CodeInvalid Code = "invalid"
)

// Retryable reports whether a retry of the same write can succeed.
func (c Code) Retryable() bool { return c == CodeClaimed || c == CodeUnavailable }

// Error is a failed write.
type Error struct {
	Code Code
	// RetryAfter is how long the tracker asked to wait, when it did.
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Err.Error() }

// Unwrap answers the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is matches an *Error of the same code, so errors.Is(err, ErrClaimed)
// works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Err == nil && t.Code == e.Code
}

// Sentinels to match with errors.Is.
var (
	ErrClaimed     error = &Error{Code: CodeClaimed}
	ErrUnavailable error = &Error{Code: CodeUnavailable}
	ErrLoop        error = &Error{Code: CodeLoop}
	ErrNotAllowed  error = &Error{Code: CodeNotAllowed}
	ErrRefused     error = &Error{Code: CodeRefused}
	ErrDeleted     error = &Error{Code: CodeDeleted}
	ErrInvalid     error = &Error{Code: CodeInvalid}
)

// CodeOf answers an error's code ("" for nil or a foreign error).
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func wrap(c Code, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{Code: c, Err: err}
}

// classify maps a tracker failure onto a code.
func classify(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	var rl *tracker.RateLimitedError
	switch {
	case errors.As(err, &rl):
		return &Error{Code: CodeUnavailable, RetryAfter: rl.RetryAfter, Err: err}
	case errors.Is(err, tracker.ErrInvalid):
		return &Error{Code: CodeInvalid, Err: err}
	case errors.Is(err, tracker.ErrRefused), errors.Is(err, tracker.ErrNotFound):
		return &Error{Code: CodeRefused, Err: err}
	case errors.Is(err, context.Canceled):
		return &Error{Code: CodeUnavailable, Err: err}
	default:
		// Unavailable, the bound passed, the key refused twice, the
		// ledger: a retry can succeed.
		return &Error{Code: CodeUnavailable, Err: err}
	}
}

// ledgerFailed maps a ledger failure: a value no store keeps is the caller's
// error (invalid); anything else may pass (unavailable).
func ledgerFailed(err error) error {
	if errors.Is(err, ledger.ErrInvalid) {
		return wrap(CodeInvalid, err)
	}
	return wrap(CodeUnavailable, err)
}
