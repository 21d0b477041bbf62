package config_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/relayr-go/relayr/adapters/webhook"
	"github.com/relayr-go/relayr/apps/relayr/internal/config"
)

// withSubscriptionKeys puts lines into the rules subscription, its secret
// read from RULES rather than a file.
func withSubscriptionKeys(lines string) string {
	return strings.Replace(good, `secret = {file = "/run/secrets/rules"}`, "secret = {env = \"RULES\"}\n"+lines, 1)
}

// A subscription signs as ADR-1014 says: Standard Webhooks alone unless
// it asks for the old header too, a whsec_ secret or a plain one, a
// previous secret beside it during a rotation.
func TestSubscriptionSigning(t *testing.T) {
	whsec := webhook.NewSecret()
	env := map[string]string{"OP": opToken, "ACME_TOKEN": acmeToken, "ACME_PLANE_KEY": "key", "ACME_PLANE_HOOK": "hook"}
	read := func(t *testing.T, text string, secrets map[string]string) (*config.Config, *config.Secrets, error) {
		t.Helper()
		c, err := config.Parse([]byte(text), "relayr.toml")
		if err != nil {
			t.Fatal(err)
		}
		e := map[string]string{}
		for k, v := range env {
			e[k] = v
		}
		for k, v := range secrets {
			e[k] = v
		}
		s, err := c.ReadSecrets(func(k string) string { return e[k] })
		return c, s, err
	}

	t.Run("ASubscriptionThatNamesNoneSignsAsStandardWebhooks", func(t *testing.T) {
		c, s, err := read(t, withSubscriptionKeys(""), map[string]string{"RULES": whsec})
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Subscriptions[0].Signature; got != string(webhook.SignStandard) {
			t.Fatalf("signature %q, want %q by default", got, webhook.SignStandard)
		}
		if s.Subscriptions["acme/ops/rules"] != whsec || len(s.PreviousSecrets) != 0 {
			t.Fatalf("secrets %+v", s)
		}
	})

	t.Run("AnExistingSubscriptionKeepsTheOldHeaderWithItsPlainSecretWhenItAsks", func(t *testing.T) {
		for _, sig := range []webhook.Signing{webhook.SignBoth, webhook.SignRelayr} {
			c, s, err := read(t, withSubscriptionKeys(`signature = "`+string(sig)+`"`), map[string]string{"RULES": "an-old-plain-secret"})
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Subscriptions[0].Signature; got != string(sig) {
				t.Fatalf("signature %q, want %q as asked", got, sig)
			}
			if s.Subscriptions["acme/ops/rules"] != "an-old-plain-secret" {
				t.Fatalf("secrets %+v", s)
			}
		}
	})

	t.Run("ARotationReadsBothSecrets", func(t *testing.T) {
		c, s, err := read(t, withSubscriptionKeys("previous_secret = {env = \"RULES_OLD\"}\nsignature = \"standard\""),
			map[string]string{"RULES": whsec, "RULES_OLD": "an-old-plain-secret"})
		if err != nil {
			t.Fatal(err)
		}
		if c.Subscriptions[0].Signature != "standard" || s.Subscriptions["acme/ops/rules"] != whsec || s.PreviousSecrets["acme/ops/rules"] != "an-old-plain-secret" {
			t.Fatalf("%q %+v", c.Subscriptions[0].Signature, s)
		}
	})

	for _, c := range []struct {
		name  string
		lines string
		want  string
	}{
		{"AnUnknownSignature", `signature = "hmac"`, `signature "hmac" is not "standard", "relayr" or "both"`},
		{"APreviousSecretWithTheOldHeaderAlone", "previous_secret = {env = \"RULES_OLD\"}\nsignature = \"relayr\"", `previous_secret signs only Standard Webhooks' webhook-signature`},
		{"APreviousSecretWrittenInTheFile", `previous_secret = "whsec_abc"`, "previous_secret is a secret"},
	} {
		t.Run("Refuses"+c.name, func(t *testing.T) {
			_, err := config.Parse([]byte(withSubscriptionKeys(c.lines)), "relayr.toml")
			if err == nil || !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want %q", err, c.want)
			}
		})
	}

	t.Run("RefusesSigningKeysOnANATSTarget", func(t *testing.T) {
		text := strings.Replace(good, "url = \"https://rules.example.com/hook\"\nsecret = {file = \"/run/secrets/rules\"}",
			"signature = \"standard\"\n[subscriptions.nats]\nservers = [\"nats://127.0.0.1:4222\"]\nstream = \"RELAYR\"", 1)
		if _, err := config.Parse([]byte(text), "relayr.toml"); err == nil || !strings.Contains(err.Error(), "previous_secret and signature are for a url's webhooks") {
			t.Fatalf("%v", err)
		}
	})

	short := "whsec_" + base64.StdEncoding.EncodeToString([]byte("only-16-bytes-!!"))
	for _, c := range []struct {
		name, secret, previous, want string
	}{
		{"AWhsecSecretThatIsNotBase64", "whsec_not*base64", "", "subscription rules secret: what follows whsec_ is not standard base64"},
		{"AWhsecKeyTooShort", short, "", "subscription rules secret: its key is 16 bytes; a whsec_ secret's key is 24 to 64"},
		{"ABadPreviousSecret", whsec, "whsec_not*base64", "subscription rules previous_secret: what follows whsec_ is not standard base64"},
	} {
		t.Run("Refuses"+c.name+"WithoutQuotingIt", func(t *testing.T) {
			lines := ""
			secrets := map[string]string{"RULES": c.secret}
			if c.previous != "" {
				lines, secrets["RULES_OLD"] = "previous_secret = {env = \"RULES_OLD\"}", c.previous
			}
			_, _, err := read(t, withSubscriptionKeys(lines), secrets)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want %q", err, c.want)
			}
			for _, v := range []string{"not*base64", "b25seS0xNi"} {
				if strings.Contains(err.Error(), v) {
					t.Fatalf("the refusal quotes the secret: %v", err)
				}
			}
		})
	}
}
