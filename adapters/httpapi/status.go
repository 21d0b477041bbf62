package httpapi

import (
	"context"
	"github.com/relayr-go/relayr/adapters/httpapi/status"
	"net/http"
	"time"
)

// StatusReport is what GET /relayr/v1/status answers (status.Report).
type StatusReport = status.Report

// StatusSource answers the status report (status.Source).
type StatusSource = status.Source

// StatusFunc is a StatusSource (status.Func).
type StatusFunc = status.Func

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
