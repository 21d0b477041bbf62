package ledgersqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"

	"github.com/relayr-go/relayr/core/ledger"
)

// maxBatch is the most writes one transaction carries.
const maxBatch = 128

// writer commits the ledger's writes on the one writer connection. The
// writes that arrive while one commits share the next transaction and its
// one durable commit (group commit): SQLite has one writer per file, so
// eight callers writing at once pay about one fsync a batch, not eight.
//
// No goroutine of its own and no timer: a caller that finds no batch in
// flight leads, running its write at once on its own goroutine (a write
// alone costs what it did before); one that finds a batch in flight
// queues. When a batch is answered, its leader hands the lead to the
// first write that queued meanwhile, whose caller commits everything
// queued as the next batch. Each caller is answered only when its own
// write is durable, or failed.
type writer struct {
	db *sql.DB
	s  *stmts

	mu      sync.Mutex
	idle    *sync.Cond // signalled when leading turns false
	queue   []*op
	leading bool // a batch is in flight, or its leader is being handed on
	closed  bool
}

// op is one driver method's write.
type op struct {
	ctx context.Context
	// atomic: fn's statements commit together even when it runs alone.
	atomic bool
	fn     func(x on) error
	err    chan error
	lead   chan struct{} // this write's caller leads the next batch
}

func newWriter(db *sql.DB, s *stmts) *writer {
	w := &writer{db: db, s: s}
	w.idle = sync.NewCond(&w.mu)
	return w
}

// do runs fn as one write and answers when it is durable. A write whose
// caller gives up while it waits in the queue leaves the queue unrun and
// is answered its context's error at once, handing on the lead if it was
// handed it; once a batch has taken it, it is answered when that batch
// ends.
func (w *writer) do(ctx context.Context, atomic bool, fn func(x on) error) error {
	o := &op{ctx: ctx, atomic: atomic, fn: fn, err: make(chan error, 1), lead: make(chan struct{}, 1)}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return sql.ErrConnDone
	}
	w.queue = append(w.queue, o)
	first := !w.leading
	w.leading = true
	w.mu.Unlock()
	if first {
		w.commitNext()
	}
	done := ctx.Done()
	for {
		select {
		case err := <-o.err:
			return err
		case <-o.lead:
			// The lead may come as the caller gives up, and the select
			// take it first: a caller gone leads no batch (a write
			// queued after it may take long) but hands the lead on and
			// goes at once, as withdraw does.
			if ctx.Err() != nil && w.leave(o) {
				return ctx.Err()
			}
			w.commitNext()
			return <-o.err
		case <-done:
			if w.withdraw(o) {
				return ctx.Err()
			}
			done = nil // a batch has it: its answer comes
		}
	}
}

// withdraw takes o out of the queue if no batch has taken it, and reports
// whether it did. A lead handed to o and not yet taken up is handed on, as
// a batch's end hands it: only then may o's caller go.
func (w *writer) withdraw(o *op) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	i := slices.Index(w.queue, o)
	if i < 0 {
		return false
	}
	w.queue = slices.Delete(w.queue, i, i+1)
	select {
	case <-o.lead:
		w.handOnLocked()
	default:
	}
	return true
}

// leave takes o, handed the lead, out of the queue and hands the lead on,
// if no batch has taken o; it reports whether it did.
func (w *writer) leave(o *op) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	i := slices.Index(w.queue, o)
	if i < 0 {
		return false
	}
	w.queue = slices.Delete(w.queue, i, i+1)
	w.handOnLocked()
	return true
}

// commitNext commits the queue's first writes as one batch, then hands
// the lead to the first write left in the queue, if any: even when a
// write's function panics, so that the writes after it are still run.
func (w *writer) commitNext() {
	w.mu.Lock()
	n := min(len(w.queue), maxBatch)
	batch := make([]*op, n)
	copy(batch, w.queue)
	w.queue = w.queue[n:]
	w.mu.Unlock()
	defer w.handOn()
	w.commit(batch)
}

// handOn ends a batch: it hands the lead to the first write queued, or
// ends the leading.
func (w *writer) handOn() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.handOnLocked()
}

// handOnLocked is handOn with w.mu held.
func (w *writer) handOnLocked() {
	if len(w.queue) > 0 {
		w.queue[0].lead <- struct{}{}
		return
	}
	w.leading = false
	w.idle.Broadcast()
}

// close refuses every later write and waits until the writes queued are
// answered.
func (w *writer) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	for w.leading {
		w.idle.Wait()
	}
}

// commit runs a batch and answers each of its writes. A write whose
// caller gave up before it ran is answered its context's error and not
// run. A write that runs is not interrupted: in a transaction an
// interrupted statement undoes the whole batch, and watching a caller's
// context costs two goroutines a statement, as much as the statement. A
// write so waits at most BusyTimeout for another process's lock. In a
// batch, each write runs in a savepoint, so one that fails is undone
// alone.
//
// A write whose function panics is a defect: the batch's transaction is
// rolled back (a lone write that needs none keeps what it wrote before
// the panic), every write of the batch is answered that a write panicked,
// and the panic goes on up the leader's goroutine.
func (w *writer) commit(batch []*op) {
	live := batch[:0:0]
	for _, o := range batch {
		if err := o.ctx.Err(); err != nil {
			o.err <- err
			continue
		}
		live = append(live, o)
	}
	answered := false
	defer func() {
		if r := recover(); r != nil {
			if !answered {
				for _, o := range live {
					o.err <- fmt.Errorf("ledgersqlite: a write in a batch of %d panicked: %v", len(live), r)
				}
			}
			panic(r)
		}
	}()
	ctx := context.Background()
	switch {
	case len(live) == 0:
		return
	case len(live) == 1 && !live[0].atomic:
		err := live[0].fn(on{ctx: ctx, s: w.s})
		answered = true
		live[0].err <- err
		return
	case len(live) == 1:
		err := w.tx(ctx, live[0].fn)
		answered = true
		live[0].err <- err
		return
	}
	errs := make([]error, len(live))
	err := w.tx(ctx, func(x on) error {
		for i, o := range live {
			if _, err := x.exec(savepoint); err != nil {
				return err
			}
			if errs[i] = o.fn(x); errs[i] != nil {
				if _, err := x.exec(rollbackToSavepoint); err != nil {
					// SQLite rolled the whole transaction back with this
					// write's failure (an I/O error, a full disk), its
					// savepoints with it: nothing of the batch is kept,
					// and each other write may be tried again.
					return fmt.Errorf("%w: ledgersqlite: the batch's transaction was lost with a write's failure (%s), then: %s",
						ledger.ErrUnavailable, errs[i].Error(), err.Error())
				}
			}
			if _, err := x.exec(releaseSavepoint); err != nil {
				return err
			}
		}
		return nil
	})
	answered = true
	for i, o := range live {
		if errs[i] == nil {
			errs[i] = err
		}
		o.err <- errs[i]
	}
}

// tx runs fn in one transaction; it begins IMMEDIATE (the DSN's _txlock),
// taking the file's write lock first.
func (w *writer) tx(ctx context.Context, fn func(x on) error) error {
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if err := fn(on{ctx: ctx, s: w.s, tx: tx}); err != nil {
		return err
	}
	return tx.Commit()
}
