// Package webhook is relayr's subscriber sink: a deliver.Sink that POSTs
// each event of a workspace's log to a subscriber's URL, once, in order,
// keyed by the event's id, retried with backoff and never redirected
// (ADR-0015's sinks; docs/delivery.md). Each delivery is signed as the
// Standard Webhooks specification says (webhook-id, webhook-timestamp,
// webhook-signature over "<id>.<timestamp>.<body>", whsec_ secrets, two
// signatures while a secret is rotated); relayr's own X-Relayr-Signature
// is sent only to a subscription that asks for it (Signing, ADR-1014). A
// subscription may ask for CloudEvents 1.0 instead of relayr's own JSON
// (Format), in the HTTP binding's structured or binary mode, encoded by the
// CloudEvents Go SDK; the signatures cover the body sent (ADR-1016).
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"

	"github.com/relayr-go/relayr/adapters/cloudevents"
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
	// of the raw body under the subscription's secret as written (Sign):
	// relayr's own signature, sent under SignRelayr and SignBoth. It signs
	// the body alone, so a captured delivery verifies for ever; receivers
	// move to StandardSignatureHeader (ADR-1014).
	SignatureHeader = "X-Relayr-Signature"
	// EventTypeHeader names the event's type.
	EventTypeHeader = "X-Relayr-Event"

	// IDHeader is Standard Webhooks' webhook-id: the event's id, the
	// same as IdempotencyKeyHeader's, on every attempt.
	IDHeader = "webhook-id"
	// TimestampHeader is Standard Webhooks' webhook-timestamp: the Unix
	// seconds of this attempt, which a receiver refuses outside its
	// tolerance (the specification's libraries: 5 minutes).
	TimestampHeader = "webhook-timestamp"
	// StandardSignatureHeader is Standard Webhooks' webhook-signature:
	// "v1," and the base64 HMAC-SHA256 of "<id>.<timestamp>.<body>" under
	// each signing key (Key.Sign), space-separated while a secret is
	// rotated.
	StandardSignatureHeader = "webhook-signature"
)

// Signing says which signatures a subscription's deliveries carry
// (ADR-1014).
type Signing string

// The signings a subscription may ask for.
const (
	// SignStandard sends Standard Webhooks' headers only: what a
	// subscription that names none gets (DefaultSigning).
	SignStandard Signing = "standard"
	// SignRelayr sends X-Relayr-Signature only, as relayr did before
	// ADR-1014.
	SignRelayr Signing = "relayr"
	// SignBoth sends both, for a receiver that still checks
	// X-Relayr-Signature while it moves to Standard Webhooks.
	SignBoth Signing = "both"
)

// DefaultSigning is the signing of a subscription that names none:
// Standard Webhooks alone. The old header, which signs the body alone and
// so lets a captured delivery be replayed for ever, is kept only for a
// configured subscription that asks for it (SignBoth or SignRelayr;
// ADR-1014).
const DefaultSigning = SignStandard

// Valid reports whether s is one of the signings ("" is not: callers
// fill DefaultSigning in).
func (s Signing) Valid() bool { return s == SignStandard || s == SignRelayr || s == SignBoth }

func (s Signing) standard() bool { return s == SignStandard || s == SignBoth || s == "" }

func (s Signing) relayr() bool { return s == SignRelayr || s == SignBoth }

// Format is the body a subscription's deliveries carry (ADR-1016).
type Format string

// The formats a subscription may ask for.
const (
	// FormatRelayr is relayr's own event JSON, application/json: what a
	// subscription that names none gets (DefaultFormat).
	FormatRelayr Format = "relayr"
	// FormatCloudEventsStructured is a CloudEvent in the HTTP binding's
	// structured mode: the whole event, application/cloudevents+json.
	FormatCloudEventsStructured Format = "cloudevents-structured"
	// FormatCloudEventsBinary is a CloudEvent in the HTTP binding's binary
	// mode: its attributes as ce-* headers, the event's data as the body,
	// application/json.
	FormatCloudEventsBinary Format = "cloudevents-binary"
)

// DefaultFormat is the format of a subscription that names none: relayr's
// own, so an existing subscriber takes what it always took.
const DefaultFormat = FormatRelayr

// Valid reports whether f is one of the formats ("" is not: callers fill
// DefaultFormat in).
func (f Format) Valid() bool {
	return f == FormatRelayr || f == FormatCloudEventsStructured || f == FormatCloudEventsBinary
}

