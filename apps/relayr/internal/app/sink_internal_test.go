package app

import (
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/webhook"
	"github.com/relayr-go/relayr/apps/relayr/internal/config"
)

// A webhook subscription's sink signs as its configuration says
// (ADR-1014): its secret, the previous one during a rotation, and its
// signing, both when it names none.
func TestAWebhookSinkSignsAsConfigured(t *testing.T) {
	s := &config.Secrets{
		Subscriptions:   map[string]string{"acme/ops/rules": "whsec_new", "acme/ops/audit": "plain"},
		PreviousSecrets: map[string]string{"acme/ops/rules": "whsec_old"},
	}
	for _, c := range []struct {
		sub  config.Subscription
		want webhook.Subscriber
	}{
		{config.Subscription{Tenant: "acme", Workspace: "ops", Name: "rules", URL: "https://rules.example.com/hook", Signature: "standard"},
			webhook.Subscriber{Secret: "whsec_new", PreviousSecret: "whsec_old", Signing: webhook.SignStandard}},
		{config.Subscription{Tenant: "acme", Workspace: "ops", Name: "audit", URL: "https://audit.example.com/hook", Signature: "both"},
			webhook.Subscriber{Secret: "plain", Signing: webhook.SignBoth}},
	} {
		sink, ok := sinkFor(c.sub, s, Options{}, 30*time.Second, "r1", func(string) string { return "" }).(*webhook.Subscriber)
		if !ok {
			t.Fatalf("%s: the sink is not a webhook subscriber", c.sub.Name)
		}
		if sink.Secret != c.want.Secret || sink.PreviousSecret != c.want.PreviousSecret || sink.Signing != c.want.Signing || sink.URL != c.sub.URL {
			t.Fatalf("%s: secret %q, previous %q, signing %q; want %+v", c.sub.Name, sink.Secret, sink.PreviousSecret, sink.Signing, c.want)
		}
	}
}

// A subscription's sink sends the format its configuration names
// (ADR-1016): a webhook's either mode, a NATS target's CloudEvents as its
// structured mode, relayr's JSON otherwise.
func TestASinkSendsTheConfiguredFormat(t *testing.T) {
	s := &config.Secrets{Subscriptions: map[string]string{"acme/ops/rules": "whsec_new"}}
	for _, f := range []webhook.Format{webhook.FormatRelayr, webhook.FormatCloudEventsStructured, webhook.FormatCloudEventsBinary} {
		sub := config.Subscription{Tenant: "acme", Workspace: "ops", Name: "rules", URL: "https://rules.example.com/hook", Signature: "standard", Format: string(f)}
		sink, ok := sinkFor(sub, s, Options{}, 30*time.Second, "r1", func(string) string { return "" }).(*webhook.Subscriber)
		if !ok || sink.Format != f {
			t.Fatalf("format %q: sink %+v", f, sink)
		}
	}
	for f, want := range map[string]bool{"relayr": false, "cloudevents-structured": true} {
		sub := config.Subscription{Tenant: "acme", Workspace: "ops", Name: "bus", Format: f,
			NATS: &config.NATS{Servers: []string{"nats://127.0.0.1:4222"}, Stream: "RELAYR", SubjectPrefix: "relayr"}}
		if got := NATSTarget(sub, config.NATSCredentials{}, time.Minute, "r1").CloudEvents; got != want {
			t.Fatalf("format %q: CloudEvents %v, want %v", f, got, want)
		}
	}
}
