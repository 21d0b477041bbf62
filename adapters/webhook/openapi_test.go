package webhook_test

import (
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/adapters/webhook"
)

// The API's OpenAPI document (adapters/httpapi/openapi.json) describes a
// subscription as this package takes it, and every header a delivery
// carries under each signing and format: the signings and formats with
// their defaults, and each header sent, the old signature's among them
// as not always there.
func TestTheOpenAPIDocumentDescribesWhatASubscriptionSends(t *testing.T) {
	raw, err := os.ReadFile("../httpapi/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	type property struct {
		Enum    []string `json:"enum"`
		Default any      `json:"default"`
	}
	var doc struct {
		Info struct {
			Description string `json:"description"`
		} `json:"info"`
		Components struct {
			Schemas struct {
				SubscriptionConfig struct {
					Properties map[string]property `json:"properties"`
				} `json:"SubscriptionConfig"`
			} `json:"schemas"`
		} `json:"components"`
		Webhooks map[string]struct {
			Post struct {
				Parameters []struct {
					Name     string `json:"name"`
					In       string `json:"in"`
					Required bool   `json:"required"`
				} `json:"parameters"`
				RequestBody struct {
					Content map[string]json.RawMessage `json:"content"`
				} `json:"requestBody"`
			} `json:"post"`
		} `json:"x-webhooks"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(doc.Info.Description, "configuration file, not through this API") {
		t.Errorf("info.description does not say subscriptions are configured in the file: %q", doc.Info.Description)
	}
	props := doc.Components.Schemas.SubscriptionConfig.Properties
	for _, c := range []struct {
		field string
		want  []string
		def   string
	}{
		{"signature", []string{string(webhook.SignStandard), string(webhook.SignBoth), string(webhook.SignRelayr)}, string(webhook.DefaultSigning)},
		{"format", []string{string(webhook.FormatRelayr), string(webhook.FormatCloudEventsStructured), string(webhook.FormatCloudEventsBinary)}, string(webhook.DefaultFormat)},
	} {
		p := props[c.field]
		if !slices.Equal(p.Enum, c.want) || p.Default != c.def {
			t.Errorf("SubscriptionConfig.%s: enum %q default %v, want %q default %q", c.field, p.Enum, p.Default, c.want, c.def)
		}
	}
	for _, f := range []string{"url", "secret", "previous_secret", "nats"} {
		if _, ok := props[f]; !ok {
			t.Errorf("SubscriptionConfig has no %s", f)
		}
	}
	delivery, ok := doc.Webhooks["subscriptionEvent"]
	if !ok {
		t.Fatal("x-webhooks has no subscriptionEvent")
	}
	for _, ct := range []string{"application/json", "application/cloudevents+json"} {
		if _, ok := delivery.Post.RequestBody.Content[ct]; !ok {
			t.Errorf("the delivery's body is not described as %s", ct)
		}
	}
	documented := map[string]bool{} // canonical name: required
	for _, p := range delivery.Post.Parameters {
		if p.In == "header" {
			documented[http.CanonicalHeaderKey(p.Name)] = p.Required
		}
	}
	// The transport's own headers, which no subscription decides.
	transport := map[string]bool{"Content-Type": true, "Content-Length": true, "User-Agent": true, "Accept-Encoding": true, "Connection": true}
	// An event with every attribute a CloudEvent may carry: a time, a
	// correlation and an item's key.
	e := event
	e.At, e.Correlation = time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC), "run-7"
	e.Data = json.RawMessage(`{"tracker":"plane","project":"p1","item":{"id":"i1","number":42,"name":"OPS-42","link":"","key":"ci/build-1042"},"field":"state"}`)
	sent := map[string]int{}
	n := 0
	for _, sig := range []webhook.Signing{"", webhook.SignBoth, webhook.SignRelayr} {
		for _, f := range []webhook.Format{"", webhook.FormatCloudEventsStructured, webhook.FormatCloudEventsBinary} {
			synctest.Test(t, func(t *testing.T) {
				r := newReceiver(t, 0)
				r.publish(t, e, func(s *webhook.Subscriber) { s.Secret, s.Signing, s.Format = newSecret, sig, f })
				n++
				for h := range r.deliveries()[0].header {
					if transport[h] {
						continue
					}
					sent[h]++
					if _, ok := documented[h]; !ok {
						t.Errorf("signature %q, format %q: %s is sent but not described in x-webhooks", sig, f, h)
					}
				}
			})
		}
	}
	for h, required := range documented {
		switch {
		case sent[h] == 0:
			t.Errorf("x-webhooks describes %s, which no delivery carries", h)
		case required != (sent[h] == n):
			t.Errorf("x-webhooks says %s is required %v; it is sent on %d of %d deliveries", h, required, sent[h], n)
		}
	}
}
