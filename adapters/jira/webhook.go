package jira

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// Nudge implements tracker.Driver: an admin webhook's delivery, signed
// X-Hub-Signature: sha256=<hex HMAC-SHA256 of the raw body> (§9), names
// the project its issue is in; jira:issue_deleted names the issue deleted.
// Jira retries a delivery with the same X-Atlassian-Webhook-Identifier and
// may deliver out of order: a delivery only nudges a read, so a repeat
// costs one read at most.
func (d *Driver) Nudge(secret string, header http.Header, body []byte) (tracker.Nudged, error) {
	if !trackerhttp.VerifySHA256(secret, "sha256=", header.Get(SignatureHeader), body) {
		return tracker.Nudged{}, fmt.Errorf("jira: the delivery's signature does not verify: %w", tracker.ErrUnauthorized)
	}
	var p struct {
		Event string `json:"webhookEvent"`
		Issue *struct {
			ID     string `json:"id"`
			Fields struct {
				Project *struct {
					Key string `json:"key"`
				} `json:"project"`
			} `json:"fields"`
		} `json:"issue"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return tracker.Nudged{}, fmt.Errorf("jira: a signed delivery that isn't an event: %w", tracker.ErrRefused)
	}
	if p.Issue == nil || p.Issue.Fields.Project == nil || p.Issue.Fields.Project.Key == "" {
		return tracker.Nudged{}, fmt.Errorf("jira: the delivery names no issue's project: %w", tracker.ErrRefused)
	}
	n := tracker.Nudged{Project: p.Issue.Fields.Project.Key}
	if p.Event == "jira:issue_deleted" && tracker.PositiveID(p.Issue.ID) {
		n.Deleted = []string{p.Issue.ID}
	}
	return n, nil
}
