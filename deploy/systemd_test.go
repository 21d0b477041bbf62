package deploy_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/relayr-go/relayr/deploy"
)

// The systemd deployment's own figures.
const (
	unitName = "relayr.service"
	// execStart is the command the unit runs: the binary where the docs
	// install it, serving the configuration where they put it.
	execStart = "/usr/local/bin/relayr serve -config " + configPath
	// credentials is where systemd hands the service its LoadCredential=
	// files.
	credentials = "/run/credentials/" + unitName + "/"
	// maxExposure is the highest overall exposure `systemd-analyze
	// security` may rate the unit (0 to 10; 2 and under reads "OK").
	maxExposure = 2.0
)

// hardening are the directives the unit must set, with their values.
var hardening = map[string]string{
	"DynamicUser":             "yes",
	"StateDirectory":          "relayr",
	"NoNewPrivileges":         "yes",
	"CapabilityBoundingSet":   "",
	"AmbientCapabilities":     "",
	"ProtectSystem":           "strict",
	"ProtectHome":             "yes",
	"PrivateTmp":              "yes",
	"PrivateDevices":          "yes",
	"ProtectKernelTunables":   "yes",
	"ProtectKernelModules":    "yes",
	"ProtectKernelLogs":       "yes",
	"ProtectControlGroups":    "yes",
	"ProtectClock":            "yes",
	"ProtectHostname":         "yes",
	"RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
	"RestrictNamespaces":      "yes",
	"RestrictRealtime":        "yes",
	"RestrictSUIDSGID":        "yes",
	"LockPersonality":         "yes",
	"MemoryDenyWriteExecute":  "yes",
	"SystemCallArchitectures": "native",
	"UMask":                   "0077",
	"Restart":                 "on-failure",
}

// unit is a unit file's directives: "Section.Key" to its values, in order.
type unit map[string][]string

