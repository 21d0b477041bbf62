package ledgerpg

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/relayr-go/relayr/core/ledger"
)

// A filing's two writes (the claim's upsert and the record's update) that
// arrive while others are under way share a transaction and one round
// trip (group commit): eight filers on two cores spend most of their time
// on each statement's round trip and commit, not on the statement.
const (
	// maxGroup is the most writes one transaction carries.
	maxGroup = 64
	// groupsInFlight is how many groups may be under way at once, each on
	// a connection of its own: one waits on its commit's flush while the
	// others run their statements. Three, measured against two, four and
	// none on a two-core server, and what it costs a host whose CPU other
	// work saturates: docs/adr/1004-group-commit.md.
	groupsInFlight = 3
	// writeBound bounds each run of the grouper's writes: a group's round
	// trip, which runs for several callers so that none of their contexts
	// may cut it short, and a write alone, which holds one of the
	// groupsInFlight places however long its caller would wait. A write
	// the bound cuts short is answered ledger.ErrUnavailable: whether it
	// was kept is unknown, as when a connection is lost.
	writeBound = 30 * time.Second
	// boundSlices is how finely the bound is shared: the writes that start
	// within one boundSlices-th of it share one deadline (sharedBound), so
	// that each is bounded by between 29/30 of writeBound and all of it.
	boundSlices = 30
)

// grouper runs the filings' writes. No goroutine of its own, and no timer gathers a group:
// a write that finds fewer than groupsInFlight groups under way runs at
// once on its caller's goroutine, alone as before (a write alone costs
// what it did); one that finds them all under way queues. When a group is
// answered, its leader hands the lead to the first write that queued
// meanwhile, whose caller sends everything queued as the next group. Each
// caller is answered only when its own write is committed, or failed.
type grouper struct {
	d *driver

	// bound is writeBound; tests shorten it.
	bound time.Duration

	// shared is the deadline the writes starting now share, made by
	// sharedBound; spent are the cancel funcs of the ones made before it,
	// called once their deadlines have passed.
	boundMu     sync.Mutex
	shared      context.Context
	sharedUntil time.Time
	spent       []spentBound

	mu       sync.Mutex
	queue    []*groupWrite
	inFlight int // groups under way, or whose lead is being handed on

	// grouped counts the writes that committed in a group of two or more.
	grouped atomic.Int64
}

// groupWrite is one write: a statement answering at most one row, for a
// key.
type groupWrite struct {
	ctx  context.Context
	key  ledger.Key
	sql  string
	args []any
	dest []any
	// wake brings the write's caller the lead of the next group, and its
	// answer, on one channel: a write handed the lead while it waits can
	// be answered by another group before it takes the lead up, and the
	// lead, sent first, must be taken up first.
	wake chan groupWake
	// leads is set, under grouper.mu, once the write's caller leads: by
	// its own choice, or handed the lead.
	leads bool
	// answered is set once the write is answered, by the group's leader.
	answered bool
}

// groupWake is what wakes a write's caller: the lead, or its answer.
type groupWake struct {
	lead bool
	err  error
}

// row runs sql for k, a statement answering at most one row, scanned into
// dest; no row is pgx.ErrNoRows, as driver.row answers. A write whose
// caller gives up while it waits in the queue leaves the queue unrun and
// is answered its context's error at once, handing on the lead if it was
// handed it; once a group has taken it, it is answered when that group
// ends (within the grouper's bound).
func (g *grouper) row(ctx context.Context, k ledger.Key, sql string, args []any, dest ...any) error {
	w := &groupWrite{ctx: ctx, key: k, sql: sql, args: args, dest: dest, wake: make(chan groupWake, 2)}
	g.mu.Lock()
	g.queue = append(g.queue, w)
	lead := g.inFlight < groupsInFlight
	if lead {
		g.inFlight++
		w.leads = true
	}
	g.mu.Unlock()
	if lead {
		g.commitNext()
	}
	done := ctx.Done()
	for {
		select {
		case m := <-w.wake:
			if !m.lead {
				return m.err
			}
			// The lead may come as the caller gives up, and the select
			// take it first: a caller gone leads no group (its group's
			// next write may wait on a lock for the whole bound) but
			// hands the lead on and goes at once, as withdraw does.
			if ctx.Err() != nil && g.leave(w) {
				return ctx.Err()
			}
			g.commitNext()
		case <-done:
			if g.withdraw(w) {
				return ctx.Err()
			}
			done = nil // a group has it: its answer comes
		}
	}
}

// withdraw takes w out of the queue if no group has taken it, and reports
// whether it did. A lead handed to w and not yet taken up is handed on, as
// a group's end hands it: only then may w's caller go.
func (g *grouper) withdraw(w *groupWrite) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	i := slices.Index(g.queue, w)
	if i < 0 {
		return false
	}
	g.queue = slices.Delete(g.queue, i, i+1)
	// A write in the queue has no answer yet: a wake waiting is the lead.
	select {
	case <-w.wake:
		g.handOnLocked()
	default:
	}
	return true
}

