// Package ledgersqlite is relayr's embedded ledger: the Ledger and EventLog
// ports on one SQLite file (modernc.org/sqlite, pure Go, no cgo).
//
// The file runs in WAL mode with synchronous=FULL, so every call that
// changes something is durable when it returns. Writes go through one
// connection and begin with BEGIN IMMEDIATE, so goroutines of one process
// queue for the writer rather than meet SQLITE_BUSY; another process on the
// same file waits out the busy timeout. Reads use a pool of read-only
// connections beside the writer. The schema's migrations are embedded and
// applied at Open. It passes the same contract suites as memory and
// PostgreSQL (ledgertest, eventlogtest).
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
	"sync/atomic"
	"time"

	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/ledger/memledger"
	"github.com/relayr-go/relayr/core/ledger/validate"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

var (
	_ ledger.Ledger = (*Ledger)(nil)
	_ eventlog.Log  = (*Ledger)(nil)
)

// BusyTimeout is how long a write waits for another process holding the
// file's write lock before it fails with ledger.ErrUnavailable.
const BusyTimeout = 10 * time.Second

//go:embed migration/*.up.sql
var migrationFS embed.FS

// Ledger is a ledger.Ledger and eventlog.Log on one SQLite file, safe for
// concurrent use.
type Ledger struct {
	w, r   *sql.DB
	closed atomic.Bool
	// holders are the replicas' heartbeats, kept in memory: a SQLite
	// ledger serves one process, the only replica (docs/decisions.md).
	holders memledger.Holders
}

// Beat implements ledger.Holders, in memory: the process is the only
// replica a SQLite ledger has.
func (l *Ledger) Beat(ctx context.Context, p ledger.BeatParams) ([]ledger.Holder, error) {
	if l.closed.Load() {
		return nil, ledger.ErrClosed
	}
	return l.holders.Beat(ctx, p)
}

// Leave implements ledger.Holders.
func (l *Ledger) Leave(ctx context.Context, holder string, now time.Time) error {
	if l.closed.Load() {
		return ledger.ErrClosed
	}
	return l.holders.Leave(ctx, holder, now)
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
	if err := migrate(ctx, w, migrations); err != nil {
		w.Close()
		return nil, err
	}
	r, err := sql.Open("sqlite", base+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("ledgersqlite: open %s: %w", path, err)
	}
	r.SetMaxOpenConns(4)
	r.SetMaxIdleConns(4)
	l := &Ledger{w: w, r: r}
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

// Close closes the ledger; every later call fails with ledger.ErrClosed.
func (l *Ledger) Close() error {
	if l.closed.Swap(true) {
		return nil
	}
	return errors.Join(l.r.Close(), l.w.Close())
}

// loadMigrations reads the embedded migrations (ledger.LoadMigrations).
func loadMigrations(fsys fs.FS, dir string) ([]ledger.Migration, error) {
	ms, err := ledger.LoadMigrations(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("ledgersqlite: %w", err)
	}
	return ms, nil
}

func migrate(ctx context.Context, db *sql.DB, migrations []ledger.Migration) error {
	// BEGIN IMMEDIATE: two processes opening one file migrate in turn.
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("ledgersqlite: migrate: %w", mapError(ctx, err))
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS relayr_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("ledgersqlite: migrate: %w", mapError(ctx, err))
	}
	var current int
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM relayr_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("ledgersqlite: migrate: %w", mapError(ctx, err))
	}
	if current > len(migrations) {
		return fmt.Errorf("ledgersqlite: the file's schema (%d) is newer than this relayr's (%d)", current, len(migrations))
	}
	for _, m := range migrations[current:] {
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return fmt.Errorf("ledgersqlite: migration %03d_%s: %w", m.Version, m.Name, mapError(ctx, err))
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO relayr_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			m.Version, m.Name, time.Now().UnixNano()); err != nil {
			return fmt.Errorf("ledgersqlite: migration %03d_%s: %w", m.Version, m.Name, mapError(ctx, err))
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("ledgersqlite: migrate: %w", mapError(ctx, err))
	}
	return nil
}

// mapError maps a failure onto the ledger's sentinels: a done context stays
// itself, a closed database is ErrClosed, a busy or locked file is
// ErrUnavailable (the call may be retried).
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

