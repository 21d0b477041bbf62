// Package ledgersqlite is relayr's embedded ledger: the Ledger and EventLog
// ports on one SQLite file (modernc.org/sqlite, pure Go, no cgo).
//
// Ledger is the portable ledger.Store over a SQLite driver: Store owns the
// ports' rules (the checks, the claim's outcomes, the pending values, the
// cursor's order) and the driver runs the statements of queries.go.
//
// The file runs in WAL mode with synchronous=FULL, so every call that
// changes something is durable when it returns. Writes go through one
// connection: goroutines of one process queue for it rather than meet
// SQLITE_BUSY, and the writes that arrive while one commits share the
// next commit (group commit); another process on the same file waits out
// the busy timeout. Reads use a pool of read-only connections beside the
// writer. The schema's migrations are embedded and applied at Open. It
// passes the same contract suites as memory and PostgreSQL (ledgertest,
// eventlogtest).
package ledgersqlite

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/ledger/memledger"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

var (
	_ ledger.Ledger   = (*Ledger)(nil)
	_ ledger.Operator = (*Ledger)(nil)
	_ eventlog.Log    = (*Ledger)(nil)
	_ ledger.Driver   = (*driver)(nil)
)

// BusyTimeout is how long a write waits for another process holding the
// file's write lock before it fails with ledger.ErrUnavailable.
const BusyTimeout = 10 * time.Second

//go:embed migration/*.up.sql
var migrationFS embed.FS

// Ledger is a ledger.Ledger, ledger.Operator and eventlog.Log on one
// SQLite file: the portable ledger.Store over the SQLite driver, safe for
// concurrent use. Open it; Close it when done.
type Ledger struct {
	*ledger.Store
	d *driver
}

// Open opens (creating it if need be) the ledger in the SQLite file at path,
// applies the migrations it lacks, and answers the ledger. Close it when
// done. A file it creates is the owner's alone (0600), and so are its WAL
// and shared memory; an existing file keeps its mode.
func Open(ctx context.Context, path string) (*Ledger, error) {
	return openLedger(ctx, path, BusyTimeout)
}

