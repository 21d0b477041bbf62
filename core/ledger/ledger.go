// Package ledger is relayr's memory: the port every guarantee rests on.
//
// The ledger keeps the claims and records of the keys relayr files under
// (relayr_tracker_items, ADR-0033), the snapshots the tracker followers diff
// against (relayr_tracker_snapshots, ADR-0036), the followers' cursors and
// leases (relayr_tracker_followers, relayr_followers, ADR-0015), their dead
// letters (relayr_tracker_dead_letters, relayr_dead_letters), and relayr's
// writes to each item, which the loop cap counts. Operator (operator.go)
// is what an operator's page reads beyond the status, and the one thing it
// records: what was done with a dead letter.
//
// Every mutable row (a claim, a lease) carries a nonce, and every change
// writes a new one; a change conditioned on a nonce its caller no longer
// holds does nothing and says so (Ratus: optimistic concurrency through a
// nonce). Every method takes the tenant; only Followed reads across tenants.
//
// Times are the caller's: every method that decides by time takes "now"
// from the caller's clock, so a fake clock drives every store alike.
//
// Store (store.go) is the one implementation of the ports, portable over a
// Driver (driver.go) per store, as go-cloud's portable types sit over their
// drivers: Store owns every rule the stores share (the input checks, the
// closed store and done context, the sentinel errors, the claim's outcomes,
// the pending values, the cursor's forward rule), and a driver only runs
// queries and scans their rows. memledger, ledgersqlite and ledgerpg are
// drivers; ledgertest checks the ports through each, drivertest each
// driver beneath.
package ledger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/tracker"
)

// Kind tells items from comments in the claims table (ADR-0033: comments are
// claimed in the same table, as kind = 'comment').
type Kind string

// The two kinds of claim.
const (
	KindItem    Kind = "item"
	KindComment Kind = "comment"
)

// Key names one claim row: tenant, workspace, kind and key.
type Key struct {
	Tenant    string
	Workspace string
	Kind      Kind
	Key       string
}

// Claim is one row of relayr_tracker_items.
type Claim struct {
	Key
	// Nonce changes with every change to the row; a caller acts on the row
	// only while it holds the current nonce.
	Nonce string
	// ClaimedAt is when the current claimer took the claim.
	ClaimedAt time.Time
	// Correlation is the first claimer's correlation id, kept for the row's
	// life (ADR-0033).
	Correlation string
	// Recorded is true once the claimer recorded what it made; Ref is then
	// the item (or, for a comment, Ref.ID is the comment's id and Ref.Key
	// the item's id).
	Recorded   bool
	Ref        tracker.ItemRef
	RecordedAt time.Time
	// Deleted marks a key whose item was deleted: it files nothing again.
	Deleted bool
	// Values are the values relayr set on the item and no read has
	// consumed yet, by field, as the tracker holds them, in canonical JSON:
	// a field's values oldest first (Pending splits them), each an edit
	// the tracker answered marked with when (LandPending). The follower
	// drops a read-back field holding one of its values as an echo
	// (IsPending), and consumes it; a person's value read back supersedes
	// those landed before the read (SupersedePending).
	Values map[string]string
}

// Outcome says what Claim found.
type Outcome int

// What a claim attempt can find.
const (
	// Fresh: the key was new; the caller holds the claim and no attempt
	// made anything under it before.
	Fresh Outcome = iota + 1
	// Retaken: an earlier claim lapsed with nothing recorded; the caller
	// holds the claim now, and the earlier attempt may have made the item.
	Retaken
	// Recorded: the key's item is recorded; the caller holds nothing.
	Recorded
	// Deleted: the key's item was deleted; the caller holds nothing.
	Deleted
	// Held: another attempt holds a fresh claim; the caller holds nothing.
	Held
)

func (o Outcome) String() string {
	switch o {
	case Fresh:
		return "fresh"
	case Retaken:
		return "retaken"
	case Recorded:
		return "recorded"
	case Deleted:
		return "deleted"
	case Held:
		return "held"
	}
	return "unknown"
}

// ClaimParams asks for a claim on a key.
type ClaimParams struct {
	Key
	Correlation string
	Now         time.Time
	// RetakeAfter is how old an unrecorded claim must be to be taken again
	// (ADR-0033: 30 s).
	RetakeAfter time.Duration
}

