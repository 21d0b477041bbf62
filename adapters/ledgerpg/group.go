package ledgerpg

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/relayr-go/relayr/core/ledger"
)

// groupDepth is how many group commits of one kind may be in flight: one
// waits for its flush while the next is sent.
const groupDepth = 2

// maxGroup is the most calls one group commit carries.
const maxGroup = 64

// group commits concurrent calls together: the calls that arrive while a
// commit is in flight are sent in the next one, one round trip and one
// durable commit for all of them, and each caller is answered after that
// commit. There is no timer: a call that finds no commit in flight runs at
// once, alone, as one statement.
//
// Up to depth callers at a time lead: each runs a commit of the calls
// waiting (its own first), and hands the lead to the next caller waiting,
// if any.
type group[Req, Res any] struct {
	mu       sync.Mutex
	queue    []*call[Req, Res]
	inFlight int
	// depth is how many commits may be in flight at once (at least 1).
	depth int
	// apart reports whether two calls may not share a commit (one key).
	apart func(a, b Req) bool
	// one runs a call alone; many runs calls (more than one) together in
	// one commit, answering each call's result or an error for them all.
	one  func(ctx context.Context, req Req) (Res, error)
	many func(ctx context.Context, reqs []Req) ([]Res, error)
}

type call[Req, Res any] struct {
	ctx   context.Context
	req   Req
	res   Res
	err   error
	taken bool // in a commit: answered when it ends
	done  bool // answered
	// promoted: handed one of the group's leads, which it runs once (led).
	promoted, led bool
	// ready is sent when the call is answered and when it is handed a
	// lead: at most twice.
	ready chan struct{}
}

// do runs req in the next commit and answers its result.
func (g *group[Req, Res]) do(ctx context.Context, req Req) (Res, error) {
	c := &call[Req, Res]{ctx: ctx, req: req, ready: make(chan struct{}, 2)}
	g.mu.Lock()
	g.queue = append(g.queue, c)
	if g.inFlight < max(g.depth, 1) {
		g.inFlight++
		c.promoted = true
	}
	g.mu.Unlock()
	for {
		g.mu.Lock()
		lead := c.promoted && !c.led
		c.led = c.led || lead
		done := c.done
		g.mu.Unlock()
		switch {
		case lead:
			g.lead()
			continue
		case done:
			return c.res, c.err
		}
		select {
		case <-c.ready:
		case <-ctx.Done():
			if g.leave(c) {
				var zero Res
				return zero, ctx.Err()
			}
			<-c.ready
		}
	}
}

// leave takes a call whose context is done out of the queue, unless it is
// in a commit already or holds a lead (reported false).
func (g *group[Req, Res]) leave(c *call[Req, Res]) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c.taken || c.done || c.promoted {
		return false
	}
	for i, q := range g.queue {
		if q == c {
			g.queue = append(g.queue[:i], g.queue[i+1:]...)
			return true
		}
	}
	return false
}

// lead runs one commit of the calls waiting, then hands the lead to the
// first waiting call that holds none, or gives it up.
func (g *group[Req, Res]) lead() {
	g.mu.Lock()
	var batch, rest []*call[Req, Res]
	for _, c := range g.queue {
		if len(batch) < maxGroup && c.ctx.Err() == nil && !g.conflicts(batch, c) {
			c.taken = true
			batch = append(batch, c)
		} else {
			rest = append(rest, c)
		}
	}
	g.queue = rest
	g.mu.Unlock()

	g.commit(batch)

	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range batch {
		c.done = true
		c.ready <- struct{}{}
	}
	// A call whose context ended while it waited is answered so.
	kept := g.queue[:0]
	for _, c := range g.queue {
		if err := c.ctx.Err(); err != nil {
			c.err, c.done = err, true
			c.ready <- struct{}{}
			continue
		}
		kept = append(kept, c)
	}
	g.queue = kept
	for _, c := range g.queue {
		if !c.promoted {
			c.promoted = true
			c.ready <- struct{}{}
			return
		}
	}
	g.inFlight--
}

func (g *group[Req, Res]) conflicts(batch []*call[Req, Res], c *call[Req, Res]) bool {
	for _, b := range batch {
		if g.apart(b.req, c.req) {
			return true
		}
	}
	return false
}

// commit runs the calls: one alone, several together under a context that
// ends when every caller's has; if the commit fails, each runs alone, so
// each is answered its own error.
func (g *group[Req, Res]) commit(batch []*call[Req, Res]) {
	switch len(batch) {
	case 0:
		return
	case 1:
		c := batch[0]
		c.res, c.err = g.one(c.ctx, c.req)
		return
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(batch[0].ctx))
	defer cancel()
	var left atomic.Int32
	left.Store(int32(len(batch)))
	for _, c := range batch {
		stop := context.AfterFunc(c.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
		defer stop()
	}
	reqs := make([]Req, len(batch))
	for i, c := range batch {
		reqs[i] = c.req
	}
	res, err := g.many(ctx, reqs)
	if err == nil {
		for i, c := range batch {
			c.res = res[i]
		}
		return
	}
	for _, c := range batch {
		c.res, c.err = g.one(c.ctx, c.req)
	}
}

// claimReq is a claim for TakeClaim's group, and recordReq a record for
// RecordClaim's; claimResult is the row a statement answered, if any
// (taken), and whether it was inserted.
type (
	claimReq struct {
		p     ledger.ClaimParams
		nonce string
	}
	recordReq struct {
		p     ledger.RecordParams
		nonce string
	}
	claimResult struct {
		c               ledger.Claim
		taken, inserted bool
	}
)

// byTenant orders keys by tenant, then byte order (so replicas lock rows
// in one order), and answers where each tenant's run starts and ends.
func byTenant(keys []ledger.Key) (order []int, runs [][2]int) {
	order = make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		ka, kb := keys[a], keys[b]
		return cmp.Or(strings.Compare(ka.Tenant, kb.Tenant), strings.Compare(ka.Workspace, kb.Workspace),
			strings.Compare(string(ka.Kind), string(kb.Kind)), strings.Compare(ka.Key, kb.Key))
	})
	for i := 0; i < len(order); {
		j := i + 1
		for j < len(order) && keys[order[j]].Tenant == keys[order[i]].Tenant {
			j++
		}
		runs = append(runs, [2]int{i, j})
		i = j
	}
	return order, runs
}