// FormatError is a subscription's format that is none of the formats.
type FormatError struct {
	Format Format
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("webhook: format %q is not %q, %q or %q", string(e.Format), FormatRelayr, FormatCloudEventsStructured, FormatCloudEventsBinary)
}

// SecretPrefix begins a Standard Webhooks secret: "whsec_" and the
// base64 of its key.
const SecretPrefix = "whsec_"

// The lengths of a whsec_ secret's key, as the specification asks:
// drawn at random, from 24 to 64 bytes. NewSecret draws 32.
const (
	MinKeyBytes = 24
	MaxKeyBytes = 64
)

// Key is the HMAC key of a subscription's secret (ParseSecret).
type Key []byte

// SecretError is a signing secret refused, with why; it never quotes the
// secret.
type SecretError struct {
	Reason string
}

func (e *SecretError) Error() string { return "webhook: signing secret: " + e.Reason }

// ParseSecret answers the key a subscription's secret signs with
// (ADR-1014): after the whsec_ prefix, the standard base64 (with its
// padding) of 24 to 64 bytes, as the specification's libraries decode it;
// without the prefix, the secret's own bytes, so a secret configured
// before Standard Webhooks keeps its key. A receiver verifies such a
// secret with the key's bytes (the Go library's NewWebhookRaw), never
// by decoding it: a hex secret also reads as base64, as another key.
func ParseSecret(secret string) (Key, error) {
	rest, standard := strings.CutPrefix(secret, SecretPrefix)
	if !standard {
		if secret == "" {
			return nil, &SecretError{Reason: "it is empty"}
		}
		return Key(secret), nil
	}
	k, err := base64.StdEncoding.DecodeString(rest)
	switch {
	case err != nil:
		return nil, &SecretError{Reason: "what follows " + SecretPrefix + " is not standard base64 (A-Z, a-z, 0-9, + and /, padded with =); make one with `echo \"whsec_$(openssl rand -base64 32)\"`"}
	case len(k) < MinKeyBytes || len(k) > MaxKeyBytes:
		return nil, &SecretError{Reason: fmt.Sprintf("its key is %d bytes; a whsec_ secret's key is %d to %d random bytes (`openssl rand -base64 32` makes 32)", len(k), MinKeyBytes, MaxKeyBytes)}
	}
	return Key(k), nil
}

// NewSecret draws a new Standard Webhooks secret: "whsec_" and the base64
// of 32 random bytes.
func NewSecret() string {
	k := make([]byte, 32)
	_, _ = rand.Read(k) // crypto/rand.Read never fails: it crashes the program first
	return SecretPrefix + base64.StdEncoding.EncodeToString(k)
}

