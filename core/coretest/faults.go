package coretest

import (
	"context"
	"sync"

	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/ledger"
)

// FaultLedger is a ledger that fails chosen calls: every lease call of one
// holder (failing or hanging), the next snapshot saves, or one save of a
// log cursor.
type FaultLedger struct {
	ledger.Ledger
	mu            sync.Mutex
	failHolder    string
	hangHolder    string
	failSnapshots int
	failCursorAt  int64
}

// FailCursorOnce fails the next save of a log cursor at seq.
func (l *FaultLedger) FailCursorOnce(seq int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failCursorAt = seq
}

// SaveCursor implements ledger.Ledger, failing as set.
func (l *FaultLedger) SaveCursor(ctx context.Context, f ledger.Follower, c ledger.Cursor) error {
	l.mu.Lock()
	fail := l.failCursorAt != 0 && c.Seq == l.failCursorAt
	if fail {
		l.failCursorAt = 0
	}
	l.mu.Unlock()
	if fail {
		return ledger.ErrUnavailable
	}
	return l.Ledger.SaveCursor(ctx, f, c)
}

// SetFailHolder makes the holder's takes and renewals fail, unavailable.
func (l *FaultLedger) SetFailHolder(h string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failHolder = h
}

// FailNextSnapshots makes the next n snapshot saves fail, unavailable.
func (l *FaultLedger) FailNextSnapshots(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failSnapshots = n
}

func (l *FaultLedger) holderFails(h string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return h != "" && h == l.failHolder
}

// TakeLease implements ledger.Ledger, failing as set.
func (l *FaultLedger) TakeLease(ctx context.Context, p ledger.LeaseParams) (ledger.Lease, error) {
	if l.holderFails(p.Holder) {
		return ledger.Lease{}, ledger.ErrUnavailable
	}
	if l.holderHangs(p.Holder) {
		<-ctx.Done()
		return ledger.Lease{}, ctx.Err()
	}
	return l.Ledger.TakeLease(ctx, p)
}

func (l *FaultLedger) holderHangs(h string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return h != "" && h == l.hangHolder
}

// SetHangHolder makes the holder's takes and renewals hang until their
// context ends, as over a connection that hangs rather than fails.
func (l *FaultLedger) SetHangHolder(h string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hangHolder = h
}

// RenewLease implements ledger.Ledger, failing as set.
func (l *FaultLedger) RenewLease(ctx context.Context, p ledger.LeaseParams) (ledger.Lease, error) {
	if l.holderFails(p.Holder) {
		return ledger.Lease{}, ledger.ErrUnavailable
	}
	if l.holderHangs(p.Holder) {
		<-ctx.Done()
		return ledger.Lease{}, ctx.Err()
	}
	return l.Ledger.RenewLease(ctx, p)
}

// SaveSnapshots implements ledger.Ledger, failing as set.
func (l *FaultLedger) SaveSnapshots(ctx context.Context, rows []ledger.SnapshotRow) error {
	l.mu.Lock()
	fail := l.failSnapshots > 0
	if fail {
		l.failSnapshots--
	}
	l.mu.Unlock()
	if fail {
		return ledger.ErrUnavailable
	}
	return l.Ledger.SaveSnapshots(ctx, rows)
}

// FaultLog is an event log that fails appends or reads on demand.
type FaultLog struct {
	eventlog.Log
	mu         sync.Mutex
	failAppend error
	failRead   error
}

// Fail makes every Append fail with appendErr and every Read with readErr
// (nil: as the log answers).
func (l *FaultLog) Fail(appendErr, readErr error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failAppend, l.failRead = appendErr, readErr
}

// Append implements eventlog.Log, failing as set.
func (l *FaultLog) Append(ctx context.Context, p eventlog.AppendParams) (int64, bool, error) {
	l.mu.Lock()
	err := l.failAppend
	l.mu.Unlock()
	if err != nil {
		return 0, false, err
	}
	return l.Log.Append(ctx, p)
}

// Read implements eventlog.Log, failing as set.
func (l *FaultLog) Read(ctx context.Context, tenant, workspace string, after int64, limit int) ([]eventlog.Event, error) {
	l.mu.Lock()
	err := l.failRead
	l.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return l.Log.Read(ctx, tenant, workspace, after, limit)
}
