package webhook_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/adapters/webhook"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/fixtures/memnet"
)

func TestSubscriberSignsAndKeysEachDelivery(t *testing.T) {
	var got []*http.Request
	var bodies [][]byte
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, bodies = append(got, r), append(bodies, b)
		mu.Unlock()
	}))
	defer srv.Close()
	s := &webhook.Subscriber{URL: srv.URL, Secret: "sub-secret", Signing: webhook.SignBoth}
	e := eventlog.Event{ID: "trk_0123456789abcdef", Seq: 3, Tenant: "acme", Workspace: "ops", Type: "tracker:item_changed", Data: json.RawMessage(`{"field":"state"}`)}
	if err := s.Publish(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d deliveries", len(got))
	}
	r := got[0]
	if r.Header.Get(webhook.IdempotencyKeyHeader) != e.ID || r.Header.Get(webhook.EventTypeHeader) != e.Type {
		t.Fatalf("headers %v", r.Header)
	}
	if r.Header.Get(webhook.SignatureHeader) != webhook.Sign("sub-secret", bodies[0]) {
		t.Fatal("X-Relayr-Signature, asked for, is not the HMAC of the raw body")
	}
	if r.Header.Get(webhook.StandardSignatureHeader) == "" || r.Header.Get(webhook.IDHeader) != e.ID {
		t.Fatalf("Standard Webhooks' headers are missing beside it: %v", r.Header)
	}
	var back eventlog.Event
	if err := json.Unmarshal(bodies[0], &back); err != nil || back.ID != e.ID || back.Seq != 3 {
		t.Fatalf("body %s", bodies[0])
	}
}

func TestAFailingSubscriberIsRetriedWithBackoffNeverSkipped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var at []time.Time
		srv := memnet.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			at = append(at, time.Now())
			if len(at) < 4 {
				w.WriteHeader(http.StatusBadGateway)
			}
		}))
		defer srv.Close()
		s := &webhook.Subscriber{URL: srv.URL + "/hook", Secret: "x", Client: srv.Client()}
		start := time.Now()
		if err := s.Publish(context.Background(), eventlog.Event{ID: "e1", Type: "t:x"}); err != nil {
			t.Fatal(err)
		}
		if len(at) != 4 {
			t.Fatalf("%d attempts, want 4", len(at))
		}
		// Waits of 1 s, 2 s and 4 s between the attempts.
		if got := at[3].Sub(start); got != 7*time.Second {
			t.Fatalf("delivered after %s, want 7s of backoff", got)
		}
	})
}

func TestASubscriberGivesUpOnlyWhenItsContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := memnet.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
		}))
		defer srv.Close()
		s := &webhook.Subscriber{URL: srv.URL + "/hook", Secret: "x", Client: srv.Client()}
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		if err := s.Publish(ctx, eventlog.Event{ID: "e1", Type: "t:x"}); err == nil {
			t.Fatal("a subscriber that never answered 2xx was counted delivered")
		}
	})
}