func openLedger(ctx context.Context, path string, busyTimeout time.Duration) (*Ledger, error) {
	if path == "" || strings.HasPrefix(path, ":memory:") || strings.Contains(path, "mode=memory") {
		return nil, fmt.Errorf("ledgersqlite: a ledger needs a file, not %q", path)
	}
	migrations, err := loadMigrations(migrationFS, "migration")
	if err != nil {
		return nil, err
	}
	// The file holds titles, descriptions and events: created the owner's
	// alone. SQLite gives its WAL and shared memory the file's mode.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600) //nolint:gosec // G304: the operator names the ledger's file
	if err != nil {
		return nil, fmt.Errorf("ledgersqlite: open %s: %w", path, err)
	}
	_ = f.Close()
	base := "file:" + escapePath(path) + "?_txlock=immediate" +
		"&_pragma=busy_timeout(" + strconv.FormatInt(busyTimeout.Milliseconds(), 10) + ")" +
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"
	w, err := sql.Open("sqlite", base)
	if err != nil {
		return nil, fmt.Errorf("ledgersqlite: open %s: %w", path, err)
	}
	// One writer connection: goroutines queue in database/sql for it.
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	d := &driver{w: w, ws: newStmts(w), migrations: len(migrations)}
	if err := d.migrate(ctx, migrations); err != nil {
		w.Close()
		return nil, err
	}
	if err := d.ws.prepareAll(ctx, writeStatements()...); err != nil {
		w.Close()
		return nil, fmt.Errorf("ledgersqlite: prepare: %w", d.MapError(err))
	}
	r, err := sql.Open("sqlite", base+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("ledgersqlite: open %s: %w", path, err)
	}
	r.SetMaxOpenConns(4)
	r.SetMaxIdleConns(4)
	d.r, d.rs = r, newStmts(r)
	d.wr = newWriter(w, d.ws)
	l := &Ledger{Store: ledger.NewStore(d), d: d}
	if err := l.Ping(ctx); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// escapePath makes a file path safe inside a SQLite URI.
func escapePath(p string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(p)
}

// loadMigrations reads the embedded migrations (ledger.LoadMigrations).
func loadMigrations(fsys fs.FS, dir string) ([]ledger.Migration, error) {
	ms, err := ledger.LoadMigrations(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("ledgersqlite: %w", err)
	}
	return ms, nil
}

// driver runs the ledger's statements on the file: writes through wr on
// the one writer connection w, reads on the read-only pool r. It implements
// ledger.Driver; Store checks every input before it calls.
type driver struct {
	w, r *sql.DB
	// ws and rs are the statements prepared on w and on r.
	ws, rs *stmts
	// wr runs every write (batch.go).
	wr *writer
	// migrations is how many migrations the file must carry.
	migrations int
	// holders are the replicas' heartbeats, kept in memory: a SQLite
	// ledger serves one process, the only replica (ADR-1002).
	holders memledger.Holders
}

// Name implements ledger.Driver.
func (d *driver) Name() string { return "ledgersqlite" }

// Close implements ledger.Driver.
func (d *driver) Close() error {
	d.wr.close()
	return errors.Join(d.ws.close(), d.rs.close(), d.r.Close(), d.w.Close())
}

// MapError implements ledger.Driver: a closed database is ErrClosed; a
// busy or locked file, a failed disk, a file that cannot be opened are
// ErrUnavailable (the call may be retried).
func (d *driver) MapError(err error) error {
	if errors.Is(err, sql.ErrConnDone) || strings.Contains(err.Error(), "sql: database is closed") {
		return fmt.Errorf("%w: %w", ledger.ErrClosed, err)
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL, sqlite3.SQLITE_CANTOPEN:
			return fmt.Errorf("%w: %w", ledger.ErrUnavailable, err)
		}
	}
	return err
}

