package linear

import (
	"crypto/hmac"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// Nudge implements tracker.Driver. Linear signs a delivery's raw body
// (Linear-Signature: hex HMAC-SHA256 under the webhook's secret) and
// stamps it (webhookTimestamp, milliseconds, or the Linear-Timestamp
// header); a delivery more than a minute from now is refused, as Linear's
// SDK refuses it (sdk webhooks/client.ts), which makes a captured one
// useless a minute on. The project is the issue's team (data.teamId, or
// data.issue.teamId for a comment); an Issue delivery whose action is
// remove, or which says the issue is trashed, names it deleted (a trashed
// issue reads as deleted). A retry is stamped anew, so replays are dropped
// by the window and by the body, which a retry changes.
func (d *Driver) Nudge(secret string, header http.Header, body []byte) (tracker.Nudged, error) {
	want := trackerhttp.SignSHA256(secret, body)
	got := header.Get(SignatureHeader)
	if got == "" || !hmac.Equal([]byte(got), []byte(want)) {
		return tracker.Nudged{}, fmt.Errorf("linear: the delivery's %s does not verify: %w", SignatureHeader, tracker.ErrUnauthorized)
	}
	var p struct {
		Action string          `json:"action"`
		Type   string          `json:"type"`
		Stamp  json.Number     `json:"webhookTimestamp"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return tracker.Nudged{}, fmt.Errorf("linear: a signed delivery that isn't an event: %w", tracker.ErrRefused)
	}
	ms, err := p.Stamp.Float64()
	if err != nil || ms <= 0 {
		if h := header.Get("Linear-Timestamp"); h != "" {
			_, err = fmt.Sscan(h, &ms)
		}
	}
	if err != nil || ms <= 0 || math.IsInf(ms, 0) || math.IsNaN(ms) {
		return tracker.Nudged{}, fmt.Errorf("linear: the delivery carries no webhookTimestamp: %w", tracker.ErrUnauthorized)
	}
	at := time.UnixMilli(int64(ms))
	if skew := d.cfg.Now().Sub(at); skew > TimestampWindow || skew < -TimestampWindow {
		return tracker.Nudged{}, fmt.Errorf("linear: a delivery stamped %s, over %s from now: %w", at.UTC().Format(time.RFC3339), TimestampWindow, tracker.ErrUnauthorized)
	}
	var data struct {
		ID      string `json:"id"`
		TeamID  string `json:"teamId"`
		Trashed *bool  `json:"trashed"`
		Issue   *struct {
			TeamID string `json:"teamId"`
		} `json:"issue"`
	}
	if err := json.Unmarshal(p.Data, &data); err != nil {
		return tracker.Nudged{}, fmt.Errorf("linear: a delivery whose data isn't an entity: %w", tracker.ErrRefused)
	}
	n := tracker.Nudged{Project: data.TeamID}
	if n.Project == "" && data.Issue != nil {
		n.Project = data.Issue.TeamID
	}
	if n.Project == "" {
		return tracker.Nudged{}, fmt.Errorf("linear: the delivery names no team: %w", tracker.ErrRefused)
	}
	if p.Type == "Issue" && data.ID != "" && (p.Action == "remove" || data.Trashed != nil && *data.Trashed) && validID(data.ID) {
		n.Deleted = []string{data.ID}
	}
	return n, nil
}