func (l *Ledger) ready(ctx context.Context) error {
	if l.closed.Load() {
		return ledger.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ledgersqlite: %w", err)
	}
	return nil
}

// write runs fn in one immediate transaction on the writer connection.
func (l *Ledger) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if err := l.ready(ctx); err != nil {
		return err
	}
	tx, err := l.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("ledgersqlite: %w", mapError(ctx, err))
	}
	defer func() { _ = tx.Rollback() }()
	if err := fn(tx); err != nil {
		if isSentinel(err) {
			return err
		}
		return fmt.Errorf("ledgersqlite: %w", mapError(ctx, err))
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("ledgersqlite: %w", mapError(ctx, err))
	}
	return nil
}

// read runs fn on the read-only pool.
func (l *Ledger) read(ctx context.Context, fn func(db *sql.DB) error) error {
	if err := l.ready(ctx); err != nil {
		return err
	}
	if err := fn(l.r); err != nil {
		if isSentinel(err) {
			return err
		}
		return fmt.Errorf("ledgersqlite: %w", mapError(ctx, err))
	}
	return nil
}

// sentinels are the port's errors a transaction answers as they are.
var sentinels = []error{ledger.ErrNonce, ledger.ErrLeaseHeld, ledger.ErrNotFound, ledger.ErrLoop, ledger.ErrInvalid}

func isSentinel(err error) bool {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
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

const claimColumns = `tenant, workspace, kind, key, nonce, claimed_at, correlation, recorded,
	item_id, item_number, item_name, item_link, item_key, recorded_at, deleted, recorded_values`

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
	if values != "" && values != "{}" {
		if err := json.Unmarshal([]byte(values), &c.Values); err != nil {
			return ledger.Claim{}, fmt.Errorf("recorded values: %w", err)
		}
	}
	return c, nil
}

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func lookup(ctx context.Context, q queryer, k ledger.Key) (ledger.Claim, error) {
	c, err := scanClaim(q.QueryRowContext(ctx, `SELECT `+claimColumns+` FROM relayr_tracker_items
		WHERE tenant = ? AND workspace = ? AND kind = ? AND key = ?`, k.Tenant, k.Workspace, string(k.Kind), k.Key))
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.Claim{}, ledger.ErrNotFound
	}
	return c, err
}

// Claim implements ledger.Claims.
func (l *Ledger) Claim(ctx context.Context, p ledger.ClaimParams) (ledger.Claim, ledger.Outcome, error) {
	if err := validate.Claim(p); err != nil {
		return ledger.Claim{}, 0, err
	}
	var (
		c   ledger.Claim
		out ledger.Outcome
	)
	err := l.write(ctx, func(tx *sql.Tx) error {
		var err error
		c, err = lookup(ctx, tx, p.Key)
		switch {
		case errors.Is(err, ledger.ErrNotFound):
			c = ledger.Claim{Key: p.Key, Nonce: ledger.NewNonce(), ClaimedAt: p.Now, Correlation: p.Correlation}
			out = ledger.Fresh
			_, err = tx.ExecContext(ctx, `INSERT INTO relayr_tracker_items (tenant, workspace, kind, key, nonce, claimed_at, correlation)
				VALUES (?, ?, ?, ?, ?, ?, ?)`, p.Tenant, p.Workspace, string(p.Kind), p.Key.Key, c.Nonce, nanos(p.Now), p.Correlation)
			return err
		case err != nil:
			return err
		case c.Deleted:
			out = ledger.Deleted
		case c.Recorded:
			out = ledger.Recorded
		case c.ClaimedAt.Before(p.Now.Add(-p.RetakeAfter)):
			// ADR-0033: an unrecorded claim older than 30 s is taken again;
			// the first claimer's correlation stays.
			c.Nonce, c.ClaimedAt, out = ledger.NewNonce(), p.Now, ledger.Retaken
			_, err = tx.ExecContext(ctx, `UPDATE relayr_tracker_items SET nonce = ?, claimed_at = ?
				WHERE tenant = ? AND workspace = ? AND kind = ? AND key = ?`,
				c.Nonce, nanos(p.Now), p.Tenant, p.Workspace, string(p.Kind), p.Key.Key)
			return err
		default:
			out = ledger.Held
		}
		return nil
	})
	if err != nil {
		return ledger.Claim{}, 0, err
	}
	return c, out, nil
}