// many sends stmts (each the statement for one tenant's rows, or one for
// all without RLS) in one batch, one implicit transaction, and scans each
// row they answer with scan.
func (d *driver) many(ctx context.Context, tenants []string, stmts []*pgx.QueuedQuery, scan func(pgx.Rows) error) error {
	b := &pgx.Batch{}
	for i, q := range stmts {
		if d.rls {
			b.Queue(setTenant, tenants[i])
		}
		b.QueuedQueries = append(b.QueuedQueries, q)
	}
	br := d.pool.SendBatch(ctx, b)
	err := func() error {
		for range stmts {
			if d.rls {
				if _, err := br.Exec(); err != nil {
					return err
				}
			}
			rows, err := br.Query()
			if err != nil {
				return err
			}
			for rows.Next() {
				if err := scan(rows); err != nil {
					rows.Close()
					return err
				}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
		return nil
	}()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// manyRuns answers the runs of rows one statement each sends: one per
// tenant under RLS (each names its own), else one.
func (d *driver) manyRuns(keys []ledger.Key, order []int, runs [][2]int) ([]string, [][2]int) {
	if !d.rls {
		return []string{""}, [][2]int{{0, len(order)}}
	}
	tenants := make([]string, len(runs))
	for i, r := range runs {
		tenants[i] = keys[order[r[0]]].Tenant
	}
	return tenants, runs
}

// takeClaims runs claims together in one statement per tenant and one
// commit.
func (d *driver) takeClaims(ctx context.Context, reqs []claimReq) ([]claimResult, error) {
	keys := make([]ledger.Key, len(reqs))
	at := make(map[ledger.Key]int, len(reqs))
	for i, r := range reqs {
		keys[i], at[r.p.Key] = r.p.Key, i
	}
	order, runs := byTenant(keys)
	tenants, runs := d.manyRuns(keys, order, runs)
	stmts := make([]*pgx.QueuedQuery, len(runs))
	for j, run := range runs {
		n := run[1] - run[0]
		ten, ws, kinds, ks, nonces, corrs := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		now, cutoff := make([]pgtype.Timestamptz, n), make([]pgtype.Timestamptz, n)
		for i, o := range order[run[0]:run[1]] {
			p := reqs[o].p
			ten[i], ws[i], kinds[i], ks[i], nonces[i], corrs[i] = p.Tenant, p.Workspace, string(p.Kind), p.Key.Key, reqs[o].nonce, p.Correlation
			now[i], cutoff[i] = ts(p.Now), ts(p.Now.Add(-p.RetakeAfter))
		}
		stmts[j] = &pgx.QueuedQuery{SQL: d.q.claimMany, Arguments: []any{ten, ws, kinds, ks, nonces, now, corrs, cutoff}}
	}
	out := make([]claimResult, len(reqs))
	err := d.many(ctx, tenants, stmts, func(rows pgx.Rows) error {
		var (
			s        claimScan
			inserted bool
		)
		if err := rows.Scan(append(s.dest(), &inserted)...); err != nil {
			return err
		}
		c, err := s.claim()
		if err != nil {
			return err
		}
		out[at[c.Key]] = claimResult{c: c, taken: true, inserted: inserted}
		return nil
	})
	return out, err
}

// recordClaims runs records together in one statement per tenant and one
// commit.
func (d *driver) recordClaims(ctx context.Context, reqs []recordReq) ([]claimResult, error) {
	keys := make([]ledger.Key, len(reqs))
	at := make(map[ledger.Key]int, len(reqs))
	for i, r := range reqs {
		keys[i], at[r.p.Key] = r.p.Key, i
	}
	order, runs := byTenant(keys)
	tenants, runs := d.manyRuns(keys, order, runs)
	stmts := make([]*pgx.QueuedQuery, len(runs))
	for j, run := range runs {
		n := run[1] - run[0]
		ten, ws, kinds, ks, nonces, fresh := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		ids, names, links, itemKeys := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		numbers, now := make([]int64, n), make([]pgtype.Timestamptz, n)
		for i, o := range order[run[0]:run[1]] {
			p := reqs[o].p
			ten[i], ws[i], kinds[i], ks[i], nonces[i], fresh[i] = p.Tenant, p.Workspace, string(p.Kind), p.Key.Key, p.Nonce, reqs[o].nonce
			ids[i], numbers[i], names[i], links[i], itemKeys[i] = p.Ref.ID, p.Ref.Number, p.Ref.Name, p.Ref.Link, p.Ref.Key
			now[i] = ts(p.Now)
		}
		stmts[j] = &pgx.QueuedQuery{SQL: d.q.recordMany, Arguments: []any{ten, ws, kinds, ks, nonces, fresh, now, ids, numbers, names, links, itemKeys}}
	}
	out := make([]claimResult, len(reqs))
	err := d.many(ctx, tenants, stmts, func(rows pgx.Rows) error {
		var s claimScan
		if err := rows.Scan(s.dest()...); err != nil {
			return err
		}
		c, err := s.claim()
		if err != nil {
			return err
		}
		out[at[c.Key]] = claimResult{c: c, taken: true}
		return nil
	})
	return out, err
}
