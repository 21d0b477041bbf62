package ledger

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/relayr-go/relayr/core/eventlog"
)

var (
	_ Ledger       = (*Store)(nil)
	_ Operator     = (*Store)(nil)
	_ eventlog.Log = (*Store)(nil)
)

// Store is the portable ledger: the Ledger, Operator and eventlog.Log ports
// over one Driver (memory, SQLite, PostgreSQL). It owns what every store
// shares, so each rule has one home: the input checks, the closed store and
// the done context, the port's sentinel errors, the claim's outcomes, the
// pending values' rules and the cursor's forward rule. A driver only runs
// queries and scans their rows. Store is safe for concurrent use.
type Store struct {
	d      Driver
	name   string
	closed atomic.Bool
}

// NewStore answers the portable ledger over d.
func NewStore(d Driver) *Store { return &Store{d: d, name: d.Name()} }

// Close closes the store and its driver once; every later call fails with
// ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	return s.d.Close()
}

// ready refuses a call on a closed store or a done context.
func (s *Store) ready(ctx context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	return nil
}

// passed are the errors a driver answers that Store passes on as they are.
var passed = []error{ErrNonce, ErrLeaseHeld, ErrNotFound, ErrLoop, ErrInvalid, ErrClosed, ErrUnavailable, eventlog.ErrInvalid, eventlog.ErrReserved}

// fail maps a driver's failure onto the port's errors: the port's own pass
// as they are; a done context stays itself (the caller gave up: a write
// under way then may have been kept or not, as when a connection is lost);
// a store closed under the call is ErrClosed; the rest the driver maps.
func (s *Store) fail(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	for _, p := range passed {
		if errors.Is(err, p) {
			return err
		}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w: %w", s.name, ctx.Err(), err)
	}
	if s.closed.Load() {
		return fmt.Errorf("%s: %w: %w", s.name, ErrClosed, err)
	}
	return fmt.Errorf("%s: %w", s.name, s.d.MapError(err))
}

// Claim implements Claims: the driver takes a new key or a lapsed claim in
// one step; a key it does not take is told from the row as it stands.
func (s *Store) Claim(ctx context.Context, p ClaimParams) (Claim, Outcome, error) {
	if err := checkClaim(p); err != nil {
		return Claim{}, 0, err
	}
	for range 3 {
		if err := s.ready(ctx); err != nil {
			return Claim{}, 0, err
		}
		// ADR-0033: an unrecorded claim older than RetakeAfter is taken
		// again (Retaken); the first claimer's correlation stays.
		c, o, err := s.d.TakeClaim(ctx, p, NewNonce())
		switch {
		case errors.Is(err, ErrNotFound):
			continue // released between the driver's statements: claim again
		case err != nil:
			return Claim{}, 0, s.fail(ctx, err)
		case o == Fresh || o == Retaken:
			return c, o, nil
		case c.Deleted:
			return c, Deleted, nil
		case c.Recorded:
			return c, Recorded, nil
		}
		return c, Held, nil
	}
	return Claim{}, 0, fmt.Errorf("%s: %w: the key's row kept changing", s.name, ErrUnavailable)
}

// Record implements Claims.
func (s *Store) Record(ctx context.Context, p RecordParams) (Claim, error) {
	if err := checkRecord(p); err != nil {
		return Claim{}, err
	}
	if err := s.ready(ctx); err != nil {
		return Claim{}, err
	}
	c, recorded, err := s.d.RecordClaim(ctx, p, NewNonce())
	switch {
	case errors.Is(err, ErrNotFound):
		return Claim{}, ErrNonce // released: nothing to record on
	case err != nil:
		return Claim{}, s.fail(ctx, err)
	case recorded:
		return c, nil
	case c.Recorded:
		return c, nil // ADR-0033: the first record is kept.
	}
	return Claim{}, ErrNonce
}

// Release implements Claims.
func (s *Store) Release(ctx context.Context, k Key, nonce string) error {
	if err := CheckKey(k); err != nil {
		return err
	}
	if err := CheckText(nonce); err != nil {
		return err
	}
	if err := s.ready(ctx); err != nil {
		return err
	}
	c, released, err := s.d.ReleaseClaim(ctx, k, nonce)
	switch {
	case errors.Is(err, ErrNotFound):
		return ErrNonce
	case err != nil:
		return s.fail(ctx, err)
	case released, c.Recorded, c.Deleted:
		return nil // a recorded or deleted row stays
	}
	return ErrNonce
}

