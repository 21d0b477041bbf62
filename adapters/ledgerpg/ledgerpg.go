// Package ledgerpg is relayr's shared ledger: the Ledger and EventLog ports
// on PostgreSQL (github.com/jackc/pgx/v5, pgxpool), which is how several
// replicas share one ledger.
//
// Every table carries the tenant and has a row-level security policy keyed
// by the setting relayr.tenant. With Options.RLS the ledger connects as a
// role the policies bind (not the tables' owner, not a superuser, no
// BYPASSRLS) and names the call's tenant in every transaction, with
// set_config('relayr.tenant', tenant, true) sent in the same round trip as
// the statement: a bug that names the wrong tenant reads and writes
// nothing of another's. Without it, the same schema is used by a role the
// policies don't bind (the owner). Followed, the one read across tenants,
// goes through a SECURITY DEFINER function that answers tenant, workspace
// and name only.
//
// Claim and Record are one statement and one round trip each (an upsert or
// update with RETURNING), so a filing costs about what two bare durable
// commits cost. CountWrite locks the item's counter row, so the cap holds
// across replicas. The schema's migrations are embedded (migration/) and
// applied by Migrate under an advisory lock. It passes the same contract
// suites as memory and SQLite (ledgertest, eventlogtest).
package ledgerpg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/puddle/v2"

	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/ledger/validate"
)

var (
	_ ledger.Ledger = (*Ledger)(nil)
	_ eventlog.Log  = (*Ledger)(nil)
)

// DefaultSchema is the schema the ledger's tables live in unless Options
// name another.
const DefaultSchema = "relayr"

// Options choose how a Ledger uses its database.
type Options struct {
	// Schema holds the ledger's tables; "" is DefaultSchema.
	Schema string
	// RLS names the tenant in every transaction, for a role row-level
	// security binds. Without it the role must bypass the policies (the
	// tables' owner); Ping checks which is the case.
	RLS bool
	// Migrate applies the migrations at Open (the role must be allowed to;
	// under RLS it usually isn't, and `relayr migrate` runs them).
	Migrate bool
}

// Ledger is a ledger.Ledger and eventlog.Log on PostgreSQL, safe for
// concurrent use.
type Ledger struct {
	pool   *pgxpool.Pool
	owned  bool
	rls    bool
	schema string
	q      queries
	closed atomic.Bool
}

// Open connects to the database at url and answers a ledger on it; Close
// closes its pool.
func Open(ctx context.Context, url string, o Options) (*Ledger, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("ledgerpg: %w", err)
	}
	if o.Migrate {
		if err := MigrateSchema(ctx, pool, o.Schema); err != nil {
			pool.Close()
			return nil, err
		}
	}
	l := New(pool, o)
	l.owned = true
	if err := l.Ping(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return l, nil
}

// New answers a ledger on a pool the caller keeps (and closes).
func New(pool *pgxpool.Pool, o Options) *Ledger {
	schema := o.Schema
	if schema == "" {
		schema = DefaultSchema
	}
	return &Ledger{pool: pool, rls: o.RLS, schema: schema, q: newQueries(pgx.Identifier{schema}.Sanitize())}
}

// Close closes the ledger, and its pool if Open made it; every later call
// fails with ledger.ErrClosed.
func (l *Ledger) Close() {
	if l.closed.Swap(true) {
		return
	}
	if l.owned {
		l.pool.Close()
	}
}

// mapError maps a failure onto the ledger's sentinels (river's
// interpretError): a done context stays itself; a closed pool is ErrClosed;
// a lost connection, a server shutting down, a serialization failure or a
// deadlock is ErrUnavailable, which the caller may retry; text the server
// can't keep is ErrInvalid.
func mapError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %w", ctx.Err(), err)
	}
	if errors.Is(err, puddle.ErrClosedPool) || strings.Contains(err.Error(), "closed pool") {
		return fmt.Errorf("%w: %w", ledger.ErrClosed, err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "08"), // connection exception
			pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03", // shutdown, crash, starting
			pgErr.Code == "40001", pgErr.Code == "40P01", // serialization failure, deadlock
			pgErr.Code == "53300", pgErr.Code == "55P03": // too many connections, lock not available
			return fmt.Errorf("%w: %w", ledger.ErrUnavailable, err)
		case pgErr.Code == "22021", pgErr.Code == "22P05", pgErr.Code == "54000": // bad encoding, untranslatable, too long
			return fmt.Errorf("%w: %w", ledger.ErrInvalid, err)
		}
		return err
	}
	var netErr net.Error
	var connectErr *pgconn.ConnectError
	if pgconn.SafeToRetry(err) || errors.As(err, &netErr) || errors.As(err, &connectErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		strings.Contains(err.Error(), "conn closed") {
		return fmt.Errorf("%w: %w", ledger.ErrUnavailable, err)
	}
	return err
}