// leave takes w, handed the lead, out of the queue and hands the lead on,
// if no group has taken w; it reports whether it did.
func (g *grouper) leave(w *groupWrite) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	i := slices.Index(g.queue, w)
	if i < 0 {
		return false
	}
	g.queue = slices.Delete(g.queue, i, i+1)
	g.handOnLocked()
	return true
}

// commitNext commits the queue's first writes as one group, then hands the
// lead to the first write left in the queue that does not lead, if any:
// even when the group panics, so that the writes after it still run.
func (g *grouper) commitNext() {
	g.mu.Lock()
	n := min(len(g.queue), maxGroup)
	group := slices.Clone(g.queue[:n])
	g.queue = g.queue[n:]
	g.mu.Unlock()
	defer g.handOn()
	g.commit(group)
}

// handOn ends a group: it hands the lead to the first queued write that
// does not lead, or counts one group fewer under way. Each write leads at
// most once: several groups may end while the same writes wait, and a write
// that leads its own group is not handed one.
func (g *grouper) handOn() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.handOnLocked()
}

// handOnLocked is handOn with g.mu held.
func (g *grouper) handOnLocked() {
	for _, w := range g.queue {
		if !w.leads {
			w.leads = true
			w.wake <- groupWake{lead: true}
			return
		}
	}
	g.inFlight--
}

// commit runs a group and answers each of its writes. A write whose caller
// gave up before it ran is answered its context's error and not run; a
// write alone runs as driver.row runs it, with its caller's context, within
// the grouper's bound.
//
// A panic while the group runs is a defect: each write not yet answered is
// answered ledger.ErrUnavailable (the group may have committed, since its
// COMMIT was sent with it), and the panic goes on up the leader's
// goroutine.
func (g *grouper) commit(group []*groupWrite) {
	defer func() {
		if r := recover(); r != nil {
			for _, w := range group {
				if !w.answered {
					w.answer(fmt.Errorf("%w: ledgerpg: a write in a group of %d panicked, and whether the group was kept is unknown: %v",
						ledger.ErrUnavailable, len(group), r))
				}
			}
			panic(r)
		}
	}()
	live := group[:0:0]
	for _, w := range group {
		if err := w.ctx.Err(); err != nil {
			w.answer(err)
			continue
		}
		live = append(live, w)
	}
	switch len(live) {
	case 0:
		return
	case 1:
		g.alone(live[0], g.sharedBound())
		return
	}
	errs, err := g.together(live)
	if refused(err) {
		// The server refused a statement, or the commit: the transaction
		// was rolled back, so nothing of the group is kept. Each write
		// runs again alone and is answered its own outcome, all within
		// one bound, as the group was.
		bound := g.sharedBound()
		for _, w := range live {
			g.alone(w, bound)
		}
		return
	}
	if err == nil {
		g.grouped.Add(int64(len(live)))
	}
	for i, w := range live {
		if err != nil {
			errs[i] = err // lost on the way: as a write alone answers it
		}
		w.answer(errs[i])
	}
}

// refused reports whether err is the server's refusal that its session
// outlives (severity ERROR), which rolls the transaction back. A FATAL
// error ends the session, perhaps after the commit, as a lost connection
// does: the group's outcome is then unknown, as a write alone's would be.
// The severity is read untranslated: a server set to another language
// names it in that language too.
func refused(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && cmp.Or(pgErr.SeverityUnlocalized, pgErr.Severity) == "ERROR"
}

// outlived answers err, the outcome of a run bounded by bound, as
// ledger.ErrUnavailable when the bound cut it short while its caller
// (alive, when caller is not nil) still waited: it is not the caller's
// deadline, and whether the write was kept is unknown.
func (g *grouper) outlived(bound, caller context.Context, err error) error {
	if err == nil || bound.Err() == nil || (caller != nil && caller.Err() != nil) {
		return err
	}
	// err is kept as text only: it wraps the bound's context.DeadlineExceeded.
	return fmt.Errorf("%w: ledgerpg: a write ran past its %v bound: %s", ledger.ErrUnavailable, g.bound, err.Error())
}

// answer answers the write's caller.
func (w *groupWrite) answer(err error) {
	w.answered = true
	w.wake <- groupWake{err: err}
}

// alone runs one write as driver.row does, on its caller's context and
// until bound ends at the latest.
func (g *grouper) alone(w *groupWrite, bound context.Context) {
	if err := bound.Err(); err != nil {
		// Past the bound already: not sent, though AfterFunc would cancel
		// the write only once it runs on a goroutine of its own. A caller
		// that gave up too is answered its own error.
		w.answer(g.outlived(bound, w.ctx, cmp.Or(w.ctx.Err(), err)))
		return
	}
	ctx, stop := within(w.ctx, bound)
	defer stop()
	err := g.d.row(ctx, g.d.pool, w.key.Tenant, w.sql, w.args, w.dest...)
	w.answer(g.outlived(bound, w.ctx, err))
}