// RecordParams records what a claim made.
type RecordParams struct {
	Key
	Nonce string
	Ref   tracker.ItemRef
	Now   time.Time
	// Snapshot, when set, is the item's first snapshot, the one its
	// filing leaves (ADR-0036's departures: a baseline for every field):
	// saved with the record, atomically, when this call records and the
	// item has no snapshot yet (a follower that read it first, or its
	// tombstone, keeps its own).
	Snapshot *SnapshotRow
}

// LandParams marks the values of a write the tracker answered landed.
type LandParams struct {
	Key
	// Sent are the values the write sent (and recorded before it), Held
	// those the tracker answered it holds where they differ from Sent.
	Sent, Held map[string]string
	// At is relayr's time of the answer (SupersedeValues' before).
	At time.Time
	// Version is the item's updated_at in the tracker's answer: the
	// tracker held the values then (zero when the answer did not say).
	Version time.Time
}

// SnapshotRow is one item's snapshot (relayr_tracker_snapshots), keyed by the
// tracker's id for the item.
type SnapshotRow struct {
	Tenant    string
	Workspace string
	ItemID    string
	// Item is the item as last read, as JSON the follower wrote.
	Item []byte
	// UpdatedAt is the item's updated_at when read.
	UpdatedAt time.Time
	// CommentsUntil is the creation time of the newest comment seen.
	CommentsUntil time.Time
	// Removed marks a tombstone: the snapshot of an item the followers
	// published as removed without knowing it deleted (archived on Plane,
	// or gone with no way to tell), kept so that an item listed again is
	// told from a new one. SnapshotIDs lists no tombstone.
	Removed bool
}

// FollowerKind tells the two kinds of follower apart.
type FollowerKind string

// The two kinds of follower.
const (
	// TrackerFollower reads a bound tracker project (relayr_tracker_followers).
	TrackerFollower FollowerKind = "tracker"
	// LogFollower reads a workspace's event log (relayr_followers).
	LogFollower FollowerKind = "log"
)

// Follower names one follower: its kind, tenant, workspace and name (the
// tracker kind for a tracker follower, the subscription for a log follower).
type Follower struct {
	Kind      FollowerKind
	Tenant    string
	Workspace string
	Name      string
}

// Lease is a follower's lease as its holder sees it.
type Lease struct {
	Follower
	Holder  string
	Nonce   string
	Expires time.Time
}

// LeaseParams takes or renews a lease.
type LeaseParams struct {
	Follower
	Holder string
	// Nonce is the holder's current nonce when renewing, "" when taking.
	Nonce string
	Now   time.Time
	TTL   time.Duration
}

// Cursor is where a follower is. A tracker follower's position is
// (UpdatedAt, ItemID); a log follower's is Seq. Seeded, SweptAt and PolledAt
// belong to tracker followers: whether the binding's first read is done,
// when the last full sweep ran, and when the last poll completed (what an
// operator reads a starved follower from, whichever replica polled).
type Cursor struct {
	UpdatedAt time.Time
	ItemID    string
	Seq       int64
	Seeded    bool
	SweptAt   time.Time
	PolledAt  time.Time
}

// DeadLetter is an event a follower could not bridge, kept once per id.
type DeadLetter struct {
	Follower
	// ID is the event id (tracker dead letters) or the sequence number as
	// text (log dead letters), which keeps a dead letter once.
	ID     string
	Seq    int64
	Event  []byte
	Reason string
	At     time.Time
	// Resolution is what an operator did with it (Operator's
	// ResolveDeadLetter), "" while it is open, and ResolvedAt when.
	Resolution Resolution
	ResolvedAt time.Time
}

// WriteParams counts one relayr write to an item against the loop cap.
type WriteParams struct {
	Tenant    string
	Workspace string
	ItemID    string
	Now       time.Time
	// Window and Limit are the cap: at most Limit writes in any Window
	// (ADR-0036: 20 an hour).
	Window time.Duration
	Limit  int
}