func parseUnit(b []byte) (unit, error) {
	u := unit{}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case strings.HasSuffix(line, `\`):
			return nil, fmt.Errorf("line %d: a continued line; keep each directive on one", n)
		case line[0] == '[' && line[len(line)-1] == ']':
			section = line[1 : len(line)-1]
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				return nil, fmt.Errorf("line %d: %q is no directive of a section", n, line)
			}
			k = section + "." + strings.TrimSpace(k)
			u[k] = append(u[k], strings.TrimSpace(v))
		}
	}
	return u, sc.Err()
}

// last is a directive's value as systemd takes it: the last one given.
func (u unit) last(key string) (string, bool) {
	vs := u["Service."+key]
	if len(vs) == 0 {
		return "", false
	}
	return vs[len(vs)-1], true
}

// systemdSeconds reads a unit's time span: seconds, "40s" or "2min".
func systemdSeconds(s string) (time.Duration, error) {
	m := regexp.MustCompile(`^([0-9]+)(s|sec|min)?$`).FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("%q: write it in seconds (40s) or minutes (2min)", s)
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return 0, err
	}
	if m[2] == "min" {
		return time.Duration(n) * time.Minute, nil
	}
	return time.Duration(n) * time.Second, nil
}

// checkSystemd answers every way the unit and its relayr.toml fail to hold
// together, without running systemd.
func checkSystemd(fsys fs.FS) []error {
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	b, err := fs.ReadFile(fsys, "systemd/"+unitName)
	if err != nil {
		return []error{err}
	}
	u, err := parseUnit(b)
	if err != nil {
		return []error{fmt.Errorf("%s: %w", unitName, err)}
	}
	tb, err := fs.ReadFile(fsys, "systemd/relayr.toml")
	if err != nil {
		return []error{err}
	}
	conf, err := parseTOML(tb)
	if err != nil {
		return []error{fmt.Errorf("systemd/relayr.toml: %w", err)}
	}

	if v := u["Service.ExecStart"]; !slices.Equal(v, []string{execStart}) {
		fail("ExecStart is %q, not %q", v, execStart)
	}
	for _, k := range slices.Sorted(maps.Keys(hardening)) {
		if v, ok := u.last(k); !ok || v != hardening[k] {
			fail("%s=%s, not %s=%s", k, v, k, hardening[k])
		}
	}
	if f := u["Service.SystemCallFilter"]; len(f) == 0 || f[0] != "@system-service" {
		fail("SystemCallFilter does not begin with @system-service")
	}

	// The stop timeout covers the writes' grace and relayr's closing.
	grace, err := conf.shutdownGrace()
	if err != nil {
		fail("relayr.toml: timings.shutdown_grace: %v", err)
	}
	stop, ok := u.last("TimeoutStopSec")
	if !ok {
		fail("no TimeoutStopSec: systemd's default (90s) would hide the grace relayr takes")
	} else if d, err := systemdSeconds(stop); err != nil {
		fail("TimeoutStopSec: %v", err)
	} else if d < grace+stopMargin {
		fail("TimeoutStopSec (%s) is shorter than shutdown_grace (%s) and %s to close", d, grace, stopMargin)
	}

	// The SQLite ledger lives in the one directory the service may write.
	state, _ := u.last("StateDirectory")
	if d := conf.str("ledger.driver"); d != "" && d != "sqlite" {
		fail("relayr.toml: ledger.driver %q: the unit is one process on SQLite", d)
	}
	if p := conf.str("ledger.path"); path.Dir(p) != "/var/lib/"+state {
		fail("relayr.toml: ledger.path %q is not in the state directory /var/lib/%s", p, state)
	}

	// Every secret is a credential the unit loads, and every credential a
	// secret relayr.toml reads.
	loaded := map[string]bool{}
	for _, lc := range u["Service.LoadCredential"] {
		name, src, ok := strings.Cut(lc, ":")
		if !ok || name == "" || !strings.HasPrefix(src, "/etc/relayr/credentials/") {
			fail("LoadCredential=%s is not name:/etc/relayr/credentials/file", lc)
		}
		loaded[name] = false
	}
	for _, s := range conf.secrets() {
		name, under := strings.CutPrefix(s.File, credentials)
		if s.Env != "" || !under || strings.Contains(name, "/") {
			fail("relayr.toml: %s is not a file under %s", s.Path, credentials)
			continue
		}
		if _, ok := loaded[name]; !ok {
			fail("relayr.toml: %s reads credential %s, which no LoadCredential= loads", s.Path, name)
			continue
		}
		loaded[name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(loaded)) {
		if !loaded[name] {
			fail("LoadCredential %s is read by nothing in relayr.toml", name)
		}
	}
	return errs
}

// systemdAnalyze is the path of systemd-analyze, or the test is skipped;
// with RELAYR_REQUIRE_SYSTEMD set (CI sets it) it fails instead.
func systemdAnalyze(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("RELAYR_REQUIRE_SYSTEMD") != "" {
			t.Fatal("RELAYR_REQUIRE_SYSTEMD is set, and systemd-analyze is not installed (Debian's systemd package)")
		}
		t.Skip("systemd-analyze is not installed: the unit cannot be verified here (RELAYR_REQUIRE_SYSTEMD=1 fails instead)")
	}
	return p
}

// runnable writes the unit into a folder of its own, as relayr.service,
// with ExecStart's binary replaced by this test's own binary:
// systemd-analyze verify refuses a unit whose binary does not exist, and
// /usr/local/bin/relayr is not installed where the tests run. Nothing else
// of the unit changes.
func runnable(t *testing.T, text []byte) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	prefix := "ExecStart=/usr/local/bin/relayr "
	if !bytes.Contains(text, []byte("\n"+prefix)) {
		t.Fatalf("the unit has no line %q", prefix)
	}
	text = bytes.Replace(text, []byte("\n"+prefix), []byte("\nExecStart="+self+" "), 1)
	p := filepath.Join(t.TempDir(), unitName)
	if err := os.WriteFile(p, text, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// verify runs systemd-analyze verify on a unit. It exits 0 on an unknown
// directive or a value it cannot parse, saying so: any line naming the unit
// is a failure too.
func verify(ctx context.Context, analyze, unitPath string) error {
	out, err := exec.CommandContext(ctx, analyze, "verify", unitPath).CombinedOutput()
	var said []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, unitName) {
			said = append(said, line)
		}
	}
	switch {
	case err != nil:
		return fmt.Errorf("systemd-analyze verify: %w: %s", err, out)
	case len(said) > 0:
		return fmt.Errorf("systemd-analyze verify: %s", strings.Join(said, "; "))
	}
	return nil
}

// The unit and its relayr.toml hold together: relayr serve on
// /etc/relayr/relayr.toml, each hardening directive, a stop timeout past
// the shutdown grace, the ledger in the state directory, the secrets as
// credentials.
func TestTheSystemdUnitHoldsTogether(t *testing.T) {
	for _, err := range checkSystemd(deploy.Files) {
		t.Error(err)
	}
}

// A unit or configuration that breaks one of the invariants fails the
// check.
func TestAFaultInTheSystemdUnitIsCaught(t *testing.T) {
	for _, tc := range []struct {
		name, file, old, new, want string
	}{
		{"another binary", "relayr.service", "ExecStart=/usr/local/bin/relayr serve", "ExecStart=/usr/bin/relayr serve", "ExecStart is"},
		{"a static user", "relayr.service", "DynamicUser=yes", "DynamicUser=no", "DynamicUser=no, not DynamicUser=yes"},
		{"a writable /usr", "relayr.service", "ProtectSystem=strict", "ProtectSystem=full", "ProtectSystem=full"},
		{"a directive undone further down", "relayr.service", "DevicePolicy=closed", "DevicePolicy=closed\nNoNewPrivileges=no", "NoNewPrivileges=no"},
		{"capabilities kept", "relayr.service", "CapabilityBoundingSet=\n", "CapabilityBoundingSet=CAP_NET_BIND_SERVICE\n", "CapabilityBoundingSet=CAP_NET_BIND_SERVICE"},
		{"a stop timeout inside the grace", "relayr.service", "TimeoutStopSec=40s", "TimeoutStopSec=30s", "TimeoutStopSec (30s) is shorter"},
		{"a longer grace", "relayr.toml", `shutdown_grace = "25s"`, `shutdown_grace = "35s"`, "shorter than shutdown_grace (35s)"},
		{"a credential not loaded", "relayr.service", "LoadCredential=acme-token:/etc/relayr/credentials/acme-token\n", "", "which no LoadCredential= loads"},
		{"a credential read by nothing", "relayr.toml", "acme-plane-webhook-secret\"}", "acme-plane-key\"}", "LoadCredential acme-plane-webhook-secret is read by nothing"},
		{"a secret from the environment", "relayr.toml", `{file = "/run/credentials/relayr.service/acme-token"}`, `{env = "ACME_TOKEN"}`, "is not a file under"},
		{"the ledger outside the state directory", "relayr.toml", `path = "/var/lib/relayr/relayr.db"`, `path = "/etc/relayr/relayr.db"`, "not in the state directory"},
		{"PostgreSQL", "relayr.toml", `driver = "sqlite"`, `driver = "postgres"`, "one process on SQLite"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := edited(t, deploy.Files, "systemd/"+tc.file, tc.old, tc.new)
			expectFault(t, checkSystemd(fsys), tc.want)
		})
	}
}

// systemd itself takes the unit: systemd-analyze verify passes it, and
// fails it when a directive is misspelt or a value does not parse.
func TestSystemdVerifiesTheUnit(t *testing.T) {
	analyze := systemdAnalyze(t)
	shipped, err := fs.ReadFile(deploy.Files, "systemd/"+unitName)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, old, new string
		fails          bool
	}{
		{name: "as shipped"},
		{name: "a misspelt directive", old: "ProtectSystem=strict", new: "ProtectSytem=strict", fails: true},
		{name: "a value that does not parse", old: "Restart=on-failure", new: "Restart=sometimes", fails: true},
		{name: "a time that does not parse", old: "TimeoutStopSec=40s", new: "TimeoutStopSec=forty", fails: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := shipped
			if tc.old != "" {
				if !bytes.Contains(text, []byte(tc.old)) {
					t.Fatalf("the unit does not hold %q", tc.old)
				}
				text = bytes.Replace(text, []byte(tc.old), []byte(tc.new), 1)
			}
			err := verify(t.Context(), analyze, runnable(t, text))
			switch {
			case tc.fails && err == nil:
				t.Fatal("systemd-analyze verify passed it")
			case !tc.fails && err != nil:
				t.Fatal(err)
			}
		})
	}
}

// exposure is the overall exposure systemd-analyze security rates a unit,
// offline: 0 to 10, the lower the safer.
func exposure(t *testing.T, analyze string, text []byte) float64 {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), analyze, "security", "--offline=yes", runnable(t, text)).CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`Overall exposure level for ` + regexp.QuoteMeta(unitName) + `: ([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("systemd-analyze security said no exposure level (%v):\n%s", err, out)
	}
	level, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return level
}

// systemd rates the unit's exposure OK (2 or under of 10), offline; the
// same unit without its hardening is rated over it.
func TestSystemdRatesTheUnitsExposureOK(t *testing.T) {
	analyze := systemdAnalyze(t)
	shipped, err := fs.ReadFile(deploy.Files, "systemd/"+unitName)
	if err != nil {
		t.Fatal(err)
	}
	if level := exposure(t, analyze, shipped); level > maxExposure {
		t.Errorf("the unit's exposure is %.1f, over %.1f", level, maxExposure)
	}
	start, end := bytes.Index(shipped, []byte("# Hardening")), bytes.Index(shipped, []byte("[Install]"))
	if start < 0 || end < start {
		t.Fatal("the unit has no hardening block before [Install]")
	}
	bare := append(append([]byte{}, shipped[:start]...), shipped[end:]...)
	if level := exposure(t, analyze, bare); level <= maxExposure {
		t.Errorf("the unit without its hardening is rated %.1f, not over %.1f: the rating tells nothing", level, maxExposure)
	}
}
