package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	ce "github.com/cloudevents/sdk-go/v2"
	cevent "github.com/cloudevents/sdk-go/v2/event"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"

	"github.com/relayr-go/relayr/adapters/cloudevents"
	"github.com/relayr-go/relayr/adapters/webhook"
	"github.com/relayr-go/relayr/core/eventlog"
)

// ceReceiver is the CloudEvents SDK's own HTTP receiver on a loopback
// listener: every event it decodes, and beside it the raw request it came
// in, checked by the Standard Webhooks library before the SDK reads it.
type ceReceiver struct {
	url    string
	events chan cevent.Event
	mu     sync.Mutex
	raw    []delivery
	bad    []error
}

func newCEReceiver(t *testing.T, secret string) *ceReceiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &ceReceiver{url: "http://" + ln.Addr().String() + "/hook", events: make(chan cevent.Event, 8)}
	wh := library(t, secret)
	// The middleware sees the body as sent, verifies its signatures, and
	// hands it on to the SDK unread.
	verify := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			body, _ := io.ReadAll(req.Body)
			r.mu.Lock()
			r.raw = append(r.raw, delivery{header: req.Header.Clone(), body: body})
			if err := wh.Verify(body, req.Header); err != nil {
				r.bad = append(r.bad, err)
			}
			r.mu.Unlock()
			req.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(w, req)
		})
	}
	p, err := cehttp.New(cehttp.WithListener(ln), cehttp.WithMiddleware(verify), cehttp.WithShutdownTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	c, err := ce.NewClient(p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- c.StartReceiver(ctx, func(e cevent.Event) { r.events <- e })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the SDK's receiver: %v", err)
		}
	})
	return r
}

// publish delivers e in format f, signed under secret, and answers the
// CloudEvent the SDK's receiver decoded and the request it came in.
func (r *ceReceiver) publish(t *testing.T, f webhook.Format, secret string, e eventlog.Event) (cevent.Event, delivery) {
	t.Helper()
	s := &webhook.Subscriber{Name: "acme/ops/rules", URL: r.url, Secret: secret, Format: f, Signing: webhook.SignStandard}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Publish(ctx, e); err != nil {
		t.Fatal(err)
	}
	var got cevent.Event
	select {
	case got = <-r.events:
	default:
		t.Fatal("the subscriber took the delivery, but the SDK's receiver decoded no event")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.bad) > 0 {
		t.Fatalf("the Standard Webhooks library refused the delivery: %v", r.bad)
	}
	return got, r.raw[len(r.raw)-1]
}

var ceEvent = eventlog.Event{
	ID: "trk_0123456789abcdef", Seq: 4_000_000_000, Tenant: "acme", Workspace: "ops",
	Type: "tracker:item_changed", Correlation: "run-7",
	Data: json.RawMessage(`{"tracker":"plane","project":"p1","item":{"id":"i1","number":42,"name":"OPS-42","link":"https://plane.example/ops/42","key":"ci/build-1042"},"field":"state","old":"\"backlog\"","new":"\"done\""}`),
	At:   time.Date(2026, 12, 4, 10, 30, 15, 123456789, time.UTC),
}