// Errors the ledger answers, matched with errors.Is.
var (
	// ErrNonce: the caller no longer holds the row's nonce (its claim was
	// retaken, its lease taken); nothing was changed.
	ErrNonce = errors.New("ledger: nonce no longer held")
	// ErrLeaseHeld: another holder has the lease and it has not lapsed.
	ErrLeaseHeld = errors.New("ledger: lease held by another")
	// ErrNotFound: no such row.
	ErrNotFound = errors.New("ledger: not found")
	// ErrLoop: the item already took the cap's writes within the window.
	ErrLoop = errors.New("ledger: write cap reached")
	// ErrInvalid: a value the store can't keep (a NUL byte, an empty tenant).
	ErrInvalid = errors.New("ledger: invalid value")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("ledger: closed")
	// ErrUnavailable: the store didn't answer (a dropped connection); the
	// call may be retried.
	ErrUnavailable = errors.New("ledger: unavailable")
)

// Claims is the claims part of the ledger (relayr_tracker_items).
type Claims interface {
	// Claim takes a new key, or one claimed more than RetakeAfter ago that
	// never recorded what it made. It returns the row as it stands and what
	// it found: for Fresh and Retaken the caller holds the row's Nonce; for
	// Recorded, Deleted and Held it holds nothing. A Held outcome is not an
	// error here; the domain turns it into tracker_claimed.
	Claim(ctx context.Context, p ClaimParams) (Claim, Outcome, error)
	// Record records what the claim made and keeps the first record: on a
	// recorded row it changes nothing and returns the row. With a
	// Snapshot, it saves the item's first snapshot in the same
	// transaction, where the item has none. On an
	// unrecorded row whose nonce the caller no longer holds, or on a key
	// with no row (its claim was released), it fails with ErrNonce.
	Record(ctx context.Context, p RecordParams) (Claim, error)
	// Release gives up an unrecorded claim the caller holds, so the key can
	// be claimed again at once: the row goes, and the next claim is Fresh.
	// On a nonce no longer held (or no row) it fails with ErrNonce; on a
	// recorded or deleted row it does nothing.
	Release(ctx context.Context, k Key, nonce string) error
	// MarkDeleted marks the key's item deleted; Claim answers Deleted from
	// then on. A key with no row gets one, marked.
	MarkDeleted(ctx context.Context, k Key) error
	// Lookup reads a key's row: ErrNotFound when there is none.
	Lookup(ctx context.Context, k Key) (Claim, error)
	// LookupItem finds the item row recorded for the tracker's item id in a
	// workspace: ErrNotFound when relayr filed no such item.
	LookupItem(ctx context.Context, tenant, workspace, itemID string) (Claim, error)
	// SetValues records values on the key's row before they are sent, each
	// after its field's earlier ones (SetPending), and returns the value
	// each field held last before (a field with none is absent from the
	// answer). It, RestoreValues and ConsumeValues fail with ErrNotFound on
	// a key with no row.
	SetValues(ctx context.Context, k Key, values map[string]string) (previous map[string]string, err error)
	// RestoreValues takes the values of a refused edit back off the row
	// (RestorePending), so the value recorded before it is again the last.
	RestoreValues(ctx context.Context, k Key, refused map[string]string) error
	// ConsumeValues consumes the values the follower read back as echoes:
	// each, and its field's values recorded before it (ConsumePending). A
	// value recorded since the read (a later edit, on its way) is kept, or
	// its read-back would pass for a person's change.
	ConsumeValues(ctx context.Context, k Key, values map[string]string) error
	// LandValues marks a write's values landed (LandPending): the values
	// it sent, then those the tracker answered it holds where they differ
	// (recorded after the others), at p.At, relayr's time of the answer,
	// and p.Version, the item's version in the tracker's answer.
	// ErrNotFound on a key with no row.
	LandValues(ctx context.Context, p LandParams) error
	// SupersedeValues drops the fields' values whose writes landed before
	// before (SupersedePending): the follower read a person's value for
	// each field with a request it sent at before. ErrNotFound on a key
	// with no row.
	SupersedeValues(ctx context.Context, k Key, fields []string, before time.Time) error
	// CountWrite counts a write to an item if fewer than Limit were counted
	// within Window before Now (a write at w counts while Now-w < Window),
	// and answers how many are counted with it;
	// at the cap it counts nothing and fails with ErrLoop. It is atomic
	// across replicas.
	CountWrite(ctx context.Context, p WriteParams) (int, error)
	// UncountWrite gives back one write CountWrite counted at p.Now (Window
	// and Limit are not read), for a write the tracker certainly did not
	// take: the cap counts the writes an item took, not those refused. A
	// write not counted at p.Now, or gone from the window, gives back
	// nothing, and that is no error.
	UncountWrite(ctx context.Context, p WriteParams) error
	// ForgetWrites drops an item's counted writes (an item the sweep
	// removed forgets its writes, ADR-0036).
	ForgetWrites(ctx context.Context, tenant, workspace, itemID string) error
}