// Record implements ledger.Claims.
func (l *Ledger) Record(ctx context.Context, p ledger.RecordParams) (ledger.Claim, error) {
	if err := validate.Record(p); err != nil {
		return ledger.Claim{}, err
	}
	var c ledger.Claim
	err := l.write(ctx, func(tx *sql.Tx) error {
		var err error
		c, err = lookup(ctx, tx, p.Key)
		switch {
		case errors.Is(err, ledger.ErrNotFound):
			return ledger.ErrNonce
		case err != nil:
			return err
		case c.Recorded:
			return nil // ADR-0033: the first record is kept.
		case c.Nonce != p.Nonce:
			return ledger.ErrNonce
		}
		c.Recorded, c.Ref, c.RecordedAt, c.Nonce = true, p.Ref, p.Now, ledger.NewNonce()
		_, err = tx.ExecContext(ctx, `UPDATE relayr_tracker_items SET recorded = 1, nonce = ?, recorded_at = ?,
			item_id = ?, item_number = ?, item_name = ?, item_link = ?, item_key = ?
			WHERE tenant = ? AND workspace = ? AND kind = ? AND key = ?`,
			c.Nonce, nanos(p.Now), p.Ref.ID, p.Ref.Number, p.Ref.Name, p.Ref.Link, p.Ref.Key,
			p.Tenant, p.Workspace, string(p.Kind), p.Key.Key)
		return err
	})
	if err != nil {
		return ledger.Claim{}, err
	}
	return c, nil
}

// Release implements ledger.Claims.
func (l *Ledger) Release(ctx context.Context, k ledger.Key, nonce string) error {
	if err := ledger.CheckKey(k); err != nil {
		return err
	}
	return l.write(ctx, func(tx *sql.Tx) error {
		c, err := lookup(ctx, tx, k)
		switch {
		case errors.Is(err, ledger.ErrNotFound):
			return ledger.ErrNonce
		case err != nil:
			return err
		case c.Recorded || c.Deleted:
			return nil
		case c.Nonce != nonce:
			return ledger.ErrNonce
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM relayr_tracker_items WHERE tenant = ? AND workspace = ? AND kind = ? AND key = ?`,
			k.Tenant, k.Workspace, string(k.Kind), k.Key)
		return err
	})
}

// MarkDeleted implements ledger.Claims.
func (l *Ledger) MarkDeleted(ctx context.Context, k ledger.Key) error {
	if err := ledger.CheckKey(k); err != nil {
		return err
	}
	return l.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO relayr_tracker_items (tenant, workspace, kind, key, nonce, deleted)
			VALUES (?, ?, ?, ?, ?, 1)
			ON CONFLICT (tenant, workspace, kind, key) DO UPDATE SET deleted = 1, nonce = excluded.nonce`,
			k.Tenant, k.Workspace, string(k.Kind), k.Key, ledger.NewNonce())
		return err
	})
}

// Lookup implements ledger.Claims.
func (l *Ledger) Lookup(ctx context.Context, k ledger.Key) (ledger.Claim, error) {
	if err := ledger.CheckKey(k); err != nil {
		return ledger.Claim{}, err
	}
	var c ledger.Claim
	err := l.read(ctx, func(db *sql.DB) error {
		var err error
		c, err = lookup(ctx, db, k)
		return err
	})
	return c, err
}

// LookupItem implements ledger.Claims.
func (l *Ledger) LookupItem(ctx context.Context, tenant, workspace, itemID string) (ledger.Claim, error) {
	if err := validate.Item(tenant, workspace, itemID); err != nil {
		return ledger.Claim{}, err
	}
	var c ledger.Claim
	err := l.read(ctx, func(db *sql.DB) error {
		var err error
		c, err = scanClaim(db.QueryRowContext(ctx, `SELECT `+claimColumns+` FROM relayr_tracker_items
			WHERE tenant = ? AND workspace = ? AND item_id = ? AND recorded = 1 AND kind = 'item'
			ORDER BY key LIMIT 1`, tenant, workspace, itemID))
		if errors.Is(err, sql.ErrNoRows) {
			return ledger.ErrNotFound
		}
		return err
	})
	return c, err
}

