package tracker

import (
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// Sentinel errors of the port. Adapters wrap them (or return the typed errors
// below, which match them) so callers use errors.Is.
var (
	// ErrRateLimited: the tracker asked relayr to wait; see *RateLimitedError.
	ErrRateLimited = errors.New("tracker: rate limited")
	// ErrUnavailable: the tracker didn't answer (5xx, timeout, refused or
	// dropped connection, a garbled answer); the write may or may not have
	// landed.
	ErrUnavailable = errors.New("tracker: unavailable")
	// ErrNotFound: no such item (deleted items included).
	ErrNotFound = errors.New("tracker: not found")
	// ErrRefused: the tracker refused the request as it stands (4xx other
	// than the above); sending it again won't help.
	ErrRefused = errors.New("tracker: refused")
	// ErrUnauthorized: the key was refused (401 or 403), or a webhook's
	// signature didn't verify.
	ErrUnauthorized = errors.New("tracker: unauthorized")
	// ErrExists: a create found an item already filed under the key; see
	// *ExistsError for its id.
	ErrExists = errors.New("tracker: already exists")
	// ErrInvalid: relayr's own input is bad (an empty key, a blank title);
	// nothing was sent.
	ErrInvalid = errors.New("invalid input")
	// ErrNotSent: the request never left relayr (it waited for a write
	// slot, or for its tracker to be connected, and gave up first). It is
	// matched with ErrUnavailable too: a retry can succeed, and the tracker
	// certainly didn't take the write (ADR-0033: such a write releases its
	// claim). Wrap it with NotSent.
	ErrNotSent = errors.New("tracker: the request was never sent")
)

// notSent is ErrNotSent with its cause: it matches ErrNotSent and
// ErrUnavailable, and unwraps to the cause.
type notSent struct{ cause error }

func (e *notSent) Error() string { return "the request was never sent: " + e.cause.Error() }

func (e *notSent) Is(target error) bool { return target == ErrNotSent || target == ErrUnavailable }

func (e *notSent) Unwrap() error { return e.cause }

// NotSent marks err as the failure of a request that never left relayr:
// it matches ErrNotSent and ErrUnavailable. A request that may have been
// sent in part must never be marked so.
func NotSent(err error) error {
	if err == nil || errors.Is(err, ErrNotSent) {
		return err
	}
	return &notSent{cause: err}
}

// RateLimitedError carries how long the tracker asked relayr to wait.
type RateLimitedError struct {
	RetryAfter time.Duration
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("tracker: rate limited, retry after %s", e.RetryAfter)
}

// Is makes a *RateLimitedError match ErrRateLimited.
func (e *RateLimitedError) Is(target error) bool { return target == ErrRateLimited }

// RateLimited returns a rate-limit error asking for a wait of d.
func RateLimited(d time.Duration) error { return &RateLimitedError{RetryAfter: d} }

// ExistsError names the item a create found already filed under its key.
type ExistsError struct {
	ID string
}

func (e *ExistsError) Error() string { return "tracker: already exists as " + e.ID }

// Is makes an *ExistsError match ErrExists.
func (e *ExistsError) Is(target error) bool { return target == ErrExists }

// InvalidError says which input was bad and why.
type InvalidError struct {
	Field  string
	Reason string
}

func (e *InvalidError) Error() string { return "invalid " + e.Field + ": " + e.Reason }

// Is makes an *InvalidError match ErrInvalid.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// CertainlyNotTaken reports whether err says the tracker certainly didn't
// take a write: refused, missing, rate-limited, the key refused, or never
// sent at all (ADR-0033: such a write releases its claim).
func CertainlyNotTaken(err error) bool {
	return errors.Is(err, ErrRefused) || errors.Is(err, ErrNotFound) ||
		errors.Is(err, ErrRateLimited) || errors.Is(err, ErrUnauthorized) ||
		errors.Is(err, ErrInvalid) || errors.Is(err, ErrNotSent)
}

// MaxQuoted is the most of a value an error quotes: a refusal names the
// field and quotes a short prefix of what it refused, never the whole of a
// value a caller sent (a 900 KB state would come back whole otherwise).
const MaxQuoted = 64

// Quote quotes v for an error or a log line: whole when it is at most
// MaxQuoted bytes, else its first MaxQuoted bytes (cut at a character's
// start) with its length.
func Quote(v string) string {
	if len(v) <= MaxQuoted {
		return fmt.Sprintf("%q", v)
	}
	cut := MaxQuoted
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return fmt.Sprintf("%q… (%d bytes)", v[:cut], len(v))
}
