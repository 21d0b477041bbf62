package gitlab

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
)

// SignatureTolerance is how far a signed delivery's webhook-timestamp may
// be from relayr's clock (the Standard Webhooks specification's five
// minutes): an older one is a replay.
const SignatureTolerance = 5 * time.Minute

// Nudge implements tracker.Driver. GitLab sends the hook's secret token
// as it was set, line breaks removed, in X-Gitlab-Token
// (app/services/web_hook_service.rb build_headers), compared here in
// constant time; it signs no body, so a delivery with the token alone can
// be replayed or altered by whoever saw it, and it only nudges. A hook
// given a signing token (Standard Webhooks, MR gitlab-org/gitlab!230944)
// also sends webhook-id, webhook-timestamp and webhook-signature
// ("v1,<base64 HMAC-SHA256 of id.timestamp.body>"): set the signing token
// to the same secret and relayr checks the body and the time too. The
// project is the payload's project.path_with_namespace; the delivery is
// named by its Idempotency-Key, which a retry and a resend keep
// (doc/user/project/integrations/webhooks.md "Delivery headers"), so a
// replay is dropped. GitLab sends no hook for a deletion (§0.6).
func (d *Driver) Nudge(secret string, header http.Header, body []byte) (tracker.Nudged, error) {
	want := strings.NewReplacer("\r", "", "\n", "").Replace(secret)
	got := header.Get(HookHeader)
	if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		return tracker.Nudged{}, fmt.Errorf("gitlab: the delivery's %s is not the hook's secret token: %w", HookHeader, tracker.ErrUnauthorized)
	}
	if sig := header.Get("webhook-signature"); sig != "" {
		if err := d.verifySigned(secret, header, sig, body); err != nil {
			return tracker.Nudged{}, err
		}
	}
	var p struct {
		Kind    string `json:"object_kind"`
		Project *struct {
			Path string `json:"path_with_namespace"`
		} `json:"project"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return tracker.Nudged{}, fmt.Errorf("gitlab: a delivery that isn't an event: %w", tracker.ErrRefused)
	}
	if p.Project == nil || p.Project.Path == "" {
		return tracker.Nudged{}, fmt.Errorf("gitlab: the delivery names no project: %w", tracker.ErrRefused)
	}
	return tracker.Nudged{Project: p.Project.Path, Delivery: header.Get("Idempotency-Key")}, nil
}

// verifySigned checks a Standard Webhooks signature: one of the
// space-separated "v1,<base64>" values is the HMAC-SHA256 of
// "<webhook-id>.<webhook-timestamp>.<body>" under the secret (its bytes,
// or, for a "whsec_" secret, the base64 after the prefix), and the
// timestamp is within SignatureTolerance of now.
func (d *Driver) verifySigned(secret string, header http.Header, sig string, body []byte) error {
	id, ts := header.Get("webhook-id"), header.Get("webhook-timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if id == "" || err != nil {
		return fmt.Errorf("gitlab: a signed delivery without its webhook-id or webhook-timestamp: %w", tracker.ErrUnauthorized)
	}
	if skew := d.cfg.Now().Sub(time.Unix(sec, 0)); skew > SignatureTolerance || skew < -SignatureTolerance {
		return fmt.Errorf("gitlab: a signed delivery of %s, outside %s of now: %w", time.Unix(sec, 0).UTC().Format(time.RFC3339), SignatureTolerance, tracker.ErrUnauthorized)
	}
	keys := [][]byte{[]byte(secret)}
	if b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_")); strings.HasPrefix(secret, "whsec_") && err == nil {
		keys = append(keys, b)
	}
	for _, key := range keys {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(id + "." + ts + "."))
		m.Write(body)
		mac := m.Sum(nil)
		for v := range strings.FieldsSeq(sig) {
			version, b64, ok := strings.Cut(v, ",")
			if !ok || version != "v1" {
				continue
			}
			if got, err := base64.StdEncoding.DecodeString(b64); err == nil && hmac.Equal(got, mac) {
				return nil
			}
		}
	}
	return fmt.Errorf("gitlab: the delivery's webhook-signature does not verify: %w", tracker.ErrUnauthorized)
}