var sentinels = []error{ledger.ErrNonce, ledger.ErrLeaseHeld, ledger.ErrNotFound, ledger.ErrLoop, ledger.ErrInvalid, ledger.ErrClosed}

func (l *Ledger) fail(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return err
		}
	}
	return fmt.Errorf("ledgerpg: %w", mapError(ctx, err))
}

func (l *Ledger) ready(ctx context.Context) error {
	if l.closed.Load() {
		return ledger.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ledgerpg: %w", err)
	}
	return nil
}

const setTenant = `SELECT set_config('relayr.tenant', $1, true)`

// query runs one statement for tenant in one round trip: under RLS it is
// sent in one batch after set_config, and the batch is one implicit
// transaction, so the setting holds for the statement and ends with it.
// scan reads the statement's rows; it sees pgx.ErrNoRows as a QueryRow would.
func (l *Ledger) query(ctx context.Context, tenant, sql string, args []any, scan func(pgx.Rows) error) error {
	if err := l.ready(ctx); err != nil {
		return err
	}
	if !l.rls {
		rows, err := l.pool.Query(ctx, sql, args...)
		if err != nil {
			return l.fail(ctx, err)
		}
		err = scan(rows)
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
		return l.fail(ctx, err)
	}
	b := &pgx.Batch{}
	b.Queue(setTenant, tenant)
	b.Queue(sql, args...)
	br := l.pool.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		br.Close()
		return l.fail(ctx, err)
	}
	rows, err := br.Query()
	if err != nil {
		br.Close()
		return l.fail(ctx, err)
	}
	err = scan(rows)
	rows.Close()
	if err == nil {
		err = rows.Err()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return l.fail(ctx, err)
}

// row runs a one-row statement; no row is pgx.ErrNoRows.
func (l *Ledger) row(ctx context.Context, tenant, sql string, args []any, dest ...any) error {
	return l.query(ctx, tenant, sql, args, func(rows pgx.Rows) error {
		if !rows.Next() {
			if err := rows.Err(); err != nil {
				return err
			}
			return pgx.ErrNoRows
		}
		return rows.Scan(dest...)
	})
}