// changeValues reads a key's values, lets change edit them, and writes them
// back, in one transaction.
func (l *Ledger) changeValues(ctx context.Context, k ledger.Key, change func(values map[string]string)) error {
	return l.write(ctx, func(tx *sql.Tx) error {
		c, err := lookup(ctx, tx, k)
		if err != nil {
			return err
		}
		if c.Values == nil {
			c.Values = map[string]string{}
		}
		change(c.Values)
		b, err := json.Marshal(c.Values)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE relayr_tracker_items SET recorded_values = ?
			WHERE tenant = ? AND workspace = ? AND kind = ? AND key = ?`, string(b), k.Tenant, k.Workspace, string(k.Kind), k.Key)
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

// CountWrite implements ledger.Claims. The writer connection serialises it;
// writes that left the window are forgotten as it counts.
func (l *Ledger) CountWrite(ctx context.Context, p ledger.WriteParams) (int, error) {
	if err := validate.Write(p); err != nil {
		return 0, err
	}
	var n int
	loop := false
	err := l.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM relayr_tracker_writes
			WHERE tenant = ? AND workspace = ? AND item_id = ? AND at <= ?`,
			p.Tenant, p.Workspace, p.ItemID, p.Now.Add(-p.Window).UnixNano()); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM relayr_tracker_writes
			WHERE tenant = ? AND workspace = ? AND item_id = ?`, p.Tenant, p.Workspace, p.ItemID).Scan(&n); err != nil {
			return err
		}
		if n >= p.Limit {
			loop = true // commit the forgetting, count nothing
			return nil
		}
		n++
		_, err := tx.ExecContext(ctx, `INSERT INTO relayr_tracker_writes (tenant, workspace, item_id, at) VALUES (?, ?, ?, ?)`,
			p.Tenant, p.Workspace, p.ItemID, p.Now.UnixNano())
		return err
	})
	if err != nil {
		return 0, err
	}
	if loop {
		return n, ledger.ErrLoop
	}
	return n, nil
}

// ForgetWrites implements ledger.Claims.
func (l *Ledger) ForgetWrites(ctx context.Context, tenant, workspace, itemID string) error {
	if err := validate.Item(tenant, workspace, itemID); err != nil {
		return err
	}
	return l.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM relayr_tracker_writes WHERE tenant = ? AND workspace = ? AND item_id = ?`,
			tenant, workspace, itemID)
		return err
	})
}

// Snapshot implements ledger.Snapshots.
func (l *Ledger) Snapshot(ctx context.Context, tenant, workspace, itemID string) (ledger.SnapshotRow, error) {
	if err := validate.Item(tenant, workspace, itemID); err != nil {
		return ledger.SnapshotRow{}, err
	}
	row := ledger.SnapshotRow{Tenant: tenant, Workspace: workspace, ItemID: itemID}
	err := l.read(ctx, func(db *sql.DB) error {
		var updatedAt, commentsUntil sql.NullInt64
		err := db.QueryRowContext(ctx, `SELECT item, updated_at, comments_until FROM relayr_tracker_snapshots
			WHERE tenant = ? AND workspace = ? AND item_id = ?`, tenant, workspace, itemID).Scan(&row.Item, &updatedAt, &commentsUntil)
		if errors.Is(err, sql.ErrNoRows) {
			return ledger.ErrNotFound
		}
		row.UpdatedAt, row.CommentsUntil = fromNanos(updatedAt), fromNanos(commentsUntil)
		return err
	})
	if err != nil {
		return ledger.SnapshotRow{}, err
	}
	return row, nil
}

// SaveSnapshots implements ledger.Snapshots.
func (l *Ledger) SaveSnapshots(ctx context.Context, rows []ledger.SnapshotRow) error {
	if err := validate.Snapshots(rows); err != nil {
		return err
	}
	if len(rows) == 0 {
		return l.ready(ctx)
	}
	return l.write(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO relayr_tracker_snapshots (tenant, workspace, item_id, item, updated_at, comments_until)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (tenant, workspace, item_id) DO UPDATE SET
				item = excluded.item, updated_at = excluded.updated_at, comments_until = excluded.comments_until`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, r := range rows {
			item := r.Item
			if item == nil {
				item = []byte{}
			}
			if _, err := stmt.ExecContext(ctx, r.Tenant, r.Workspace, r.ItemID, item, nanos(r.UpdatedAt), nanos(r.CommentsUntil)); err != nil {
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
	return l.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM relayr_tracker_snapshots WHERE tenant = ? AND workspace = ? AND item_id = ?`,
			tenant, workspace, itemID)
		return err
	})
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
		err := l.read(ctx, func(db *sql.DB) error {
			rows, err := db.QueryContext(ctx, `SELECT item_id FROM relayr_tracker_snapshots
				WHERE tenant = ? AND workspace = ? AND (? OR item_id > ?) ORDER BY item_id LIMIT ?`,
				tenant, workspace, first, after, snapshotPage)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					return err
				}
				ids = append(ids, id)
			}
			return rows.Err()
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

