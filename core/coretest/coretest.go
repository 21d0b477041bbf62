// Package coretest holds what the tests of relayr's modules share, so that
// no module's tests keep a copy of their own: a pointer to a value, a
// connector of one tracker, ledgers and logs that fail on demand, and a
// World, the core wired for one test (world.go).
// Standard library and core only; nothing in it is for production use.
package coretest

import (
	"context"
	"errors"
	"sync"

	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/ledger/memledger"
	"github.com/relayr-go/relayr/core/tracker"
)

// Ptr answers a pointer to v: a patch's field, an option's value.
func Ptr[T any](v T) *T { return &v }

// Connector connects every workspace to one driver as it is (the fake,
// one wrapped to fail or to record, a driver over an emulation), under the
// portable tracker.
type Connector struct {
	Driver tracker.Driver
	// KindName is Kind's answer ("fake" by default).
	KindName string
}

var _ tracker.Connector = Connector{}

// Kind implements tracker.Connector.
func (c Connector) Kind() string {
	if c.KindName == "" {
		return "fake"
	}
	return c.KindName
}

// Connect implements tracker.Connector.
func (c Connector) Connect(context.Context, tracker.Credentials, tracker.Source) (*tracker.Tracker, error) {
	return tracker.New(c.Driver), nil
}

// ErrDied is the failure of a record FailingRecord was armed to fail.
var ErrDied = errors.New("the attempt died before recording")

// FailingRecord is a ledger whose next Record fails once armed: an attempt
// that dies after the tracker took its create and before the ledger heard
// (ADR-0033's crash between the two).
type FailingRecord struct {
	*memledger.Ledger
	mu    sync.Mutex
	armed bool
}

// NewFailingRecord answers a failing-record ledger over a fresh memledger.
func NewFailingRecord() *FailingRecord { return &FailingRecord{Ledger: memledger.New()} }

// Arm makes the next Record fail.
func (l *FailingRecord) Arm() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.armed = true
}

// Record implements ledger.Claims: ErrDied once armed, else the ledger's.
func (l *FailingRecord) Record(ctx context.Context, p ledger.RecordParams) (ledger.Claim, error) {
	l.mu.Lock()
	armed := l.armed
	l.armed = false
	l.mu.Unlock()
	if armed {
		return ledger.Claim{}, ErrDied
	}
	return l.Ledger.Record(ctx, p)
}
