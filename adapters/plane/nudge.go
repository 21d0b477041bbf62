package plane

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// SignatureHeader carries a delivery's signature: lowercase hex HMAC-SHA256
// of the raw body under the webhook's secret, with no prefix and no
// timestamp (bgtasks/webhook_task.py:L286-322).
const SignatureHeader = "X-Plane-Signature"

// Nudge implements tracker.Driver: it verifies X-Plane-Signature over the
// raw body as received (Plane signs json.dumps' output, which no Go
// encoder reproduces), then names the project the delivery is about:
// data.project for issue and issue_comment events, data.id for project
// events (§9). A bad or missing signature is ErrUnauthorized; a verified
// body that names no project is ErrRefused. Plane sends no webhook when a
// work item is deleted (ADR-0036), so a delivery names no deleted item:
// Plane's deletions are found by the sweep.
func (t *Driver) Nudge(secret string, header http.Header, body []byte) (tracker.Nudged, error) {
	if !trackerhttp.VerifySHA256(secret, "", header.Get(SignatureHeader), body) {
		return tracker.Nudged{}, fmt.Errorf("plane: webhook signature does not verify: %w", tracker.ErrUnauthorized)
	}
	var d struct {
		Event string `json:"event"`
		Data  struct {
			ID      any `json:"id"`
			Project any `json:"project"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &d); err != nil {
		return tracker.Nudged{}, fmt.Errorf("plane: webhook body is not a delivery (%w): %w", err, tracker.ErrRefused)
	}
	event := d.Event
	if event == "" {
		event = header.Get("X-Plane-Event")
	}
	project := str(d.Data.Project)
	if event == "project" {
		project = str(d.Data.ID)
	}
	if project == "" {
		return tracker.Nudged{}, fmt.Errorf("plane: webhook delivery (%s) names no project: %w", tracker.Quote(event), tracker.ErrRefused)
	}
	return tracker.Nudged{Project: project}, nil
}