// exec runs a statement and answers how many rows it touched.
func (l *Ledger) exec(ctx context.Context, tenant, sql string, args ...any) (int64, error) {
	if err := l.ready(ctx); err != nil {
		return 0, err
	}
	if !l.rls {
		tag, err := l.pool.Exec(ctx, sql, args...)
		return tag.RowsAffected(), l.fail(ctx, err)
	}
	b := &pgx.Batch{}
	b.Queue(setTenant, tenant)
	b.Queue(sql, args...)
	br := l.pool.SendBatch(ctx, b)
	_, err := br.Exec()
	var tag pgconn.CommandTag
	if err == nil {
		tag, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag.RowsAffected(), l.fail(ctx, err)
}

// tx runs fn in a transaction naming tenant ("" names none: fn sets it).
func (l *Ledger) tx(ctx context.Context, tenant string, fn func(tx pgx.Tx) error) error {
	if err := l.ready(ctx); err != nil {
		return err
	}
	tx, err := l.pool.Begin(ctx)
	if err != nil {
		return l.fail(ctx, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if l.rls && tenant != "" {
		if _, err := tx.Exec(ctx, setTenant, tenant); err != nil {
			return l.fail(ctx, err)
		}
	}
	if err := fn(tx); err != nil {
		return l.fail(ctx, err)
	}
	return l.fail(ctx, tx.Commit(ctx))
}

// Times: NULL is the zero time.
func ts(t time.Time) pgtype.Timestamptz {
	return pgtype.Timestamptz{Time: t, Valid: !t.IsZero()}
}

func fromTS(t pgtype.Timestamptz) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time.UTC()
}

func nonEmpty(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

type claimScan struct {
	c                     ledger.Claim
	kind                  string
	claimedAt, recordedAt pgtype.Timestamptz
	values                []byte
}

func (s *claimScan) dest() []any {
	c := &s.c
	return []any{&c.Tenant, &c.Workspace, &s.kind, &c.Key.Key, &c.Nonce, &s.claimedAt, &c.Correlation, &c.Recorded,
		&c.Ref.ID, &c.Ref.Number, &c.Ref.Name, &c.Ref.Link, &c.Ref.Key, &s.recordedAt, &c.Deleted, &s.values}
}

func (s *claimScan) claim() (ledger.Claim, error) {
	c := s.c
	c.Kind = ledger.Kind(s.kind)
	c.ClaimedAt, c.RecordedAt = fromTS(s.claimedAt), fromTS(s.recordedAt)
	c.Values = nil
	if len(s.values) > 0 && string(s.values) != "{}" {
		if err := json.Unmarshal(s.values, &c.Values); err != nil {
			return ledger.Claim{}, fmt.Errorf("ledgerpg: recorded values: %w", err)
		}
	}
	return c, nil
}

func keyArgs(k ledger.Key) []any { return []any{k.Tenant, k.Workspace, string(k.Kind), k.Key} }

func (l *Ledger) lookup(ctx context.Context, k ledger.Key) (ledger.Claim, error) {
	var s claimScan
	err := l.row(ctx, k.Tenant, l.q.lookup, keyArgs(k), s.dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return ledger.Claim{}, ledger.ErrNotFound
	}
	if err != nil {
		return ledger.Claim{}, err
	}
	return s.claim()
}

// Claim implements ledger.Claims: one upsert takes a new key or retakes a
// lapsed one; only when it takes nothing is the row read as it stands.
func (l *Ledger) Claim(ctx context.Context, p ledger.ClaimParams) (ledger.Claim, ledger.Outcome, error) {
	if err := validate.Claim(p); err != nil {
		return ledger.Claim{}, 0, err
	}
	for range 3 {
		var (
			s        claimScan
			inserted bool
		)
		err := l.row(ctx, p.Tenant, l.q.claim,
			[]any{p.Tenant, p.Workspace, string(p.Kind), p.Key.Key, ledger.NewNonce(), ts(p.Now), p.Correlation, ts(p.Now.Add(-p.RetakeAfter))},
			append(s.dest(), &inserted)...)
		if err == nil {
			c, err := s.claim()
			if inserted {
				return c, ledger.Fresh, err
			}
			// ADR-0033: an unrecorded claim older than 30 s was taken again;
			// the first claimer's correlation stays.
			return c, ledger.Retaken, err
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return ledger.Claim{}, 0, err
		}
		c, err := l.lookup(ctx, p.Key)
		switch {
		case errors.Is(err, ledger.ErrNotFound):
			continue // released between the two statements: claim again
		case err != nil:
			return ledger.Claim{}, 0, err
		case c.Deleted:
			return c, ledger.Deleted, nil
		case c.Recorded:
			return c, ledger.Recorded, nil
		}
		return c, ledger.Held, nil
	}
	return ledger.Claim{}, 0, fmt.Errorf("%w: the key's row kept changing", ledger.ErrUnavailable)
}

// Record implements ledger.Claims: one update records, conditioned on the
// nonce; only when it records nothing is the row read to tell a first
// record (kept) from a nonce no longer held.
func (l *Ledger) Record(ctx context.Context, p ledger.RecordParams) (ledger.Claim, error) {
	if err := validate.Record(p); err != nil {
		return ledger.Claim{}, err
	}
	var s claimScan
	err := l.row(ctx, p.Tenant, l.q.record,
		append(keyArgs(p.Key), p.Nonce, ledger.NewNonce(), ts(p.Now), p.Ref.ID, p.Ref.Number, p.Ref.Name, p.Ref.Link, p.Ref.Key),
		s.dest()...)
	if err == nil {
		return s.claim()
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return ledger.Claim{}, err
	}
	c, err := l.lookup(ctx, p.Key)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return ledger.Claim{}, ledger.ErrNonce
	case err != nil:
		return ledger.Claim{}, err
	case c.Recorded:
		return c, nil // ADR-0033: the first record is kept.
	}
	return ledger.Claim{}, ledger.ErrNonce
}

// Release implements ledger.Claims.
func (l *Ledger) Release(ctx context.Context, k ledger.Key, nonce string) error {
	if err := ledger.CheckKey(k); err != nil {
		return err
	}
	if err := ledger.CheckText(nonce); err != nil {
		return err
	}
	var released bool
	err := l.row(ctx, k.Tenant, l.q.release, append(keyArgs(k), nonce), &released)
	if err == nil {
		return nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	c, err := l.lookup(ctx, k)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return ledger.ErrNonce
	case err != nil:
		return err
	case c.Recorded || c.Deleted:
		return nil // a recorded or deleted row stays
	}
	return ledger.ErrNonce
}

// MarkDeleted implements ledger.Claims.
func (l *Ledger) MarkDeleted(ctx context.Context, k ledger.Key) error {
	if err := ledger.CheckKey(k); err != nil {
		return err
	}
	_, err := l.exec(ctx, k.Tenant, l.q.markDeleted, append(keyArgs(k), ledger.NewNonce())...)
	return err
}

// Lookup implements ledger.Claims.
func (l *Ledger) Lookup(ctx context.Context, k ledger.Key) (ledger.Claim, error) {
	if err := ledger.CheckKey(k); err != nil {
		return ledger.Claim{}, err
	}
	return l.lookup(ctx, k)
}

// LookupItem implements ledger.Claims.
func (l *Ledger) LookupItem(ctx context.Context, tenant, workspace, itemID string) (ledger.Claim, error) {
	if err := validate.Item(tenant, workspace, itemID); err != nil {
		return ledger.Claim{}, err
	}
	var s claimScan
	err := l.row(ctx, tenant, l.q.lookupItem, []any{tenant, workspace, itemID}, s.dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return ledger.Claim{}, ledger.ErrNotFound
	}
	if err != nil {
		return ledger.Claim{}, err
	}
	return s.claim()
}

// changeValues reads a key's values under a row lock, lets change edit
// them, and writes them back.
func (l *Ledger) changeValues(ctx context.Context, k ledger.Key, change func(values map[string]string)) error {
	return l.tx(ctx, k.Tenant, func(tx pgx.Tx) error {
		var raw []byte
		err := tx.QueryRow(ctx, l.q.valuesForUpdate, keyArgs(k)...).Scan(&raw)
		if errors.Is(err, pgx.ErrNoRows) {
			return ledger.ErrNotFound
		}
		if err != nil {
			return err
		}
		values := map[string]string{}
		if err := json.Unmarshal(raw, &values); err != nil {
			return err
		}
		change(values)
		b, err := json.Marshal(values)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, l.q.setValues, append(keyArgs(k), string(b))...)
		return err
	})
}

// SetValues implements ledger.Claims.
func (l *Ledger) SetValues(ctx context.Context, k ledger.Key, values map[string]string) (map[string]string, error) {
	if err := ledger.CheckKey(k); err != nil {
		return nil, err
	}
	if err := validate.Values(values); err != nil {
		return nil, err
	}
	var previous map[string]string
	err := l.changeValues(ctx, k, func(vs map[string]string) {
		previous = ledger.SetPending(vs, values) // a retried transaction starts again
	})
	if err != nil {
		return nil, err
	}
	return previous, nil
}

// RestoreValues implements ledger.Claims.
func (l *Ledger) RestoreValues(ctx context.Context, k ledger.Key, refused map[string]string) error {
	if err := ledger.CheckKey(k); err != nil {
		return err
	}
	if err := validate.Values(refused); err != nil {
		return err
	}
	return l.changeValues(ctx, k, func(vs map[string]string) { ledger.RestorePending(vs, refused) })
}

// ConsumeValues implements ledger.Claims.
func (l *Ledger) ConsumeValues(ctx context.Context, k ledger.Key, values map[string]string) error {
	if err := ledger.CheckKey(k); err != nil {
		return err
	}
	if err := validate.Values(values); err != nil {
		return err
	}
	return l.changeValues(ctx, k, func(vs map[string]string) { ledger.ConsumePending(vs, values) })
}

// CountWrite implements ledger.Claims: one upsert on the item's counter row,
// which it locks, drops the writes that left the window and counts this one
// if the cap allows (ADR-0036: 20 an hour, across replicas).
func (l *Ledger) CountWrite(ctx context.Context, p ledger.WriteParams) (int, error) {
	if err := validate.Write(p); err != nil {
		return 0, err
	}
	var (
		n       int
		counted bool
	)
	err := l.row(ctx, p.Tenant, l.q.countWrite,
		[]any{p.Tenant, p.Workspace, p.ItemID, p.Now, p.Limit, p.Now.Add(-p.Window)}, &n, &counted)
	if err != nil {
		return 0, err
	}
	if !counted {
		return n, ledger.ErrLoop
	}
	return n, nil
}

// ForgetWrites implements ledger.Claims.
func (l *Ledger) ForgetWrites(ctx context.Context, tenant, workspace, itemID string) error {
	if err := validate.Item(tenant, workspace, itemID); err != nil {
		return err
	}
	_, err := l.exec(ctx, tenant, l.q.forgetWrites, tenant, workspace, itemID)
	return err
}

// Snapshot implements ledger.Snapshots.
func (l *Ledger) Snapshot(ctx context.Context, tenant, workspace, itemID string) (ledger.SnapshotRow, error) {
	if err := validate.Item(tenant, workspace, itemID); err != nil {
		return ledger.SnapshotRow{}, err
	}
	r := ledger.SnapshotRow{Tenant: tenant, Workspace: workspace, ItemID: itemID}
	var updatedAt, commentsUntil pgtype.Timestamptz
	err := l.row(ctx, tenant, l.q.snapshot, []any{tenant, workspace, itemID}, &r.Item, &updatedAt, &commentsUntil)
	if errors.Is(err, pgx.ErrNoRows) {
		return ledger.SnapshotRow{}, ledger.ErrNotFound
	}
	if err != nil {
		return ledger.SnapshotRow{}, err
	}
	r.UpdatedAt, r.CommentsUntil = fromTS(updatedAt), fromTS(commentsUntil)
	return r, nil
}

// SaveSnapshots implements ledger.Snapshots: one transaction, one upsert
// per tenant among the rows (each naming its tenant under RLS).
func (l *Ledger) SaveSnapshots(ctx context.Context, rows []ledger.SnapshotRow) error {
	if err := validate.Snapshots(rows); err != nil {
		return err
	}
	if len(rows) == 0 {
		return l.ready(ctx)
	}
	type id struct{ tenant, workspace, item string }
	last := map[id]int{}
	var tenants []string
	byTenant := map[string][]int{}
	for i, r := range rows {
		last[id{r.Tenant, r.Workspace, r.ItemID}] = i
	}
	for i, r := range rows {
		if last[id{r.Tenant, r.Workspace, r.ItemID}] != i {
			continue // a later row of the same item wins, as in memory
		}
		if byTenant[r.Tenant] == nil {
			tenants = append(tenants, r.Tenant)
		}
		byTenant[r.Tenant] = append(byTenant[r.Tenant], i)
	}
	return l.tx(ctx, "", func(tx pgx.Tx) error {
		for _, tenant := range tenants {
			if l.rls {
				if _, err := tx.Exec(ctx, setTenant, tenant); err != nil {
					return err
				}
			}
			idx := byTenant[tenant]
			workspaces, items := make([]string, len(idx)), make([]string, len(idx))
			bodies := make([][]byte, len(idx))
			updated, comments := make([]pgtype.Timestamptz, len(idx)), make([]pgtype.Timestamptz, len(idx))
			for j, i := range idx {
				r := rows[i]
				workspaces[j], items[j], bodies[j] = r.Workspace, r.ItemID, nonEmpty(r.Item)
				updated[j], comments[j] = ts(r.UpdatedAt), ts(r.CommentsUntil)
			}
			if _, err := tx.Exec(ctx, l.q.saveSnapshots, tenant, workspaces, items, bodies, updated, comments); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeleteSnapshot implements ledger.Snapshots.
func (l *Ledger) DeleteSnapshot(ctx context.Context, tenant, workspace, itemID string) error {
	if err := validate.Item(tenant, workspace, itemID); err != nil {
		return err
	}
	_, err := l.exec(ctx, tenant, l.q.deleteSnapshot, tenant, workspace, itemID)
	return err
}

// snapshotPage is how many ids SnapshotIDs reads at a time; fn runs between
// pages with no connection held, so it may call the ledger.
const snapshotPage = 500

// SnapshotIDs implements ledger.Snapshots.
func (l *Ledger) SnapshotIDs(ctx context.Context, tenant, workspace string, fn func(itemID string) bool) error {
	if err := validate.Workspace(tenant, workspace); err != nil {
		return err
	}
	after, first := "", true
	for {
		var ids []string
		err := l.query(ctx, tenant, l.q.snapshotIDs, []any{tenant, workspace, first, after, snapshotPage}, func(rows pgx.Rows) error {
			var err error
			ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
			return err
		})
		if err != nil {
			return err
		}
		for _, id := range ids {
			if !fn(id) {
				return nil
			}
		}
		if len(ids) < snapshotPage {
			return nil
		}
		after, first = ids[len(ids)-1], false
	}
}

func (l *Ledger) followers(f ledger.Follower) followerQueries {
	if f.Kind == ledger.TrackerFollower {
		return l.q.tracker
	}
	return l.q.log
}

func followerArgs(f ledger.Follower) []any { return []any{f.Tenant, f.Workspace, f.Name} }

// TakeLease implements ledger.Followers: one upsert takes the lease when
// nobody holds it or it lapsed (ADR-0015).
func (l *Ledger) TakeLease(ctx context.Context, p ledger.LeaseParams) (ledger.Lease, error) {
	if err := validate.Lease(p); err != nil {
		return ledger.Lease{}, err
	}
	lease := ledger.Lease{Follower: p.Follower, Holder: p.Holder, Nonce: ledger.NewNonce(), Expires: p.Now.Add(p.TTL)}
	n, err := l.exec(ctx, p.Tenant, l.followers(p.Follower).takeLease,
		append(followerArgs(p.Follower), lease.Holder, lease.Nonce, lease.Expires, p.Now)...)
	if err != nil {
		return ledger.Lease{}, err
	}
	if n == 0 {
		return ledger.Lease{}, ledger.ErrLeaseHeld
	}
	return lease, nil
}

// RenewLease implements ledger.Followers.
func (l *Ledger) RenewLease(ctx context.Context, p ledger.LeaseParams) (ledger.Lease, error) {
	if err := validate.Lease(p); err != nil {
		return ledger.Lease{}, err
	}
	if p.Nonce == "" {
		return ledger.Lease{}, ledger.ErrNonce
	}
	lease := ledger.Lease{Follower: p.Follower, Nonce: ledger.NewNonce(), Expires: p.Now.Add(p.TTL)}
	err := l.row(ctx, p.Tenant, l.followers(p.Follower).renewLease,
		append(followerArgs(p.Follower), p.Nonce, lease.Nonce, lease.Expires), &lease.Holder)
	if errors.Is(err, pgx.ErrNoRows) {
		return ledger.Lease{}, ledger.ErrNonce
	}
	if err != nil {
		return ledger.Lease{}, err
	}
	return lease, nil
}

// ReleaseLease implements ledger.Followers.
func (l *Ledger) ReleaseLease(ctx context.Context, f ledger.Follower, nonce string) error {
	if err := validate.Nonce(f, nonce); err != nil {
		return err
	}
	if nonce == "" {
		return ledger.ErrNonce
	}
	n, err := l.exec(ctx, f.Tenant, l.followers(f).releaseLease, append(followerArgs(f), nonce)...)
	if err != nil {
		return err
	}
	if n == 0 {
		return ledger.ErrNonce
	}
	return nil
}

// Cursor implements ledger.Followers.
func (l *Ledger) Cursor(ctx context.Context, f ledger.Follower) (ledger.Cursor, error) {
	if err := ledger.CheckFollower(f); err != nil {
		return ledger.Cursor{}, err
	}
	var (
		c                            ledger.Cursor
		updatedAt, sweptAt, polledAt pgtype.Timestamptz
	)
	err := l.row(ctx, f.Tenant, l.followers(f).cursor, followerArgs(f), &updatedAt, &c.ItemID, &c.Seq, &c.Seeded, &sweptAt, &polledAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return ledger.Cursor{}, nil
	}
	if err != nil {
		return ledger.Cursor{}, err
	}
	c.UpdatedAt, c.SweptAt, c.PolledAt = fromTS(updatedAt), fromTS(sweptAt), fromTS(polledAt)
	return c, nil
}

// Lease implements ledger.Followers.
func (l *Ledger) Lease(ctx context.Context, f ledger.Follower) (ledger.Lease, error) {
	if err := ledger.CheckFollower(f); err != nil {
		return ledger.Lease{}, err
	}
	out := ledger.Lease{Follower: f}
	var expires pgtype.Timestamptz
	err := l.row(ctx, f.Tenant, l.followers(f).lease, followerArgs(f), &out.Holder, &expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return out, nil
	}
	if err != nil {
		return ledger.Lease{}, err
	}
	out.Expires = fromTS(expires)
	return out, nil
}

// SaveCursor implements ledger.Followers: one upsert moves each part of the
// cursor only forward, as ledger.Forward does.
func (l *Ledger) SaveCursor(ctx context.Context, f ledger.Follower, c ledger.Cursor) error {
	if err := validate.Cursor(f, c); err != nil {
		return err
	}
	_, err := l.exec(ctx, f.Tenant, l.followers(f).saveCursor,
		append(followerArgs(f), ts(c.UpdatedAt), c.ItemID, c.Seq, c.Seeded, ts(c.SweptAt), ts(c.PolledAt))...)
	return err
}

// DeadLetter implements ledger.Followers.
func (l *Ledger) DeadLetter(ctx context.Context, d ledger.DeadLetter) (bool, error) {
	if err := validate.DeadLetter(d); err != nil {
		return false, err
	}
	n, err := l.exec(ctx, d.Tenant, l.followers(d.Follower).deadLetter,
		append(followerArgs(d.Follower), d.ID, d.Seq, nonEmpty(d.Event), d.Reason, ts(d.At))...)
	return n == 1, err
}

// DeadLetters implements ledger.Followers.
func (l *Ledger) DeadLetters(ctx context.Context, f ledger.Follower) ([]ledger.DeadLetter, error) {
	if err := ledger.CheckFollower(f); err != nil {
		return nil, err
	}
	var out []ledger.DeadLetter
	err := l.query(ctx, f.Tenant, l.followers(f).deadLetters, followerArgs(f), func(rows pgx.Rows) error {
		for rows.Next() {
			var d deadLetterScan
			if err := rows.Scan(d.dest()...); err != nil {
				return err
			}
			out = append(out, d.deadLetter(f))
		}
		return rows.Err()
	})
	return out, err
}

// Followed implements ledger.Followers through the SECURITY DEFINER
// function, the one read across tenants.
func (l *Ledger) Followed(ctx context.Context) ([]ledger.Follower, error) {
	if err := l.ready(ctx); err != nil {
		return nil, err
	}
	rows, err := l.pool.Query(ctx, l.q.followed)
	if err != nil {
		return nil, l.fail(ctx, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ledger.Follower, error) {
		f := ledger.Follower{Kind: ledger.LogFollower}
		err := row.Scan(&f.Tenant, &f.Workspace, &f.Name)
		return f, err
	})
	return out, l.fail(ctx, err)
}

// Ping implements ledger.Ledger: the server answers, the schema carries
// every migration this relayr knows, and the role is bound by row-level
// security exactly when RLS is on.
func (l *Ledger) Ping(ctx context.Context) error {
	if err := l.ready(ctx); err != nil {
		return err
	}
	migrations, err := loadMigrations(migrationFS, "migration")
	if err != nil {
		return err
	}
	var (
		version int
		bound   bool
	)
	err = l.pool.QueryRow(ctx, l.q.ping, pgx.Identifier{l.schema, "relayr_tracker_items"}.Sanitize()).Scan(&version, &bound)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" {
		return fmt.Errorf("ledgerpg: schema %q is not migrated (run relayr migrate): %w", l.schema, err)
	}
	if err != nil {
		return l.fail(ctx, err)
	}
	if version != len(migrations) {
		return fmt.Errorf("ledgerpg: schema %q at version %d, want %d (run relayr migrate)", l.schema, version, len(migrations))
	}
	if bound != l.rls {
		if l.rls {
			return errors.New("ledgerpg: RLS is on but row-level security does not bind this role (a superuser, the tables' owner, or BYPASSRLS): connect as a restricted role")
		}
		return errors.New("ledgerpg: RLS is off but row-level security binds this role: it would see nothing; connect as the tables' owner or turn RLS on")
	}
	return nil
}

// Append implements eventlog.Log: in one round trip, a transaction-scoped
// advisory lock on the workspace's log, then one statement that answers the
// id's sequence if it was appended, or appends it after the last.
func (l *Ledger) Append(ctx context.Context, p eventlog.AppendParams) (int64, bool, error) {
	if err := eventlog.CheckAppend(p); err != nil {
		return 0, false, err
	}
	if err := l.ready(ctx); err != nil {
		return 0, false, err
	}
	e := p.Event
	b := &pgx.Batch{}
	if l.rls {
		b.Queue(setTenant, e.Tenant)
	}
	b.Queue(`SELECT pg_advisory_xact_lock(hashtextextended($1::text || '/' || $2::text, 5370))`, e.Tenant, e.Workspace)
	b.Queue(l.q.appendEvent, e.Tenant, e.Workspace, e.ID, e.Type, e.Correlation, nonEmpty(e.Data), ts(e.At))
	br := l.pool.SendBatch(ctx, b)
	var (
		seq      int64
		appended bool
		err      error
	)
	for range b.Len() - 1 {
		if _, err = br.Exec(); err != nil {
			break
		}
	}
	if err == nil {
		err = br.QueryRow().Scan(&seq, &appended)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, false, l.fail(ctx, err)
	}
	return seq, appended, nil
}

// Head implements eventlog.Log.
func (l *Ledger) Head(ctx context.Context, tenant, workspace string) (int64, error) {
	if validate.Workspace(tenant, workspace) != nil {
		return 0, eventlog.ErrInvalid
	}
	var seq int64
	err := l.query(ctx, tenant, l.q.headEvent, []any{tenant, workspace}, func(rows pgx.Rows) error {
		for rows.Next() {
			if err := rows.Scan(&seq); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	return seq, err
}

// Read implements eventlog.Log.
func (l *Ledger) Read(ctx context.Context, tenant, workspace string, afterSeq int64, limit int) ([]eventlog.Event, error) {
	if validate.Workspace(tenant, workspace) != nil {
		return nil, eventlog.ErrInvalid
	}
	if limit < 1 {
		return nil, l.ready(ctx)
	}
	var out []eventlog.Event
	err := l.query(ctx, tenant, l.q.readEvents, []any{tenant, workspace, afterSeq, limit}, func(rows pgx.Rows) error {
		var err error
		out, err = scanEvents(rows, tenant, workspace)
		return err
	})
	return out, err
}

// scanEvents reads a workspace's events from rows of seq, id, type,
// correlation, data and at, as Read and LatestEvents select them.
func scanEvents(rows pgx.Rows, tenant, workspace string) ([]eventlog.Event, error) {
	var out []eventlog.Event
	for rows.Next() {
		e := eventlog.Event{Tenant: tenant, Workspace: workspace}
		var (
			at   pgtype.Timestamptz
			data []byte
		)
		if err := rows.Scan(&e.Seq, &e.ID, &e.Type, &e.Correlation, &data, &at); err != nil {
			return nil, err
		}
		if len(data) > 0 {
			e.Data = data
		}
		e.At = fromTS(at)
		out = append(out, e)
	}
	return out, rows.Err()
}

// Beat implements ledger.Holders in one statement. The heartbeat belongs to
// no tenant: under RLS it runs without one, on a table with no policy.
func (l *Ledger) Beat(ctx context.Context, p ledger.BeatParams) ([]ledger.Holder, error) {
	if err := ledger.CheckBeat(p); err != nil {
		return nil, err
	}
	if err := l.ready(ctx); err != nil {
		return nil, err
	}
	spent := p.Spent
	if spent == nil {
		spent = map[string]int{}
	}
	raw, err := json.Marshal(spent)
	if err != nil {
		return nil, fmt.Errorf("ledgerpg: %w", err)
	}
	rows, err := l.pool.Query(ctx, l.q.beat, p.Holder, ts(p.Now.Add(p.TTL)), raw, ts(p.Now.Add(-ledger.KeepLapsed)))
	if err != nil {
		return nil, l.fail(ctx, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ledger.Holder, error) {
		var (
			h   ledger.Holder
			exp pgtype.Timestamptz
			js  []byte
		)
		if err := row.Scan(&h.Name, &exp, &js); err != nil {
			return h, err
		}
		h.Expires = fromTS(exp)
		h.Spent = map[string]int{}
		return h, json.Unmarshal(js, &h.Spent)
	})
	return out, l.fail(ctx, err)
}

// Leave implements ledger.Holders.
func (l *Ledger) Leave(ctx context.Context, holder string, now time.Time) error {
	if err := ledger.CheckText(holder); err != nil {
		return err
	}
	if err := l.ready(ctx); err != nil {
		return err
	}
	_, err := l.pool.Exec(ctx, l.q.leave, holder, ts(now))
	return l.fail(ctx, err)
}
