package deliver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/ledger"
)

// DeadLetterLedger is what resolving a dead letter reads and records.
type DeadLetterLedger interface {
	LookupDeadLetter(ctx context.Context, f ledger.Follower, id string) (ledger.DeadLetter, error)
	ResolveDeadLetter(ctx context.Context, f ledger.Follower, id string, r ledger.Resolution, now time.Time) (ledger.DeadLetter, bool, error)
}

// Resolver carries out an operator's action on a dead letter: a replay
// publishes the dead letter's event again through the sink its follower
// publishes to, under the event's own id, and records it; a skip records
// that the event stays undelivered. Either is done once: a dead letter
// already resolved changes nothing and publishes nothing (ADR-0015's dead
// letters, given the operator's two actions: ADR-0015's departures).
type Resolver struct {
	Ledger DeadLetterLedger
	// Sink answers the sink a follower publishes to: a subscription's for
	// a log follower, the workspace's log for a tracker follower.
	Sink   func(f ledger.Follower) (Sink, error)
	Clock  clock.Clock  // System when nil
	Logger *slog.Logger // slog.Default() when nil

	// mu makes one replica's actions one at a time, so a double click
	// publishes once; across replicas the event's id does (a sink takes
	// an id once).
	mu sync.Mutex
}

// ErrUnreadable says a dead letter's event is not an event relayr can
// publish again (its JSON is not an event's).
var ErrUnreadable = errors.New("deliver: the dead letter's event cannot be read")

// Resolve does r to the follower's dead letter id and answers it as it
// stands, and whether this call resolved it. A dead letter that does not
// exist fails with ledger.ErrNotFound; a replay the sink refuses fails
// with the sink's error and records nothing, so it may be tried again.
func (rv *Resolver) Resolve(ctx context.Context, f ledger.Follower, id string, r ledger.Resolution) (ledger.DeadLetter, bool, error) {
	clk := rv.Clock
	if clk == nil {
		clk = clock.System{}
	}
	logger := rv.Logger
	if logger == nil {
		logger = slog.Default()
	}
	if err := ledger.CheckResolution(f, id, r, clk.Now()); err != nil {
		return ledger.DeadLetter{}, false, err
	}
	rv.mu.Lock()
	defer rv.mu.Unlock()
	// The one dead letter, not the follower's backlog (a tracker outage
	// can leave 100,000).
	d, err := rv.Ledger.LookupDeadLetter(ctx, f, id)
	if err != nil {
		return ledger.DeadLetter{}, false, err
	}
	if d.Resolution != "" {
		return d, false, nil
	}
	if r == ledger.Replayed {
		var e eventlog.Event
		if err := json.Unmarshal(d.Event, &e); err != nil || e.ID == "" {
			return d, false, ErrUnreadable
		}
		sink, err := rv.Sink(f)
		if err != nil {
			return d, false, err
		}
		// Under the event's own id: a subscriber that took it before
		// takes nothing new, and a second replay publishes nothing new.
		if err := sink.Publish(ctx, e); err != nil {
			return d, false, fmt.Errorf("replaying %s: %w", e.ID, err)
		}
	}
	out, changed, err := rv.Ledger.ResolveDeadLetter(ctx, f, id, r, clk.Now())
	if err != nil {
		return d, false, err
	}
	if changed {
		logger.Info("dead letter resolved", "kind", string(f.Kind), "tenant", f.Tenant, "workspace", f.Workspace,
			"name", f.Name, "id", id, "resolution", string(r))
	}
	return out, changed, nil
}
