// Package webhook is relayr's subscriber sink: a deliver.Sink that POSTs
// each event of a workspace's log to a subscriber's URL, once, in order,
// signed with HMAC-SHA256 and keyed by the event's id, retried with
// backoff and never redirected (ADR-0015's sinks; docs/delivery.md).
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/deliver"
	"github.com/relayr-go/relayr/core/eventlog"
)

// Headers of a delivery to a subscriber.
const (
	// IdempotencyKeyHeader carries the event's id: a subscriber that
	// already took it can answer 2xx and do nothing.
	IdempotencyKeyHeader = "Idempotency-Key"
	// SignatureHeader carries "sha256=" and the lowercase hex HMAC-SHA256
	// of the raw body under the subscription's secret.
	SignatureHeader = "X-Relayr-Signature"
	// EventTypeHeader names the event's type.
	EventTypeHeader = "X-Relayr-Event"
)

// Backoff of a failing subscriber.
const (
	FirstBackoff = time.Second
	MaxBackoff   = 5 * time.Minute
)

// Subscriber delivers a workspace's events to one URL: each event POSTed
// once, in order, with its id as the idempotency key and an HMAC-SHA256
// signature. A failing subscriber is retried with backoff, never skipped: it
// is a deliver.Sink whose Publish returns only once the subscriber took the
// event (a 2xx) or its context ended.
//
// A redirect is never followed, whatever Client says: a 3xx is a failure,
// retried from the cursor, so a signed event goes to URL and nowhere else,
// and a POST turned into a body-less GET is never counted delivered.
type Subscriber struct {
	// Name names the subscription in the log; the URL, which may carry a
	// token, is logged without its user, password and query.
	Name   string
	URL    string
	Secret string
	Client *http.Client // a client with a 10 s timeout when nil
	Clock  clock.Clock  // System when nil
	Logger *slog.Logger // discards when nil
}

// NoRedirects is an http.Client's CheckRedirect that follows none: the 3xx
// is the answer.
func NoRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// RedactURL is u without its user, password, query and fragment, to log: a
// subscriber's URL may carry its credentials in any of them.
func RedactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(an unreadable URL)"
	}
	p.User, p.RawQuery, p.ForceQuery, p.Fragment, p.RawFragment = nil, "", false, "", ""
	return p.String()
}

// Sign is the signature a delivery of body carries under secret.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Publish implements deliver.Sink.
func (s *Subscriber) Publish(ctx context.Context, e eventlog.Event) error {
	body, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("webhook: delivering %s: %w", e.ID, err)
	}
	c := s.Clock
	if c == nil {
		c = clock.System{}
	}
	log := s.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	wait := FirstBackoff
	for attempt := 1; ; attempt++ {
		err := s.post(ctx, e, body)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		log.Warn("subscriber failed; retrying", "subscription", s.Name, "url", RedactURL(s.URL),
			"event", e.ID, "attempt", attempt, "wait", wait, "err", err)
		deliver.ReportFailure(ctx, err) // the follower's status and metrics say why
		if err := clock.Sleep(ctx, c, wait); err != nil {
			return err
		}
		wait = min(wait*2, MaxBackoff)
	}
}

func (s *Subscriber) post(ctx context.Context, e eventlog.Event, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(IdempotencyKeyHeader, e.ID)
	req.Header.Set(EventTypeHeader, e.Type)
	req.Header.Set(SignatureHeader, Sign(s.Secret, body))
	client := &http.Client{Timeout: 10 * time.Second}
	if s.Client != nil {
		c := *s.Client
		client = &c
	}
	// A redirect would send the signed body and headers elsewhere (307,
	// 308), or turn the POST into a GET whose 2xx counts as delivered
	// (301, 302, 303).
	client.CheckRedirect = NoRedirects
	res, err := client.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			uerr.URL = RedactURL(uerr.URL)
		}
		return err
	}
	defer func() { _ = res.Body.Close() }()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("subscriber answered %s", res.Status)
	}
	return nil
}
