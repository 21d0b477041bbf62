package config

import (
	"errors"
	"path/filepath"
	"reflect"
	"testing"
)

// fuzzSeed is a whole configuration as an operator writes one.
const fuzzSeed = `
listen = "127.0.0.1:9090"
operator_token = {env = "OP"}
holder = "replica-1"

[ledger]
driver = "postgres"
dsn = {file = "/run/secrets/dsn"}
rls = true
schema = "relayr"

[timings]
lease = "30s"
poll = "10s"
lookback = "2m"
debounce = "2s"
write_bound = "20s"
cap_limit = 20
budget = 40

[log]
level = "debug"
format = "json"

[[tenants]]
name = "acme"
token = {env = "ACME_TOKEN"}
[tenants.trackers.plane]
key = {env = "ACME_PLANE_KEY"}
webhook_secret = {env = "ACME_PLANE_HOOK"}
[tenants.trackers.vikunja]
key = {file = "/run/secrets/vikunja"}

[[bindings]]
tenant = "acme"
workspace = "ops"
tracker = "plane"
base_url = "https://plane.example.com"
web_url = "https://app.plane.example.com"
plane_workspace = "acme"
project = "0b0e4c5a-9f7e-4d43-a1b2-3c4d5e6f7a8b"
identifier = "OPS"
since = 2026-11-01T00:00:00Z
[bindings.defaults]
state = "todo"
labels = ["relayr"]
description = "Filed by relayr."

[[bindings]]
tenant = "acme"
workspace = "dev"
tracker = "vikunja"
base_url = "http://127.0.0.1:3456"
project = "2"

[[subscriptions]]
tenant = "acme"
workspace = "ops"
name = "rules"
url = "https://rules.example.com/hook"
secret = {file = "/run/secrets/rules"}

[[subscriptions]]
tenant = "acme"
workspace = "dev"
name = "audit"
url = "http://audit.internal/hook"
allow_insecure_http = true
secret = {env = "AUDIT_SECRET"}
`

// FuzzParse reads any text as a configuration: Parse never panics, refuses
// with an error matching ErrInvalid, and a configuration it accepts, with
// its defaults filled in, validates again and reads the same twice.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		fuzzSeed,
		"",
		"listen = \"127.0.0.1:8080\"\n",
		"[ledger]\ndriver = \"sqlite\"\npath = \"data/relayr.db\"\n",
		"[ledger]\ndriver = \"postgres\"\n",
		"[timings]\npoll = \"often\"\n",
		"[timings]\nlease = \"-1s\"\ncap_limit = -3\n",
		"[[tenants]]\nname = \"acme\"\ntoken = \"s3cret\"\n",
		"[[tenants]]\nname = \"a\\u0000b\"\ntoken = {env = \"T\"}\n",
		"[[bindings]]\ntenant = \"acme\"\n",
		"[[bindings]\n",
		"listen = 1\nlisten = 2\n",
		"a.b.c = {d = [1, {e = 2}]}\n",
		"since = 1979-05-27T07:32:00-08:00\n",
		"[[bindings]]\ntenant = \"acme\"\nbase_url = \"https://u:p@x\"\n",
		"[[bindings]]\nbase_url = \"http://[::1]:80\"\nallow_insecure_http = \"yes\"\n",
		"[[tenants]]\nname = \"acme\"\ntoken = {env = \"T\"}\n[tenants.trackers.jira]\nemail = \"bot@acme.example\"\nkey = {env = \"K\"}\n" +
			"[[bindings]]\ntenant = \"acme\"\nworkspace = \"ops\"\ntracker = \"jira\"\nbase_url = \"https://api.atlassian.com/ex/jira/c1\"\n" +
			"web_url = \"https://acme.atlassian.net\"\nproject = \"OPS\"\nissue_type = \"Bug\"\nsearch_lag = \"45s\"\ncancelled_resolutions = []\n" +
			"[bindings.statuses]\ntodo = \"Selected for Development\"\n",
		"[[tenants]]\nname = \"acme\"\ntoken = {env = \"T\"}\n[tenants.trackers.gitlab]\nkey = {env = \"K\"}\nwebhook_secret = {env = \"H\"}\n" +
			"[[bindings]]\ntenant = \"acme\"\nworkspace = \"ops\"\ntracker = \"gitlab\"\nbase_url = \"https://gitlab.com\"\n" +
			"project = \"acme/platform/ops\"\nlist_lag = \"10s\"\n[bindings.labels]\nstarted = \"workflow::doing\"\n" +
			"[bindings.limits]\nrequests = 7200\nnotes = -1\n",
		"[[tenants]]\nname = \"acme\"\ntoken = {env = \"T\"}\n[tenants.trackers.linear]\nkey = {env = \"K\"}\nwebhook_secret = {env = \"H\"}\n" +
			"[[bindings]]\ntenant = \"acme\"\nworkspace = \"ops\"\ntracker = \"linear\"\nteam = \"ENG\"\n" +
			"key_url = \"https://relayr.acme.example/key/\"\n",
	} {
		f.Add([]byte(s))
	}
	const path = "/etc/relayr/relayr.toml"
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b, path)
		if err != nil {
			if !errors.Is(err, ErrInvalid) || err.Error() == "" {
				t.Fatalf("a refusal that isn't ErrInvalid: %v", err)
			}
			return
		}
		if probs := c.validate(); len(probs) > 0 {
			t.Fatalf("an accepted configuration doesn't validate again: %q", probs)
		}
		if c.Listen == "" || (c.Ledger.Driver != "sqlite" && c.Ledger.Driver != "postgres") || c.Dir != filepath.Dir(path) {
			t.Fatalf("defaults not filled: listen %q, driver %q, dir %q", c.Listen, c.Ledger.Driver, c.Dir)
		}
		if !filepath.IsAbs(c.LedgerPath()) {
			t.Fatalf("ledger path %q is not anchored", c.LedgerPath())
		}
		again, err := Parse(b, path)
		if err != nil || !reflect.DeepEqual(c, again) {
			t.Fatalf("read twice: %+v, then %+v %v", c, again, err)
		}
	})
}
