// Package status is the operator's status report: what GET
// /relayr/v1/status answers and the operator's page shows, read from the
// followers, the budget and the deliveries (the app's wiring answers it).
// The API and the page both read it; neither imports the other.
package status

import (
	"context"
	"time"

	"github.com/relayr-go/relayr/core/budget"
	"github.com/relayr-go/relayr/core/deliver"
	"github.com/relayr-go/relayr/core/follow"
)

// Report is what GET /relayr/v1/status answers: every binding's
// follower (who holds its lease, its cursor, its last completed poll and
// lag, whether it is stopped and why), every tenant key's budget this
// minute, and every subscription's delivery. It names tenants, workspaces,
// projects and subscriptions, never a secret.
type Report struct {
	// Holder is the answering replica's name in the leases.
	Holder   string                 `json:"holder"`
	Now      time.Time              `json:"now"`
	Bindings []follow.BindingStatus `json:"bindings"`
	Budgets  []budget.KeyStatus     `json:"budgets"`
	// Leases is the answering replica's part of the bindings' leases:
	// the live replicas, its fair share and how many it holds.
	Leases follow.ShareStatus `json:"leases"`
	// Subscriptions are the delivery followers (a webhook or a NATS
	// stream per subscription): their cursor against the log's head,
	// last delivery and failures.
	Subscriptions []deliver.Status `json:"subscriptions"`
}

// Source answers the status report (the app's wiring).
type Source interface {
	Status(ctx context.Context) (Report, error)
}

// Func is a Source.
type Func func(ctx context.Context) (Report, error)

// Status implements Source.
func (f Func) Status(ctx context.Context) (Report, error) { return f(ctx) }