// MarkDeleted implements Claims.
func (s *Store) MarkDeleted(ctx context.Context, k Key) error {
	if err := CheckKey(k); err != nil {
		return err
	}
	if err := s.ready(ctx); err != nil {
		return err
	}
	return s.fail(ctx, s.d.MarkDeleted(ctx, k, NewNonce()))
}

// Lookup implements Claims.
func (s *Store) Lookup(ctx context.Context, k Key) (Claim, error) {
	if err := CheckKey(k); err != nil {
		return Claim{}, err
	}
	if err := s.ready(ctx); err != nil {
		return Claim{}, err
	}
	c, err := s.d.LookupClaim(ctx, k)
	return c, s.fail(ctx, err)
}

// LookupItem implements Claims.
func (s *Store) LookupItem(ctx context.Context, tenant, workspace, itemID string) (Claim, error) {
	if err := checkItem(tenant, workspace, itemID); err != nil {
		return Claim{}, err
	}
	if err := s.ready(ctx); err != nil {
		return Claim{}, err
	}
	c, err := s.d.LookupItem(ctx, tenant, workspace, itemID)
	return c, s.fail(ctx, err)
}

// changeValues runs one of the pending values' rules on a key's row.
func (s *Store) changeValues(ctx context.Context, k Key, values map[string]string, change func(map[string]string)) error {
	if err := CheckKey(k); err != nil {
		return err
	}
	if err := CheckValues(values); err != nil {
		return err
	}
	if err := s.ready(ctx); err != nil {
		return err
	}
	return s.fail(ctx, s.d.ChangeValues(ctx, k, change))
}

// SetValues implements Claims (SetPending).
func (s *Store) SetValues(ctx context.Context, k Key, values map[string]string) (map[string]string, error) {
	var previous map[string]string
	err := s.changeValues(ctx, k, values, func(vs map[string]string) {
		previous = SetPending(vs, values) // a retried transaction starts again
	})
	if err != nil {
		return nil, err
	}
	return previous, nil
}

// RestoreValues implements Claims (RestorePending).
func (s *Store) RestoreValues(ctx context.Context, k Key, refused map[string]string) error {
	return s.changeValues(ctx, k, refused, func(vs map[string]string) { RestorePending(vs, refused) })
}

// ConsumeValues implements Claims (ConsumePending).
func (s *Store) ConsumeValues(ctx context.Context, k Key, values map[string]string) error {
	return s.changeValues(ctx, k, values, func(vs map[string]string) { ConsumePending(vs, values) })
}

// LandValues implements Claims (LandPending).
func (s *Store) LandValues(ctx context.Context, p LandParams) error {
	if err := CheckValues(p.Held); err != nil {
		return err
	}
	return s.changeValues(ctx, p.Key, p.Sent, func(vs map[string]string) {
		LandPending(vs, p.Sent, p.At, p.Version)
		LandPending(vs, p.Held, p.At, p.Version)
	})
}

// SupersedeValues implements Claims (SupersedePending).
func (s *Store) SupersedeValues(ctx context.Context, k Key, fields []string, before time.Time) error {
	for _, f := range fields {
		if f == "" {
			return fmt.Errorf("%w: a value needs a field", ErrInvalid)
		}
	}
	if err := CheckText(fields...); err != nil {
		return err
	}
	return s.changeValues(ctx, k, nil, func(vs map[string]string) { SupersedePending(vs, fields, before) })
}

// CountWrite implements Claims (ADR-0036: the loop cap, across replicas).
func (s *Store) CountWrite(ctx context.Context, p WriteParams) (int, error) {
	if err := checkWrite(p); err != nil {
		return 0, err
	}
	if err := s.ready(ctx); err != nil {
		return 0, err
	}
	n, counted, err := s.d.CountWrite(ctx, p)
	if err != nil {
		return 0, s.fail(ctx, err)
	}
	if !counted {
		return n, ErrLoop
	}
	return n, nil
}

