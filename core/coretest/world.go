package coretest

import (
	"github.com/relayr-go/relayr/core/binding"
	"github.com/relayr-go/relayr/core/budget"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/faketracker"
	"github.com/relayr-go/relayr/core/ledger/memledger"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
)

// Default names of a World's binding.
const (
	DefaultTenant    = "acme"
	DefaultWorkspace = "ops"
)

// WorldOptions say what a World is made of. A zero field takes its
// default, so that WorldOptions{} is one workspace, acme/ops, bound to a
// Plane-like fake, on a memory ledger and the system clock.
type WorldOptions struct {
	// Tenant and Workspace name the binding (DefaultTenant and
	// DefaultWorkspace when empty).
	Tenant, Workspace string
	// Connector makes the binding's tracker. When nil, it is a Connector
	// over Driver.
	Connector tracker.Connector
	// Driver is the default connector's driver (unused with a Connector):
	// a new faketracker.LikePlane fake on Clock when nil.
	Driver tracker.Driver
	// Defaults are the binding's defaults (binding.Binding.Defaults).
	Defaults tracker.Draft
	// Bindings, when set, are the world's bindings in place of the one
	// of Tenant, Workspace, Connector, Driver and Defaults; the first is
	// World.Binding.
	Bindings []binding.Binding
	// Credentials are the tenant's for every binding's tracker kind, as
	// tracker.StaticCredentials answer them ("<tenant>/<kind>"). The zero
	// Credentials serve a fake, which asks for none.
	Credentials tracker.Credentials
	// Ledger is the writer's ledger: a new memledger when nil.
	Ledger writes.Ledger
	// Clock runs the connections and the writer (clock.System when nil).
	Clock clock.Clock
	// Budget, when set, hears every call's outcome on the connections
	// (binding.Connections.Budget) and is the writer's, as the relayr
	// binary wires them. A budget for the writer alone is Writes.Budget.
	Budget *budget.Budget
	// Writes is the rest of the writer's configuration (its Integrations,
	// Metrics, Log, Options). A zero Ledger, Connections, Clock or Budget
	// in it takes the world's.
	Writes writes.Config
}

// World is one test's core wired as the relayr binary wires it: bindings
// over a tracker, the tenant's credentials, a ledger, the connections over
// them and a writer over those. Its fields are what it was made of, for
// the test to use and to build more on (followers over Connections, a
// writer of other options over Ledger and Connections).
type World struct {
	// Binding is the world's binding (the first, of several).
	Binding binding.Binding
	// Fake is the default connector's driver when it is a fake (the
	// default is); nil with a Connector, or a Driver of another type.
	Fake *faketracker.Tracker
	// Credentials are what Connections ask for credentials.
	Credentials tracker.StaticCredentials
	// Ledger is the writer's ledger; Memory is the same ledger when it is
	// a memledger (the default is), and nil when not.
	Ledger writes.Ledger
	Memory *memledger.Ledger
	// Clock is the world's clock.
	Clock clock.Clock
	// Connections keep the bindings' connections.
	Connections *binding.Connections
	// Writer writes through Connections to the ledger.
	Writer *writes.Writer
}

// NewWorld wires a World of o.
func NewWorld(o WorldOptions) *World {
	w := &World{Clock: o.Clock, Ledger: o.Ledger}
	if w.Clock == nil {
		w.Clock = clock.System{}
	}
	if w.Ledger == nil {
		w.Ledger = memledger.New()
	}
	w.Memory, _ = w.Ledger.(*memledger.Ledger)
	bindings := o.Bindings
	if len(bindings) == 0 {
		bindings = []binding.Binding{w.binding(o)}
	}
	w.Binding = bindings[0]
	w.Credentials = tracker.StaticCredentials{}
	for _, b := range bindings {
		w.Credentials[b.Tenant+"/"+b.Kind()] = o.Credentials
	}
	w.Connections = binding.NewConnections(w.Clock, w.Credentials, bindings...)
	w.Connections.Budget = o.Budget
	c := o.Writes
	if c.Ledger == nil {
		c.Ledger = w.Ledger
	}
	if c.Connections == nil {
		c.Connections = w.Connections
	}
	if c.Clock == nil {
		c.Clock = w.Clock
	}
	if c.Budget == nil {
		c.Budget = o.Budget
	}
	w.Writer = writes.New(c)
	return w
}

// binding is the one binding of o, its fake made when it has none.
func (w *World) binding(o WorldOptions) binding.Binding {
	b := binding.Binding{Tenant: o.Tenant, Workspace: o.Workspace, Connector: o.Connector, Defaults: o.Defaults}
	if b.Tenant == "" {
		b.Tenant = DefaultTenant
	}
	if b.Workspace == "" {
		b.Workspace = DefaultWorkspace
	}
	if b.Connector == nil {
		d := o.Driver
		if d == nil {
			d = faketracker.New(faketracker.LikePlane, faketracker.WithClock(w.Clock))
		}
		w.Fake, _ = d.(*faketracker.Tracker)
		b.Connector = Connector{Driver: d}
	}
	return b
}
