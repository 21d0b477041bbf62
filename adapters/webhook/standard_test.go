package webhook_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/relayr-go/relayr/adapters/webhook"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/fixtures/memnet"
)

// delivery is one attempt as a receiver saw it.
type delivery struct {
	header http.Header
	body   []byte
	at     time.Time
}

// receiver records every attempt and answers 503 to the first refuse of
// them.
type receiver struct {
	mu     sync.Mutex
	got    []delivery
	refuse int
	srv    *memnet.Server
}

func newReceiver(t *testing.T, refuse int) *receiver {
	r := &receiver{refuse: refuse}
	r.srv = memnet.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.got = append(r.got, delivery{header: req.Header.Clone(), body: body, at: time.Now()})
		if len(r.got) <= r.refuse {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// publish delivers e through a subscriber to r, set as configure says.
func (r *receiver) publish(t *testing.T, e eventlog.Event, configure func(*webhook.Subscriber)) {
	t.Helper()
	s := &webhook.Subscriber{Name: "acme/ops/rules", URL: r.srv.URL + "/hook", Client: r.srv.Client()}
	configure(s)
	if err := s.Publish(context.Background(), e); err != nil {
		t.Fatal(err)
	}
}

// The specification's own library (its verifier, with its 5 minute
// tolerance, on the bubble's virtual clock) is the receiver throughout.
func library(t *testing.T, secret string) *standardwebhooks.Webhook {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	return wh
}

var (
	event     = eventlog.Event{ID: "trk_0123456789abcdef", Seq: 3, Tenant: "acme", Workspace: "ops", Type: "tracker:item_changed", Data: json.RawMessage(`{"field":"state"}`)}
	newSecret = webhook.SecretPrefix + base64.StdEncoding.EncodeToString([]byte("the-new-key-of-32-bytes-exactly!"))
	oldSecret = webhook.SecretPrefix + base64.StdEncoding.EncodeToString([]byte("the-old-key-of-32-bytes-exactly!"))
)

func TestStandardWebhooks(t *testing.T) {
	t.Run("ADeliveryVerifiesWithTheSpecificationsLibrary", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newReceiver(t, 0)
			r.publish(t, event, func(s *webhook.Subscriber) { s.Secret = newSecret })
			d := r.deliveries()[0]
			if err := library(t, newSecret).Verify(d.body, d.header); err != nil {
				t.Fatalf("the library refused a fresh delivery: %v; headers %v", err, d.header)
			}
			h := d.header
			if h.Get(standardwebhooks.HeaderWebhookID) != event.ID || h.Get(webhook.IdempotencyKeyHeader) != event.ID {
				t.Fatalf("webhook-id %q, Idempotency-Key %q: both must be the event's id", h.Get(standardwebhooks.HeaderWebhookID), h.Get(webhook.IdempotencyKeyHeader))
			}
			if got, want := h.Get(standardwebhooks.HeaderWebhookTimestamp), strconv.FormatInt(d.at.Unix(), 10); got != want {
				t.Fatalf("webhook-timestamp %s, want the attempt's %s", got, want)
			}
			if err := library(t, oldSecret).Verify(d.body, d.header); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
				t.Fatalf("another secret's library: %v, want no matching signature", err)
			}
			tampered := append([]byte(nil), d.body...)
			tampered[len(tampered)-2] = ' '
			if err := library(t, newSecret).Verify(tampered, d.header); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
				t.Fatalf("a changed body: %v, want no matching signature", err)
			}
		})
	})

	t.Run("AReplayOutsideTheLibrarysToleranceIsRefused", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newReceiver(t, 0)
			r.publish(t, event, func(s *webhook.Subscriber) { s.Secret = newSecret })
			d := r.deliveries()[0]
			wh := library(t, newSecret)
			time.Sleep(4 * time.Minute) // a late resend, within the 5 minutes
			if err := wh.Verify(d.body, d.header); err != nil {
				t.Fatalf("within the tolerance: %v", err)
			}
			time.Sleep(time.Minute + time.Second) // a captured delivery replayed past them
			if err := wh.Verify(d.body, d.header); !errors.Is(err, standardwebhooks.ErrMessageTooOld) {
				t.Fatalf("a replay past the tolerance: %v, want %v", err, standardwebhooks.ErrMessageTooOld)
			}
			// Its signature still matches: the timestamp alone refuses it.
			if err := wh.VerifyIgnoringTimestamp(d.body, d.header); err != nil {
				t.Fatalf("the replay's signature: %v", err)
			}
		})
	})

	t.Run("EachRetryIsSignedAtItsOwnAttempt", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			// Nine refusals: the tenth attempt comes after 1+2+…+256 s of
			// backoff, far past the first attempt's tolerance.
			r := newReceiver(t, 9)
			r.publish(t, event, func(s *webhook.Subscriber) { s.Secret = newSecret })
			got := r.deliveries()
			if len(got) != 10 {
				t.Fatalf("%d attempts, want 10", len(got))
			}
			first, last := got[0], got[9]
			if last.at.Sub(first.at) <= 5*time.Minute {
				t.Fatalf("the attempts span %s: the test needs more than the tolerance", last.at.Sub(first.at))
			}
			wh := library(t, newSecret)
			if err := wh.Verify(last.body, last.header); err != nil {
				t.Fatalf("the retry that was taken: %v", err)
			}
			if err := wh.Verify(first.body, first.header); !errors.Is(err, standardwebhooks.ErrMessageTooOld) {
				t.Fatalf("the first attempt, replayed now: %v, want too old", err)
			}
			if last.header.Get(standardwebhooks.HeaderWebhookID) != first.header.Get(standardwebhooks.HeaderWebhookID) {
				t.Fatal("a retry changed webhook-id: a receiver would take the event twice")
			}
		})
	})

	t.Run("DuringARotationBothSecretsVerify", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newReceiver(t, 0)
			r.publish(t, event, func(s *webhook.Subscriber) { s.Secret, s.PreviousSecret = newSecret, oldSecret })
			d := r.deliveries()[0]
			sigs := strings.Split(d.header.Get(standardwebhooks.HeaderWebhookSignature), " ")
			if len(sigs) != 2 || !strings.HasPrefix(sigs[0], "v1,") || !strings.HasPrefix(sigs[1], "v1,") {
				t.Fatalf("webhook-signature %q, want two v1 signatures", d.header.Get(standardwebhooks.HeaderWebhookSignature))
			}
			for name, secret := range map[string]string{"new": newSecret, "previous": oldSecret} {
				if err := library(t, secret).Verify(d.body, d.header); err != nil {
					t.Fatalf("a receiver holding the %s secret: %v", name, err)
				}
			}
			other := webhook.NewSecret()
			if err := library(t, other).Verify(d.body, d.header); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
				t.Fatalf("a third secret: %v, want no matching signature", err)
			}
			// The rotation done, the previous secret no longer verifies.
			r.publish(t, event, func(s *webhook.Subscriber) { s.Secret = newSecret })
			d = r.deliveries()[1]
			if err := library(t, oldSecret).Verify(d.body, d.header); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
				t.Fatalf("the previous secret once removed: %v", err)
			}
			if err := library(t, newSecret).Verify(d.body, d.header); err != nil {
				t.Fatal(err)
			}
		})
	})

	t.Run("APlainSecretsBytesAreItsKey", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newReceiver(t, 0)
			r.publish(t, event, func(s *webhook.Subscriber) { s.Secret, s.Signing = "sub-secret", webhook.SignBoth })
			d := r.deliveries()[0]
			wh, err := standardwebhooks.NewWebhookRaw([]byte("sub-secret"))
			if err != nil {
				t.Fatal(err)
			}
			if err := wh.Verify(d.body, d.header); err != nil {
				t.Fatalf("a plain secret's bytes as the key: %v", err)
			}
			if d.header.Get(webhook.SignatureHeader) != webhook.Sign("sub-secret", d.body) {
				t.Fatal("X-Relayr-Signature, asked for, is not as before under a plain secret")
			}
		})
	})

	t.Run("EachSigningSendsItsHeadersOnly", func(t *testing.T) {
		for _, c := range []struct {
			name             string
			signing          webhook.Signing
			standard, relayr bool
		}{
			{"UnsetIsStandardOnly", "", true, false}, {"Both", webhook.SignBoth, true, true},
			{"Standard", webhook.SignStandard, true, false}, {"Relayr", webhook.SignRelayr, false, true},
		} {
			t.Run(c.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					r := newReceiver(t, 0)
					r.publish(t, event, func(s *webhook.Subscriber) { s.Secret, s.Signing = newSecret, c.signing })
					d := r.deliveries()[0]
					if standard := library(t, newSecret).Verify(d.body, d.header) == nil; standard != c.standard {
						t.Fatalf("Standard Webhooks' headers sent %v, want %v: %v", standard, c.standard, d.header)
					}
					if relayr := d.header.Get(webhook.SignatureHeader) == webhook.Sign(newSecret, d.body); relayr != c.relayr {
						t.Fatalf("X-Relayr-Signature sent %v, want %v", relayr, c.relayr)
					}
					if d.header.Get(webhook.IdempotencyKeyHeader) != event.ID {
						t.Fatal("Idempotency-Key is gone")
					}
				})
			})
		}
	})

	t.Run("ARefusedSecretFailsThePublishUnsent", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newReceiver(t, 0)
			for _, s := range []*webhook.Subscriber{
				{Secret: "whsec_not base64!"},
				{Secret: newSecret, PreviousSecret: "whsec_c2hvcnQ="},
				{Secret: newSecret, Signing: "hmac"},
			} {
				s.URL, s.Client = r.srv.URL+"/hook", r.srv.Client()
				err := s.Publish(context.Background(), event)
				if err == nil || strings.Contains(err.Error(), "not base64!") || strings.Contains(err.Error(), "c2hvcnQ") {
					t.Fatalf("%+v: %v, want a refusal that quotes no secret", s, err)
				}
			}
			if n := len(r.deliveries()); n != 0 {
				t.Fatalf("%d deliveries under a refused secret", n)
			}
		})
	})
}