// UncountWrite implements Claims (ADR-0036: the cap counts the writes an
// item took).
func (s *Store) UncountWrite(ctx context.Context, p WriteParams) error {
	if err := checkCounted(p); err != nil {
		return err
	}
	if err := s.ready(ctx); err != nil {
		return err
	}
	return s.fail(ctx, s.d.UncountWrite(ctx, p))
}

// ForgetWrites implements Claims.
func (s *Store) ForgetWrites(ctx context.Context, tenant, workspace, itemID string) error {
	if err := checkItem(tenant, workspace, itemID); err != nil {
		return err
	}
	if err := s.ready(ctx); err != nil {
		return err
	}
	return s.fail(ctx, s.d.ForgetWrites(ctx, tenant, workspace, itemID))
}

// Snapshot implements Snapshots.
func (s *Store) Snapshot(ctx context.Context, tenant, workspace, itemID string) (SnapshotRow, error) {
	if err := checkItem(tenant, workspace, itemID); err != nil {
		return SnapshotRow{}, err
	}
	if err := s.ready(ctx); err != nil {
		return SnapshotRow{}, err
	}
	r, err := s.d.Snapshot(ctx, tenant, workspace, itemID)
	return r, s.fail(ctx, err)
}

// SaveSnapshots implements Snapshots: of two rows of one item, the later
// is kept, and the driver writes one row per item.
func (s *Store) SaveSnapshots(ctx context.Context, rows []SnapshotRow) error {
	if err := checkSnapshots(rows); err != nil {
		return err
	}
	if err := s.ready(ctx); err != nil || len(rows) == 0 {
		return err
	}
	type id struct{ tenant, workspace, item string }
	last := make(map[id]int, len(rows))
	for i, r := range rows {
		last[id{r.Tenant, r.Workspace, r.ItemID}] = i
	}
	unique := rows
	if len(last) < len(rows) {
		unique = make([]SnapshotRow, 0, len(last))
		for i, r := range rows {
			if last[id{r.Tenant, r.Workspace, r.ItemID}] == i {
				unique = append(unique, r)
			}
		}
	}
	return s.fail(ctx, s.d.SaveSnapshots(ctx, unique))
}

// DeleteSnapshot implements Snapshots.
func (s *Store) DeleteSnapshot(ctx context.Context, tenant, workspace, itemID string) error {
	if err := checkItem(tenant, workspace, itemID); err != nil {
		return err
	}
	if err := s.ready(ctx); err != nil {
		return err
	}
	return s.fail(ctx, s.d.DeleteSnapshot(ctx, tenant, workspace, itemID))
}

// SnapshotPage is how many ids SnapshotIDs reads at a time; fn runs between
// pages with nothing of the store held, so it may call the ledger.
const SnapshotPage = 500

// SnapshotIDs implements Snapshots.
func (s *Store) SnapshotIDs(ctx context.Context, tenant, workspace string, fn func(itemID string) bool) error {
	if err := checkWorkspace(tenant, workspace); err != nil {
		return err
	}
	after := ""
	for {
		if err := s.ready(ctx); err != nil {
			return err
		}
		ids, err := s.d.SnapshotIDs(ctx, tenant, workspace, after, SnapshotPage)
		if err != nil {
			return s.fail(ctx, err)
		}
		for _, id := range ids {
			if !fn(id) {
				return nil
			}
		}
		if len(ids) < SnapshotPage {
			return nil
		}
		after = ids[len(ids)-1]
	}
}

// TakeLease implements Followers (ADR-0015: a lease nobody holds, or one
// that lapsed, is taken).
func (s *Store) TakeLease(ctx context.Context, p LeaseParams) (Lease, error) {
	if err := checkLease(p); err != nil {
		return Lease{}, err
	}
	if err := s.ready(ctx); err != nil {
		return Lease{}, err
	}
	lease := Lease{Follower: p.Follower, Holder: p.Holder, Nonce: NewNonce(), Expires: p.Now.Add(p.TTL)}
	took, err := s.d.TakeLease(ctx, p, lease.Nonce)
	if err != nil {
		return Lease{}, s.fail(ctx, err)
	}
	if !took {
		return Lease{}, ErrLeaseHeld
	}
	return lease, nil
}