func followerTable(f ledger.Follower) string {
	if f.Kind == ledger.TrackerFollower {
		return "relayr_tracker_followers"
	}
	return "relayr_followers"
}

func deadLetterTable(f ledger.Follower) string {
	if f.Kind == ledger.TrackerFollower {
		return "relayr_tracker_dead_letters"
	}
	return "relayr_dead_letters"
}

type leaseRow struct {
	holder, nonce string
	expires       time.Time
}

func readLease(ctx context.Context, tx queryer, f ledger.Follower) (leaseRow, bool, error) {
	var (
		r       leaseRow
		expires sql.NullInt64
	)
	err := tx.QueryRowContext(ctx, `SELECT holder, nonce, expires FROM `+followerTable(f)+`
		WHERE tenant = ? AND workspace = ? AND name = ?`, f.Tenant, f.Workspace, f.Name).Scan(&r.holder, &r.nonce, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return leaseRow{}, false, nil
	}
	r.expires = fromNanos(expires)
	return r, err == nil, err
}

func writeLease(ctx context.Context, tx *sql.Tx, f ledger.Follower, r leaseRow) error {
	_, err := tx.ExecContext(ctx, withTable(`INSERT INTO {table} (tenant, workspace, name, holder, nonce, expires)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant, workspace, name) DO UPDATE SET holder = excluded.holder, nonce = excluded.nonce, expires = excluded.expires`, followerTable(f)),
		f.Tenant, f.Workspace, f.Name, r.holder, r.nonce, nanos(r.expires))
	return err
}

// TakeLease implements ledger.Followers.
func (l *Ledger) TakeLease(ctx context.Context, p ledger.LeaseParams) (ledger.Lease, error) {
	if err := validate.Lease(p); err != nil {
		return ledger.Lease{}, err
	}
	next := leaseRow{holder: p.Holder, nonce: ledger.NewNonce(), expires: p.Now.Add(p.TTL)}
	err := l.write(ctx, func(tx *sql.Tx) error {
		cur, ok, err := readLease(ctx, tx, p.Follower)
		if err != nil {
			return err
		}
		// ADR-0015: taken when nobody holds it or it lapsed.
		if ok && cur.holder != "" && p.Now.Before(cur.expires) {
			return ledger.ErrLeaseHeld
		}
		return writeLease(ctx, tx, p.Follower, next)
	})
	if err != nil {
		return ledger.Lease{}, err
	}
	return ledger.Lease{Follower: p.Follower, Holder: next.holder, Nonce: next.nonce, Expires: next.expires}, nil
}

// RenewLease implements ledger.Followers.
func (l *Ledger) RenewLease(ctx context.Context, p ledger.LeaseParams) (ledger.Lease, error) {
	if err := validate.Lease(p); err != nil {
		return ledger.Lease{}, err
	}
	var next leaseRow
	err := l.write(ctx, func(tx *sql.Tx) error {
		cur, ok, err := readLease(ctx, tx, p.Follower)
		if err != nil {
			return err
		}
		if !ok || cur.holder == "" || p.Nonce == "" || cur.nonce != p.Nonce {
			return ledger.ErrNonce
		}
		next = leaseRow{holder: cur.holder, nonce: ledger.NewNonce(), expires: p.Now.Add(p.TTL)}
		return writeLease(ctx, tx, p.Follower, next)
	})
	if err != nil {
		return ledger.Lease{}, err
	}
	return ledger.Lease{Follower: p.Follower, Holder: next.holder, Nonce: next.nonce, Expires: next.expires}, nil
}

