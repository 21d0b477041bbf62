package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/relayr-go/relayr/core/eventlog"
)

// Resolution is what an operator did with a dead letter: replayed it or
// skipped it. A dead letter is resolved once; "" is one still open.
type Resolution string

// The two resolutions of a dead letter.
const (
	// Replayed: the dead letter's event was published again, under its
	// own id, so a subscriber that took it before takes nothing new.
	Replayed Resolution = "replayed"
	// Skipped: the operator chose to leave the event undelivered.
	Skipped Resolution = "skipped"
)

// EventQuery asks for a workspace's latest events.
type EventQuery struct {
	Tenant    string
	Workspace string
	// Type keeps only the events of this type ("" keeps every type).
	Type string
	// Limit is how many events at most, newest first (MaxOperatorRows at
	// the most; below 1 answers none).
	Limit int
}

// CapQuery asks for the items at the loop cap: those that took Limit
// writes within Window before Now (the cap CountWrite applies).
type CapQuery struct {
	Tenant string
	Now    time.Time
	Window time.Duration
	Limit  int
	// Rows is how many items at most (MaxOperatorRows at the most).
	Rows int
}

// CapItem is an item at the loop cap: its writes within the window, and
// the oldest of them, which leaves the window first.
type CapItem struct {
	Tenant    string
	Workspace string
	ItemID    string
	Writes    int
	Oldest    time.Time
}

// MaxOperatorRows is the most rows one operator query answers: a page, not
// a dump of the ledger.
const MaxOperatorRows = 500

// Operator is what an operator's page reads from the ledger beyond the
// status, and the two actions on a dead letter it records. Every read is
// one tenant's (row-level security keys every row to its tenant), changes
// nothing, and answers at most MaxOperatorRows rows; ResolveDeadLetter is
// its only write.
type Operator interface {
	// LatestEvents answers a workspace's latest events, newest first,
	// of q.Type when it names one.
	LatestEvents(ctx context.Context, q EventQuery) ([]eventlog.Event, error)
	// Unrecorded answers the tenant's claims that recorded nothing and
	// are not deleted (a write in flight, or one whose attempt died),
	// oldest claim first, at most rows.
	Unrecorded(ctx context.Context, tenant string, rows int) ([]Claim, error)
	// DeletedKeys answers the tenant's keys marked deleted, by
	// workspace, kind and key, at most rows.
	DeletedKeys(ctx context.Context, tenant string, rows int) ([]Claim, error)
	// AtCap answers the tenant's items at the loop cap, by workspace and
	// item id.
	AtCap(ctx context.Context, q CapQuery) ([]CapItem, error)
	// RecentDeadLetters answers a follower's latest dead letters, newest
	// first (the reverse of DeadLetters' order), at most rows: a backlog of
	// thousands is not read whole at every refresh of the page.
	RecentDeadLetters(ctx context.Context, f Follower, rows int) ([]DeadLetter, error)
	// LookupDeadLetter answers a follower's dead letter of id as it
	// stands, or ErrNotFound: an operator's action on one dead letter
	// reads that one, not the follower's backlog.
	LookupDeadLetter(ctx context.Context, f Follower, id string) (DeadLetter, error)
	// ResolveDeadLetter records what the operator did with a follower's
	// dead letter, once: the first resolution is kept, and a later one
	// changes nothing and answers false, with the dead letter as it
	// stands. A dead letter that does not exist fails with ErrNotFound.
	ResolveDeadLetter(ctx context.Context, f Follower, id string, r Resolution, now time.Time) (DeadLetter, bool, error)
}

// CheckRows refuses a row count no store answers: below 1 or over
// MaxOperatorRows.
func CheckRows(rows int) error {
	if rows < 1 || rows > MaxOperatorRows {
		return fmt.Errorf("%w: rows must be 1 to %d, not %d", ErrInvalid, MaxOperatorRows, rows)
	}
	return nil
}

// CheckResolution refuses a resolution that is neither Replayed nor
// Skipped, an id no store keeps, and a zero time.
func CheckResolution(f Follower, id string, r Resolution, now time.Time) error {
	if r != Replayed && r != Skipped {
		return fmt.Errorf("%w: unknown resolution %q", ErrInvalid, r)
	}
	if now.IsZero() {
		return fmt.Errorf("%w: a resolution needs a time", ErrInvalid)
	}
	return checkDeadLetterID(f, id)
}

// checkDeadLetterID refuses a follower no store keeps and an id no store
// keeps.
func checkDeadLetterID(f Follower, id string) error {
	if err := CheckFollower(f); err != nil {
		return err
	}
	if id == "" || len(id) > MaxKey {
		return fmt.Errorf("%w: a dead letter's id must be 1 to %d bytes", ErrInvalid, MaxKey)
	}
	return CheckText(id)
}

// CheckTenant refuses a tenant no store keeps.
func CheckTenant(tenant string) error {
	if tenant == "" || len(tenant) > MaxName {
		return fmt.Errorf("%w: a tenant must be 1 to %d bytes", ErrInvalid, MaxName)
	}
	return CheckText(tenant)
}

// CheckEventQuery refuses a query no store answers alike.
func CheckEventQuery(q EventQuery) error {
	if q.Tenant == "" || q.Workspace == "" || len(q.Tenant) > MaxName || len(q.Workspace) > MaxName || len(q.Type) > MaxName {
		return fmt.Errorf("%w: an event query needs a tenant and a workspace of at most %d bytes", ErrInvalid, MaxName)
	}
	if err := CheckRows(q.Limit); err != nil {
		return err
	}
	return CheckText(q.Tenant, q.Workspace, q.Type)
}

// CheckCapQuery refuses a cap query no store answers alike.
func CheckCapQuery(q CapQuery) error {
	if err := CheckTenant(q.Tenant); err != nil {
		return err
	}
	if q.Window <= 0 || q.Limit < 1 {
		return fmt.Errorf("%w: the cap needs a window and a limit", ErrInvalid)
	}
	return CheckRows(q.Rows)
}
