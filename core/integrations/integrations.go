// Package integrations is the one seam where a tracker is switched on or off
// per tenant and workspace (ADR-0033). Every action asks it before it touches
// the ledger or a tracker; the followers and the webhooks' route ask it too.
package integrations

import (
	"context"
	"sync"
)

// Keys of the trackers' integrations.
const (
	Plane   = "tracker:plane"
	Vikunja = "tracker:vikunja"
)

// Integrations answers whether an integration runs in a workspace.
type Integrations interface {
	Enabled(ctx context.Context, tenant, workspace, key string) bool
}

// Always answers yes to every key, one it doesn't know included, so a tracker
// an application adds under a key of its own runs too (ADR-0033 amendment:
// ALWAYS, not Defaults).
var Always Integrations = always{}

type always struct{}

func (always) Enabled(context.Context, string, string, string) bool { return true }

// Switches is an in-memory Integrations: everything on unless switched off.
// It is safe for concurrent use.
type Switches struct {
	mu  sync.RWMutex
	off map[[3]string]bool
}

// NewSwitches returns Switches with everything on.
func NewSwitches() *Switches { return &Switches{off: map[[3]string]bool{}} }

// Set switches an integration on or off in a workspace.
func (s *Switches) Set(tenant, workspace, key string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if on {
		delete(s.off, [3]string{tenant, workspace, key})
	} else {
		s.off[[3]string{tenant, workspace, key}] = true
	}
}

// Enabled implements Integrations.
func (s *Switches) Enabled(_ context.Context, tenant, workspace, key string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return !s.off[[3]string{tenant, workspace, key}]
}
