package ledger

import (
	"context"

	"github.com/relayr-go/relayr/core/eventlog"
)

// Driver is what one store does for the portable Store, as go-cloud's
// drivers sit under its portable types: each method is a query (or one
// transaction) and the scan of its rows, nothing else. Store owns the
// rest, once for every store: every input check, the closed store and the
// done context, the port's sentinel errors, the claim's outcomes, the
// pending values' rules (through ChangeValues) and the cursor's forward
// rule (through ChangeCursor).
//
// Store calls a driver method only with inputs it has checked, on an open
// store and a live context. A driver answers ErrNotFound where a method
// says so, and otherwise its own errors, which Store maps through
// MapError. Drivers are safe for concurrent use. drivertest is the
// conformance suite every driver runs.
type Driver interface {
	// Name prefixes the store's errors ("ledgerpg").
	Name() string
	// MapError maps a failure of the store's own onto ErrUnavailable (a
	// dropped connection, a lock that timed out: the call may be retried),
	// ErrInvalid (a value the store refused) or ErrClosed, wrapping it;
	// any other error it answers as it is.
	MapError(err error) error
	// Ping reports whether the store answers and its schema is current.
	Ping(ctx context.Context) error
	// Close releases what the driver holds; Store calls it once.
	Close() error

	ClaimDriver
	SnapshotDriver
	FollowerDriver
	// The operator's reads, the heartbeat and the event log are the
	// ports' own methods: Store checks their inputs and maps their
	// errors, and a driver answers them as the ports say (an append of an
	// id once, atomically across replicas; a dead letter resolved once).
	Operator
	Holders
	eventlog.Log
}

// ClaimDriver keeps the claims (relayr_tracker_items) and the writes the
// loop cap counts.
type ClaimDriver interface {
	// TakeClaim takes p.Key with nonce when it has no row (answering
	// Fresh) or its row is unrecorded, not deleted and claimed before
	// p.Now-p.RetakeAfter (answering Retaken, the row keeping its first
	// correlation). Otherwise it answers the row as it stands and outcome
	// 0, or ErrNotFound when the row went between its statements.
	TakeClaim(ctx context.Context, p ClaimParams, nonce string) (Claim, Outcome, error)
	// RecordClaim records p.Ref on the row when it is unrecorded and holds
	// p.Nonce, writing nonce, and answers the row and true; then, in the
	// same transaction, it writes p.Snapshot (when set) unless its item has
	// a snapshot, a tombstone included. Otherwise it answers the row as it
	// stands and false, or ErrNotFound, and writes no snapshot.
	RecordClaim(ctx context.Context, p RecordParams, nonce string) (Claim, bool, error)
	// ReleaseClaim deletes the row when it is unrecorded, not deleted and
	// holds nonce, answering true. Otherwise it answers the row as it
	// stands and false, or ErrNotFound.
	ReleaseClaim(ctx context.Context, k Key, nonce string) (Claim, bool, error)
	// MarkDeleted marks the key's row deleted with nonce, making the row
	// when there is none.
	MarkDeleted(ctx context.Context, k Key, nonce string) error
	// LookupClaim reads the key's row, or ErrNotFound.
	LookupClaim(ctx context.Context, k Key) (Claim, error)
	// LookupItem reads the item row recorded with the tracker's item id,
	// or ErrNotFound.
	LookupItem(ctx context.Context, tenant, workspace, itemID string) (Claim, error)
	// ChangeValues reads the key's values in one transaction with the row
	// locked, lets change edit them, and writes them back; ErrNotFound
	// when the key has no row. It is the one hook the pending values'
	// rules (SetPending, RestorePending, ConsumePending) run through; a
	// driver that retries its transaction calls change again on the
	// values read again.
	ChangeValues(ctx context.Context, k Key, change func(values map[string]string)) error
	// CountWrite counts a write at p.Now when fewer than p.Limit were
	// counted after p.Now-p.Window, dropping those before, atomically
	// across replicas; it answers how many are counted and whether this
	// one was.
	CountWrite(ctx context.Context, p WriteParams) (n int, counted bool, err error)
	// UncountWrite forgets one write counted at exactly p.Now, if any.
	UncountWrite(ctx context.Context, p WriteParams) error
	// ForgetWrites drops an item's counted writes.
	ForgetWrites(ctx context.Context, tenant, workspace, itemID string) error
}

// SnapshotDriver keeps the followers' snapshots.
type SnapshotDriver interface {
	// Snapshot reads one item's snapshot, or ErrNotFound.
	Snapshot(ctx context.Context, tenant, workspace, itemID string) (SnapshotRow, error)
	// SaveSnapshots writes rows, replacing earlier ones, in one
	// transaction; Store hands it one row per item.
	SaveSnapshots(ctx context.Context, rows []SnapshotRow) error
	// DeleteSnapshot forgets an item's snapshot.
	DeleteSnapshot(ctx context.Context, tenant, workspace, itemID string) error
	// SnapshotIDs answers up to limit item ids of a workspace's snapshots
	// after after ("" is before every id), in byte order, tombstones
	// (SnapshotRow.Removed) left out.
	SnapshotIDs(ctx context.Context, tenant, workspace, after string, limit int) ([]string, error)
}

// FollowerDriver keeps both kinds of follower's lease, cursor and dead
// letters.
type FollowerDriver interface {
	// TakeLease gives the follower's lease to p.Holder with nonce until
	// p.Now+p.TTL when nobody holds it or it expired at or before p.Now,
	// answering true; otherwise it changes nothing and answers false.
	TakeLease(ctx context.Context, p LeaseParams, nonce string) (bool, error)
	// RenewLease extends the lease whose nonce is p.Nonce to p.Now+p.TTL
	// with nonce, answering its holder and true; false when no lease holds
	// p.Nonce.
	RenewLease(ctx context.Context, p LeaseParams, nonce string) (holder string, ok bool, err error)
	// ReleaseLease gives up the lease nonce holds, answering true; false
	// when none does.
	ReleaseLease(ctx context.Context, f Follower, nonce string) (bool, error)
	// Lease reads the lease's holder and expiry; a follower with no row,
	// or a released lease, reads with an empty Holder.
	Lease(ctx context.Context, f Follower) (Lease, error)
	// Cursor reads the follower's cursor; no row reads as the zero Cursor.
	Cursor(ctx context.Context, f Follower) (Cursor, error)
	// ChangeCursor reads the follower's cursor (the zero Cursor for a
	// follower with no row) in one transaction with its row locked, and
	// writes what change answers, making the row when there is none. It
	// is the one hook the cursor's forward rule runs through.
	ChangeCursor(ctx context.Context, f Follower, change func(Cursor) Cursor) error
	// DeadLetter keeps d unless the follower has a dead letter of its id,
	// answering whether it kept it.
	DeadLetter(ctx context.Context, d DeadLetter) (bool, error)
	// DeadLetters reads a follower's dead letters, oldest first (by At,
	// then by when they were kept).
	DeadLetters(ctx context.Context, f Follower) ([]DeadLetter, error)
	// Followed lists every log follower with a row, across tenants, by
	// tenant, workspace and name.
	Followed(ctx context.Context) ([]Follower, error)
}
