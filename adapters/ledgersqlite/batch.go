package ledgersqlite

import (
	"context"
	"database/sql"
	"sync"
)

// maxBatch is the most writes one transaction carries.
const maxBatch = 128

// writer commits the ledger's writes: one goroutine owns the writer
// connection, and the writes that arrived while it committed the last
// batch share the next transaction and its one durable commit (group
// commit). SQLite has one writer per file, so eight callers writing at
// once pay one commit's fsync, not eight. No write waits for a timer: a
// write alone is committed at once; each caller is answered only when its
// own write is durable, or failed.
type writer struct {
	db   *sql.DB
	s    *stmts
	ops  chan *op
	quit chan struct{}
	done chan struct{}
	stop sync.Once
}

// op is one driver method's write.
type op struct {
	ctx context.Context
	// atomic: fn's statements commit together even when it runs alone.
	atomic bool
	fn     func(x on) error
	err    chan error
}

func newWriter(db *sql.DB, s *stmts) *writer {
	w := &writer{db: db, s: s, ops: make(chan *op), quit: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

// do runs fn as one write and answers when it is durable.
func (w *writer) do(ctx context.Context, atomic bool, fn func(x on) error) error {
	o := &op{ctx: ctx, atomic: atomic, fn: fn, err: make(chan error, 1)}
	select {
	case w.ops <- o:
	case <-w.quit:
		return sql.ErrConnDone
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-o.err
}

// close stops the writer once the batch in flight is answered; a second
// close waits for the same.
func (w *writer) close() {
	w.stop.Do(func() { close(w.quit) })
	<-w.done
}

func (w *writer) run() {
	defer close(w.done)
	batch := make([]*op, 0, maxBatch)
	for {
		select {
		case o := <-w.ops:
			batch = append(batch[:0], o)
		case <-w.quit:
			return
		}
		// Whatever arrived while the last batch committed joins this one.
	more:
		for len(batch) < maxBatch {
			select {
			case o := <-w.ops:
				batch = append(batch, o)
			default:
				break more
			}
		}
		w.commit(batch)
	}
}

// commit runs a batch and answers each of its writes. A write whose
// caller gave up before it ran is answered its context's error and not
// run. A write alone runs on its caller's context; in a batch, each write
// runs in a savepoint, so one that fails is undone alone, on no caller's
// context (a statement interrupted in a transaction would undo the lot).
func (w *writer) commit(batch []*op) {
	live := batch[:0:0]
	for _, o := range batch {
		if err := o.ctx.Err(); err != nil {
			o.err <- err
			continue
		}
		live = append(live, o)
	}
	switch {
	case len(live) == 0:
		return
	case len(live) == 1 && !live[0].atomic:
		live[0].err <- live[0].fn(on{ctx: live[0].ctx, s: w.s})
		return
	case len(live) == 1:
		live[0].err <- w.tx(live[0].ctx, live[0].fn)
		return
	}
	errs := make([]error, len(live))
	err := w.tx(context.Background(), func(x on) error {
		for i, o := range live {
			if _, err := x.exec(savepoint); err != nil {
				return err
			}
			if errs[i] = o.fn(x); errs[i] != nil {
				if _, err := x.exec(rollbackToSavepoint); err != nil {
					return err // the transaction is lost: every write fails
				}
			}
			if _, err := x.exec(releaseSavepoint); err != nil {
				return err
			}
		}
		return nil
	})
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
