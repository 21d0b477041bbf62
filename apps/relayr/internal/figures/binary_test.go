package figures

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/ledgersqlite"
	"github.com/relayr-go/relayr/apps/relayr/internal/chaos"
	"github.com/relayr-go/relayr/apps/relayr/internal/config"
)

// A service may run as the built binary: `relayr serve`, a process of its
// own that reads its configuration file and its secrets from the
// environment, over the same emulation, where the other services are
// wired in this process (app.New). The test reads the binary's ledger
// file for its follower's cursor.

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// relayrBinary builds relayr from the tree once per test run, static (no
// cgo), as a release is built.
func relayrBinary(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "relayr-figures-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "relayr")
		build := exec.Command("go", "build", "-o", builtBin, "github.com/relayr-go/relayr/apps/relayr")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return builtBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if builtBin != "" {
		_ = os.RemoveAll(filepath.Dir(builtBin))
	}
	os.Exit(code)
}

// The environment variables the binary's configuration reads its secrets
// from.
const (
	envToken   = "FIGURES_TENANT_TOKEN"
	envKey     = "FIGURES_TRACKER_KEY"
	envWebhook = "FIGURES_WEBHOOK_SECRET"
)

// startBinary starts the built binary over emu with the service's
// configuration, written as relayr.toml, and waits for its follower's
// first read of the project.
func startBinary(tb testing.TB, s *service, o serviceOptions) {
	tb.Helper()
	if o.clock != nil {
		tb.Fatal("the binary runs on the system's clock")
	}
	dir := tb.TempDir()
	kind := s.emu.Binding().Tracker
	creds := s.emu.Credentials()
	table := trackerTable(s.emu)
	table.Key = config.Secret{Env: envKey}
	if creds.WebhookSecret != "" {
		table.WebhookSecret = config.Secret{Env: envWebhook}
	}
	db := filepath.Join(dir, "relayr.db")
	var b strings.Builder
	fmt.Fprintf(&b, "holder = \"figures\"\n\n[ledger]\ndriver = \"sqlite\"\npath = %q\n", db)
	writeTable(tb, &b, "timings", reflect.ValueOf(o.timings))
	fmt.Fprintf(&b, "\n[[tenants]]\nname = %q\ntoken = {env = %q}\n", tenant, envToken)
	writeTable(tb, &b, "tenants.trackers."+kind, reflect.ValueOf(table))
	writeTable(tb, &b, "[bindings]", reflect.ValueOf(s.emu.Binding()))
	path := filepath.Join(dir, "relayr.toml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		tb.Fatal(err)
	}
	addr, err := chaos.FreeAddr(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, "relayr.log"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = logFile.Close() })
	r := &chaos.Replica{
		Name: "relayr", Bin: relayrBinary(tb), Config: path, Addr: addr, Log: logFile,
		Env: append(slices.Clone(os.Environ()), envToken+"="+token, envKey+"="+creds.Token, envWebhook+"="+creds.WebhookSecret),
	}
	if err := r.Start(context.Background(), time.Minute); err != nil {
		tb.Fatalf("%v\n%s", err, tailOf(logFile.Name()))
	}
	s.proc, s.base = r, r.URL()
	st, err := ledgersqlite.Open(context.Background(), db)
	if err != nil {
		tb.Fatal(err)
	}
	s.store = st
	s.closeStore = st.Close
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.waitSeeded(ctx); err != nil {
		tb.Fatalf("%v\n%s", err, tailOf(logFile.Name()))
	}
}

// stopBinary stops the binary as an operator does, with SIGTERM, and
// reports a stop that is not clean, with its log.
func (s *service) stopBinary(tb testing.TB) {
	if err := s.proc.Stop(30 * time.Second); err != nil {
		tb.Errorf("relayr serve: %v\n%s", err, tailOf(s.proc.Log.Name()))
	}
}

// tailOf is the last lines of a log file, for a failure's message.
func tailOf(path string) string {
	b, _ := os.ReadFile(path) //nolint:gosec // G304: the test's own log file
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-40):], "\n")
}

// writeTable writes v, a configuration struct, as the TOML table name
// ("[bindings]" for an array of tables' element): its set fields by their
// toml keys, durations as "30s", secrets as {env = "…"}, then its nested
// tables. A field of a kind it cannot write fails the test, rather than
// leaving it out.
func writeTable(tb testing.TB, b *strings.Builder, name string, v reflect.Value) {
	tb.Helper()
	fmt.Fprintf(b, "\n[%s]\n", name)
	base := strings.Trim(name, "[]")
	var nested []func()
	t := v.Type()
	for i := range t.NumField() {
		f, fv := t.Field(i), v.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if key == "" || key == "-" || fv.IsZero() {
			continue
		}
		switch x := fv.Interface().(type) {
		case config.Duration:
			fmt.Fprintf(b, "%s = %q\n", key, x.String())
		case config.Secret:
			fmt.Fprintf(b, "%s = {env = %q}\n", key, x.Env)
		case string:
			fmt.Fprintf(b, "%s = %q\n", key, x)
		case int, bool:
			fmt.Fprintf(b, "%s = %v\n", key, x)
		case []string:
			q := make([]string, len(x))
			for j, s := range x {
				q[j] = fmt.Sprintf("%q", s)
			}
			fmt.Fprintf(b, "%s = [%s]\n", key, strings.Join(q, ", "))
		case map[string]string:
			nested = append(nested, func() {
				fmt.Fprintf(b, "\n[%s.%s]\n", base, key)
				for _, k := range slices.Sorted(func(yield func(string) bool) {
					for k := range x {
						if !yield(k) {
							return
						}
					}
				}) {
					fmt.Fprintf(b, "%s = %q\n", k, x[k])
				}
			})
		default:
			if fv.Kind() == reflect.Struct {
				nested = append(nested, func() { writeTable(tb, b, base+"."+key, fv) })
				continue
			}
			tb.Fatalf("the binary's configuration: %s.%s, a %s, is not written", base, key, f.Type)
		}
	}
	for _, n := range nested {
		n()
	}
}