// Snapshots is the tracker followers' memory of each item.
type Snapshots interface {
	// Snapshot reads one item's snapshot: ErrNotFound when there is none.
	Snapshot(ctx context.Context, tenant, workspace, itemID string) (SnapshotRow, error)
	// SaveSnapshots writes snapshots, replacing earlier ones, atomically.
	SaveSnapshots(ctx context.Context, rows []SnapshotRow) error
	// DeleteSnapshot forgets an item's snapshot (a deleted item), its
	// tombstone included.
	DeleteSnapshot(ctx context.Context, tenant, workspace, itemID string) error
	// SnapshotIDs lists the ids of every snapshot in a workspace but the
	// tombstones (SnapshotRow.Removed), in byte order, calling fn for
	// each; fn returning false stops the walk. fn may call the ledger.
	SnapshotIDs(ctx context.Context, tenant, workspace string, fn func(itemID string) bool) error
}

// Followers keeps both kinds of follower's lease, cursor and dead letters.
type Followers interface {
	// TakeLease takes a follower's lease for Holder when nobody holds it or
	// its lease lapsed (Now at or past Expires); otherwise it fails with
	// ErrLeaseHeld, even for the same Holder, who renews with its nonce
	// instead. The answer carries the nonce the holder renews with.
	TakeLease(ctx context.Context, p LeaseParams) (Lease, error)
	// RenewLease extends the lease of the holder of p.Nonce to Now+TTL and
	// answers a new nonce; a holder whose lease was taken or released
	// (another nonce, or none) fails with ErrNonce. A lapsed lease nobody
	// took is renewed.
	RenewLease(ctx context.Context, p LeaseParams) (Lease, error)
	// ReleaseLease gives the lease up at once if nonce still holds it;
	// otherwise it changes nothing and fails with ErrNonce.
	ReleaseLease(ctx context.Context, f Follower, nonce string) error
	// Lease reads who holds a follower's lease and until when, for an
	// operator; its Nonce is never answered. A lease nobody holds (never
	// taken, released) reads with an empty Holder; one that lapsed still
	// names its last holder, with Expires in the past.
	Lease(ctx context.Context, f Follower) (Lease, error)
	// Cursor reads a follower's cursor; a follower never saved reads as the
	// zero Cursor.
	Cursor(ctx context.Context, f Follower) (Cursor, error)
	// SaveCursor moves a follower's cursor forward: a position before the
	// saved one is ignored (Seeded, SweptAt and PolledAt only move forward
	// too).
	SaveCursor(ctx context.Context, f Follower, c Cursor) error
	// DeadLetter keeps an event once per id; a second call with the same id
	// changes nothing and answers false.
	DeadLetter(ctx context.Context, d DeadLetter) (added bool, err error)
	// DeadLetters lists a follower's dead letters, oldest first (by At,
	// then by when they were kept).
	DeadLetters(ctx context.Context, f Follower) ([]DeadLetter, error)
	// Followed lists every log follower with a row (a lease or a cursor
	// ever saved), across tenants (the one read across tenants, ADR-0015),
	// so the followers resume at start-up; ordered by tenant, workspace and
	// name.
	Followed(ctx context.Context) ([]Follower, error)
}

// Ledger is the whole port. Implementations are safe for concurrent use and
// honour ctx: a cancelled context fails the call with an error wrapping
// ctx.Err() and changes nothing.
type Ledger interface {
	Claims
	Snapshots
	Followers
	Holders
	// Ping reports whether the store answers and its schema is current.
	Ping(ctx context.Context) error
}

