// Package binding ties a lattice workspace to a tracker project and keeps
// each binding's connection: the tenant's credentials, asked for at most
// every five minutes and at once again when the tracker refuses the key, and
// the Tracker the binding's Connector made from them (ADR-0033).
package binding

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/relayr-go/relayr/core/budget"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/tracker"
)

// CredentialsTTL is how long credentials are used before they are asked
// for again (ADR-0033: at most every five minutes).
const CredentialsTTL = 5 * time.Minute

// Binding binds one workspace of a tenant to one tracker project.
type Binding struct {
	Tenant    string
	Workspace string
	// Connector makes the binding's Tracker; it knows the tracker's base
	// URL and project.
	Connector tracker.Connector
	// Namespace of the source ("lattice" when empty).
	Namespace string
	// Defaults fill what a draft leaves out (T5: the binding's defaults).
	Defaults tracker.Draft
	// Since, when set, makes a new binding's first read publish the items
	// changed since as created (ADR-0036), instead of seeding silently.
	Since time.Time
}

// Kind is the tracker kind ("plane", "vikunja").
func (b Binding) Kind() string { return b.Connector.Kind() }

// Integration is the binding's key for Integrations ("tracker:plane").
func (b Binding) Integration() string { return "tracker:" + b.Kind() }

// Source is the binding's lattice source.
func (b Binding) Source() tracker.Source {
	return tracker.Source{Namespace: b.Namespace, Tenant: b.Tenant, Workspace: b.Workspace}
}

// Name is "<tenant>/<workspace>".
func (b Binding) Name() string { return b.Tenant + "/" + b.Workspace }

// BudgetKey names the tenant's tracker key in the request budget.
func (b Binding) BudgetKey() string { return b.Tenant + "/" + b.Kind() }

// ErrUnbound is answered for a workspace with no binding.
var ErrUnbound = errors.New("binding: workspace not bound to a tracker")

// Connections keeps every binding's credentials and tracker. It is safe for
// concurrent use.
type Connections struct {
	// TTL is how long credentials are used before they are asked for
	// again (CredentialsTTL by default). Set it before first use.
	TTL time.Duration
	// Budget, when set, hears every call's outcome for the binding's key
	// (its 429s, and a streak of them). The requests themselves are
	// counted by the context the caller passes (budget.Writing, Floor,
	// Spare), which a connection's reads are made with too.
	Budget *budget.Budget

	clock clock.Clock
	creds tracker.CredentialStore

	mu       sync.Mutex
	bindings map[string]Binding
	conns    map[string]*conn
	asked    map[string]int // credential requests per tenant/kind
}

type conn struct {
	mu      sync.Mutex
	creds   tracker.Credentials
	asked   time.Time
	tracker *tracker.Tracker
}

// NewConnections keeps the given bindings' connections.
func NewConnections(c clock.Clock, creds tracker.CredentialStore, bindings ...Binding) *Connections {
	cs := &Connections{TTL: CredentialsTTL, clock: c, creds: creds, bindings: map[string]Binding{}, conns: map[string]*conn{}, asked: map[string]int{}}
	for _, b := range bindings {
		cs.bindings[b.Name()] = b
	}
	return cs
}

// Binding answers the binding of a workspace.
func (cs *Connections) Binding(tenant, workspace string) (Binding, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	b, ok := cs.bindings[tenant+"/"+workspace]
	// A name holds "/" itself: tenant "acme" and workspace "x/ops" make the
	// key of tenant "acme/x"'s workspace "ops", which is not theirs.
	if !ok || b.Tenant != tenant || b.Workspace != workspace {
		return Binding{}, fmt.Errorf("%w: %s/%s", ErrUnbound, tenant, workspace)
	}
	return b, nil
}

// Bindings lists every binding.
func (cs *Connections) Bindings() []Binding {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	out := make([]Binding, 0, len(cs.bindings))
	for _, b := range cs.bindings {
		out = append(out, b)
	}
	return out
}

func (cs *Connections) connOf(b Binding) *conn {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c, ok := cs.conns[b.Name()]
	if !ok {
		c = &conn{}
		cs.conns[b.Name()] = c
	}
	return c
}

// Tracker answers the binding's tracker, asking for credentials when they
// are older than CredentialsTTL (or were never asked for).
func (cs *Connections) Tracker(ctx context.Context, b Binding) (*tracker.Tracker, error) {
	return cs.tracker(ctx, b, false)
}

func (cs *Connections) tracker(ctx context.Context, b Binding, fresh bool) (*tracker.Tracker, error) {
	c := cs.connOf(b)
	c.mu.Lock()
	defer c.mu.Unlock()
	now := cs.clock.Now()
	if c.tracker != nil && !fresh && now.Sub(c.asked) < cs.TTL {
		return c.tracker, nil
	}
	cs.mu.Lock()
	cs.asked[b.Tenant+"/"+b.Kind()]++
	cs.mu.Unlock()
	creds, err := cs.creds.Credentials(ctx, b.Tenant, b.Kind())
	if err != nil {
		return nil, fmt.Errorf("credentials of %s for %s: %w", b.Tenant, b.Kind(), err)
	}
	if c.tracker != nil && creds == c.creds {
		c.asked = now
		return c.tracker, nil
	}
	tr, err := b.Connector.Connect(ctx, creds, b.Source())
	if err != nil {
		return nil, fmt.Errorf("connect %s to %s: %w", b.Name(), b.Kind(), err)
	}
	c.creds, c.asked, c.tracker = creds, now, tr
	return tr, nil
}

// Do calls fn with ctx and the binding's tracker, connecting with ctx when
// the binding has no tracker yet, so a budget's metered context counts the
// connection's reads with the call's. The context is marked as the binding's
// tenant's (tracker.ForParty). When the tracker refuses the key, the
// credentials are asked for again at once and fn is called once more
// (ADR-0033).
func (cs *Connections) Do(ctx context.Context, b Binding, fn func(ctx context.Context, tr *tracker.Tracker) error) error {
	// Every call is its tenant's, for what a tracker shares fairly.
	ctx = tracker.ForParty(ctx, b.Tenant)
	err := cs.do(ctx, b, fn)
	if cs.Budget != nil {
		cs.Budget.Observe(b.BudgetKey(), err)
	}
	return err
}

func (cs *Connections) do(ctx context.Context, b Binding, fn func(ctx context.Context, tr *tracker.Tracker) error) error {
	tr, err := cs.Tracker(ctx, b)
	if err != nil {
		return err
	}
	err = fn(ctx, tr)
	if !errors.Is(err, tracker.ErrUnauthorized) {
		return err
	}
	tr, err2 := cs.tracker(ctx, b, true)
	if err2 != nil {
		return errors.Join(err, err2)
	}
	return fn(ctx, tr)
}

// LastCredentials answers the credentials the binding last asked for,
// without asking (ADR-0036: a webhook's signature is checked with the
// credentials the tenant's followers last asked for, never asked for on a
// request).
func (cs *Connections) LastCredentials(b Binding) (tracker.Credentials, bool) {
	c := cs.connOf(b)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.creds, c.tracker != nil
}

// Cached answers the binding's tracker and the credentials it was made
// with, as last asked for, without asking (false when never asked).
func (cs *Connections) Cached(b Binding) (*tracker.Tracker, tracker.Credentials, bool) {
	c := cs.connOf(b)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tracker, c.creds, c.tracker != nil
}

// Asked answers how many times credentials were asked for a tenant's
// tracker kind.
func (cs *Connections) Asked(tenant, kind string) int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.asked[tenant+"/"+kind]
}
