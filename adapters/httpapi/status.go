package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/relayr-go/relayr/core/budget"
	"github.com/relayr-go/relayr/core/deliver"
	"github.com/relayr-go/relayr/core/follow"
)

// StatusReport is what GET /relayr/v1/status answers: every binding's
// follower (who holds its lease, its cursor, its last completed poll and
// lag, whether it is stopped and why), every tenant key's budget this
// minute, and every subscription's delivery. It names tenants, workspaces,
// projects and subscriptions, never a secret.
type StatusReport struct {
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

// StatusSource answers the status report (the app's wiring).
type StatusSource interface {
	Status(ctx context.Context) (StatusReport, error)
}

// StatusFunc is a StatusSource.
type StatusFunc func(ctx context.Context) (StatusReport, error)

// Status implements StatusSource.
func (f StatusFunc) Status(ctx context.Context) (StatusReport, error) { return f(ctx) }

// status answers the status report to the operator. The ledger behind it
// may be down: the report is answered as far as it was read, with 503, and
// the failure goes to the log.
func (a *API) status(w http.ResponseWriter, r *http.Request) {
	if !a.operator(w, r, "the status") {
		return
	}
	if a.c.Status == nil {
		writeError(w, http.StatusServiceUnavailable, "not_ready", "no status is served", 0)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	rep, err := a.c.Status.Status(ctx)
	if err != nil {
		a.c.Logger.Warn("status: the ledger did not answer in full", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, rep)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}