// checkAttributes checks every attribute of a CloudEvent made of e.
func checkAttributes(t *testing.T, got cevent.Event, e eventlog.Event, subject string) {
	t.Helper()
	if err := got.Validate(); err != nil {
		t.Fatalf("the SDK finds the received event invalid: %v", err)
	}
	for _, c := range []struct{ name, got, want string }{
		{"specversion", got.SpecVersion(), "1.0"},
		{"id", got.ID(), e.ID},
		{"source", got.Source(), "/relayr/" + e.Tenant + "/" + e.Workspace},
		{"type", got.Type(), "io.github.relayr-go." + e.Namespace() + "." + e.Type[len(e.Namespace())+1:]},
		{"subject", got.Subject(), subject},
		{"datacontenttype", got.DataContentType(), "application/json"},
	} {
		if c.got != c.want {
			t.Errorf("%s %q, want %q", c.name, c.got, c.want)
		}
	}
	if !got.Time().Equal(e.At) {
		t.Errorf("time %v, want %v", got.Time(), e.At)
	}
	var gotData, wantData any
	if err := json.Unmarshal(got.Data(), &gotData); err != nil {
		t.Fatalf("data %q is not JSON: %v", got.Data(), err)
	}
	_ = json.Unmarshal(e.Data, &wantData)
	if g, w := mustJSON(t, gotData), mustJSON(t, wantData); g != w {
		t.Errorf("data %s, want the event's payload %s", g, w)
	}
	ext := got.Extensions()
	if e.Correlation == "" {
		if _, ok := ext[cloudevents.CorrelationExtension]; ok {
			t.Errorf("an event without a chain carries correlation %v", ext[cloudevents.CorrelationExtension])
		}
	} else if v, _ := ext[cloudevents.CorrelationExtension].(string); v != e.Correlation {
		t.Errorf("correlation %v, want %q", ext[cloudevents.CorrelationExtension], e.Correlation)
	}
	if v, _ := ext[cloudevents.SeqExtension].(string); v != strconv.FormatInt(e.Seq, 10) {
		t.Errorf("relayrseq %v, want %q", ext[cloudevents.SeqExtension], strconv.FormatInt(e.Seq, 10))
	}
	if rt, ok := cloudevents.RelayrType(got.Type()); !ok || rt != e.Type {
		t.Errorf("RelayrType(%q) = %q, %v; want %q", got.Type(), rt, ok, e.Type)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCloudEvents(t *testing.T) {
	t.Run("StructuredModeIsTheWholeEventAsApplicationCloudEventsJSON", func(t *testing.T) {
		r := newCEReceiver(t, newSecret)
		got, d := r.publish(t, webhook.FormatCloudEventsStructured, newSecret, ceEvent)
		checkAttributes(t, got, ceEvent, "ci/build-1042")
		if ct := d.header.Get("Content-Type"); ct != "application/cloudevents+json" {
			t.Errorf("Content-Type %q, want application/cloudevents+json", ct)
		}
		if d.header.Get("ce-id") != "" {
			t.Errorf("structured mode carries ce-id %q; its attributes belong in the body", d.header.Get("ce-id"))
		}
		var body map[string]json.RawMessage
		if err := json.Unmarshal(d.body, &body); err != nil {
			t.Fatal(err)
		}
		if _, ok := body["data_base64"]; ok || body["data"] == nil {
			t.Errorf("the body carries the payload as %s; want it as JSON under data", d.body)
		}
		if got, want := d.header.Get(webhook.IdempotencyKeyHeader), ceEvent.ID; got != want {
			t.Errorf("Idempotency-Key %q, want %q", got, want)
		}
	})

	t.Run("BinaryModeIsTheAttributesAsHeadersAndTheDataAsTheBody", func(t *testing.T) {
		r := newCEReceiver(t, newSecret)
		got, d := r.publish(t, webhook.FormatCloudEventsBinary, newSecret, ceEvent)
		checkAttributes(t, got, ceEvent, "ci/build-1042")
		for h, want := range map[string]string{
			"Content-Type": "application/json", "ce-specversion": "1.0", "ce-id": ceEvent.ID,
			"ce-source": "/relayr/acme/ops", "ce-type": "io.github.relayr-go.tracker.item_changed",
			"ce-subject": "ci/build-1042", "ce-correlation": "run-7", "ce-relayrseq": "4000000000",
			"ce-time": "2026-12-04T10:30:15.123456789Z", webhook.IDHeader: ceEvent.ID,
		} {
			if g := d.header.Get(h); g != want {
				t.Errorf("%s %q, want %q", h, g, want)
			}
		}
		if !bytes.Equal(bytes.TrimSpace(d.body), ceEvent.Data) {
			t.Errorf("the body is %s, want the event's data %s", d.body, ceEvent.Data)
		}
	})

	t.Run("AnItemAPersonFiledHasNoSubjectAndAnEventWithoutAChainNoCorrelation", func(t *testing.T) {
		e := ceEvent
		e.Correlation = ""
		e.Seq = 7
		e.Data = json.RawMessage(`{"tracker":"plane","project":"p1","item":{"id":"i1","number":42,"name":"OPS-42","link":"","key":""}}`)
		for _, f := range []webhook.Format{webhook.FormatCloudEventsStructured, webhook.FormatCloudEventsBinary} {
			r := newCEReceiver(t, newSecret)
			got, _ := r.publish(t, f, newSecret, e)
			checkAttributes(t, got, e, "")
		}
	})

	t.Run("NamesThatAreNotPathSegmentsAreEscapedInTheSource", func(t *testing.T) {
		e := ceEvent
		e.Tenant, e.Workspace = "acme corp", "ops/eu"
		r := newCEReceiver(t, newSecret)
		got, _ := r.publish(t, webhook.FormatCloudEventsBinary, newSecret, e)
		if got.Source() != "/relayr/acme%20corp/ops%2Feu" {
			t.Errorf("source %q, want /relayr/acme%%20corp/ops%%2Feu", got.Source())
		}
	})

	t.Run("EveryAttemptSendsTheSameBody", func(t *testing.T) {
		first, err := encode(t, webhook.FormatCloudEventsStructured)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := encode(t, webhook.FormatCloudEventsStructured)
		if !bytes.Equal(first, again) {
			t.Errorf("two encodings of one event differ:\n%s\n%s", first, again)
		}
	})

	t.Run("TheDefaultIsRelayrsOwnJSON", func(t *testing.T) {
		for _, f := range []webhook.Format{"", webhook.FormatRelayr} {
			h, body, err := webhook.Encode(context.Background(), f, ceEvent)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := json.Marshal(ceEvent)
			if h.Get("Content-Type") != "application/json" || !bytes.Equal(body, want) || h.Get("ce-id") != "" {
				t.Errorf("format %q: %v %s, want relayr's JSON %s", f, h, body, want)
			}
		}
	})

	t.Run("AnUnknownFormatIsRefusedUnsent", func(t *testing.T) {
		s := &webhook.Subscriber{URL: "http://127.0.0.1:1/never", Secret: newSecret, Format: "cloudevents"}
		err := s.Publish(context.Background(), ceEvent)
		var fe *webhook.FormatError
		if !errors.As(err, &fe) || fe.Format != "cloudevents" {
			t.Fatalf("Publish: %v, want a *webhook.FormatError", err)
		}
	})
}

func encode(t *testing.T, f webhook.Format) ([]byte, error) {
	t.Helper()
	_, body, err := webhook.Encode(context.Background(), f, ceEvent)
	return body, err
}
