package ledgersqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/ledger"
)

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

// LatestEvents implements ledger.Driver.
func (d *driver) LatestEvents(ctx context.Context, q ledger.EventQuery) ([]eventlog.Event, error) {
	rows, err := d.read(ctx).rows(latestEvents, q.Tenant, q.Workspace, q.Type, q.Type, q.Limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return scanEvents(rows, q.Tenant, q.Workspace)
}

// claims answers the claims query reads of the tenant's, at most rows.
func (d *driver) claims(ctx context.Context, query, tenant string, rows int) ([]ledger.Claim, error) {
	rs, err := d.read(ctx).rows(query, tenant, rows)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []ledger.Claim
	for rs.Next() {
		c, err := scanClaim(rs)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rs.Err()
}

// Unrecorded implements ledger.Driver.
func (d *driver) Unrecorded(ctx context.Context, tenant string, rows int) ([]ledger.Claim, error) {
	return d.claims(ctx, unrecordedClaims, tenant, rows)
}

// DeletedKeys implements ledger.Driver.
func (d *driver) DeletedKeys(ctx context.Context, tenant string, rows int) ([]ledger.Claim, error) {
	return d.claims(ctx, deletedClaims, tenant, rows)
}

// AtCap implements ledger.Driver: a write at w counts while Now-w <
// Window, as CountWrite counts it.
func (d *driver) AtCap(ctx context.Context, q ledger.CapQuery) ([]ledger.CapItem, error) {
	rows, err := d.read(ctx).rows(atCap, q.Tenant, q.Now.Add(-q.Window).UnixNano(), q.Limit, q.Rows)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ledger.CapItem
	for rows.Next() {
		it := ledger.CapItem{Tenant: q.Tenant}
		var oldest sql.NullInt64
		if err := rows.Scan(&it.Workspace, &it.ItemID, &it.Writes, &oldest); err != nil {
			return nil, err
		}
		it.Oldest = fromNanos(oldest)
		out = append(out, it)
	}
	return out, rows.Err()
}

// ResolveDeadLetter implements ledger.Driver: one update resolves an open
// dead letter; one that is not open is read as it stands.
func (d *driver) ResolveDeadLetter(ctx context.Context, f ledger.Follower, id string, r ledger.Resolution, now time.Time) (ledger.DeadLetter, bool, error) {
	q := followerQueriesOf(f)
	var (
		dl       ledger.DeadLetter
		resolved bool
	)
	err := d.write(ctx, func(x on) error {
		var err error
		dl, err = scanDeadLetter(x.row(q.resolve, args(string(r), now.UnixNano(), followerArgs(f), id)...), f)
		if !errors.Is(err, sql.ErrNoRows) {
			resolved = err == nil
			return err
		}
		dl, err = scanDeadLetter(x.row(q.deadLetterRow, args(followerArgs(f), id)...), f)
		return notFound(err)
	})
	return dl, resolved, err
}
