package tracker

import (
	"errors"
	"fmt"
	"time"
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
)

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
// take a write: refused, missing, rate-limited, or the key refused
// (ADR-0033: such a write releases its claim).
func CertainlyNotTaken(err error) bool {
	return errors.Is(err, ErrRefused) || errors.Is(err, ErrNotFound) ||
		errors.Is(err, ErrRateLimited) || errors.Is(err, ErrUnauthorized) ||
		errors.Is(err, ErrInvalid)
}