// The longest names and keys every store keeps (the domain refuses keys
// over 1,024 bytes before the ledger sees them; PostgreSQL indexes no entry
// over about 2.7 KB): a tenant, workspace or follower name is at most
// MaxName bytes; a key, an item id or an event id at most MaxKey. Each is
// defined once, where it is first needed, and named here for the stores:
// a name's in eventlog (a log keeps the tenant and workspace), a key's in
// tracker (relayr files under it); an event id's, eventlog.MaxID, is the
// same length as a key's.
const (
	MaxName = eventlog.MaxName
	MaxKey  = tracker.MaxKeyBytes
	// MaxCorrelation is the longest correlation a claim keeps (four keys'
	// worth, so one can hold a key and more): the followers copy it onto
	// every event of the claim's item, for the item's life.
	MaxCorrelation = 4 * MaxKey
)

// CheckText refuses what no store can keep alike: a NUL byte or text that is
// not UTF-8 (PostgreSQL's text refuses both). Every store checks every string
// it is given with it and answers an error wrapping ErrInvalid.
func CheckText(values ...string) error {
	for _, v := range values {
		if strings.IndexByte(v, 0) >= 0 {
			return fmt.Errorf("%w: %q holds a NUL byte", ErrInvalid, v)
		}
		if !utf8.ValidString(v) {
			return fmt.Errorf("%w: %q is not UTF-8", ErrInvalid, v)
		}
	}
	return nil
}

// CheckKey refuses a key every store refuses: an empty tenant, workspace or
// key, one too long, an unknown kind, or text CheckText refuses.
func CheckKey(k Key) error {
	if k.Tenant == "" || k.Workspace == "" || k.Key == "" {
		return fmt.Errorf("%w: key needs a tenant, a workspace and a key", ErrInvalid)
	}
	if k.Kind != KindItem && k.Kind != KindComment {
		return fmt.Errorf("%w: unknown kind %q", ErrInvalid, k.Kind)
	}
	if len(k.Tenant) > MaxName || len(k.Workspace) > MaxName || len(k.Key) > MaxKey {
		return fmt.Errorf("%w: tenant or workspace over %d bytes, or key over %d", ErrInvalid, MaxName, MaxKey)
	}
	return CheckText(k.Tenant, k.Workspace, k.Key)
}

// CheckFollower refuses a follower every store refuses: an unknown kind, an
// empty or too long tenant, workspace or name, or text CheckText refuses.
func CheckFollower(f Follower) error {
	if f.Kind != TrackerFollower && f.Kind != LogFollower {
		return fmt.Errorf("%w: unknown follower kind %q", ErrInvalid, f.Kind)
	}
	if f.Tenant == "" || f.Workspace == "" || f.Name == "" {
		return fmt.Errorf("%w: follower needs a tenant, a workspace and a name", ErrInvalid)
	}
	if len(f.Tenant) > MaxName || len(f.Workspace) > MaxName || len(f.Name) > MaxName {
		return fmt.Errorf("%w: follower name over %d bytes", ErrInvalid, MaxName)
	}
	return CheckText(f.Tenant, f.Workspace, f.Name)
}

// Forward merges c into the saved cursor as SaveCursor does, moving each
// part only forward: the (UpdatedAt, ItemID) position, Seq, Seeded,
// SweptAt and PolledAt. Every store applies this one rule. The position
// orders item ids as the tracker's cursor does (tracker.LessID: decimal ids
// by value, so "100" comes after "99").
func Forward(saved, c Cursor) Cursor {
	if c.UpdatedAt.After(saved.UpdatedAt) || (c.UpdatedAt.Equal(saved.UpdatedAt) && tracker.LessID(saved.ItemID, c.ItemID)) {
		saved.UpdatedAt, saved.ItemID = c.UpdatedAt, c.ItemID
	}
	if c.Seq > saved.Seq {
		saved.Seq = c.Seq
	}
	saved.Seeded = saved.Seeded || c.Seeded
	if c.SweptAt.After(saved.SweptAt) {
		saved.SweptAt = c.SweptAt
	}
	if c.PolledAt.After(saved.PolledAt) {
		saved.PolledAt = c.PolledAt
	}
	return saved
}

// NewNonce returns a fresh random nonce (Ratus): 16 bytes from crypto/rand,
// in hex. Every store writes one with every change to a mutable row.
func NewNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}
