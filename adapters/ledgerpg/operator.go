package ledgerpg

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/ledger"
)

// deadLetterScan reads deadLetterColumns.
type deadLetterScan struct {
	d              ledger.DeadLetter
	at, resolvedAt pgtype.Timestamptz
	resolution     string
}

func (s *deadLetterScan) dest() []any {
	return []any{&s.d.ID, &s.d.Seq, &s.d.Event, &s.d.Reason, &s.at, &s.resolution, &s.resolvedAt}
}

func (s *deadLetterScan) deadLetter(f ledger.Follower) ledger.DeadLetter {
	d := s.d
	d.Follower, d.At, d.Resolution, d.ResolvedAt = f, fromTS(s.at), ledger.Resolution(s.resolution), fromTS(s.resolvedAt)
	return d
}

// LatestEvents implements ledger.Driver.
func (d *driver) LatestEvents(ctx context.Context, q ledger.EventQuery) ([]eventlog.Event, error) {
	var out []eventlog.Event
	err := d.query(ctx, d.pool, q.Tenant, d.q.latestEvents, []any{q.Tenant, q.Workspace, q.Type, q.Limit}, func(rows pgx.Rows) error {
		var err error
		out, err = scanEvents(rows, q.Tenant, q.Workspace)
		return err
	})
	return out, err
}

func (d *driver) claims(ctx context.Context, sql, tenant string, rows int) ([]ledger.Claim, error) {
	var out []ledger.Claim
	err := d.query(ctx, d.pool, tenant, sql, []any{tenant, rows}, func(rs pgx.Rows) error {
		for rs.Next() {
			var s claimScan
			if err := rs.Scan(s.dest()...); err != nil {
				return err
			}
			c, err := s.claim()
			if err != nil {
				return err
			}
			out = append(out, c)
		}
		return rs.Err()
	})
	return out, err
}

// Unrecorded implements ledger.Driver.
func (d *driver) Unrecorded(ctx context.Context, tenant string, rows int) ([]ledger.Claim, error) {
	return d.claims(ctx, d.q.unrecorded, tenant, rows)
}

// DeletedKeys implements ledger.Driver.
func (d *driver) DeletedKeys(ctx context.Context, tenant string, rows int) ([]ledger.Claim, error) {
	return d.claims(ctx, d.q.deletedKeys, tenant, rows)
}

// AtCap implements ledger.Driver.
func (d *driver) AtCap(ctx context.Context, q ledger.CapQuery) ([]ledger.CapItem, error) {
	var out []ledger.CapItem
	err := d.query(ctx, d.pool, q.Tenant, d.q.atCap, []any{q.Tenant, ts(q.Now.Add(-q.Window)), q.Limit, q.Rows}, func(rows pgx.Rows) error {
		for rows.Next() {
			it := ledger.CapItem{Tenant: q.Tenant}
			var (
				n      int64
				oldest pgtype.Timestamptz
			)
			if err := rows.Scan(&it.Workspace, &it.ItemID, &n, &oldest); err != nil {
				return err
			}
			it.Writes, it.Oldest = int(n), fromTS(oldest)
			out = append(out, it)
		}
		return rows.Err()
	})
	return out, err
}

// ResolveDeadLetter implements ledger.Driver: one statement resolves an
// open dead letter and answers the row as it stands.
func (d *driver) ResolveDeadLetter(ctx context.Context, f ledger.Follower, id string, r ledger.Resolution, now time.Time) (ledger.DeadLetter, bool, error) {
	var (
		s       deadLetterScan
		changed bool
	)
	err := d.row(ctx, d.pool, f.Tenant, d.followers(f).resolve, append(followerArgs(f), id, string(r), ts(now)), append(s.dest(), &changed)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return ledger.DeadLetter{}, false, ledger.ErrNotFound
	}
	if err != nil {
		return ledger.DeadLetter{}, false, err
	}
	return s.deadLetter(f), changed, nil
}
