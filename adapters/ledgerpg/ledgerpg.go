// Package ledgerpg is relayr's shared ledger: the Ledger and EventLog ports
// on PostgreSQL (github.com/jackc/pgx/v5, pgxpool), which is how several
// replicas share one ledger.
//
// Ledger is the portable ledger.Store over this package's driver: Store
// owns the ports' rules (the checks, the closed store and the done context,
// the sentinel errors, the claim's outcomes, the pending values, the
// cursor's order), and each driver method is a query, or one transaction,
// and the scan of its rows.
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
// commits cost. The claims and records that arrive while three groups
// of them are under way share one transaction and one round trip (group
// commit), in the order of their keys; a write alone runs at once, as
// before, and a group the server refuses any part of runs again a write
// at a time. CountWrite locks the item's counter row, so the cap holds
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
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/puddle/v2"

	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/ledger"
)

var (
	_ ledger.Ledger   = (*Ledger)(nil)
	_ ledger.Operator = (*Ledger)(nil)
	_ eventlog.Log    = (*Ledger)(nil)
	_ ledger.Driver   = (*driver)(nil)
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

// Ledger is a ledger.Ledger, ledger.Operator and eventlog.Log on
// PostgreSQL: the portable ledger.Store over the PostgreSQL driver, safe for
// concurrent use.
type Ledger struct {
	*ledger.Store
	d *driver
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
	l.d.owned = true
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
	d := &driver{pool: pool, rls: o.RLS, schema: schema, q: newQueries(pgx.Identifier{schema}.Sanitize())}
	d.group = &grouper{d: d, bound: writeBound}
	return &Ledger{Store: ledger.NewStore(d), d: d}
}

// Close closes the ledger, and its pool if Open made it; every later call
// fails with ledger.ErrClosed.
func (l *Ledger) Close() { _ = l.Store.Close() }

// driver is the PostgreSQL ledger.Driver: each method sends its statement
// (after set_config under RLS) and scans the rows.
type driver struct {
	pool   *pgxpool.Pool
	owned  bool
	rls    bool
	schema string
	q      queries
	// group runs the filings' writes, the claim's and the record's
	// (group.go).
	group *grouper
}

// Name implements ledger.Driver.
func (d *driver) Name() string { return "ledgerpg" }

// Close implements ledger.Driver: the pool is closed if Open made it.
func (d *driver) Close() error {
	if d.owned {
		d.pool.Close()
	}
	return nil
}

// MapError implements ledger.Driver (river's interpretError): a closed pool
// is ErrClosed; a lost connection, a server shutting down, a serialization
// failure or a deadlock is ErrUnavailable, which the caller may retry; text
// the server can't keep is ErrInvalid.
func (d *driver) MapError(err error) error { return mapPgError(err) }

// mapError maps a failure outside Store's calls (a migration) as MapError
// does, and keeps a done context itself, as Store does.
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
	return mapPgError(err)
}