// ReleaseLease implements ledger.Followers.
func (l *Ledger) ReleaseLease(ctx context.Context, f ledger.Follower, nonce string) error {
	if err := validate.Nonce(f, nonce); err != nil {
		return err
	}
	return l.write(ctx, func(tx *sql.Tx) error {
		cur, ok, err := readLease(ctx, tx, f)
		if err != nil {
			return err
		}
		if !ok || cur.holder == "" || nonce == "" || cur.nonce != nonce {
			return ledger.ErrNonce
		}
		return writeLease(ctx, tx, f, leaseRow{})
	})
}

func readCursor(ctx context.Context, q queryer, f ledger.Follower) (ledger.Cursor, error) {
	var (
		c                            ledger.Cursor
		updatedAt, sweptAt, polledAt sql.NullInt64
		seeded                       int
	)
	err := q.QueryRowContext(ctx, `SELECT cursor_updated_at, cursor_item_id, cursor_seq, seeded, swept_at, polled_at FROM `+followerTable(f)+`
		WHERE tenant = ? AND workspace = ? AND name = ?`, f.Tenant, f.Workspace, f.Name).Scan(&updatedAt, &c.ItemID, &c.Seq, &seeded, &sweptAt, &polledAt)
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.Cursor{}, nil
	}
	if err != nil {
		return ledger.Cursor{}, err
	}
	c.UpdatedAt, c.SweptAt, c.PolledAt, c.Seeded = fromNanos(updatedAt), fromNanos(sweptAt), fromNanos(polledAt), seeded != 0
	return c, nil
}

// Lease implements ledger.Followers.
func (l *Ledger) Lease(ctx context.Context, f ledger.Follower) (ledger.Lease, error) {
	if err := ledger.CheckFollower(f); err != nil {
		return ledger.Lease{}, err
	}
	out := ledger.Lease{Follower: f}
	err := l.read(ctx, func(db *sql.DB) error {
		r, _, err := readLease(ctx, db, f)
		out.Holder, out.Expires = r.holder, r.expires
		return err
	})
	return out, err
}

// Cursor implements ledger.Followers.
func (l *Ledger) Cursor(ctx context.Context, f ledger.Follower) (ledger.Cursor, error) {
	if err := ledger.CheckFollower(f); err != nil {
		return ledger.Cursor{}, err
	}
	var c ledger.Cursor
	err := l.read(ctx, func(db *sql.DB) error {
		var err error
		c, err = readCursor(ctx, db, f)
		return err
	})
	return c, err
}

// SaveCursor implements ledger.Followers.
func (l *Ledger) SaveCursor(ctx context.Context, f ledger.Follower, c ledger.Cursor) error {
	if err := validate.Cursor(f, c); err != nil {
		return err
	}
	return l.write(ctx, func(tx *sql.Tx) error {
		saved, err := readCursor(ctx, tx, f)
		if err != nil {
			return err
		}
		next := ledger.Forward(saved, c)
		_, err = tx.ExecContext(ctx, withTable(`INSERT INTO {table} (tenant, workspace, name, cursor_updated_at, cursor_item_id, cursor_seq, seeded, swept_at, polled_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (tenant, workspace, name) DO UPDATE SET cursor_updated_at = excluded.cursor_updated_at,
				cursor_item_id = excluded.cursor_item_id, cursor_seq = excluded.cursor_seq, seeded = excluded.seeded, swept_at = excluded.swept_at,
				polled_at = excluded.polled_at`, followerTable(f)),
			f.Tenant, f.Workspace, f.Name, nanos(next.UpdatedAt), next.ItemID, next.Seq, boolInt(next.Seeded), nanos(next.SweptAt), nanos(next.PolledAt))
		return err
	})
}

// DeadLetter implements ledger.Followers.
func (l *Ledger) DeadLetter(ctx context.Context, d ledger.DeadLetter) (bool, error) {
	if err := validate.DeadLetter(d); err != nil {
		return false, err
	}
	var added bool
	err := l.write(ctx, func(tx *sql.Tx) error {
		event := d.Event
		if event == nil {
			event = []byte{}
		}
		res, err := tx.ExecContext(ctx, withTable(`INSERT INTO {table} (tenant, workspace, name, event_id, seq, event, reason, at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, workspace, name, event_id) DO NOTHING`, deadLetterTable(d.Follower)),
			d.Tenant, d.Workspace, d.Name, d.ID, d.Seq, event, d.Reason, nanos(d.At))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		added = n == 1
		return err
	})
	return added, err
}