// RenewLease implements Followers.
func (s *Store) RenewLease(ctx context.Context, p LeaseParams) (Lease, error) {
	if err := checkLease(p); err != nil {
		return Lease{}, err
	}
	if p.Nonce == "" {
		return Lease{}, ErrNonce
	}
	if err := s.ready(ctx); err != nil {
		return Lease{}, err
	}
	lease := Lease{Follower: p.Follower, Nonce: NewNonce(), Expires: p.Now.Add(p.TTL)}
	holder, ok, err := s.d.RenewLease(ctx, p, lease.Nonce)
	if err != nil {
		return Lease{}, s.fail(ctx, err)
	}
	if !ok {
		return Lease{}, ErrNonce
	}
	lease.Holder = holder
	return lease, nil
}

// ReleaseLease implements Followers.
func (s *Store) ReleaseLease(ctx context.Context, f Follower, nonce string) error {
	if err := checkNonce(f, nonce); err != nil {
		return err
	}
	if nonce == "" {
		return ErrNonce
	}
	if err := s.ready(ctx); err != nil {
		return err
	}
	released, err := s.d.ReleaseLease(ctx, f, nonce)
	if err != nil {
		return s.fail(ctx, err)
	}
	if !released {
		return ErrNonce
	}
	return nil
}

// Lease implements Followers; its Nonce is never answered.
func (s *Store) Lease(ctx context.Context, f Follower) (Lease, error) {
	if err := CheckFollower(f); err != nil {
		return Lease{}, err
	}
	if err := s.ready(ctx); err != nil {
		return Lease{}, err
	}
	l, err := s.d.Lease(ctx, f)
	if err != nil {
		return Lease{}, s.fail(ctx, err)
	}
	return Lease{Follower: f, Holder: l.Holder, Expires: l.Expires}, nil
}

// Cursor implements Followers.
func (s *Store) Cursor(ctx context.Context, f Follower) (Cursor, error) {
	if err := CheckFollower(f); err != nil {
		return Cursor{}, err
	}
	if err := s.ready(ctx); err != nil {
		return Cursor{}, err
	}
	c, err := s.d.Cursor(ctx, f)
	return c, s.fail(ctx, err)
}

// SaveCursor implements Followers: every part of the cursor moves only
// forward (Forward, with the tracker's order of item ids).
func (s *Store) SaveCursor(ctx context.Context, f Follower, c Cursor) error {
	if err := checkCursor(f, c); err != nil {
		return err
	}
	if err := s.ready(ctx); err != nil {
		return err
	}
	return s.fail(ctx, s.d.ChangeCursor(ctx, f, func(saved Cursor) Cursor { return Forward(saved, c) }))
}

// DeadLetter implements Followers: an event is kept once per id.
func (s *Store) DeadLetter(ctx context.Context, d DeadLetter) (bool, error) {
	if err := checkDeadLetter(d); err != nil {
		return false, err
	}
	if err := s.ready(ctx); err != nil {
		return false, err
	}
	added, err := s.d.DeadLetter(ctx, d)
	return added, s.fail(ctx, err)
}

// DeadLetters implements Followers.
func (s *Store) DeadLetters(ctx context.Context, f Follower) ([]DeadLetter, error) {
	if err := CheckFollower(f); err != nil {
		return nil, err
	}
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	out, err := s.d.DeadLetters(ctx, f)
	return out, s.fail(ctx, err)
}

// Followed implements Followers, the one read across tenants (ADR-0015).
func (s *Store) Followed(ctx context.Context) ([]Follower, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	out, err := s.d.Followed(ctx)
	return out, s.fail(ctx, err)
}

// Ping implements Ledger.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	return s.fail(ctx, s.d.Ping(ctx))
}

// Beat implements Holders.
func (s *Store) Beat(ctx context.Context, p BeatParams) ([]Holder, error) {
	if err := CheckBeat(p); err != nil {
		return nil, err
	}
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	out, err := s.d.Beat(ctx, p)
	return out, s.fail(ctx, err)
}

// Leave implements Holders.
func (s *Store) Leave(ctx context.Context, holder string, now time.Time) error {
	if err := CheckText(holder); err != nil {
		return err
	}
	if err := s.ready(ctx); err != nil {
		return err
	}
	return s.fail(ctx, s.d.Leave(ctx, holder, now))
}

