package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/relayr-go/relayr/adapters/webhook"
	"github.com/relayr-go/relayr/core/eventlog"
)

// A subscriber's end of a webhook subscription: it checks the signature,
// then keys its handling by the event's id, as a retried delivery carries
// the same one.
func Example() {
	const secret = "sub-secret"
	seen := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get(webhook.SignatureHeader) != webhook.Sign(secret, body) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		id := r.Header.Get(webhook.IdempotencyKeyHeader)
		if !seen[id] {
			seen[id] = true
			var e eventlog.Event
			_ = json.Unmarshal(body, &e)
			fmt.Println("took", e.ID, e.Type)
		}
	}))
	defer srv.Close()

	s := &webhook.Subscriber{Name: "acme/ops/rules", URL: srv.URL + "/hook", Secret: secret}
	e := eventlog.Event{ID: "trk_0123456789abcdef", Tenant: "acme", Workspace: "ops", Type: "tracker:item_changed", Data: json.RawMessage(`{}`)}
	for range 2 { // a delivery retried after its answer was lost
		if err := s.Publish(context.Background(), e); err != nil {
			fmt.Println(err)
		}
	}
	// Output:
	// took trk_0123456789abcdef tracker:item_changed
}