// migrate applies the migrations the file lacks, in one transaction that
// begins IMMEDIATE: two processes opening one file migrate in turn.
func (d *driver) migrate(ctx context.Context, migrations []ledger.Migration) error {
	fail := func(what string, err error) error {
		return fmt.Errorf("ledgersqlite: %s: %w", what, d.MapError(err))
	}
	tx, err := d.w.BeginTx(ctx, nil)
	if err != nil {
		return fail("migrate", err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, createMigrations); err != nil {
		return fail("migrate", err)
	}
	// What the file applied, checked before anything is applied on top
	// (ledger.CheckApplied).
	applied, err := tx.QueryContext(ctx, appliedMigrations)
	if err != nil {
		return fail("migrate", err)
	}
	names := map[int]string{}
	for applied.Next() {
		var (
			v    int
			name string
		)
		if err := applied.Scan(&v, &name); err != nil {
			_ = applied.Close()
			return fail("migrate", err)
		}
		names[v] = name
	}
	if err := applied.Err(); err != nil {
		return fail("migrate", err)
	}
	if err := applied.Close(); err != nil {
		return fail("migrate", err)
	}
	if err := ledger.CheckApplied(names, migrations); err != nil {
		return fmt.Errorf("ledgersqlite: the file's schema %w", err)
	}
	for _, m := range migrations {
		if _, ok := names[m.Version]; ok {
			continue
		}
		name := fmt.Sprintf("migration %03d_%s", m.Version, m.Name)
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return fail(name, err)
		}
		if _, err := tx.ExecContext(ctx, recordMigration, m.Version, m.Name, time.Now().UnixNano()); err != nil {
			return fail(name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fail("migrate", err)
	}
	return nil
}

// Ping implements ledger.Driver: the file answers and carries every
// migration this relayr knows.
func (d *driver) Ping(ctx context.Context) error {
	var v int
	if err := d.read(ctx).row(schemaVersion).Scan(&v); err != nil {
		return err
	}
	// A newer schema (another relayr migrated the file since this one
	// opened it) still serves this one: migrations only add.
	if v < d.migrations {
		return fmt.Errorf("schema at version %d, want %d", v, d.migrations)
	}
	return nil
}

// read answers the read-only pool.
func (d *driver) read(ctx context.Context) on { return on{ctx: ctx, s: d.rs} }

// write runs fn's statements as one of the writer's writes: alone, each
// statement commits on its own; a method whose statements must commit
// together uses writeTx.
func (d *driver) write(ctx context.Context, fn func(x on) error) error {
	return d.wr.do(ctx, false, fn)
}

// writeTx runs fn's statements as one of the writer's writes, in one
// transaction.
func (d *driver) writeTx(ctx context.Context, fn func(x on) error) error {
	return d.wr.do(ctx, true, fn)
}

// Times are kept as Unix nanoseconds; NULL is the zero time.
func nanos(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

func fromNanos(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// notFound answers ledger.ErrNotFound for a query that found no row.
func notFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.ErrNotFound
	}
	return err
}

// keyArgs are keyWhere's arguments.
func keyArgs(k ledger.Key) []any { return []any{k.Tenant, k.Workspace, string(k.Kind), k.Key} }

// args joins a statement's arguments.
func args(parts ...any) []any {
	var out []any
	for _, p := range parts {
		if ps, ok := p.([]any); ok {
			out = append(out, ps...)
			continue
		}
		out = append(out, p)
	}
	return out
}

type scanner interface{ Scan(dest ...any) error }

func scanClaim(s scanner) (ledger.Claim, error) {
	var (
		c                     ledger.Claim
		kind, values          string
		claimedAt, recordedAt sql.NullInt64
		recorded, deleted     int
	)
	err := s.Scan(&c.Tenant, &c.Workspace, &kind, &c.Key.Key, &c.Nonce, &claimedAt, &c.Correlation, &recorded,
		&c.Ref.ID, &c.Ref.Number, &c.Ref.Name, &c.Ref.Link, &c.Ref.Key, &recordedAt, &deleted, &values)
	if err != nil {
		return ledger.Claim{}, err
	}
	c.Kind = ledger.Kind(kind)
	c.ClaimedAt, c.RecordedAt = fromNanos(claimedAt), fromNanos(recordedAt)
	c.Recorded, c.Deleted = recorded != 0, deleted != 0
	if c.Values, err = decodeValues(values); err != nil {
		return ledger.Claim{}, err
	}
	return c, nil
}

// decodeValues reads recorded_values; {} reads as none.
func decodeValues(s string) (map[string]string, error) {
	if s == "" || s == "{}" {
		return nil, nil
	}
	var vs map[string]string
	if err := json.Unmarshal([]byte(s), &vs); err != nil {
		return nil, fmt.Errorf("recorded values: %w", err)
	}
	return vs, nil
}

// TakeClaim implements ledger.Driver: a fresh key in one statement; a row
// that is there is taken again when it lapsed (ADR-0033), or read as it
// stands.
func (d *driver) TakeClaim(ctx context.Context, p ledger.ClaimParams, nonce string) (c ledger.Claim, o ledger.Outcome, err error) {
	err = d.write(ctx, func(x on) error {
		c, o, err = takeClaim(x, p, nonce)
		return err
	})
	return c, o, err
}

func takeClaim(x on, p ledger.ClaimParams, nonce string) (ledger.Claim, ledger.Outcome, error) {
	c, err := scanClaim(x.row(claimFresh, args(keyArgs(p.Key), nonce, nanos(p.Now), p.Correlation)...))
	if !errors.Is(err, sql.ErrNoRows) {
		return c, ledger.Fresh, err
	}
	c, err = scanClaim(x.row(claimRetake, args(nonce, nanos(p.Now), keyArgs(p.Key), p.Now.Add(-p.RetakeAfter).UnixNano())...))
	if !errors.Is(err, sql.ErrNoRows) {
		return c, ledger.Retaken, err
	}
	c, err = scanClaim(x.row(lookupClaim, keyArgs(p.Key)...))
	return c, 0, notFound(err)
}

// RecordClaim implements ledger.Driver.
func (d *driver) RecordClaim(ctx context.Context, p ledger.RecordParams, nonce string) (c ledger.Claim, recorded bool, err error) {
	// With a snapshot, the record and the snapshot are one transaction.
	write := d.write
	if p.Snapshot != nil {
		write = d.writeTx
	}
	err = write(ctx, func(x on) error {
		recorded = false // a transaction run again starts again
		c, err = scanClaim(x.row(recordClaim,
			args(nonce, nanos(p.Now), p.Ref.ID, p.Ref.Number, p.Ref.Name, p.Ref.Link, p.Ref.Key, keyArgs(p.Key), p.Nonce)...))
		if !errors.Is(err, sql.ErrNoRows) {
			if err != nil {
				return err
			}
			recorded = true
			if r := p.Snapshot; r != nil {
				item := r.Item
				if item == nil {
					item = []byte{}
				}
				_, err = x.exec(insertSnapshot, r.Tenant, r.Workspace, r.ItemID, item, nanos(r.UpdatedAt), nanos(r.CommentsUntil), boolInt(r.Removed))
			}
			return err
		}
		c, err = scanClaim(x.row(lookupClaim, keyArgs(p.Key)...))
		return notFound(err)
	})
	return c, recorded, err
}

// ReleaseClaim implements ledger.Driver.
func (d *driver) ReleaseClaim(ctx context.Context, k ledger.Key, nonce string) (c ledger.Claim, released bool, err error) {
	err = d.write(ctx, func(x on) error {
		var one int
		err := x.row(releaseClaim, args(keyArgs(k), nonce)...).Scan(&one)
		if !errors.Is(err, sql.ErrNoRows) {
			released = err == nil
			return err
		}
		c, err = scanClaim(x.row(lookupClaim, keyArgs(k)...))
		return notFound(err)
	})
	return c, released, err
}

// MarkDeleted implements ledger.Driver.
func (d *driver) MarkDeleted(ctx context.Context, k ledger.Key, nonce string) error {
	return d.write(ctx, func(x on) error {
		_, err := x.exec(markDeleted, args(keyArgs(k), nonce)...)
		return err
	})
}

// LookupClaim implements ledger.Driver.
func (d *driver) LookupClaim(ctx context.Context, k ledger.Key) (ledger.Claim, error) {
	c, err := scanClaim(d.read(ctx).row(lookupClaim, keyArgs(k)...))
	return c, notFound(err)
}

// LookupItem implements ledger.Driver.
func (d *driver) LookupItem(ctx context.Context, tenant, workspace, itemID string) (ledger.Claim, error) {
	c, err := scanClaim(d.read(ctx).row(lookupItem, tenant, workspace, itemID))
	return c, notFound(err)
}

// ChangeValues implements ledger.Driver: change runs inside the write
// transaction, between the read and the write of the values.
func (d *driver) ChangeValues(ctx context.Context, k ledger.Key, change func(values map[string]string)) error {
	return d.writeTx(ctx, func(x on) error {
		var raw string
		if err := x.row(claimValues, keyArgs(k)...).Scan(&raw); err != nil {
			return notFound(err)
		}
		values, err := decodeValues(raw)
		if err != nil {
			return err
		}
		if values == nil {
			values = map[string]string{}
		}
		change(values)
		b, err := json.Marshal(values)
		if err != nil {
			return err
		}
		_, err = x.exec(setClaimValues, args(string(b), keyArgs(k))...)
		return err
	})
}

// CountWrite implements ledger.Driver: the writer's lock serialises it
// across processes; writes that left the window are forgotten as it counts
// (ADR-0036), and the forgetting is kept when the write is not counted.
func (d *driver) CountWrite(ctx context.Context, p ledger.WriteParams) (n int, counted bool, err error) {
	err = d.writeTx(ctx, func(x on) error {
		n, counted = 0, false // a transaction run again starts again
		if _, err := x.exec(forgetLapsedWrites, p.Tenant, p.Workspace, p.ItemID, p.Now.Add(-p.Window).UnixNano()); err != nil {
			return err
		}
		if err := x.row(countWrites, p.Tenant, p.Workspace, p.ItemID).Scan(&n); err != nil {
			return err
		}
		if n >= p.Limit {
			return nil
		}
		if _, err := x.exec(addWrite, p.Tenant, p.Workspace, p.ItemID, p.Now.UnixNano()); err != nil {
			return err
		}
		n, counted = n+1, true
		return nil
	})
	return n, counted, err
}

// UncountWrite implements ledger.Driver.
func (d *driver) UncountWrite(ctx context.Context, p ledger.WriteParams) error {
	return d.write(ctx, func(x on) error {
		_, err := x.exec(uncountWrite, p.Tenant, p.Workspace, p.ItemID, p.Now.UnixNano())
		return err
	})
}

// ForgetWrites implements ledger.Driver.
func (d *driver) ForgetWrites(ctx context.Context, tenant, workspace, itemID string) error {
	return d.write(ctx, func(x on) error {
		_, err := x.exec(forgetWrites, tenant, workspace, itemID)
		return err
	})
}

// Snapshot implements ledger.Driver.
func (d *driver) Snapshot(ctx context.Context, tenant, workspace, itemID string) (ledger.SnapshotRow, error) {
	row := ledger.SnapshotRow{Tenant: tenant, Workspace: workspace, ItemID: itemID}
	var updatedAt, commentsUntil sql.NullInt64
	var removed int64
	err := d.read(ctx).row(snapshot, tenant, workspace, itemID).Scan(&row.Item, &updatedAt, &commentsUntil, &removed)
	if err != nil {
		return ledger.SnapshotRow{}, notFound(err)
	}
	row.UpdatedAt, row.CommentsUntil, row.Removed = fromNanos(updatedAt), fromNanos(commentsUntil), removed != 0
	return row, nil
}

// SaveSnapshots implements ledger.Driver.
func (d *driver) SaveSnapshots(ctx context.Context, rows []ledger.SnapshotRow) error {
	return d.writeTx(ctx, func(x on) error {
		for _, r := range rows {
			item := r.Item
			if item == nil {
				item = []byte{}
			}
			if _, err := x.exec(saveSnapshot, r.Tenant, r.Workspace, r.ItemID, item, nanos(r.UpdatedAt), nanos(r.CommentsUntil), boolInt(r.Removed)); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeleteSnapshot implements ledger.Driver.
func (d *driver) DeleteSnapshot(ctx context.Context, tenant, workspace, itemID string) error {
	return d.write(ctx, func(x on) error {
		_, err := x.exec(deleteSnapshot, tenant, workspace, itemID)
		return err
	})
}

// SnapshotIDs implements ledger.Driver.
func (d *driver) SnapshotIDs(ctx context.Context, tenant, workspace, after string, limit int) ([]string, error) {
	rows, err := d.read(ctx).rows(snapshotIDs, tenant, workspace, after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// followerQueriesOf answers the statements of f's kind of follower.
func followerQueriesOf(f ledger.Follower) *followerQueries {
	if f.Kind == ledger.TrackerFollower {
		return &trackerQueries
	}
	return &logQueries
}

// followerArgs are a follower row's key.
func followerArgs(f ledger.Follower) []any { return []any{f.Tenant, f.Workspace, f.Name} }

// found answers whether a statement that answers a row when it changed
// something answered one.
func found(err error) (bool, error) {
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// TakeLease implements ledger.Driver.
func (d *driver) TakeLease(ctx context.Context, p ledger.LeaseParams, nonce string) (took bool, err error) {
	err = d.write(ctx, func(x on) error {
		var one int
		took, err = found(x.row(followerQueriesOf(p.Follower).takeLease,
			args(followerArgs(p.Follower), p.Holder, nonce, nanos(p.Now.Add(p.TTL)), p.Now.UnixNano())...).Scan(&one))
		return err
	})
	return took, err
}

// RenewLease implements ledger.Driver.
func (d *driver) RenewLease(ctx context.Context, p ledger.LeaseParams, nonce string) (holder string, ok bool, err error) {
	err = d.write(ctx, func(x on) error {
		ok, err = found(x.row(followerQueriesOf(p.Follower).renewLease,
			args(nonce, nanos(p.Now.Add(p.TTL)), followerArgs(p.Follower), p.Nonce)...).Scan(&holder))
		return err
	})
	return holder, ok, err
}

// ReleaseLease implements ledger.Driver.
func (d *driver) ReleaseLease(ctx context.Context, f ledger.Follower, nonce string) (released bool, err error) {
	err = d.write(ctx, func(x on) error {
		var one int
		released, err = found(x.row(followerQueriesOf(f).releaseLease, args(followerArgs(f), nonce)...).Scan(&one))
		return err
	})
	return released, err
}

// Lease implements ledger.Driver.
func (d *driver) Lease(ctx context.Context, f ledger.Follower) (ledger.Lease, error) {
	out := ledger.Lease{Follower: f}
	var expires sql.NullInt64
	err := d.read(ctx).row(followerQueriesOf(f).lease, followerArgs(f)...).Scan(&out.Holder, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return out, nil
	}
	out.Expires = fromNanos(expires)
	return out, err
}

// readCursor reads f's cursor; no row reads as the zero Cursor.
func readCursor(x on, f ledger.Follower) (ledger.Cursor, error) {
	var (
		c                            ledger.Cursor
		updatedAt, sweptAt, polledAt sql.NullInt64
		seeded                       int
	)
	err := x.row(followerQueriesOf(f).cursor, followerArgs(f)...).Scan(&updatedAt, &c.ItemID, &c.Seq, &seeded, &sweptAt, &polledAt)
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.Cursor{}, nil
	}
	if err != nil {
		return ledger.Cursor{}, err
	}
	c.UpdatedAt, c.SweptAt, c.PolledAt, c.Seeded = fromNanos(updatedAt), fromNanos(sweptAt), fromNanos(polledAt), seeded != 0
	return c, nil
}

// Cursor implements ledger.Driver.
func (d *driver) Cursor(ctx context.Context, f ledger.Follower) (ledger.Cursor, error) {
	return readCursor(d.read(ctx), f)
}

// ChangeCursor implements ledger.Driver: the cursor is read and written
// in one write transaction, which holds the file's write lock.
func (d *driver) ChangeCursor(ctx context.Context, f ledger.Follower, change func(ledger.Cursor) ledger.Cursor) error {
	return d.writeTx(ctx, func(x on) error {
		saved, err := readCursor(x, f)
		if err != nil {
			return err
		}
		c := change(saved)
		_, err = x.exec(followerQueriesOf(f).saveCursor,
			args(followerArgs(f), nanos(c.UpdatedAt), c.ItemID, c.Seq, boolInt(c.Seeded), nanos(c.SweptAt), nanos(c.PolledAt))...)
		return err
	})
}

// DeadLetter implements ledger.Driver.
func (d *driver) DeadLetter(ctx context.Context, dl ledger.DeadLetter) (added bool, err error) {
	event := dl.Event
	if event == nil {
		event = []byte{}
	}
	err = d.write(ctx, func(x on) error {
		res, err := x.exec(followerQueriesOf(dl.Follower).deadLetter,
			args(followerArgs(dl.Follower), dl.ID, dl.Seq, event, dl.Reason, nanos(dl.At))...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		added = n == 1
		return err
	})
	return added, err
}

// DeadLetters implements ledger.Driver.
func (d *driver) DeadLetters(ctx context.Context, f ledger.Follower) ([]ledger.DeadLetter, error) {
	return d.deadLetters(ctx, f, followerQueriesOf(f).deadLetters, followerArgs(f)...)
}

// RecentDeadLetters implements ledger.Driver.
func (d *driver) RecentDeadLetters(ctx context.Context, f ledger.Follower, n int) ([]ledger.DeadLetter, error) {
	return d.deadLetters(ctx, f, followerQueriesOf(f).recentDeadLetters, append(followerArgs(f), n)...)
}

// LookupDeadLetter implements ledger.Driver.
func (d *driver) LookupDeadLetter(ctx context.Context, f ledger.Follower, id string) (ledger.DeadLetter, error) {
	dl, err := scanDeadLetter(d.read(ctx).row(followerQueriesOf(f).deadLetterRow, args(followerArgs(f), id)...), f)
	return dl, notFound(err)
}

// deadLetters reads the dead letters a query answers.
func (d *driver) deadLetters(ctx context.Context, f ledger.Follower, query string, args ...any) ([]ledger.DeadLetter, error) {
	rows, err := d.read(ctx).rows(query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ledger.DeadLetter
	for rows.Next() {
		dl, err := scanDeadLetter(rows, f)
		if err != nil {
			return nil, err
		}
		out = append(out, dl)
	}
	return out, rows.Err()
}

// Followed implements ledger.Driver.
func (d *driver) Followed(ctx context.Context) ([]ledger.Follower, error) {
	rows, err := d.read(ctx).rows(followed)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ledger.Follower
	for rows.Next() {
		f := ledger.Follower{Kind: ledger.LogFollower}
		if err := rows.Scan(&f.Tenant, &f.Workspace, &f.Name); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// Beat implements ledger.Driver, in memory: the process is the only
// replica a SQLite ledger has.
func (d *driver) Beat(ctx context.Context, p ledger.BeatParams) ([]ledger.Holder, error) {
	return d.holders.Beat(ctx, p)
}

// Leave implements ledger.Driver.
func (d *driver) Leave(ctx context.Context, holder string, now time.Time) error {
	return d.holders.Leave(ctx, holder, now)
}

// Append implements ledger.Driver: the event in one statement, or the
// sequence of its id when the log has it.
func (d *driver) Append(ctx context.Context, p eventlog.AppendParams) (seq int64, appended bool, err error) {
	e := p.Event
	data := []byte(e.Data)
	if data == nil {
		data = []byte{}
	}
	err = d.write(ctx, func(x on) error {
		err := x.row(appendEvent, e.Tenant, e.Workspace, e.ID, e.Type, e.Correlation, data, nanos(e.At), e.Tenant, e.Workspace).Scan(&seq)
		if !errors.Is(err, sql.ErrNoRows) {
			appended = err == nil
			return err
		}
		// Appended once already: answer its sequence.
		return x.row(eventSeq, e.Tenant, e.Workspace, e.ID).Scan(&seq)
	})
	return seq, appended, err
}

// Head implements ledger.Driver.
func (d *driver) Head(ctx context.Context, tenant, workspace string) (int64, error) {
	var seq int64
	err := d.read(ctx).row(headEvent, tenant, workspace).Scan(&seq)
	return seq, err
}

// Read implements ledger.Driver.
func (d *driver) Read(ctx context.Context, tenant, workspace string, afterSeq int64, limit int) ([]eventlog.Event, error) {
	rows, err := d.read(ctx).rows(readEvents, tenant, workspace, afterSeq, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return scanEvents(rows, tenant, workspace)
}

// scanEvents reads a workspace's events from rows of seq, id, type,
// correlation, data and at, as Read and LatestEvents select them.
func scanEvents(rows *sql.Rows, tenant, workspace string) ([]eventlog.Event, error) {
	var out []eventlog.Event
	for rows.Next() {
		e := eventlog.Event{Tenant: tenant, Workspace: workspace}
		var (
			at   sql.NullInt64
			data []byte
		)
		if err := rows.Scan(&e.Seq, &e.ID, &e.Type, &e.Correlation, &data, &at); err != nil {
			return nil, err
		}
		if len(data) > 0 {
			e.Data = data
		}
		e.At = fromNanos(at)
		out = append(out, e)
	}
	return out, rows.Err()
}