// DeadLetters implements ledger.Followers.
func (l *Ledger) DeadLetters(ctx context.Context, f ledger.Follower) ([]ledger.DeadLetter, error) {
	if err := ledger.CheckFollower(f); err != nil {
		return nil, err
	}
	var out []ledger.DeadLetter
	err := l.read(ctx, func(db *sql.DB) error {
		rows, err := db.QueryContext(ctx, withTable(`SELECT `+deadLetterColumns+` FROM {table}
			WHERE tenant = ? AND workspace = ? AND name = ? ORDER BY coalesce(at, 0), n`, deadLetterTable(f)), f.Tenant, f.Workspace, f.Name)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			d, err := scanDeadLetter(rows, f)
			if err != nil {
				return err
			}
			out = append(out, d)
		}
		return rows.Err()
	})
	return out, err
}

// Followed implements ledger.Followers.
func (l *Ledger) Followed(ctx context.Context) ([]ledger.Follower, error) {
	var out []ledger.Follower
	err := l.read(ctx, func(db *sql.DB) error {
		rows, err := db.QueryContext(ctx, `SELECT tenant, workspace, name FROM relayr_followers ORDER BY tenant, workspace, name`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			f := ledger.Follower{Kind: ledger.LogFollower}
			if err := rows.Scan(&f.Tenant, &f.Workspace, &f.Name); err != nil {
				return err
			}
			out = append(out, f)
		}
		return rows.Err()
	})
	return out, err
}

// Ping implements ledger.Ledger: the file answers and carries every
// migration this relayr knows.
func (l *Ledger) Ping(ctx context.Context) error {
	migrations, err := loadMigrations(migrationFS, "migration")
	if err != nil {
		return err
	}
	return l.read(ctx, func(db *sql.DB) error {
		var v int
		if err := db.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM relayr_migrations`).Scan(&v); err != nil {
			return err
		}
		if v != len(migrations) {
			return fmt.Errorf("ledgersqlite: schema at version %d, want %d", v, len(migrations))
		}
		return nil
	})
}

// Append implements eventlog.Log.
func (l *Ledger) Append(ctx context.Context, p eventlog.AppendParams) (int64, bool, error) {
	if err := eventlog.CheckAppend(p); err != nil {
		return 0, false, err
	}
	e := p.Event
	var (
		seq      int64
		appended bool
	)
	err := l.write(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT seq FROM relayr_events WHERE tenant = ? AND workspace = ? AND id = ?`,
			e.Tenant, e.Workspace, e.ID).Scan(&seq)
		if err == nil {
			return nil // appended once already: answer its sequence
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		data := []byte(e.Data)
		if data == nil {
			data = []byte{}
		}
		err = tx.QueryRowContext(ctx, `INSERT INTO relayr_events (tenant, workspace, seq, id, type, correlation, data, at)
			SELECT ?, ?, coalesce(max(seq), 0) + 1, ?, ?, ?, ?, ? FROM relayr_events WHERE tenant = ? AND workspace = ?
			RETURNING seq`,
			e.Tenant, e.Workspace, e.ID, e.Type, e.Correlation, data, nanos(e.At), e.Tenant, e.Workspace).Scan(&seq)
		appended = err == nil
		return err
	})
	if err != nil {
		return 0, false, err
	}
	return seq, appended, nil
}

// Head implements eventlog.Log.
func (l *Ledger) Head(ctx context.Context, tenant, workspace string) (int64, error) {
	if validate.Workspace(tenant, workspace) != nil {
		return 0, eventlog.ErrInvalid
	}
	var seq int64
	err := l.read(ctx, func(db *sql.DB) error {
		return db.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM relayr_events WHERE tenant = ? AND workspace = ?`,
			tenant, workspace).Scan(&seq)
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
	err := l.read(ctx, func(db *sql.DB) error {
		rows, err := db.QueryContext(ctx, `SELECT seq, id, type, correlation, data, at FROM relayr_events
			WHERE tenant = ? AND workspace = ? AND seq > ? ORDER BY seq LIMIT ?`, tenant, workspace, afterSeq, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		out, err = scanEvents(rows, tenant, workspace)
		return err
	})
	return out, err
}

// withTable puts one of the ledger's own table names (followerTable,
// deadLetterTable: constants, never input) into a query.
func withTable(query, table string) string { return strings.Replace(query, "{table}", table, 1) }

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