func TestParseSecret(t *testing.T) {
	for _, c := range []struct {
		name, secret string
		key          string // "" when refused
	}{
		{"AWhsecSecretIsItsBase64", newSecret, "the-new-key-of-32-bytes-exactly!"},
		{"APlainSecretIsItsBytes", "sub-secret", "sub-secret"},
		{"AHexSecretIsItsBytesNotItsBase64", "0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef"},
		{"AnEmptySecretIsRefused", "", ""},
		{"BadBase64IsRefused", "whsec_!!!!", ""},
		{"UnpaddedBase64IsRefusedAsTheLibraryWould", "whsec_" + base64.RawStdEncoding.EncodeToString([]byte("the-new-key-of-32-bytes-exactly!")), ""},
		{"AKeyUnder24BytesIsRefused", "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 23)), ""},
		{"AKeyOver64BytesIsRefused", "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 65)), ""},
		{"AnEmptyKeyIsRefused", "whsec_", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			k, err := webhook.ParseSecret(c.secret)
			var se *webhook.SecretError
			switch {
			case c.key == "" && !errors.As(err, &se):
				t.Fatalf("%v, want a *SecretError", err)
			case c.key != "" && (err != nil || string(k) != c.key):
				t.Fatalf("key %q %v, want %q", k, err, c.key)
			}
		})
	}

	t.Run("NewSecretIsAWhsecSecretTheLibraryTakes", func(t *testing.T) {
		s := webhook.NewSecret()
		k, err := webhook.ParseSecret(s)
		if err != nil || !strings.HasPrefix(s, webhook.SecretPrefix) || len(k) != 32 {
			t.Fatalf("%d bytes %v", len(k), err)
		}
		if s == webhook.NewSecret() {
			t.Fatal("two secrets drawn alike")
		}
		at := time.Unix(1_700_000_000, 0)
		want, err := library(t, s).Sign("msg_1", at, []byte(`{}`))
		if err != nil || k.Sign("msg_1", at, []byte(`{}`)) != want {
			t.Fatalf("Key.Sign differs from the library's Sign (%v)", err)
		}
	})
}
