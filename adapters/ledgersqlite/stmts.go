package ledgersqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// stmts prepares each of queries.go's statements once on a pool and keeps
// it: SQLite parses a statement at each bare call, and the parse costs as
// much as the rest of a claim's work.
type stmts struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

func newStmts(db *sql.DB) *stmts { return &stmts{db: db, m: map[string]*sql.Stmt{}} }

// prepare answers query's statement, preparing it on the pool the first
// time. Inside a transaction on a pool of one connection, the pool has no
// connection to prepare on: see on.stmt.
func (s *stmts) prepare(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := s.prepared(query); ok {
		return st, nil
	}
	// Not under the lock: preparing waits for a connection.
	st, err := s.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if kept, ok := s.m[query]; ok {
		_ = st.Close() // prepared twice at once: keep the first
		return kept, nil
	}
	s.m[query] = st
	return st, nil
}

// prepared answers query's statement if it is prepared.
func (s *stmts) prepared(query string) (*sql.Stmt, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.m[query]
	return st, ok
}

// prepareAll prepares queries now.
func (s *stmts) prepareAll(ctx context.Context, queries ...string) error {
	for _, q := range queries {
		if _, err := s.prepare(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

func (s *stmts) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for q, st := range s.m {
		errs = append(errs, st.Close())
		delete(s.m, q)
	}
	return errors.Join(errs...)
}

// on is where a driver method runs its statements: a pool (the read-only
// one, or the writer, each statement committing alone) or one write
// transaction.
type on struct {
	ctx context.Context
	s   *stmts
	tx  *sql.Tx
}

// stmt answers query's statement. A transaction holds the writer's one
// connection, so in one a statement not prepared yet (writeStatements
// lists those prepared at Open) is prepared on the transaction, for it
// alone.
func (o on) stmt(query string) (*sql.Stmt, error) {
	if o.tx == nil {
		return o.s.prepare(o.ctx, query)
	}
	if st, ok := o.s.prepared(query); ok {
		return o.tx.StmtContext(o.ctx, st), nil
	}
	return o.tx.PrepareContext(o.ctx, query)
}

// row runs a query that answers at most one row, and steps it to its end
// before answering. SQLite runs a commit's WAL hook, the auto-checkpoint,
// only in the step that ends a statement: a write whose RETURNING row is
// read and then reset, as sql.Row does, commits without checkpointing, and
// the WAL grows without bound (TestTheWALStaysBoundedUnderFilings).
func (o on) row(query string, args ...any) scanner {
	rows, err := o.rows(query, args...)
	if err != nil {
		return errRow{err}
	}
	return oneRow{rows}
}

// oneRow is row's answer: its Scan reads the first row, or answers
// sql.ErrNoRows, then steps the statement to its end and closes it.
type oneRow struct{ rows *sql.Rows }

func (r oneRow) Scan(dest ...any) error {
	defer func() { _ = r.rows.Close() }()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	for r.rows.Next() { //nolint:revive // the steps to the statement's end run its commit's hook
	}
	if err := r.rows.Err(); err != nil {
		return err
	}
	return r.rows.Close()
}

// rows runs a query.
func (o on) rows(query string, args ...any) (*sql.Rows, error) {
	st, err := o.stmt(query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(o.ctx, args...)
}

// exec runs a statement that answers no row.
func (o on) exec(query string, args ...any) (sql.Result, error) {
	st, err := o.stmt(query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(o.ctx, args...)
}

// errRow is a row whose statement failed before it ran.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
