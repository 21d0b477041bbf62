package webhook_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"

	cevent "github.com/cloudevents/sdk-go/v2/event"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/relayr-go/relayr/adapters/webhook"
	"github.com/relayr-go/relayr/core/deliver/sinktest"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/fixtures/memnet"
)

// subscriber is the far end of a webhook subscription: it verifies each
// delivery with Standard Webhooks' own library and keys what it takes by
// its webhook-id, as docs/delivery.md tells a subscriber to, and refuses
// on demand: answering status, or redirecting to another host.
type subscriber struct {
	mu       sync.Mutex
	ids      []string
	seen     map[string]bool
	refuse   int // a status to answer, 0 to take deliveries
	redirect string
	verifier *standardwebhooks.Webhook // the specification's library, under secret
	format   webhook.Format            // the body, read as the SDK reads a CloudEvent unless relayr's
	srv      *memnet.Server
}

// secret is the subscription's: "whsec_" and the base64 of 32 bytes.
const secret = "whsec_c2lua3Rlc3Qtc2VjcmV0LW9mLTMyLWJ5dGVzLWxvbmc="

func newSubscriber(t *testing.T, f webhook.Format) *subscriber {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	s := &subscriber{seen: map[string]bool{}, verifier: wh, format: f}
	s.srv = memnet.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *subscriber) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.redirect != "":
		http.Redirect(w, r, s.redirect, http.StatusTemporaryRedirect)
		return
	case s.refuse != 0:
		w.WriteHeader(s.refuse)
		return
	case s.verifier.Verify(body, r.Header) != nil:
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var e eventlog.Event
	err := json.Unmarshal(body, &e)
	if s.format != webhook.FormatRelayr {
		r.Body = io.NopCloser(bytes.NewReader(body))
		var ev *cevent.Event
		if ev, err = cehttp.NewEventFromHTTPRequest(r); err == nil {
			e.ID = ev.ID()
		}
	}
	if err != nil || e.ID != r.Header.Get(standardwebhooks.HeaderWebhookID) || e.ID != r.Header.Get(webhook.IdempotencyKeyHeader) {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if !s.seen[e.ID] {
		s.seen[e.ID] = true
		s.ids = append(s.ids, e.ID)
	}
}

func (s *subscriber) set(refuse int, redirect string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse, s.redirect = refuse, redirect
}

func (s *subscriber) harness() sinktest.Harness {
	return sinktest.Harness{
		Sink: &webhook.Subscriber{Name: "sinktest", URL: s.srv.URL + "/hook", Secret: secret, Signing: webhook.SignStandard, Format: s.format, Client: s.srv.Client()},
		Taken: func(*testing.T) []string {
			s.mu.Lock()
			defer s.mu.Unlock()
			return append([]string(nil), s.ids...)
		},
	}
}

// TestSink runs the sink suite over the webhook subscriber in each format
// (relayr's JSON, and CloudEvents read by the SDK), on memnet and virtual
// time: its own backoff (1 s, doubling) passes at once.
func TestSink(t *testing.T) {
	for _, f := range []webhook.Format{webhook.FormatRelayr, webhook.FormatCloudEventsStructured, webhook.FormatCloudEventsBinary} {
		t.Run(string(f), func(t *testing.T) { runSink(t, f) })
	}
}

func runSink(t *testing.T, f webhook.Format) {
	refusing := func(refuse int, redirect bool) func(t *testing.T) sinktest.Refusing {
		return func(t *testing.T) sinktest.Refusing {
			s := newSubscriber(t, f)
			elsewhere := 0
			var mu sync.Mutex
			other := memnet.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				elsewhere++
			}))
			t.Cleanup(other.Close)
			to := ""
			if redirect {
				to = other.URL + "/stolen"
			}
			s.set(refuse, to)
			return sinktest.Refusing{Harness: s.harness(), Up: func() { s.set(0, "") },
				Elsewhere: func() int { mu.Lock(); defer mu.Unlock(); return elsewhere }}
		}
	}
	sinktest.Run(t, sinktest.Setup{
		Virtual: true,
		New:     func(t *testing.T) sinktest.Harness { return newSubscriber(t, f).harness() },
		Refusals: map[string]func(*testing.T) sinktest.Refusing{
			"Answering503":             refusing(http.StatusServiceUnavailable, false),
			"Answering401":             refusing(http.StatusUnauthorized, false),
			"RedirectingToAnotherHost": refusing(0, true),
		},
	})
}
