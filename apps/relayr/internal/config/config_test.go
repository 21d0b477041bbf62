package config_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/gitlab"
	"github.com/relayr-go/relayr/adapters/linear"
	"github.com/relayr-go/relayr/apps/relayr/internal/config"
	"github.com/relayr-go/relayr/core/tracker"
)

const good = `
listen = "127.0.0.1:9090"
operator_token = {env = "OP"}

[ledger]
driver = "sqlite"

[timings]
poll = "10s"

[[tenants]]
name = "acme"
token = {env = "ACME_TOKEN"}
[tenants.trackers.plane]
key = {env = "ACME_PLANE_KEY"}
webhook_secret = {env = "ACME_PLANE_HOOK"}

[[bindings]]
tenant = "acme"
workspace = "ops"
tracker = "plane"
base_url = "https://plane.example.com"
plane_workspace = "acme"
project = "0b0e4c5a-9f7e-4d43-a1b2-3c4d5e6f7a8b"
since = 2026-11-01T00:00:00Z
[bindings.defaults]
state = "todo"
labels = ["relayr"]

[[subscriptions]]
tenant = "acme"
workspace = "ops"
name = "rules"
url = "https://rules.example.com/hook"
secret = {file = "/run/secrets/rules"}
`

func TestAGoodConfigurationLoadsWithTheSeedsDefaults(t *testing.T) {
	c, err := config.Parse([]byte(good), "/etc/relayr/relayr.toml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:9090" || c.Ledger.Driver != "sqlite" || len(c.Bindings) != 1 {
		t.Fatalf("%+v", c)
	}
	if got := c.LedgerPath(); got != "/etc/relayr/relayr.db" {
		t.Fatalf("ledger path %s, want relayr.db beside the configuration", got)
	}
	if c.Timings.Poll.Or(30*time.Second) != 10*time.Second || c.Timings.Lease.Or(30*time.Second) != 30*time.Second {
		t.Fatalf("timings %+v", c.Timings)
	}
	if c.Bindings[0].Since == nil || !c.Bindings[0].Since.Equal(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("since %v", c.Bindings[0].Since)
	}
}

// withVikunja adds acme's Vikunja credentials and two Vikunja bindings, on
// base URLs a and b with concurrent_writes na and nb (0 leaves it unset).
func withVikunja(s, a string, na int, b string, nb int) string {
	s = strings.Replace(s, "[tenants.trackers.plane]", "[tenants.trackers.vikunja]\nkey = {env = \"ACME_VIKUNJA_KEY\"}\n[tenants.trackers.plane]", 1)
	binding := func(ws, url string, n int) string {
		out := fmt.Sprintf("\n[[bindings]]\ntenant = \"acme\"\nworkspace = %q\ntracker = \"vikunja\"\nbase_url = %q\nproject = \"7\"\n", ws, url)
		if n != 0 {
			out += fmt.Sprintf("concurrent_writes = %d\n", n)
		}
		return out
	}
	i := strings.Index(s, "[[subscriptions]]")
	return s[:i] + binding("infra", a, na) + binding("web", b, nb) + "\n" + s[i:]
}

func TestOneSettingPerVikunjaServer(t *testing.T) {
	for _, c := range []struct {
		name   string
		a      string
		na     int
		b      string
		nb     int
		writes []int
	}{
		{"UnsetTwice", "https://v.example.com", 0, "https://v.example.com/", 0, []int{0, 0}},
		{"TheSameSettingTwice", "https://v.example.com", 4, "https://v.example.com", 4, []int{4, 4}},
		{"TwoServersTwoSettings", "https://v.example.com", 4, "https://w.example.com", 0, []int{4, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(withVikunja(good, c.a, c.na, c.b, c.nb)), "relayr.toml")
			if err != nil {
				t.Fatal(err)
			}
			if got := []int{cfg.Bindings[1].ConcurrentWrites, cfg.Bindings[2].ConcurrentWrites}; got[0] != c.writes[0] || got[1] != c.writes[1] {
				t.Fatalf("concurrent_writes %v, want %v", got, c.writes)
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(string) string
		want string
	}{
		{"AnUnknownKeyWithItsLine", func(s string) string {
			return strings.Replace(s, "[timings]\n", "[timings]\npoll_every = \"5s\"\n", 1)
		}, `line 9: unknown key "timings.poll_every"`},
		{"AnUnknownKeyInABinding", func(s string) string {
			return strings.Replace(s, `tracker = "plane"`, "tracker = \"plane\"\nprojekt = \"x\"", 1)
		}, `unknown key "bindings.projekt"`},
		{"ASecretWrittenInTheFile", func(s string) string {
			return strings.Replace(s, `token = {env = "ACME_TOKEN"}`, `token = "s3cret"`, 1)
		}, "line 13, column 9: tenants.token is a secret: read it from the environment or a file"},
		{"AMissingSecret", func(s string) string {
			return strings.Replace(s, `token = {env = "ACME_TOKEN"}`, "", 1)
		}, `tenant "acme": token must be read from env or file`},
		{"ABadURL", func(s string) string {
			return strings.Replace(s, `base_url = "https://plane.example.com"`, `base_url = "plane.example.com"`, 1)
		}, `base_url: "plane.example.com" is not an http(s) URL`},
		{"ABadSubscriptionURL", func(s string) string {
			return strings.Replace(s, `url = "https://rules.example.com/hook"`, `url = "ftp://x"`, 1)
		}, `url: "ftp://x" is not an http(s) URL`},
		{"AWorkspaceNameOverTheLedgersLimit", func(s string) string {
			return strings.Replace(s, `workspace = "ops"`, `workspace = "`+strings.Repeat("w", 300)+`"`, 1)
		}, "is 300 bytes, over 256"},
		{"ATenantNameOverTheLedgersLimit", func(s string) string {
			return strings.Replace(s, `name = "acme"`, `name = "`+strings.Repeat("t", 257)+`"`, 1)
		}, "is 257 bytes, over 256"},
		{"ASubscriptionNameOverTheLedgersLimit", func(s string) string {
			return strings.Replace(s, `name = "rules"`, `name = "`+strings.Repeat("r", 257)+`"`, 1)
		}, "is 257 bytes, over 256"},
		{"AHolderTooLongForItsRunsSuffix", func(s string) string {
			return strings.Replace(s, `operator_token = {env = "OP"}`, "operator_token = {env = \"OP\"}\nholder = \""+strings.Repeat("h", 252)+"\"", 1)
		}, "holder: is 252 bytes, over 251"},
		{"ANULInTheDefaultDescription", func(s string) string {
			return strings.Replace(s, `labels = ["relayr"]`, "labels = [\"relayr\"]\ndescription = \"a\\u0000b\"", 1)
		}, "defaults.description: invalid description: holds the control character"},
		{"ABlankDefaultLabel", func(s string) string {
			return strings.Replace(s, `labels = ["relayr"]`, `labels = ["  "]`, 1)
		}, "defaults.labels: invalid labels: holds a blank label"},
		{"AWriteBoundPastTheRetake", func(s string) string {
			return strings.Replace(s, "[timings]\n", "[timings]\nwrite_bound = \"45s\"\n", 1)
		}, "timings: write_bound (45s) must be shorter than retake_after (30s)"},
		{"ARequestTimeoutPastTheWriteBound", func(s string) string {
			return strings.Replace(s, "[timings]\n", "[timings]\nrequest_timeout = \"25s\"\n", 1)
		}, "timings: request_timeout (25s) must be at most write_bound (20s)"},
		{"ASettleThatReachesTheRetake", func(s string) string {
			return strings.Replace(s, "[timings]\n", "[timings]\nwrite_settle = \"10s\"\n", 1)
		}, "timings: write_bound (20s) plus write_settle (10s) must be shorter than retake_after (30s)"},
		{"ADuplicateBinding", func(s string) string {
			i := strings.Index(s, "[[bindings]]")
			j := strings.Index(s, "[[subscriptions]]")
			return s[:j] + s[i:j] + s[j:]
		}, "the workspace is bound twice"},
		{"AnUnknownTenant", func(s string) string {
			return strings.Replace(s, "tenant = \"acme\"\nworkspace = \"ops\"\ntracker", "tenant = \"nobody\"\nworkspace = \"ops\"\ntracker", 1)
		}, `tenant "nobody" is not configured`},
		{"AnUnknownTracker", func(s string) string {
			return strings.Replace(s, `tracker = "plane"`, `tracker = "redmine"`, 1)
		}, `tracker "redmine" is not plane, vikunja, gitea, github, jira, gitlab or linear`},
		{"NoCredentialsForTheBindingsTracker", func(s string) string {
			return strings.Replace(s, "[tenants.trackers.plane]", "[tenants.trackers.vikunja]", 1)
		}, `tenant "acme" has no credentials for plane`},
		{"ATrackerLimitOfAnUnknownKind", func(s string) string {
			return s + "\n[tracker_limits.redmine]\nper_hour = 10\n"
		}, `tracker_limits: tracker "redmine" is not plane, vikunja, gitea, github, jira, gitlab or linear`},
		{"ANegativeTrackerLimit", func(s string) string {
			return s + "\n[tracker_limits.github]\nper_hour = -1\n"
		}, "tracker_limits.github: limits are counts, not below 0"},
		{"WritePointsWithoutPoints", func(s string) string {
			return s + "\n[tracker_limits.github]\nwrite_points = 5\n"
		}, "write_points counts against points_per_minute"},
		{"AGiteaProjectThatIsNoRepository", func(s string) string {
			return strings.Replace(strings.Replace(s, `tracker = "plane"`, `tracker = "gitea"`, 1), "[tenants.trackers.plane]", "[tenants.trackers.gitea]", 1)
		}, `gitea's project is its repository`},
		{"ABadDuration", func(s string) string { return strings.Replace(s, `poll = "10s"`, `poll = "often"`, 1) }, "not a duration"},
		{"ABadState", func(s string) string { return strings.Replace(s, `state = "todo"`, `state = "open"`, 1) }, `defaults.state "open"`},
		{"PostgresWithoutADSN", func(s string) string { return strings.Replace(s, `driver = "sqlite"`, `driver = "postgres"`, 1) }, "needs dsn"},
		{"AnUnknownDriver", func(s string) string { return strings.Replace(s, `driver = "sqlite"`, `driver = "mysql"`, 1) }, `driver "mysql"`},
		{"BrokenTOML", func(s string) string { return s + "\n[[bindings]\n" }, "line"},
		{"AUserAndPasswordInABaseURL", func(s string) string {
			return strings.Replace(s, `base_url = "https://plane.example.com"`, `base_url = "https://bot:hunter2@plane.example.com"`, 1)
		}, "base_url: the URL carries a user name or password"},
		{"AUserInAWebURL", func(s string) string {
			return strings.Replace(s, `base_url = "https://plane.example.com"`, "base_url = \"https://plane.example.com\"\nweb_url = \"https://bot@app.example.com\"", 1)
		}, "web_url: the URL carries a user name or password"},
		{"AUserAndPasswordInASubscriptionURL", func(s string) string {
			return strings.Replace(s, `url = "https://rules.example.com/hook"`, `url = "https://rules:hunter2@rules.example.com/hook"`, 1)
		}, "url: the URL carries a user name or password"},
		{"PlainHTTPToATrackerNotOnLoopback", func(s string) string {
			return strings.Replace(s, `base_url = "https://plane.example.com"`, `base_url = "http://plane.example.com"`, 1)
		}, `base_url: "http://plane.example.com" is plain http to a host that is not loopback: use https, or set allow_insecure_http = true`},
		{"PlainHTTPToASubscriberNotOnLoopback", func(s string) string {
			return strings.Replace(s, `url = "https://rules.example.com/hook"`, `url = "http://10.0.0.7/hook"`, 1)
		}, `url: "http://10.0.0.7/hook" is plain http to a host that is not loopback`},
		{"PlainHTTPAllowedForOneBindingIsNotAllowedForTheSubscription", func(s string) string {
			s = strings.Replace(s, `base_url = "https://plane.example.com"`, "base_url = \"http://plane.example.com\"\nallow_insecure_http = true", 1)
			return strings.Replace(s, `url = "https://rules.example.com/hook"`, `url = "http://rules.example.com/hook"`, 1)
		}, `url: "http://rules.example.com/hook" is plain http`},
		{"ConcurrentWritesOnPlane", func(s string) string {
			return strings.Replace(s, `tracker = "plane"`, "tracker = \"plane\"\nconcurrent_writes = 2", 1)
		}, "concurrent_writes is for vikunja"},
		{"TrackerConnsBelowOne", func(s string) string {
			return "tracker_conns = -2\n" + s
		}, "tracker_conns -2 is below 1"},
		{"ConcurrentWritesBelowOne", func(s string) string {
			return withVikunja(s, "https://v.example.com", -1, "https://v.example.com", 0)
		}, "concurrent_writes -1 is below 1"},
		{"OneVikunjaServerWithTwoSettings", func(s string) string {
			return withVikunja(s, "https://v.example.com", 4, "HTTPS://V.example.com/", 0)
		}, "concurrent_writes unset (the server says) for https://v.example.com, where bindings[1] says 4: one server takes one setting"},
		{"OneVikunjaServerUnsetAndSetToOne", func(s string) string {
			return withVikunja(s, "https://v.example.com", 0, "https://v.example.com", 1)
		}, "concurrent_writes 1 for https://v.example.com, where bindings[1] says unset (the server says): one server takes one setting"},
		{"WriteHoldOnPlane", func(s string) string {
			return strings.Replace(s, `tracker = "plane"`, "tracker = \"plane\"\nwrite_hold = \"1s\"", 1)
		}, "write_hold is for vikunja"},
		{"WriteHoldNotADuration", func(s string) string {
			return strings.Replace(withVikunja(s, "https://v.example.com", 0, "https://v.example.com", 0), "project = \"7\"\n", "project = \"7\"\nwrite_hold = \"never\"\n", 1)
		}, `"never" is neither a duration above zero such as 500ms nor "until_answered"`},
		{"WriteHoldPastTheWriteBound", func(s string) string {
			return strings.Replace(withVikunja(s, "https://v.example.com", 0, "https://w.example.com", 0), "project = \"7\"\n", "project = \"7\"\nwrite_hold = \"30s\"\n", 1)
		}, "write_hold 30s is past the write bound 20s"},
		{"OneVikunjaServerWithTwoWriteHolds", func(s string) string {
			return strings.Replace(withVikunja(s, "https://v.example.com", 0, "https://v.example.com", 0), "project = \"7\"\n", "project = \"7\"\nwrite_hold = \"until_answered\"\n", 1)
		}, "write_hold for https://v.example.com differs from bindings[1]'s: one server takes one setting"},
		{"ASubscriptionOfAnUnboundWorkspace", func(s string) string {
			return strings.Replace(s, "workspace = \"ops\"\nname = \"rules\"", "workspace = \"dev\"\nname = \"rules\"", 1)
		}, "acme/dev is not a bound workspace"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := config.Parse([]byte(c.edit(good)), "relayr.toml")
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, config.ErrInvalid) {
				t.Fatalf("%v does not match ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not say %q", err, c.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("the refusal shows the password: %q", err)
			}
		})
	}
}

func TestWhatIsRefusedByDefaultIsTakenWhereItIsSafeOrAllowed(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(string) string
	}{
		{"PlainHTTPToLoopback", func(s string) string {
			s = strings.Replace(s, `base_url = "https://plane.example.com"`, `base_url = "http://127.0.0.1:8000"`, 1)
			return strings.Replace(s, `url = "https://rules.example.com/hook"`, `url = "http://localhost:9000/hook"`, 1)
		}},
		{"PlainHTTPToIPv6Loopback", func(s string) string {
			return strings.Replace(s, `base_url = "https://plane.example.com"`, `base_url = "http://[::1]:8000"`, 1)
		}},
		{"PlainHTTPWhereAllowed", func(s string) string {
			s = strings.Replace(s, `base_url = "https://plane.example.com"`, "base_url = \"http://plane.internal\"\nallow_insecure_http = true", 1)
			return strings.Replace(s, `url = "https://rules.example.com/hook"`, "url = \"http://rules.internal/hook\"\nallow_insecure_http = true", 1)
		}},
		{"APlainHTTPWebURL", func(s string) string {
			return strings.Replace(s, `base_url = "https://plane.example.com"`, "base_url = \"https://plane.example.com\"\nweb_url = \"http://plane.example.com\"", 1)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := config.Parse([]byte(c.edit(good)), "relayr.toml"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// tokens of the right length, as `openssl rand -hex 16` makes them.
const (
	opToken   = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
	acmeToken = "a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5"
)

func TestTokensThatAreShortOrSharedWithTheOperatorAreRefused(t *testing.T) {
	c, err := config.Parse([]byte(good), "relayr.toml")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"AShortTenantToken", map[string]string{"OP": opToken, "ACME_TOKEN": "acme-token"},
			[]string{"tenant acme token: is 10 bytes; a token must be at least 32"}},
		{"AShortOperatorToken", map[string]string{"OP": "short-op", "ACME_TOKEN": acmeToken},
			[]string{"operator_token: is 8 bytes; a token must be at least 32"}},
		{"TheOperatorsTokenGivenToATenant", map[string]string{"OP": opToken, "ACME_TOKEN": opToken},
			[]string{"operator_token is tenant acme's token: the operator's token must be its own"}},
		{"OneLessThanEnough", map[string]string{"OP": opToken[:31], "ACME_TOKEN": acmeToken[:31]},
			[]string{"operator_token: is 31 bytes", "tenant acme token: is 31 bytes"}},
	} {
		t.Run(k.name, func(t *testing.T) {
			env := map[string]string{"ACME_PLANE_KEY": "key", "ACME_PLANE_HOOK": "hook"}
			for n, v := range k.env {
				env[n] = v
			}
			c.Subscriptions = nil
			_, err := c.ReadSecrets(func(n string) string { return env[n] })
			if err == nil || !errors.Is(err, config.ErrInvalid) {
				t.Fatalf("taken: %v", err)
			}
			for _, w := range k.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not say %q", err, w)
				}
			}
			for _, v := range k.env {
				if strings.Contains(err.Error(), v) {
					t.Fatalf("the refusal shows a token: %q", err)
				}
			}
		})
	}
}

func TestSecretsAreReadFromTheEnvironmentOrFilesAndMissingOnesAreNamedTogether(t *testing.T) {
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "rules")
	if err := os.WriteFile(secretFile, []byte("rules-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse([]byte(strings.Replace(good, "/run/secrets/rules", secretFile, 1)), "relayr.toml")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"OP": opToken, "ACME_TOKEN": acmeToken, "ACME_PLANE_KEY": "key", "ACME_PLANE_HOOK": "hook"}
	s, err := c.ReadSecrets(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if s.Tokens[acmeToken] != "acme" || s.Trackers["acme/plane"].Token != "key" || s.Trackers["acme/plane"].WebhookSecret != "hook" || s.Subscriptions["acme/ops/rules"] != "rules-secret" {
		t.Fatalf("%+v", s)
	}
	delete(env, "ACME_TOKEN")
	delete(env, "ACME_PLANE_KEY")
	_, err = c.ReadSecrets(func(k string) string { return env[k] })
	if err == nil || !strings.Contains(err.Error(), "ACME_TOKEN") || !strings.Contains(err.Error(), "ACME_PLANE_KEY") {
		t.Fatalf("err %v: want both missing secrets named", err)
	}
}

func TestWarnings(t *testing.T) {
	c, err := config.Parse([]byte(strings.Replace(good, "[timings]\n", "[timings]\nshutdown_grace = \"2s\"\n", 1)), "relayr.toml")
	if err != nil {
		t.Fatal(err)
	}
	if w := c.Warnings(); len(w) != 1 || !strings.Contains(w[0], "shutdown_grace (2s) is not longer than write_bound (20s)") {
		t.Fatalf("warnings %q, want the grace's", w)
	}
	c, err = config.Parse([]byte(good), "relayr.toml")
	if err != nil {
		t.Fatal(err)
	}
	if w := c.Warnings(); len(w) != 0 {
		t.Fatalf("the defaults warn %q", w)
	}
}

// request_timeout and write_settle left out follow a shortened write
// bound: ADR-0033's 10 s a phase and the 2 s settle, or what fits.
func TestRequestTimeoutAndSettleFollowAShortWriteBound(t *testing.T) {
	for _, c := range []struct {
		t                 config.Timings
		requests, settles time.Duration
	}{
		{config.Timings{}, 10 * time.Second, 2 * time.Second},
		{config.Timings{WriteBound: config.Duration{Duration: 2 * time.Second}, RetakeAfter: config.Duration{Duration: 4 * time.Second}}, 2 * time.Second, time.Second},
		{config.Timings{RequestTimeout: config.Duration{Duration: 3 * time.Second}, WriteSettle: config.Duration{Duration: 5 * time.Second}}, 3 * time.Second, 5 * time.Second},
	} {
		if got := c.t.Requests(); got != c.requests {
			t.Errorf("%+v: requests %v, want %v", c.t, got, c.requests)
		}
		if got := c.t.Settle(); got != c.settles {
			t.Errorf("%+v: settle %v, want %v", c.t, got, c.settles)
		}
	}
}

func TestTrackerLimitsReplaceTheKindsWindows(t *testing.T) {
	c := &config.Config{TrackerLimits: map[string]config.TrackerLimits{
		"github":  {PerHour: 1000, PointsPerMinute: 300, WritePoints: 3},
		"vikunja": {PerHour: 600},
	}}
	ws := c.BudgetWindows()
	if g := ws["github"]; len(g) != 2 || g[0].Limit != 1000 || !g[0].Reported || g[1].Limit != 300 || g[1].WriteCost != 3 {
		t.Fatalf("github's windows %+v", g)
	}
	if v := ws["vikunja"]; len(v) != 1 || v[0].Span != time.Hour || v[0].Limit != 600 {
		t.Fatalf("vikunja's windows %+v", v)
	}
	if d := (&config.Config{}).BudgetWindows()["github"]; len(d) != 2 || d[0].Limit != 5000 {
		t.Fatalf("the defaults %+v", d)
	}
	if off := (&config.Config{TrackerLimits: map[string]config.TrackerLimits{"github": {}}}).BudgetWindows()["github"]; len(off) != 0 {
		t.Fatalf("a table of zeros left %+v", off)
	}
}

// write_hold reads a duration or "until_answered", and is unset (learned)
// by default.
func TestWriteHoldIsReadOnVikunjaBindings(t *testing.T) {
	for _, c := range []struct {
		value string
		want  time.Duration
	}{{"", 0}, {`write_hold = "500ms"`, 500 * time.Millisecond}, {`write_hold = "until_answered"`, -1}} {
		s := withVikunja(good, "https://v.example.com", 0, "https://w.example.com", 0)
		if c.value != "" {
			s = strings.Replace(s, "project = \"7\"\n", "project = \"7\"\n"+c.value+"\n", 1)
		}
		cfg, err := config.Parse([]byte(s), "relayr.toml")
		if err != nil {
			t.Fatalf("%s: %v", c.value, err)
		}
		if got := cfg.Bindings[1].WriteHold.Hold; got != c.want {
			t.Fatalf("%s: write_hold %v, want %v", c.value, got, c.want)
		}
	}
}

// withJira adds acme's Jira credentials and a Jira binding of workspace
// "support", with extra lines of its own ("project = ..." among them).
func withJira(s, extra string) string {
	s = strings.Replace(s, "[tenants.trackers.plane]", "[tenants.trackers.jira]\nemail = \"relayr@acme.example\"\nkey = {env = \"ACME_JIRA_TOKEN\"}\nwebhook_secret = {env = \"ACME_JIRA_HOOK\"}\n[tenants.trackers.plane]", 1)
	i := strings.Index(s, "[[subscriptions]]")
	return s[:i] + "\n[[bindings]]\ntenant = \"acme\"\nworkspace = \"support\"\ntracker = \"jira\"\nbase_url = \"https://acme.atlassian.net\"\n" + extra + "\n" + s[i:]
}

func TestAJiraBindingLoadsWithItsKeys(t *testing.T) {
	cfg, err := config.Parse([]byte(withJira(good, `project = "OPS"
issue_type = "Bug"
cancelled_resolutions = ["Won't Do", "Duplicate"]
search_lag = "45s"
[bindings.statuses]
todo = "Selected for Development"
cancelled = "Closed"
`)), "relayr.toml")
	if err != nil {
		t.Fatal(err)
	}
	b := cfg.Bindings[1]
	if b.Tracker != "jira" || b.Project != "OPS" || cfg.Tenants[0].Trackers["jira"].Email != "relayr@acme.example" {
		t.Fatalf("binding %+v, tenant %+v", b, cfg.Tenants[0])
	}
	jc := b.Jira(cfg.Tenants[0].Trackers["jira"].Email)
	if jc.BaseURL != "https://acme.atlassian.net" || jc.Project != "OPS" || jc.Email != "relayr@acme.example" || jc.IssueType != "Bug" ||
		jc.SearchLag != 45*time.Second || len(jc.CancelledResolutions) != 2 ||
		jc.Statuses[tracker.Todo] != "Selected for Development" || jc.Statuses[tracker.Cancelled] != "Closed" || len(jc.Statuses) != 2 {
		t.Fatalf("driver configuration %+v", jc)
	}
}

func TestAJiraBindingLeavesTheDriversDefaults(t *testing.T) {
	cfg, err := config.Parse([]byte(withJira(good, `project = "OPS"`)), "relayr.toml")
	if err != nil {
		t.Fatal(err)
	}
	jc := cfg.Bindings[1].Jira("")
	// The driver fills them in (jira.NewConnector): Task, its
	// resolutions, 30 s; no email is an OAuth bearer token.
	if jc.IssueType != "" || jc.Statuses != nil || jc.CancelledResolutions != nil || jc.SearchLag != 0 || jc.Email != "" {
		t.Fatalf("driver configuration %+v", jc)
	}
	// [] names no resolution at all, which is not the defaults.
	cfg, err = config.Parse([]byte(withJira(good, "project = \"OPS\"\ncancelled_resolutions = []")), "relayr.toml")
	if err != nil {
		t.Fatal(err)
	}
	if rs := cfg.Bindings[1].Jira("").CancelledResolutions; rs == nil || len(rs) != 0 {
		t.Fatalf("cancelled_resolutions = [] reads as %#v, want an empty list", rs)
	}
	// Atlassian's gateway with the site beside it, and no email.
	gw := strings.Replace(withJira(good, "project = \"OPS\"\nweb_url = \"https://acme.atlassian.net\""),
		`base_url = "https://acme.atlassian.net"`, `base_url = "https://api.atlassian.com/ex/jira/11223344-a1b2-c3d4-e5f6-aabbccddeeff"`, 1)
	gw = strings.Replace(gw, "email = \"relayr@acme.example\"\n", "", 1)
	if _, err := config.Parse([]byte(gw), "relayr.toml"); err != nil {
		t.Fatal(err)
	}
}

func TestJiraRefusals(t *testing.T) {
	const project = "project = \"OPS\"\n"
	for _, c := range []struct {
		name string
		cfg  string
		want string
	}{
		{"NoProject", withJira(good, ""), `bindings[1] (acme/support): names no project`},
		{"AProjectThatIsNoKey", withJira(good, `project = "OPS-12"`),
			`bindings[1] (acme/support): project: "OPS-12" is no project key (letters, digits and _, starting with a letter)`},
		{"TheGatewayWithoutTheSite", strings.Replace(withJira(good, project), `base_url = "https://acme.atlassian.net"`, `base_url = "https://api.atlassian.com/ex/jira/abc"`, 1),
			`bindings[1] (acme/support): web_url: the gateway base URL "https://api.atlassian.com/ex/jira/abc" is no site a person opens: name the site (https://<site>.atlassian.net)`},
		{"AnUnknownState", withJira(good, project+"[bindings.statuses]\nopen = \"To Do\""),
			`bindings[1] (acme/support): statuses: "open" is not backlog, todo, started, done or cancelled`},
		{"ABlankStatus", withJira(good, project+"[bindings.statuses]\ntodo = \" \""),
			`bindings[1] (acme/support): statuses.todo is blank: name a status of the issue type's workflow`},
		{"ABlankIssueType", withJira(good, project+`issue_type = "  "`),
			`bindings[1] (acme/support): issue_type "  " is blank: name an issue type of the project, or leave it out for Task`},
		{"ABlankResolution", withJira(good, project+`cancelled_resolutions = ["Won't Do", ""]`),
			`bindings[1] (acme/support): cancelled_resolutions[1] is blank: name a resolution`},
		{"ANegativeSearchLag", withJira(good, project+`search_lag = "-5s"`), `bindings.search_lag: "-5s" must be more than zero`},
		{"AZeroSearchLag", withJira(good, project+`search_lag = "0s"`), `bindings.search_lag: "0s" must be more than zero`},
		{"ASearchLagThatIsNoDuration", withJira(good, project+`search_lag = "soon"`), `bindings.search_lag: "soon" is not a duration such as 30s or 2m`},
		{"AnEmailThatIsNoAddress", strings.Replace(withJira(good, project), `email = "relayr@acme.example"`, `email = "Relayr <relayr@acme.example>"`, 1),
			`tenant "acme": trackers.jira.email "Relayr <relayr@acme.example>" is not an email address such as bot@example.com`},
		{"AnEmailForPlane", strings.Replace(good, `key = {env = "ACME_PLANE_KEY"}`, "key = {env = \"ACME_PLANE_KEY\"}\nemail = \"bot@acme.example\"", 1),
			`tenant "acme": trackers.plane.email is for jira`},
		{"NoJiraCredentials", strings.Replace(withJira(good, project), "[tenants.trackers.jira]", "[tenants.trackers.gitea]", 1),
			`bindings[1] (acme/support): tenant "acme" has no credentials for jira`},
		{"ALoginOnJira", withJira(good, project+`login = "relayr[bot]"`), `login is for github`},
		{"IssueTypeOnPlane", strings.Replace(good, `tracker = "plane"`, "tracker = \"plane\"\nissue_type = \"Task\"", 1),
			`bindings[0] (acme/ops): issue_type is for jira`},
		{"StatusesOnPlane", strings.Replace(good, "[bindings.defaults]", "[bindings.statuses]\ntodo = \"To Do\"\n[bindings.defaults]", 1),
			`bindings[0] (acme/ops): statuses is for jira`},
		{"CancelledResolutionsOnPlane", strings.Replace(good, `tracker = "plane"`, "tracker = \"plane\"\ncancelled_resolutions = [\"Won't Do\"]", 1),
			`bindings[0] (acme/ops): cancelled_resolutions is for jira`},
		{"SearchLagOnPlane", strings.Replace(good, `tracker = "plane"`, "tracker = \"plane\"\nsearch_lag = \"30s\"", 1),
			`bindings[0] (acme/ops): search_lag is for jira`},
		{"AnUnknownKeyInTheJiraTable", strings.Replace(withJira(good, project), `email = "relayr@acme.example"`, `site = "acme"`, 1),
			`unknown key "tenants.trackers.jira.site"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := config.Parse([]byte(c.cfg), "relayr.toml")
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, config.ErrInvalid) {
				t.Fatalf("%v does not match ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not say %q", err, c.want)
			}
		})
	}
}

// withGitLab adds acme's GitLab credentials and a GitLab binding of
// workspace "support", with extra lines of its own ("project = ..." among
// them).
func withGitLab(s, extra string) string {
	s = strings.Replace(s, "[tenants.trackers.plane]", "[tenants.trackers.gitlab]\nkey = {env = \"ACME_GITLAB_TOKEN\"}\nwebhook_secret = {file = \"/run/secrets/acme-gitlab-hook\"}\n[tenants.trackers.plane]", 1)
	i := strings.Index(s, "[[subscriptions]]")
	return s[:i] + "\n[[bindings]]\ntenant = \"acme\"\nworkspace = \"support\"\ntracker = \"gitlab\"\nbase_url = \"https://gitlab.com\"\n" + extra + "\n" + s[i:]
}

func TestAGitLabBindingLoadsWithItsKeys(t *testing.T) {
	cfg, err := config.Parse([]byte(withGitLab(good, `project = "acme/platform/ops"
list_lag = "10s"
[bindings.labels]
started = "workflow::doing"
cancelled = "won't do"
[bindings.limits]
requests = 7200
issue_creates = -1
`)), "relayr.toml")
	if err != nil {
		t.Fatal(err)
	}
	b := cfg.Bindings[1]
	if b.Tracker != "gitlab" || b.Project != "acme/platform/ops" || !cfg.Tenants[0].Trackers["gitlab"].Key.Set() || !cfg.Tenants[0].Trackers["gitlab"].WebhookSecret.Set() {
		t.Fatalf("binding %+v, tenant %+v", b, cfg.Tenants[0])
	}
	gc := b.GitLab()
	if gc.BaseURL != "https://gitlab.com" || gc.Project != "acme/platform/ops" || gc.ListLag != 10*time.Second ||
		gc.Labels != (gitlab.StateLabels{Started: "workflow::doing", Cancelled: "won't do"}) ||
		gc.Limits != (gitlab.Limits{Requests: 7200, IssueCreates: -1}) {
		t.Fatalf("driver configuration %+v", gc)
	}
	// A project by its numeric id.
	if _, err := config.Parse([]byte(withGitLab(good, `project = "278964"`)), "relayr.toml"); err != nil {
		t.Fatal(err)
	}
}

func TestAGitLabBindingLeavesTheDriversDefaults(t *testing.T) {
	cfg, err := config.Parse([]byte(withGitLab(good, `project = "acme/ops"`)), "relayr.toml")
	if err != nil {
		t.Fatal(err)
	}
	// The driver fills them in (gitlab.NewConnector): the status::
	// labels, GitLab.com's limits, 5 s.
	if gc := cfg.Bindings[1].GitLab(); gc.Labels != (gitlab.StateLabels{}) || gc.Limits != (gitlab.Limits{}) || gc.ListLag != 0 {
		t.Fatalf("driver configuration %+v", gc)
	}
	// A self-managed instance over plain http, allowed.
	sm := strings.Replace(withGitLab(good, "project = \"acme/ops\"\nallow_insecure_http = true"), `base_url = "https://gitlab.com"`, `base_url = "http://gitlab.internal:8080/gitlab"`, 1)
	if _, err := config.Parse([]byte(sm), "relayr.toml"); err != nil {
		t.Fatal(err)
	}
}

func TestGitLabRefusals(t *testing.T) {
	const project = "project = \"acme/ops\"\n"
	for _, c := range []struct {
		name string
		cfg  string
		want string
	}{
		{"NoProject", withGitLab(good, ""), `bindings[1] (acme/support): names no project`},
		{"AProjectThatIsNeitherIDNorPath", withGitLab(good, `project = "ops"`),
			`bindings[1] (acme/support): project: "ops" is neither a project id nor a path ("group/project")`},
		{"NoBaseURL", strings.Replace(withGitLab(good, project), "base_url = \"https://gitlab.com\"\n", "", 1),
			`bindings[1] (acme/support): base_url: "" is not an http(s) URL`},
		{"AWebURL", withGitLab(good, project+`web_url = "https://gitlab.com"`),
			`bindings[1] (acme/support): web_url is not for gitlab`},
		{"AnUnknownState", withGitLab(good, project+"[bindings.labels]\nopen = \"status::open\""),
			`bindings[1] (acme/support): labels: "open" is not backlog, todo, started or cancelled`},
		{"ALabelForDone", withGitLab(good, project+"[bindings.labels]\ndone = \"status::done\""),
			`bindings[1] (acme/support): labels: done is a closed issue without the cancelled label`},
		{"ABlankLabel", withGitLab(good, project+"[bindings.labels]\ntodo = \" \""),
			`bindings[1] (acme/support): labels.todo is blank: name a label`},
		{"ALabelWithAComma", withGitLab(good, project+"[bindings.labels]\ntodo = \"to,do\""),
			`bindings[1] (acme/support): labels: label "to,do" holds a comma`},
		{"OneLabelForTwoStates", withGitLab(good, project+"[bindings.labels]\ntodo = \"status::todo\"\nbacklog = \"status::todo\""),
			`bindings[1] (acme/support): labels: "status::todo" names two states`},
		{"AnUnknownLimit", withGitLab(good, project+"[bindings.limits]\nsearches = 10"),
			`unknown key "bindings.limits.searches"`},
		{"ANegativeListLag", withGitLab(good, project+`list_lag = "-5s"`), `bindings.list_lag: "-5s" must be more than zero`},
		{"AListLagThatIsNoDuration", withGitLab(good, project+`list_lag = "soon"`), `bindings.list_lag: "soon" is not a duration such as 30s or 2m`},
		{"AnEmailForGitLab", strings.Replace(withGitLab(good, project), `key = {env = "ACME_GITLAB_TOKEN"}`, "key = {env = \"ACME_GITLAB_TOKEN\"}\nemail = \"bot@acme.example\"", 1),
			`tenant "acme": trackers.gitlab.email is for jira`},
		{"ATokenWrittenInTheFile", strings.Replace(withGitLab(good, project), `key = {env = "ACME_GITLAB_TOKEN"}`, `key = "glpat-0123456789"`, 1),
			`tenants.trackers.gitlab.key is a secret`},
		{"NoGitLabCredentials", strings.Replace(withGitLab(good, project), "[tenants.trackers.gitlab]", "[tenants.trackers.gitea]", 1),
			`bindings[1] (acme/support): tenant "acme" has no credentials for gitlab`},
		{"AJiraKeyOnGitLab", withGitLab(good, project+`search_lag = "30s"`), `bindings[1] (acme/support): search_lag is for jira`},
		{"ALoginOnGitLab", withGitLab(good, project+`login = "relayr[bot]"`), `login is for github`},
		{"LabelsOnPlane", strings.Replace(good, "[bindings.defaults]", "[bindings.labels]\ntodo = \"To Do\"\n[bindings.defaults]", 1),
			`bindings[0] (acme/ops): labels is for gitlab`},
		{"LimitsOnPlane", strings.Replace(good, "[bindings.defaults]", "[bindings.limits]\nrequests = 10\n[bindings.defaults]", 1),
			`bindings[0] (acme/ops): limits is for gitlab`},
		{"ListLagOnJira", withJira(good, project+`list_lag = "5s"`), `bindings[1] (acme/support): list_lag is for gitlab`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := config.Parse([]byte(c.cfg), "relayr.toml")
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, config.ErrInvalid) {
				t.Fatalf("%v does not match ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not say %q", err, c.want)
			}
		})
	}
}

// withLinear adds acme's Linear credentials and a Linear binding of
// workspace "support", with extra lines of its own ("team = ..." among
// them); it names no base_url, Linear's endpoint being the one.
func withLinear(s, extra string) string {
	s = strings.Replace(s, "[tenants.trackers.plane]", "[tenants.trackers.linear]\nkey = {env = \"ACME_LINEAR_KEY\"}\nwebhook_secret = {file = \"/run/secrets/acme-linear-hook\"}\n[tenants.trackers.plane]", 1)
	i := strings.Index(s, "[[subscriptions]]")
	return s[:i] + "\n[[bindings]]\ntenant = \"acme\"\nworkspace = \"support\"\ntracker = \"linear\"\n" + extra + "\n" + s[i:]
}

func TestALinearBindingLoadsWithItsKeys(t *testing.T) {
	cfg, err := config.Parse([]byte(withLinear(good, `team = "ENG"`)), "relayr.toml")
	if err != nil {
		t.Fatal(err)
	}
	b := cfg.Bindings[1]
	if b.Tracker != "linear" || b.Team != "ENG" || !cfg.Tenants[0].Trackers["linear"].Key.Set() || !cfg.Tenants[0].Trackers["linear"].WebhookSecret.Set() {
		t.Fatalf("binding %+v, tenant %+v", b, cfg.Tenants[0])
	}
	// Linear's endpoint where base_url is left out; the key URL the
	// driver's (linear.NewConnector fills it in).
	if lc := b.Linear(); lc.URL != linear.DefaultURL || lc.Team != "ENG" || lc.KeyURL != "" {
		t.Fatalf("driver configuration %+v", lc)
	}
	// A team by its UUID, an endpoint of its own (an emulation's, on
	// loopback) and a key URL of its own.
	cfg, err = config.Parse([]byte(withLinear(good, `team = "0b0e4c5a-9f7e-4d43-a1b2-3c4d5e6f7a8b"
base_url = "http://127.0.0.1:8099/graphql"
key_url = "https://relayr.acme.example/key/"`)), "relayr.toml")
	if err != nil {
		t.Fatal(err)
	}
	if lc := cfg.Bindings[1].Linear(); lc.URL != "http://127.0.0.1:8099/graphql" || lc.Team != "0b0e4c5a-9f7e-4d43-a1b2-3c4d5e6f7a8b" || lc.KeyURL != "https://relayr.acme.example/key/" {
		t.Fatalf("driver configuration %+v", lc)
	}
}

// The tenant's Linear team is every Linear binding's that names none; a
// binding's own wins.
func TestTheTenantsLinearTeamIsTheBindingsDefault(t *testing.T) {
	withTeam := func(extra string) string {
		return strings.Replace(withLinear(good, extra), `key = {env = "ACME_LINEAR_KEY"}`, "key = {env = \"ACME_LINEAR_KEY\"}\nteam = \"OPS\"", 1)
	}
	cfg, err := config.Parse([]byte(withTeam("")), "relayr.toml")
	if err != nil {
		t.Fatal(err)
	}
	if lc := cfg.Bindings[1].Linear(); lc.Team != "OPS" {
		t.Fatalf("a binding naming no team files into %q, want the tenant's OPS", lc.Team)
	}
	cfg, err = config.Parse([]byte(withTeam(`team = "ENG"`)), "relayr.toml")
	if err != nil {
		t.Fatal(err)
	}
	if lc := cfg.Bindings[1].Linear(); lc.Team != "ENG" {
		t.Fatalf("a binding naming ENG files into %q", lc.Team)
	}
}

func TestLinearRefusals(t *testing.T) {
	const team = "team = \"ENG\"\n"
	for _, c := range []struct {
		name string
		cfg  string
		want string
	}{
		{"NoTeam", withLinear(good, ""), `bindings[1] (acme/support): linear needs team`},
		{"ATeamThatIsNeitherKeyNorUUID", withLinear(good, `team = "eng team"`),
			`bindings[1] (acme/support): team: "eng team" is neither a team key (ENG) nor a team's UUID`},
		{"AProject", withLinear(good, team+`project = "ENG"`), `bindings[1] (acme/support): project is not for linear`},
		{"AWebURL", withLinear(good, team+`web_url = "https://linear.app/acme"`), `bindings[1] (acme/support): web_url is not for linear`},
		{"ABaseURLThatIsNoURL", withLinear(good, team+`base_url = "api.linear.app"`),
			`bindings[1] (acme/support): base_url: "api.linear.app" is not an http(s) URL`},
		{"APlainHTTPBaseURL", withLinear(good, team+`base_url = "http://linear.internal/graphql"`),
			`bindings[1] (acme/support): base_url: "http://linear.internal/graphql" is plain http`},
		{"AKeyURLOverHTTP", withLinear(good, team+`key_url = "http://relayr.invalid/key/"`),
			`bindings[1] (acme/support): key_url: "http://relayr.invalid/key/" is not an https URL ending in /`},
		{"AKeyURLNotEndingInSlash", withLinear(good, team+`key_url = "https://relayr.invalid/key"`),
			`bindings[1] (acme/support): key_url: "https://relayr.invalid/key" is not an https URL ending in /`},
		{"AnEmailForLinear", strings.Replace(withLinear(good, team), `key = {env = "ACME_LINEAR_KEY"}`, "key = {env = \"ACME_LINEAR_KEY\"}\nemail = \"bot@acme.example\"", 1),
			`tenant "acme": trackers.linear.email is for jira`},
		{"AKeyWrittenInTheFile", strings.Replace(withLinear(good, team), `key = {env = "ACME_LINEAR_KEY"}`, `key = "lin_api_0123456789"`, 1),
			`tenants.trackers.linear.key is a secret`},
		{"NoLinearCredentials", strings.Replace(withLinear(good, team), "[tenants.trackers.linear]", "[tenants.trackers.gitea]", 1),
			`bindings[1] (acme/support): tenant "acme" has no credentials for linear`},
		{"AJiraKeyOnLinear", withLinear(good, team+`search_lag = "30s"`), `bindings[1] (acme/support): search_lag is for jira`},
		{"AJiraStatusOnLinear", withLinear(good, team+"[bindings.statuses]\ntodo = \"To Do\""), `bindings[1] (acme/support): statuses is for jira`},
		{"AGitLabKeyOnLinear", withLinear(good, team+`list_lag = "5s"`), `bindings[1] (acme/support): list_lag is for gitlab`},
		{"GitLabLabelsOnLinear", withLinear(good, team+"[bindings.labels]\nstarted = \"doing\""), `bindings[1] (acme/support): labels is for gitlab`},
		{"ALoginOnLinear", withLinear(good, team+`login = "relayr[bot]"`), `login is for github`},
		{"ATeamOnPlane", strings.Replace(good, "[bindings.defaults]", "team = \"ENG\"\n[bindings.defaults]", 1),
			`bindings[0] (acme/ops): team is for linear`},
		{"AKeyURLOnGitLab", withGitLab(good, "project = \"acme/ops\"\nkey_url = \"https://relayr.invalid/key/\""),
			`bindings[1] (acme/support): key_url is for linear`},
		{"ATeamOnJira", withJira(good, "project = \"OPS\"\nteam = \"ENG\""), `bindings[1] (acme/support): team is for linear`},
		{"ATenantTeamThatIsNeitherKeyNorUUID", strings.Replace(withLinear(good, ""), `key = {env = "ACME_LINEAR_KEY"}`, "key = {env = \"ACME_LINEAR_KEY\"}\nteam = \"eng team\"", 1),
			`bindings[1] (acme/support): team: "eng team" is neither a team key (ENG) nor a team's UUID`},
		{"ATenantTeamNoBindingTakes", strings.Replace(withLinear(good, team), `key = {env = "ACME_LINEAR_KEY"}`, "key = {env = \"ACME_LINEAR_KEY\"}\nteam = \"eng team\"", 1),
			`tenant "acme": trackers.linear.team: "eng team" is neither a team key (ENG) nor a team's UUID`},
		{"ATenantTeamOnGitLab", strings.Replace(withGitLab(good, "project = \"acme/ops\""), "[tenants.trackers.gitlab]", "[tenants.trackers.gitlab]\nteam = \"ENG\"", 1),
			`tenant "acme": trackers.gitlab.team is for linear`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := config.Parse([]byte(c.cfg), "relayr.toml")
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, config.ErrInvalid) {
				t.Fatalf("%v does not match ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not say %q", err, c.want)
			}
		})
	}
}