// within is a context done when caller or bound is, with caller's values
// (a pgx tracer's, say): caller itself when its own deadline comes first.
// stop releases what it made.
func within(caller, bound context.Context) (ctx context.Context, stop func()) {
	if own, ok := caller.Deadline(); ok {
		if until, _ := bound.Deadline(); !own.After(until) {
			return caller, func() {}
		}
	}
	ctx, cancel := context.WithCancel(caller)
	unhook := context.AfterFunc(bound, cancel)
	return ctx, func() {
		unhook()
		cancel()
	}
}

// sharedBound answers the deadline of the writes that start now: one
// context for all that start within a boundSlices-th of the bound. A
// deadline of each write's own would start a runtime timer per statement,
// and adding a timer wakes the runtime's network poller: measured with
// one filer, that cost a filing (two statements) 30 to 40 µs of its
// 650, a twentieth of its rate. The old contexts end by their own timers.
func (g *grouper) sharedBound() context.Context {
	now := time.Now()
	g.boundMu.Lock()
	defer g.boundMu.Unlock()
	if left := g.sharedUntil.Sub(now); g.shared != nil && left >= g.bound-g.bound/boundSlices && left <= g.bound {
		return g.shared
	}
	// A write may still run on a bound no longer handed out: its cancel
	// is called only once its deadline has passed, when the timer has
	// already ended it.
	g.spent = slices.DeleteFunc(g.spent, func(b spentBound) bool {
		if now.After(b.until) {
			b.cancel()
			return true
		}
		return false
	})
	var cancel context.CancelFunc
	g.sharedUntil = now.Add(g.bound)
	g.shared, cancel = context.WithDeadline(context.Background(), g.sharedUntil)
	g.spent = append(g.spent, spentBound{until: g.sharedUntil, cancel: cancel})
	return g.shared
}

// spentBound is a bound sharedBound made, and what ends it.
type spentBound struct {
	until  time.Time
	cancel context.CancelFunc
}

// together runs the writes in one transaction and one round trip, in the
// order of their keys, so that groups under way at once lock rows in
// one order. It answers each write's own outcome (nil, pgx.ErrNoRows, or a
// row that did not scan), and the failure of the group: the server's error
// when it refused a statement or the commit (refused tells whether the
// transaction was rolled back), any other error when the group was lost
// on the way.
func (g *grouper) together(live []*groupWrite) ([]error, error) {
	slices.SortStableFunc(live, func(a, b *groupWrite) int {
		return cmp.Or(cmp.Compare(a.key.Tenant, b.key.Tenant), cmp.Compare(a.key.Workspace, b.key.Workspace),
			cmp.Compare(a.key.Kind, b.key.Kind), cmp.Compare(a.key.Key, b.key.Key))
	})
	ctx := g.sharedBound()
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	tenant := ""
	for _, w := range live {
		// Under RLS the tenant is named when it changes: set_config's
		// local setting holds until the next, or the transaction's end.
		if g.d.rls && w.key.Tenant != tenant {
			b.Queue(setTenant, w.key.Tenant)
			tenant = w.key.Tenant
		}
		b.Queue(w.sql, w.args...)
	}
	b.Queue("COMMIT")
	br := g.d.pool.SendBatch(ctx, b)
	closed := false
	defer func() {
		if !closed { // a panic: the connection goes back to the pool all the same
			_ = br.Close()
		}
	}()
	errs := make([]error, len(live))
	err := func() error {
		if _, err := br.Exec(); err != nil {
			return err
		}
		tenant := ""
		for i, w := range live {
			if g.d.rls && w.key.Tenant != tenant {
				if _, err := br.Exec(); err != nil {
					return err
				}
				tenant = w.key.Tenant
			}
			rows, err := br.Query()
			if err != nil {
				return err
			}
			// A statement the server refused fails the group; a row that
			// does not scan fails its own write only, as it would alone.
			errs[i] = scanApart(rows, w.dest)
			if pgErr := (*pgconn.PgError)(nil); errors.As(errs[i], &pgErr) {
				return errs[i]
			}
		}
		_, err := br.Exec()
		return err
	}()
	closed = true
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return errs, g.outlived(ctx, nil, err)
}

// scanApart reads a one-row statement's rows as scanOne does, but scans
// the row into dest only once the rows are closed. rows.Scan's failure
// would be kept on the batch and answered for every statement after it,
// though the group went on to commit; this way it fails its own write.
func scanApart(rows pgx.Rows, dest []any) error {
	var values [][]byte
	found := rows.Next()
	if found {
		for _, v := range rows.RawValues() {
			values = append(values, bytes.Clone(v)) // nil, a NULL, stays nil
		}
	}
	fields := slices.Clone(rows.FieldDescriptions())
	rows.Close()
	switch err := rows.Err(); {
	case err != nil:
		return err
	case !found:
		return pgx.ErrNoRows
	}
	return pgx.ScanRow(rows.Conn().TypeMap(), fields, values, dest...)
}
