package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/relayr-go/relayr/adapters/webhook"
	"github.com/relayr-go/relayr/apps/relayr/internal/config"
)

// withNATSTarget makes the rules subscription a NATS target, with lines
// among its keys.
func withNATSTarget(lines string) string {
	return strings.Replace(good, "url = \"https://rules.example.com/hook\"\nsecret = {file = \"/run/secrets/rules\"}",
		lines+"\n[subscriptions.nats]\nservers = [\"nats://127.0.0.1:4222\"]\nstream = \"RELAYR\"", 1)
}

// A subscription delivers relayr's own JSON unless it asks for CloudEvents
// (ADR-1016): either mode to a url, structured mode into JetStream.
func TestSubscriptionFormat(t *testing.T) {
	for _, c := range []struct {
		name, text, want string
	}{
		{"AURLWithoutAFormatDeliversRelayrsJSON", withSubscriptionKeys(""), "relayr"},
		{"ANATSTargetWithoutAFormatPublishesRelayrsJSON", withNATSTarget(""), "relayr"},
		{"AURLMayAskForStructuredCloudEvents", withSubscriptionKeys(`format = "cloudevents-structured"`), "cloudevents-structured"},
		{"AURLMayAskForBinaryCloudEvents", withSubscriptionKeys(`format = "cloudevents-binary"`), "cloudevents-binary"},
		{"ANATSTargetMayAskForStructuredCloudEvents", withNATSTarget(`format = "cloudevents-structured"`), "cloudevents-structured"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(c.text), "relayr.toml")
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Subscriptions[0].Format; got != c.want {
				t.Fatalf("format %q, want %q", got, c.want)
			}
			if !webhook.Format(cfg.Subscriptions[0].Format).Valid() {
				t.Fatalf("format %q is not one the sinks take", cfg.Subscriptions[0].Format)
			}
		})
	}
	for _, c := range []struct {
		name, text, want string
	}{
		{"AnUnknownFormat", withSubscriptionKeys(`format = "cloudevents"`), `format "cloudevents" is not "relayr", "cloudevents-structured" or "cloudevents-binary"`},
		{"BinaryCloudEventsIntoJetStream", withNATSTarget(`format = "cloudevents-binary"`), `format "cloudevents-binary" is for a url's webhooks`},
		{"AnUnknownFormatIntoJetStream", withNATSTarget(`format = "json"`), `format "json" is not "relayr" or "cloudevents-structured"`},
	} {
		t.Run("Refuses"+c.name, func(t *testing.T) {
			_, err := config.Parse([]byte(c.text), "relayr.toml")
			if err == nil || !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want %q", err, c.want)
			}
		})
	}
}
