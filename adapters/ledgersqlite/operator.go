package ledgersqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/ledger"
)

var _ ledger.Operator = (*Ledger)(nil)

const deadLetterColumns = `event_id, seq, event, reason, at, resolution, resolved_at`

func scanDeadLetter(s scanner, f ledger.Follower) (ledger.DeadLetter, error) {
	d := ledger.DeadLetter{Follower: f}
	var (
		at, resolvedAt sql.NullInt64
		resolution     string
	)
	if err := s.Scan(&d.ID, &d.Seq, &d.Event, &d.Reason, &at, &resolution, &resolvedAt); err != nil {
		return ledger.DeadLetter{}, err
	}
	d.At, d.Resolution, d.ResolvedAt = fromNanos(at), ledger.Resolution(resolution), fromNanos(resolvedAt)
	return d, nil
}

// LatestEvents implements ledger.Operator.
func (l *Ledger) LatestEvents(ctx context.Context, q ledger.EventQuery) ([]eventlog.Event, error) {
	if err := ledger.CheckEventQuery(q); err != nil {
		return nil, err
	}
	var out []eventlog.Event
	err := l.read(ctx, func(db *sql.DB) error {
		rows, err := db.QueryContext(ctx, `SELECT seq, id, type, correlation, data, at FROM relayr_events
			WHERE tenant = ? AND workspace = ? AND (? = '' OR type = ?) ORDER BY seq DESC LIMIT ?`,
			q.Tenant, q.Workspace, q.Type, q.Type, q.Limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		out, err = scanEvents(rows, q.Tenant, q.Workspace)
		return err
	})
	return out, err
}

// The operator's lists of claims: the tenant's, ordered, at most rows.
const (
	unrecordedClaims = `SELECT ` + claimColumns + ` FROM relayr_tracker_items
		WHERE tenant = ? AND recorded = 0 AND deleted = 0 ORDER BY claimed_at, workspace, kind, key LIMIT ?`
	deletedClaims = `SELECT ` + claimColumns + ` FROM relayr_tracker_items
		WHERE tenant = ? AND deleted = 1 ORDER BY workspace, kind, key LIMIT ?`
)

func (l *Ledger) claimsWhere(ctx context.Context, tenant string, rows int, query string) ([]ledger.Claim, error) {
	if err := ledger.CheckTenant(tenant); err != nil {
		return nil, err
	}
	if err := ledger.CheckRows(rows); err != nil {
		return nil, err
	}
	var out []ledger.Claim
	err := l.read(ctx, func(db *sql.DB) error {
		rs, err := db.QueryContext(ctx, query, tenant, rows)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			c, err := scanClaim(rs)
			if err != nil {
				return err
			}
			out = append(out, c)
		}
		return rs.Err()
	})
	return out, err
}

// Unrecorded implements ledger.Operator.
func (l *Ledger) Unrecorded(ctx context.Context, tenant string, rows int) ([]ledger.Claim, error) {
	return l.claimsWhere(ctx, tenant, rows, unrecordedClaims)
}

// DeletedKeys implements ledger.Operator.
func (l *Ledger) DeletedKeys(ctx context.Context, tenant string, rows int) ([]ledger.Claim, error) {
	return l.claimsWhere(ctx, tenant, rows, deletedClaims)
}

// AtCap implements ledger.Operator: a write at w counts while Now-w <
// Window, as CountWrite counts it.
func (l *Ledger) AtCap(ctx context.Context, q ledger.CapQuery) ([]ledger.CapItem, error) {
	if err := ledger.CheckCapQuery(q); err != nil {
		return nil, err
	}
	var out []ledger.CapItem
	err := l.read(ctx, func(db *sql.DB) error {
		rows, err := db.QueryContext(ctx, `SELECT workspace, item_id, count(*), min(at) FROM relayr_tracker_writes
			WHERE tenant = ? AND at > ? GROUP BY workspace, item_id HAVING count(*) >= ?
			ORDER BY workspace, item_id LIMIT ?`, q.Tenant, q.Now.Add(-q.Window).UnixNano(), q.Limit, q.Rows)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			it := ledger.CapItem{Tenant: q.Tenant}
			var oldest sql.NullInt64
			if err := rows.Scan(&it.Workspace, &it.ItemID, &it.Writes, &oldest); err != nil {
				return err
			}
			it.Oldest = fromNanos(oldest)
			out = append(out, it)
		}
		return rows.Err()
	})
	return out, err
}

// ResolveDeadLetter implements ledger.Operator: one update that sets an
// open dead letter's resolution, then the row as it stands.
func (l *Ledger) ResolveDeadLetter(ctx context.Context, f ledger.Follower, id string, r ledger.Resolution, now time.Time) (ledger.DeadLetter, bool, error) {
	if err := ledger.CheckResolution(f, id, r, now); err != nil {
		return ledger.DeadLetter{}, false, err
	}
	var (
		out     ledger.DeadLetter
		changed bool
	)
	err := l.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, withTable(`UPDATE {table} SET resolution = ?, resolved_at = ?
			WHERE tenant = ? AND workspace = ? AND name = ? AND event_id = ? AND resolution = ''`, deadLetterTable(f)),
			string(r), now.UnixNano(), f.Tenant, f.Workspace, f.Name, id)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		changed = n == 1
		out, err = scanDeadLetter(tx.QueryRowContext(ctx, withTable(`SELECT `+deadLetterColumns+` FROM {table}
			WHERE tenant = ? AND workspace = ? AND name = ? AND event_id = ?`, deadLetterTable(f)),
			f.Tenant, f.Workspace, f.Name, id), f)
		if errors.Is(err, sql.ErrNoRows) {
			return ledger.ErrNotFound
		}
		return err
	})
	if err != nil {
		return ledger.DeadLetter{}, false, err
	}
	return out, changed, nil
}