// Sign is Standard Webhooks' signature of a delivery under k: "v1," and
// the base64 HMAC-SHA256 of "<id>.<Unix seconds of at>.<body>".
func (k Key) Sign(id string, at time.Time, body []byte) string {
	m := hmac.New(sha256.New, k)
	m.Write([]byte(id + "." + strconv.FormatInt(at.Unix(), 10) + "."))
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// Backoff of a failing subscriber.
const (
	FirstBackoff = time.Second
	MaxBackoff   = 5 * time.Minute
)

// Subscriber delivers a workspace's events to one URL: each event POSTed
// once, in order, with its id as the idempotency key and as Standard
// Webhooks' webhook-id, signed as Signing says. A failing subscriber is retried with backoff, never skipped: it
// is a deliver.Sink whose Publish returns only once the subscriber took the
// event (a 2xx) or its context ended.
//
// A redirect is never followed, whatever Client says: a 3xx is a failure,
// retried from the cursor, so a signed event goes to URL and nowhere else,
// and a POST turned into a body-less GET is never counted delivered.
type Subscriber struct {
	// Name names the subscription in the log; the URL, which may carry a
	// token, is logged without its user, password and query.
	Name string
	URL  string
	// Secret signs every delivery: a whsec_ secret, or a plain one whose
	// bytes are the key (ParseSecret). X-Relayr-Signature is under
	// Secret as written (Sign).
	Secret string
	// PreviousSecret, while Secret replaces it, signs beside it:
	// webhook-signature then carries two signatures, the new one first,
	// so a receiver holding either secret verifies. Empty once the
	// rotation is done. X-Relayr-Signature, one value, is never under it.
	PreviousSecret string
	// Signing is which signatures a delivery carries (DefaultSigning
	// when empty).
	Signing Signing
	// Format is the body of a delivery (DefaultFormat when empty).
	Format Format
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

// Sign is the X-Relayr-Signature a delivery of body carries under
// secret: the HMAC-SHA256 of the body alone, keyed by the secret's bytes
// as written, whsec_ prefix and all, as before ADR-1014.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// keys are the subscription's signing keys, the current secret's first.
func (s *Subscriber) keys() ([]Key, error) {
	k, err := ParseSecret(s.Secret)
	if err != nil {
		return nil, err
	}
	keys := []Key{k}
	if s.PreviousSecret != "" {
		prev, err := ParseSecret(s.PreviousSecret)
		if err != nil {
			return nil, fmt.Errorf("previous secret: %w", err)
		}
		keys = append(keys, prev)
	}
	return keys, nil
}

// Publish implements deliver.Sink. A secret ParseSecret refuses fails it
// at once, unsent: no retry would mend it.
func (s *Subscriber) Publish(ctx context.Context, e eventlog.Event) error {
	if s.Format != "" && !s.Format.Valid() {
		return fmt.Errorf("webhook: delivering %s: %w", e.ID, &FormatError{Format: s.Format})
	}
	if s.Signing != "" && !s.Signing.Valid() {
		return fmt.Errorf("webhook: delivering %s: signing %q is not %s, %s or %s", e.ID, s.Signing, SignStandard, SignRelayr, SignBoth)
	}
	keys, err := s.keys()
	if err != nil {
		return fmt.Errorf("webhook: delivering %s: %w", e.ID, err)
	}
	header, body, err := Encode(ctx, s.Format, e)
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
		err := s.post(ctx, e, header, body, keys, c.Now())
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

// Encode answers the headers and body of e's delivery in format f (""
// is DefaultFormat): relayr's JSON, or a CloudEvent written by the
// CloudEvents SDK's HTTP binding (cehttp.WriteRequest) in structured or
// binary mode. The body is what every attempt sends and signs. An event
// that makes no CloudEvent answers a *cloudevents.Error; a format that is
// none of the formats, a *FormatError.
func Encode(ctx context.Context, f Format, e eventlog.Event) (http.Header, []byte, error) {
	if f == "" {
		f = DefaultFormat
	}
	switch f {
	case FormatRelayr:
		body, err := json.Marshal(e)
		if err != nil {
			return nil, nil, err
		}
		return http.Header{"Content-Type": {"application/json"}}, body, nil
	case FormatCloudEventsStructured:
		ctx = binding.WithForceStructured(ctx)
	case FormatCloudEventsBinary:
		ctx = binding.WithForceBinary(ctx)
	default:
		return nil, nil, &FormatError{Format: f}
	}
	ev, err := cloudevents.Event(e)
	if err != nil {
		return nil, nil, err
	}
	// The SDK writes into a request of its own, whose headers and body
	// each attempt then copies: the body is read once, and signed as sent.
	req := &http.Request{Header: http.Header{}}
	if err := cehttp.WriteRequest(ctx, binding.ToMessage(&ev), req); err != nil {
		return nil, nil, &cloudevents.Error{ID: e.ID, Err: err}
	}
	var body []byte
	if req.Body != nil {
		body, err = io.ReadAll(req.Body)
		if err != nil {
			return nil, nil, &cloudevents.Error{ID: e.ID, Err: err}
		}
	}
	return req.Header, body, nil
}

// post makes one attempt, signed at: each attempt has its own timestamp,
// so a retry hours later is inside a receiver's tolerance, and a capture
// of an earlier one replayed is not (ADR-1014).
func (s *Subscriber) post(ctx context.Context, e eventlog.Event, header http.Header, body []byte, keys []Key, at time.Time) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set(IdempotencyKeyHeader, e.ID)
	req.Header.Set(EventTypeHeader, e.Type)
	if s.Signing.standard() {
		sigs := make([]string, len(keys))
		for i, k := range keys {
			sigs[i] = k.Sign(e.ID, at, body)
		}
		req.Header.Set(IDHeader, e.ID)
		req.Header.Set(TimestampHeader, strconv.FormatInt(at.Unix(), 10))
		req.Header.Set(StandardSignatureHeader, strings.Join(sigs, " "))
	}
	if s.Signing.relayr() {
		req.Header.Set(SignatureHeader, Sign(s.Secret, body))
	}
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
