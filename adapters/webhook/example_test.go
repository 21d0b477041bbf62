package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/relayr-go/relayr/adapters/webhook"
	"github.com/relayr-go/relayr/core/eventlog"
)

// A subscriber's end of a webhook subscription: it verifies the delivery
// as Standard Webhooks says, with the specification's own library (the
// signature, and the timestamp within 5 minutes), then keys its handling
// by the event's id, as a retried delivery carries the same one.
func Example() {
	secret := webhook.NewSecret() // "whsec_…": the subscription's secret, and the receiver's
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		fmt.Println(err)
		return
	}
	seen := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := wh.Verify(body, r.Header); err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		id := r.Header.Get(standardwebhooks.HeaderWebhookID) // the Idempotency-Key too
		if !seen[id] {
			seen[id] = true
			var e eventlog.Event
			_ = json.Unmarshal(body, &e)
			fmt.Println("took", e.ID, e.Type)
		}
	}))
	defer srv.Close()

	s := &webhook.Subscriber{Name: "acme/ops/rules", URL: srv.URL + "/hook", Secret: secret, Signing: webhook.SignStandard}
	e := eventlog.Event{ID: "trk_0123456789abcdef", Tenant: "acme", Workspace: "ops", Type: "tracker:item_changed", Data: json.RawMessage(`{}`)}
	for range 2 { // a delivery retried after its answer was lost
		if err := s.Publish(context.Background(), e); err != nil {
			fmt.Println(err)
		}
	}
	// Output:
	// took trk_0123456789abcdef tracker:item_changed
}