func mapPgError(err error) error {
	if err == nil {
		return nil
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

const setTenant = `SELECT set_config('relayr.tenant', $1, true)`

// db is what a statement runs on: the pool, or a transaction of it.
type db interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// query runs one statement for tenant in one round trip: under RLS it is
// sent in one batch after set_config, and the batch is one implicit
// transaction (or part of the explicit one on q), so the setting holds for
// the statement and ends with its transaction. scan reads the statement's
// rows; it sees pgx.ErrNoRows as a QueryRow would.
func (d *driver) query(ctx context.Context, q db, tenant, sql string, args []any, scan func(pgx.Rows) error) error {
	if !d.rls {
		rows, err := q.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		err = scan(rows)
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
		return err
	}
	b := &pgx.Batch{}
	b.Queue(setTenant, tenant)
	b.Queue(sql, args...)
	br := q.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return err
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return err
	}
	err = scan(rows)
	rows.Close()
	if err == nil {
		err = rows.Err()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// row runs a one-row statement; no row is pgx.ErrNoRows.
func (d *driver) row(ctx context.Context, q db, tenant, sql string, args []any, dest ...any) error {
	return d.query(ctx, q, tenant, sql, args, func(rows pgx.Rows) error { return scanOne(rows, dest) })
}

// scanOne reads a one-row statement's rows into dest and closes them; no
// row is pgx.ErrNoRows.
func scanOne(rows pgx.Rows, dest []any) error {
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	rows.Close()
	return rows.Err()
}

// exec runs a statement and answers how many rows it touched.
func (d *driver) exec(ctx context.Context, tenant, sql string, args ...any) (int64, error) {
	if !d.rls {
		tag, err := d.pool.Exec(ctx, sql, args...)
		return tag.RowsAffected(), err
	}
	b := &pgx.Batch{}
	b.Queue(setTenant, tenant)
	b.Queue(sql, args...)
	br := d.pool.SendBatch(ctx, b)
	_, err := br.Exec()
	var tag pgconn.CommandTag
	if err == nil {
		tag, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag.RowsAffected(), err
}

// tx runs fn in a transaction; fn names the tenant with its first
// statement (query and row do).
func (d *driver) tx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
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
	var err error
	c.Values, err = recordedValues(s.values)
	return c, err
}

// recordedValues reads the recorded_values column; '{}' is none.
func recordedValues(b []byte) (map[string]string, error) {
	if len(b) == 0 || string(b) == "{}" {
		return nil, nil
	}
	var values map[string]string
	if err := json.Unmarshal(b, &values); err != nil {
		return nil, fmt.Errorf("recorded values: %w", err)
	}
	return values, nil
}

// takenScan reads what the claim and record statements return
// (takenColumns): the rest of the claim is what they wrote, from their
// parameters.
type takenScan struct {
	claimedAt, recordedAt pgtype.Timestamptz
	correlation           string
	values                []byte
	deleted               bool
}

func (s *takenScan) dest() []any { return []any{&s.claimedAt, &s.correlation, &s.values} }

// claim is the row the statement left: k's, with nonce, and what it
// returned.
func (s *takenScan) claim(k ledger.Key, nonce string) (ledger.Claim, error) {
	values, err := recordedValues(s.values)
	if err != nil {
		return ledger.Claim{}, err
	}
	return ledger.Claim{Key: k, Nonce: nonce, ClaimedAt: fromTS(s.claimedAt), Correlation: s.correlation,
		RecordedAt: fromTS(s.recordedAt), Deleted: s.deleted, Values: values}, nil
}

func keyArgs(k ledger.Key) []any { return []any{k.Tenant, k.Workspace, string(k.Kind), k.Key} }

// claimRow runs a statement answering one claim row; no row is
// ledger.ErrNotFound.
func (d *driver) claimRow(ctx context.Context, tenant, sql string, args []any, extra ...any) (ledger.Claim, error) {
	var s claimScan
	return s.answer(d.row(ctx, d.pool, tenant, sql, args, append(s.dest(), extra...)...))
}

// filingRow runs a filing's write for k through the group (group.go),
// scanning what it returns into dest; no row is ledger.ErrNotFound.
func (d *driver) filingRow(ctx context.Context, k ledger.Key, sql string, args []any, dest ...any) error {
	err := d.group.row(ctx, k, sql, args, dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return ledger.ErrNotFound
	}
	return err
}

// answer is the claim scanned, given the statement's outcome.
func (s *claimScan) answer(err error) (ledger.Claim, error) {
	if errors.Is(err, pgx.ErrNoRows) {
		return ledger.Claim{}, ledger.ErrNotFound
	}
	if err != nil {
		return ledger.Claim{}, err
	}
	return s.claim()
}

// TakeClaim implements ledger.Driver: one upsert takes a new key or retakes
// a lapsed one (ADR-0033); only when it takes nothing is the row read as
// it stands.
func (d *driver) TakeClaim(ctx context.Context, p ledger.ClaimParams, nonce string) (ledger.Claim, ledger.Outcome, error) {
	var (
		s        takenScan
		inserted bool
	)
	err := d.filingRow(ctx, p.Key, d.q.claim,
		[]any{p.Tenant, p.Workspace, string(p.Kind), p.Key.Key, nonce, ts(p.Now), p.Correlation, ts(p.Now.Add(-p.RetakeAfter))},
		append(s.dest(), &inserted)...)
	if errors.Is(err, ledger.ErrNotFound) {
		c, err := d.LookupClaim(ctx, p.Key)
		return c, 0, err
	}
	if err != nil {
		return ledger.Claim{}, 0, err
	}
	// Taken: neither recorded nor deleted, as the statement requires.
	c, err := s.claim(p.Key, nonce)
	switch {
	case err != nil:
		return ledger.Claim{}, 0, err
	case inserted:
		return c, ledger.Fresh, nil
	}
	return c, ledger.Retaken, nil
}

// RecordClaim implements ledger.Driver: one update records, conditioned on
// the nonce; only when it records nothing is the row read.
func (d *driver) RecordClaim(ctx context.Context, p ledger.RecordParams, nonce string) (ledger.Claim, bool, error) {
	var s takenScan
	query, args := d.q.record, append(keyArgs(p.Key), p.Nonce, nonce, ts(p.Now), p.Ref.ID, p.Ref.Number, p.Ref.Name, p.Ref.Link, p.Ref.Key)
	if r := p.Snapshot; r != nil {
		query, args = d.q.recordFiled, append(args, r.ItemID, nonEmpty(r.Item), ts(r.UpdatedAt), ts(r.CommentsUntil))
	}
	err := d.filingRow(ctx, p.Key, query, args, append(s.dest(), &s.recordedAt, &s.deleted)...)
	if errors.Is(err, ledger.ErrNotFound) {
		c, err := d.LookupClaim(ctx, p.Key)
		return c, false, err
	}
	if err != nil {
		return ledger.Claim{}, false, err
	}
	c, err := s.claim(p.Key, nonce)
	if err != nil {
		return ledger.Claim{}, false, err
	}
	c.Recorded, c.Ref = true, p.Ref
	return c, true, nil
}

// ReleaseClaim implements ledger.Driver.
func (d *driver) ReleaseClaim(ctx context.Context, k ledger.Key, nonce string) (ledger.Claim, bool, error) {
	var released bool
	err := d.row(ctx, d.pool, k.Tenant, d.q.release, append(keyArgs(k), nonce), &released)
	if err == nil {
		return ledger.Claim{}, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return ledger.Claim{}, false, err
	}
	c, err := d.LookupClaim(ctx, k)
	return c, false, err
}

// MarkDeleted implements ledger.Driver.
func (d *driver) MarkDeleted(ctx context.Context, k ledger.Key, nonce string) error {
	_, err := d.exec(ctx, k.Tenant, d.q.markDeleted, append(keyArgs(k), nonce)...)
	return err
}

// LookupClaim implements ledger.Driver.
func (d *driver) LookupClaim(ctx context.Context, k ledger.Key) (ledger.Claim, error) {
	return d.claimRow(ctx, k.Tenant, d.q.lookup, keyArgs(k))
}

// LookupItem implements ledger.Driver.
func (d *driver) LookupItem(ctx context.Context, tenant, workspace, itemID string) (ledger.Claim, error) {
	return d.claimRow(ctx, tenant, d.q.lookupItem, []any{tenant, workspace, itemID})
}

// ChangeValues implements ledger.Driver: the key's values are read with
// its row locked, changed, and written back in one transaction.
func (d *driver) ChangeValues(ctx context.Context, k ledger.Key, change func(values map[string]string)) error {
	return d.tx(ctx, func(tx pgx.Tx) error {
		var raw []byte
		err := d.row(ctx, tx, k.Tenant, d.q.valuesForUpdate, keyArgs(k), &raw)
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
		_, err = tx.Exec(ctx, d.q.setValues, append(keyArgs(k), string(b))...)
		return err
	})
}

// CountWrite implements ledger.Driver: one upsert on the item's counter
// row, which it locks, drops the writes that left the window and counts
// this one if the cap allows (ADR-0036: 20 an hour, across replicas).
func (d *driver) CountWrite(ctx context.Context, p ledger.WriteParams) (int, bool, error) {
	var (
		n       int
		counted bool
	)
	err := d.row(ctx, d.pool, p.Tenant, d.q.countWrite,
		[]any{p.Tenant, p.Workspace, p.ItemID, p.Now, p.Limit, p.Now.Add(-p.Window)}, &n, &counted)
	return n, counted, err
}

// UncountWrite implements ledger.Driver.
func (d *driver) UncountWrite(ctx context.Context, p ledger.WriteParams) error {
	_, err := d.exec(ctx, p.Tenant, d.q.uncountWrite, p.Tenant, p.Workspace, p.ItemID, p.Now)
	return err
}

// ForgetWrites implements ledger.Driver.
func (d *driver) ForgetWrites(ctx context.Context, tenant, workspace, itemID string) error {
	_, err := d.exec(ctx, tenant, d.q.forgetWrites, tenant, workspace, itemID)
	return err
}

// Snapshot implements ledger.Driver.
func (d *driver) Snapshot(ctx context.Context, tenant, workspace, itemID string) (ledger.SnapshotRow, error) {
	r := ledger.SnapshotRow{Tenant: tenant, Workspace: workspace, ItemID: itemID}
	var updatedAt, commentsUntil pgtype.Timestamptz
	err := d.row(ctx, d.pool, tenant, d.q.snapshot, []any{tenant, workspace, itemID}, &r.Item, &updatedAt, &commentsUntil, &r.Removed)
	if errors.Is(err, pgx.ErrNoRows) {
		return ledger.SnapshotRow{}, ledger.ErrNotFound
	}
	if err != nil {
		return ledger.SnapshotRow{}, err
	}
	r.UpdatedAt, r.CommentsUntil = fromTS(updatedAt), fromTS(commentsUntil)
	return r, nil
}

// SaveSnapshots implements ledger.Driver: one transaction, one upsert per
// tenant among the rows (each naming its tenant under RLS).
func (d *driver) SaveSnapshots(ctx context.Context, rows []ledger.SnapshotRow) error {
	var tenants []string
	byTenant := map[string][]ledger.SnapshotRow{}
	for _, r := range rows {
		if byTenant[r.Tenant] == nil {
			tenants = append(tenants, r.Tenant)
		}
		byTenant[r.Tenant] = append(byTenant[r.Tenant], r)
	}
	return d.tx(ctx, func(tx pgx.Tx) error {
		for _, tenant := range tenants {
			rs := byTenant[tenant]
			workspaces, items := make([]string, len(rs)), make([]string, len(rs))
			bodies := make([][]byte, len(rs))
			updated, comments := make([]pgtype.Timestamptz, len(rs)), make([]pgtype.Timestamptz, len(rs))
			removed := make([]bool, len(rs))
			for j, r := range rs {
				workspaces[j], items[j], bodies[j] = r.Workspace, r.ItemID, nonEmpty(r.Item)
				updated[j], comments[j], removed[j] = ts(r.UpdatedAt), ts(r.CommentsUntil), r.Removed
			}
			err := d.query(ctx, tx, tenant, d.q.saveSnapshots, []any{tenant, workspaces, items, bodies, updated, comments, removed},
				func(pgx.Rows) error { return nil })
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// DeleteSnapshot implements ledger.Driver.
func (d *driver) DeleteSnapshot(ctx context.Context, tenant, workspace, itemID string) error {
	_, err := d.exec(ctx, tenant, d.q.deleteSnapshot, tenant, workspace, itemID)
	return err
}

// SnapshotIDs implements ledger.Driver: one page of ids after after.
func (d *driver) SnapshotIDs(ctx context.Context, tenant, workspace, after string, limit int) ([]string, error) {
	var ids []string
	err := d.query(ctx, d.pool, tenant, d.q.snapshotIDs, []any{tenant, workspace, after, limit}, func(rows pgx.Rows) error {
		var err error
		ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	return ids, err
}

func (d *driver) followers(f ledger.Follower) followerQueries {
	if f.Kind == ledger.TrackerFollower {
		return d.q.tracker
	}
	return d.q.log
}

func followerArgs(f ledger.Follower) []any { return []any{f.Tenant, f.Workspace, f.Name} }

// TakeLease implements ledger.Driver: one upsert takes the lease when
// nobody holds it or it lapsed (ADR-0015).
func (d *driver) TakeLease(ctx context.Context, p ledger.LeaseParams, nonce string) (bool, error) {
	n, err := d.exec(ctx, p.Tenant, d.followers(p.Follower).takeLease,
		append(followerArgs(p.Follower), p.Holder, nonce, p.Now.Add(p.TTL), p.Now)...)
	return n == 1, err
}

// RenewLease implements ledger.Driver.
func (d *driver) RenewLease(ctx context.Context, p ledger.LeaseParams, nonce string) (string, bool, error) {
	var holder string
	err := d.row(ctx, d.pool, p.Tenant, d.followers(p.Follower).renewLease,
		append(followerArgs(p.Follower), p.Nonce, nonce, p.Now.Add(p.TTL)), &holder)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	return holder, err == nil, err
}

// ReleaseLease implements ledger.Driver.
func (d *driver) ReleaseLease(ctx context.Context, f ledger.Follower, nonce string) (bool, error) {
	n, err := d.exec(ctx, f.Tenant, d.followers(f).releaseLease, append(followerArgs(f), nonce)...)
	return n == 1, err
}

// Lease implements ledger.Driver.
func (d *driver) Lease(ctx context.Context, f ledger.Follower) (ledger.Lease, error) {
	out := ledger.Lease{Follower: f}
	var expires pgtype.Timestamptz
	err := d.row(ctx, d.pool, f.Tenant, d.followers(f).lease, followerArgs(f), &out.Holder, &expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return out, nil
	}
	if err != nil {
		return ledger.Lease{}, err
	}
	out.Expires = fromTS(expires)
	return out, nil
}

// cursor reads the follower's cursor on q with sql (a read, or a read that
// locks the row); no row is the zero Cursor.
func (d *driver) cursor(ctx context.Context, q db, f ledger.Follower, sql string) (ledger.Cursor, error) {
	var (
		c                            ledger.Cursor
		updatedAt, sweptAt, polledAt pgtype.Timestamptz
	)
	err := d.row(ctx, q, f.Tenant, sql, followerArgs(f), &updatedAt, &c.ItemID, &c.Seq, &c.Seeded, &sweptAt, &polledAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return ledger.Cursor{}, nil
	}
	if err != nil {
		return ledger.Cursor{}, err
	}
	c.UpdatedAt, c.SweptAt, c.PolledAt = fromTS(updatedAt), fromTS(sweptAt), fromTS(polledAt)
	return c, nil
}

// Cursor implements ledger.Driver.
func (d *driver) Cursor(ctx context.Context, f ledger.Follower) (ledger.Cursor, error) {
	return d.cursor(ctx, d.pool, f, d.followers(f).cursor)
}

// ChangeCursor implements ledger.Driver: in one transaction the follower's
// row is made if missing and locked, and what change answers is written.
func (d *driver) ChangeCursor(ctx context.Context, f ledger.Follower, change func(ledger.Cursor) ledger.Cursor) error {
	q := d.followers(f)
	return d.tx(ctx, func(tx pgx.Tx) error {
		if err := d.query(ctx, tx, f.Tenant, q.makeFollower, followerArgs(f), func(pgx.Rows) error { return nil }); err != nil {
			return err
		}
		saved, err := d.cursor(ctx, tx, f, q.cursorForUpdate)
		if err != nil {
			return err
		}
		c := change(saved)
		_, err = tx.Exec(ctx, q.setCursor,
			append(followerArgs(f), ts(c.UpdatedAt), c.ItemID, c.Seq, c.Seeded, ts(c.SweptAt), ts(c.PolledAt))...)
		return err
	})
}

// DeadLetter implements ledger.Driver.
func (d *driver) DeadLetter(ctx context.Context, dl ledger.DeadLetter) (bool, error) {
	n, err := d.exec(ctx, dl.Tenant, d.followers(dl.Follower).deadLetter,
		append(followerArgs(dl.Follower), dl.ID, dl.Seq, nonEmpty(dl.Event), dl.Reason, ts(dl.At))...)
	return n == 1, err
}

// DeadLetters implements ledger.Driver.
func (d *driver) DeadLetters(ctx context.Context, f ledger.Follower) ([]ledger.DeadLetter, error) {
	return d.deadLetters(ctx, f, d.followers(f).deadLetters, followerArgs(f))
}

// RecentDeadLetters implements ledger.Driver.
func (d *driver) RecentDeadLetters(ctx context.Context, f ledger.Follower, n int) ([]ledger.DeadLetter, error) {
	return d.deadLetters(ctx, f, d.followers(f).recentDeadLetters, append(followerArgs(f), n))
}

// LookupDeadLetter implements ledger.Driver.
func (d *driver) LookupDeadLetter(ctx context.Context, f ledger.Follower, id string) (ledger.DeadLetter, error) {
	var s deadLetterScan
	err := d.row(ctx, d.pool, f.Tenant, d.followers(f).deadLetterRow, append(followerArgs(f), id), s.dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return ledger.DeadLetter{}, ledger.ErrNotFound
	}
	if err != nil {
		return ledger.DeadLetter{}, err
	}
	return s.deadLetter(f), nil
}

// deadLetters reads the dead letters a query answers.
func (d *driver) deadLetters(ctx context.Context, f ledger.Follower, query string, args []any) ([]ledger.DeadLetter, error) {
	var out []ledger.DeadLetter
	err := d.query(ctx, d.pool, f.Tenant, query, args, func(rows pgx.Rows) error {
		for rows.Next() {
			var s deadLetterScan
			if err := rows.Scan(s.dest()...); err != nil {
				return err
			}
			out = append(out, s.deadLetter(f))
		}
		return rows.Err()
	})
	return out, err
}

// Followed implements ledger.Driver through the SECURITY DEFINER function,
// the one read across tenants.
func (d *driver) Followed(ctx context.Context) ([]ledger.Follower, error) {
	rows, err := d.pool.Query(ctx, d.q.followed)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (ledger.Follower, error) {
		f := ledger.Follower{Kind: ledger.LogFollower}
		err := row.Scan(&f.Tenant, &f.Workspace, &f.Name)
		return f, err
	})
}

// Ping implements ledger.Driver: the server answers, the schema carries
// every migration this relayr knows (or more: a newer relayr migrated it
// while this one serves, and migrations only add, so a rolling upgrade
// keeps the older replicas ready until they are replaced; ADR-1003: a
// replica stays ready on a schema a newer relayr migrated), and the role is
// bound by row-level security exactly when RLS is on.
func (d *driver) Ping(ctx context.Context) error {
	migrations, err := ledger.LoadMigrations(migrationFS, "migration")
	if err != nil {
		return err
	}
	var (
		version int
		bound   bool
	)
	err = d.pool.QueryRow(ctx, d.q.ping, pgx.Identifier{d.schema, "relayr_tracker_items"}.Sanitize()).Scan(&version, &bound)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" {
		return fmt.Errorf("schema %q is not migrated (run relayr migrate): %w", d.schema, err)
	}
	if err != nil {
		return err
	}
	if version < len(migrations) {
		return fmt.Errorf("schema %q at version %d, want %d (run relayr migrate)", d.schema, version, len(migrations))
	}
	if bound != d.rls {
		if d.rls {
			return errors.New("RLS is on but row-level security does not bind this role (a superuser, the tables' owner, or BYPASSRLS): connect as a restricted role")
		}
		return errors.New("RLS is off but row-level security binds this role: it would see nothing; connect as the tables' owner or turn RLS on")
	}
	return nil
}

// Append implements ledger.Driver: in one round trip, a transaction-scoped
// advisory lock on the workspace's log, then one statement that answers the
// id's sequence if it was appended, or appends it after the last.
func (d *driver) Append(ctx context.Context, p eventlog.AppendParams) (int64, bool, error) {
	e := p.Event
	b := &pgx.Batch{}
	if d.rls {
		b.Queue(setTenant, e.Tenant)
	}
	b.Queue(d.q.lockLog, e.Tenant, e.Workspace)
	b.Queue(d.q.appendEvent, e.Tenant, e.Workspace, e.ID, e.Type, e.Correlation, nonEmpty(e.Data), ts(e.At))
	br := d.pool.SendBatch(ctx, b)
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
		return 0, false, err
	}
	return seq, appended, nil
}

// Head implements ledger.Driver.
func (d *driver) Head(ctx context.Context, tenant, workspace string) (int64, error) {
	var seq int64
	err := d.query(ctx, d.pool, tenant, d.q.headEvent, []any{tenant, workspace}, func(rows pgx.Rows) error {
		for rows.Next() {
			if err := rows.Scan(&seq); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	return seq, err
}

// Read implements ledger.Driver.
func (d *driver) Read(ctx context.Context, tenant, workspace string, afterSeq int64, limit int) ([]eventlog.Event, error) {
	var out []eventlog.Event
	err := d.query(ctx, d.pool, tenant, d.q.readEvents, []any{tenant, workspace, afterSeq, limit}, func(rows pgx.Rows) error {
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

// Beat implements ledger.Driver in one statement. The heartbeat belongs to
// no tenant: under RLS it runs without one, on a table with no policy.
func (d *driver) Beat(ctx context.Context, p ledger.BeatParams) ([]ledger.Holder, error) {
	spent := p.Spent
	if spent == nil {
		spent = map[string]int{}
	}
	raw, err := json.Marshal(spent)
	if err != nil {
		return nil, err
	}
	rows, err := d.pool.Query(ctx, d.q.beat, p.Holder, ts(p.Now.Add(p.TTL)), raw, ts(p.Now.Add(-ledger.KeepLapsed)))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (ledger.Holder, error) {
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
}

// Leave implements ledger.Driver.
func (d *driver) Leave(ctx context.Context, holder string, now time.Time) error {
	_, err := d.pool.Exec(ctx, d.q.leave, holder, ts(now))
	return err
}
