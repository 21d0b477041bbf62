package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/relayr-go/relayr/apps/relayr/internal/config"
)

const natsSub = `
[[subscriptions]]
tenant = "acme"
workspace = "ops"
name = "broker"
[subscriptions.nats]
servers = ["nats://127.0.0.1:4222", "tls://nats.example.com:4222"]
stream = "RELAYR"
token = {env = "NATS_TOKEN"}
[subscriptions.nats.tls]
ca_file = "/etc/relayr/nats-ca.pem"
`

func TestANATSSubscriptionLoadsAndReadsItsCredentials(t *testing.T) {
	c, err := config.Parse([]byte(good+natsSub), "/etc/relayr/relayr.toml")
	if err != nil {
		t.Fatal(err)
	}
	n := c.Subscriptions[1].NATS
	if n == nil || n.Stream != "RELAYR" || n.SubjectPrefix != config.DefaultSubjectPrefix || len(n.Servers) != 2 || n.CreateStream || n.TLS.CAFile == "" {
		t.Fatalf("nats target %+v", n)
	}
	env := map[string]string{
		"OP": strings.Repeat("o", 32), "ACME_TOKEN": strings.Repeat("t", 32),
		"ACME_PLANE_KEY": "k", "ACME_PLANE_HOOK": "h", "NATS_TOKEN": "s3cret",
	}
	c.Subscriptions[0].Secret = config.Secret{Env: "OP"} // the URL subscription's file is not on this machine
	s, err := c.ReadSecrets(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if got := s.NATS["acme/ops/broker"]; got.Token != "s3cret" || got.Creds != "" || got.NKeySeed != "" {
		t.Fatalf("nats credentials %+v", got)
	}
	if _, ok := s.Subscriptions["acme/ops/broker"]; ok {
		t.Fatal("a NATS subscription asked for a webhook secret")
	}
	delete(env, "NATS_TOKEN")
	if _, err := c.ReadSecrets(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "nats.token") {
		t.Fatalf("a missing NATS token: %v", err)
	}
}

func TestNATSRefusals(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(string) string
		want string
	}{
		{"BothAURLAndANATSTarget", func(s string) string {
			return strings.Replace(s, `name = "broker"`, "name = \"broker\"\nurl = \"https://x.example.com\"", 1)
		}, "names both a url and a nats target"},
		{"NoServer", func(s string) string {
			return strings.Replace(s, `servers = ["nats://127.0.0.1:4222", "tls://nats.example.com:4222"]`, `servers = []`, 1)
		}, "names no server"},
		{"AnHTTPServer", func(s string) string { return strings.Replace(s, "nats://127.0.0.1:4222", "http://127.0.0.1:4222", 1) }, "is not a nats:// or tls:// URL"},
		{"CredentialsInTheURL", func(s string) string { return strings.Replace(s, "nats://127.0.0.1", "nats://u:p@127.0.0.1", 1) }, "carries credentials"},
		{"AStreamNameWithADot", func(s string) string { return strings.Replace(s, `stream = "RELAYR"`, `stream = "RE.LAYR"`, 1) }, "is not a stream name"},
		{"NoStream", func(s string) string { return strings.Replace(s, `stream = "RELAYR"`, ``, 1) }, "is not a stream name"},
		{"AWildcardPrefix", func(s string) string {
			return strings.Replace(s, `stream = "RELAYR"`, "stream = \"RELAYR\"\nsubject_prefix = \"relayr.*\"", 1)
		}, "is not subject tokens"},
		{"TwoKindsOfCredentials", func(s string) string {
			return strings.Replace(s, `token = {env = "NATS_TOKEN"}`, "token = {env = \"NATS_TOKEN\"}\nnkey_seed = {file = \"/run/secrets/seed\"}", 1)
		}, "more than one of creds, nkey_seed and token"},
		{"ATokenWrittenIntoTheFile", func(s string) string {
			return strings.Replace(s, `token = {env = "NATS_TOKEN"}`, `token = "s3cret"`, 1)
		}, "is a secret"},
		{"ACertificateWithoutItsKey", func(s string) string {
			return strings.Replace(s, `ca_file = "/etc/relayr/nats-ca.pem"`, `cert_file = "/etc/relayr/c.pem"`, 1)
		}, "both cert_file and key_file"},
		{"AnUnknownNATSKey", func(s string) string {
			return strings.Replace(s, `stream = "RELAYR"`, "stream = \"RELAYR\"\nsubjects = \"x\"", 1)
		}, `unknown key "subscriptions.nats.subjects"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := config.Parse([]byte(c.edit(good+natsSub)), "relayr.toml")
			if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}