// LatestEvents implements Operator.
func (s *Store) LatestEvents(ctx context.Context, q EventQuery) ([]eventlog.Event, error) {
	if err := CheckEventQuery(q); err != nil {
		return nil, err
	}
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	out, err := s.d.LatestEvents(ctx, q)
	return out, s.fail(ctx, err)
}

// claims runs one of the operator's reads of a tenant's claims.
func (s *Store) claims(ctx context.Context, tenant string, rows int, read func(context.Context, string, int) ([]Claim, error)) ([]Claim, error) {
	if err := CheckTenant(tenant); err != nil {
		return nil, err
	}
	if err := CheckRows(rows); err != nil {
		return nil, err
	}
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	out, err := read(ctx, tenant, rows)
	return out, s.fail(ctx, err)
}

// Unrecorded implements Operator.
func (s *Store) Unrecorded(ctx context.Context, tenant string, rows int) ([]Claim, error) {
	return s.claims(ctx, tenant, rows, s.d.Unrecorded)
}

// DeletedKeys implements Operator.
func (s *Store) DeletedKeys(ctx context.Context, tenant string, rows int) ([]Claim, error) {
	return s.claims(ctx, tenant, rows, s.d.DeletedKeys)
}

// RecentDeadLetters implements Operator.
func (s *Store) RecentDeadLetters(ctx context.Context, f Follower, rows int) ([]DeadLetter, error) {
	if err := CheckFollower(f); err != nil {
		return nil, err
	}
	if err := CheckRows(rows); err != nil {
		return nil, err
	}
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	out, err := s.d.RecentDeadLetters(ctx, f, rows)
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	return out, nil
}

// LookupDeadLetter implements Operator.
func (s *Store) LookupDeadLetter(ctx context.Context, f Follower, id string) (DeadLetter, error) {
	if err := checkDeadLetterID(f, id); err != nil {
		return DeadLetter{}, err
	}
	if err := s.ready(ctx); err != nil {
		return DeadLetter{}, err
	}
	d, err := s.d.LookupDeadLetter(ctx, f, id)
	return d, s.fail(ctx, err)
}

// AtCap implements Operator.
func (s *Store) AtCap(ctx context.Context, q CapQuery) ([]CapItem, error) {
	if err := CheckCapQuery(q); err != nil {
		return nil, err
	}
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	out, err := s.d.AtCap(ctx, q)
	return out, s.fail(ctx, err)
}

// ResolveDeadLetter implements Operator: a dead letter is resolved once.
func (s *Store) ResolveDeadLetter(ctx context.Context, f Follower, id string, r Resolution, now time.Time) (DeadLetter, bool, error) {
	if err := CheckResolution(f, id, r, now); err != nil {
		return DeadLetter{}, false, err
	}
	if err := s.ready(ctx); err != nil {
		return DeadLetter{}, false, err
	}
	d, resolved, err := s.d.ResolveDeadLetter(ctx, f, id, r, now)
	return d, resolved, s.fail(ctx, err)
}

// Append implements eventlog.Log: an id is appended once per workspace.
func (s *Store) Append(ctx context.Context, p eventlog.AppendParams) (int64, bool, error) {
	if err := eventlog.CheckAppend(p); err != nil {
		return 0, false, err
	}
	if err := s.ready(ctx); err != nil {
		return 0, false, err
	}
	seq, appended, err := s.d.Append(ctx, p)
	if err != nil {
		return 0, false, s.fail(ctx, err)
	}
	return seq, appended, nil
}

// Head implements eventlog.Log.
func (s *Store) Head(ctx context.Context, tenant, workspace string) (int64, error) {
	if checkWorkspace(tenant, workspace) != nil {
		return 0, eventlog.ErrInvalid
	}
	if err := s.ready(ctx); err != nil {
		return 0, err
	}
	seq, err := s.d.Head(ctx, tenant, workspace)
	return seq, s.fail(ctx, err)
}

// Read implements eventlog.Log.
func (s *Store) Read(ctx context.Context, tenant, workspace string, afterSeq int64, limit int) ([]eventlog.Event, error) {
	if checkWorkspace(tenant, workspace) != nil {
		return nil, eventlog.ErrInvalid
	}
	if err := s.ready(ctx); err != nil || limit < 1 {
		return nil, err
	}
	out, err := s.d.Read(ctx, tenant, workspace, afterSeq, limit)
	return out, s.fail(ctx, err)
}
