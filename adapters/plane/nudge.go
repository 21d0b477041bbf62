package plane

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/relayr-go/relayr/core/tracker"
)

// SignatureHeader carries a delivery's signature: lowercase hex HMAC-SHA256
// of the raw body under the webhook's secret, with no prefix and no
// timestamp (bgtasks/webhook_task.py:L286-322).
const SignatureHeader = "X-Plane-Signature"

// Verify reports whether signature is body's signature under secret. It is
// computed over the raw bytes as received: Plane signs json.dumps' output,
// which no Go encoder reproduces. An empty secret verifies nothing.
func Verify(secret, signature string, body []byte) bool {
	if secret == "" {
		return false
	}
	got, err := hex.DecodeString(strings.TrimSpace(signature))
	if err != nil || len(got) != sha256.Size {
		return false
	}
	want, _ := hex.DecodeString(sign(secret, body))
	return hmac.Equal(got, want)
}

// Nudge implements tracker.Tracker: it verifies X-Plane-Signature over the
// raw body, then names the project the delivery is about: data.project for
// issue and issue_comment events, data.id for project events (§9). A bad or
// missing signature is ErrUnauthorized; a verified body that names no
// project is ErrRefused. Plane sends no webhook when a work item is deleted
// (ADR-0036), so a delivery names no deleted item: Plane's deletions are
// found by the sweep.
func (t *Tracker) Nudge(secret string, header http.Header, body []byte) (tracker.Nudged, error) {
	project, err := nudge(secret, header, body)
	if err != nil {
		return tracker.Nudged{}, err
	}
	return tracker.Nudged{Project: project}, nil
}

func nudge(secret string, header http.Header, body []byte) (string, error) {
	if !Verify(secret, header.Get(SignatureHeader), body) {
		return "", fmt.Errorf("plane: webhook signature does not verify: %w", tracker.ErrUnauthorized)
	}
	var d struct {
		Event string `json:"event"`
		Data  struct {
			ID      any `json:"id"`
			Project any `json:"project"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &d); err != nil {
		return "", fmt.Errorf("plane: webhook body is not a delivery (%w): %w", err, tracker.ErrRefused)
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
		return "", fmt.Errorf("plane: webhook delivery (%s) names no project: %w", clip(event), tracker.ErrRefused)
	}
	return project, nil
}

// sign is what Plane puts in X-Plane-Signature for body under secret.
func sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}
