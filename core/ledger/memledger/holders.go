package memledger

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/relayr-go/relayr/core/ledger"
)

// Holders is the replicas' heartbeat kept in memory (ledger.Holders): the
// in-memory ledger's, and the SQLite ledger's, whose one process is the
// only replica. The zero value is ready to use.
type Holders struct {
	mu   sync.Mutex
	rows map[string]ledger.Holder
}

// Beat implements ledger.Holders.
func (h *Holders) Beat(ctx context.Context, p ledger.BeatParams) ([]ledger.Holder, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memledger: %w", err)
	}
	if err := ledger.CheckBeat(p); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.rows == nil {
		h.rows = map[string]ledger.Holder{}
	}
	h.rows[p.Holder] = ledger.Holder{Name: p.Holder, Expires: p.Now.Add(p.TTL), Spent: maps.Clone(p.Spent)}
	var out []ledger.Holder
	for name, r := range h.rows {
		if !r.Expires.After(p.Now.Add(-ledger.KeepLapsed)) {
			delete(h.rows, name)
			continue
		}
		r.Spent = maps.Clone(r.Spent)
		if r.Spent == nil {
			r.Spent = map[string]int{}
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b ledger.Holder) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Leave implements ledger.Holders.
func (h *Holders) Leave(ctx context.Context, holder string, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memledger: %w", err)
	}
	if err := ledger.CheckText(holder); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if r, ok := h.rows[holder]; ok && r.Expires.After(now) {
		r.Expires = now
		h.rows[holder] = r
	}
	return nil
}

// Beat implements ledger.Holders.
func (l *driver) Beat(ctx context.Context, p ledger.BeatParams) ([]ledger.Holder, error) {
	return l.holders.Beat(ctx, p)
}

// Leave implements ledger.Holders.
func (l *driver) Leave(ctx context.Context, holder string, now time.Time) error {
	return l.holders.Leave(ctx, holder, now)
}
