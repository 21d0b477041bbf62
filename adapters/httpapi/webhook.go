package httpapi

import (
	"errors"
	"io"
	"net/http"

	"github.com/relayr-go/relayr/core/binding"
	"github.com/relayr-go/relayr/core/metrics"
	"github.com/relayr-go/relayr/core/tracker"
)

// webhook takes a tracker's delivery as a nudge (ADR-0036, "Webhooks only
// nudge"): the body limited to 1 MB, the signature checked first with the
// credentials the tenant's followers last asked for, only then the switch;
// an unknown tenant, a switched-off workspace and a bad signature are the
// same 401, counted together; a verified nudge wakes the followers of the
// project it names, with the items it reports deleted for them to check,
// and answers 204.
func (a *API) webhook(w http.ResponseWriter, r *http.Request) {
	tenant, kind := r.PathValue("tenant"), r.PathValue("tracker")
	// Refused once it says it is over 1 MB…
	if r.ContentLength > MaxNudgeBody {
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", "a delivery is at most 1 MB", 0)
		return
	}
	// …or once that much is read.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxNudgeBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", "a delivery is at most 1 MB", 0)
		return
	case err != nil:
		writeError(w, http.StatusBadRequest, "invalid", "the body could not be read", 0)
		return
	}
	woken := a.nudge(r, tenant, kind, body)
	if len(woken) == 0 {
		a.c.Counters.Add(metrics.NudgesRefused, 1, metrics.Labels{"tracker": a.knownKind(kind)})
		writeError(w, http.StatusUnauthorized, "unauthorized", "the delivery was not accepted", 0)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// knownKind is kind when a binding has it, else "unknown": the path is the
// caller's to say, and a label taken from it would be a new series per
// request, kept for good (Prometheus panics on one that isn't UTF-8).
func (a *API) knownKind(kind string) string {
	if a.c.Connections != nil {
		for _, b := range a.c.Connections.Bindings() {
			if b.Kind() == kind {
				return kind
			}
		}
	}
	return "unknown"
}

// nudge verifies the delivery and wakes the bindings it names; it answers
// the bindings woken, none when anything failed.
func (a *API) nudge(r *http.Request, tenant, kind string, body []byte) []binding.Binding {
	if a.c.Connections == nil {
		return nil
	}
	var candidates []binding.Binding
	for _, b := range a.c.Connections.Bindings() {
		if b.Tenant == tenant && b.Kind() == kind {
			candidates = append(candidates, b)
		}
	}
	// The signature first: with the credentials the followers last asked
	// for, never asked for on a request.
	var nudged tracker.Nudged
	verified := false
	for _, b := range candidates {
		tr, creds, ok := a.c.Connections.Cached(b)
		if !ok || creds.WebhookSecret == "" {
			continue
		}
		n, err := tr.Nudge(creds.WebhookSecret, r.Header, body)
		if err == nil {
			nudged, verified = n, true
			break
		}
	}
	if !verified {
		return nil
	}
	// Only then the switch, for each workspace bound to the project.
	var woken []binding.Binding
	for _, b := range candidates {
		tr, _, ok := a.c.Connections.Cached(b)
		if !ok || tr.Project() != nudged.Project {
			continue
		}
		if !a.c.Integrations.Enabled(r.Context(), b.Tenant, b.Workspace, b.Integration()) {
			continue
		}
		if a.c.Waker != nil {
			a.c.Waker.Wake(b, nudged)
		}
		woken = append(woken, b)
	}
	return woken
}
