package deploy_test

import (
	"io/fs"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/pelletier/go-toml/v2"
)

// The figures the files must agree on, each taken from relayr itself.
const (
	// minTokenBytes is apps/relayr/internal/config.MinTokenBytes: the
	// loader refuses an operator's or tenant's token shorter than this.
	minTokenBytes = 32
	// configPath is where both deployments install relayr.toml, the path
	// `relayr serve -config` is given (without it, relayr reads
	// relayr.toml in its working directory).
	configPath = "/etc/relayr/relayr.toml"
	// defaultShutdownGrace is timings.shutdown_grace's default: in-flight
	// writes' time to finish on SIGTERM (docs/operating.md, "Shutdown").
	defaultShutdownGrace = 25 * time.Second
	// stopMargin is what a stop timeout leaves past the grace: relayr
	// closes the ledger and logs after the grace ends.
	stopMargin = 10 * time.Second
)

// tomlSecret is a secret a relayr.toml names: an inline table with env or
// file, at its key's path ("tenants[0].token").
type tomlSecret struct {
	Path      string
	Env, File string
}

// tomlConfig is a relayr.toml parsed into a map: TOML's own rules (one
// value a key, well-formed values) are checked; relayr's keys are checked by
// the loader's own test in apps/relayr/internal/config.
type tomlConfig map[string]any

func parseTOML(b []byte) (tomlConfig, error) {
	var c tomlConfig
	if err := toml.Unmarshal(b, &c); err != nil {
		return nil, err
	}
	return c, nil
}

// str is the string at a dotted path of tables, "" when absent.
func (c tomlConfig) str(path string) string {
	var v any = map[string]any(c)
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = m[k]
	}
	s, _ := v.(string)
	return s
}

// shutdownGrace is timings.shutdown_grace, or its default.
func (c tomlConfig) shutdownGrace() (time.Duration, error) {
	s := c.str("timings.shutdown_grace")
	if s == "" {
		return defaultShutdownGrace, nil
	}
	return time.ParseDuration(s)
}

// secrets are every secret the configuration names, in a stable order.
func (c tomlConfig) secrets() []tomlSecret {
	var out []tomlSecret
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if s, ok := asSecret(v); ok {
				s.Path = path
				out = append(out, s)
				return
			}
			for _, k := range slices.Sorted(maps.Keys(v)) {
				walk(strings.TrimPrefix(path+"."+k, "."), v[k])
			}
		case []any:
			for i, e := range v {
				walk(path+"["+strconv.Itoa(i)+"]", e)
			}
		case []map[string]any:
			for i, e := range v {
				walk(path+"["+strconv.Itoa(i)+"]", e)
			}
		}
	}
	walk("", map[string]any(c))
	return out
}

// asSecret reads a table holding env or file and nothing else.
func asSecret(m map[string]any) (tomlSecret, bool) {
	if len(m) == 0 {
		return tomlSecret{}, false
	}
	var s tomlSecret
	for k, v := range m {
		str, ok := v.(string)
		switch {
		case !ok:
			return tomlSecret{}, false
		case k == "env":
			s.Env = str
		case k == "file":
			s.File = str
		default:
			return tomlSecret{}, false
		}
	}
	return s, true
}

// isToken reports whether a secret's path is a bearer token, which the
// loader wants at least minTokenBytes long.
func isToken(path string) bool {
	if path == "operator_token" {
		return true
	}
	return strings.HasPrefix(path, "tenants[") && strings.HasSuffix(path, "].token")
}

// edited copies fsys with one file's text changed: old, which must occur,
// replaced by new the first time.
func edited(t *testing.T, fsys fs.FS, name, old, new string) fs.FS {
	t.Helper()
	out := fstest.MapFS{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		out[p] = &fstest.MapFile{Data: b}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f, ok := out[name]
	if !ok {
		t.Fatalf("no file %s to edit", name)
	}
	if !strings.Contains(string(f.Data), old) {
		t.Fatalf("%s does not hold %q: the case would test nothing", name, old)
	}
	f.Data = []byte(strings.Replace(string(f.Data), old, new, 1))
	return out
}

// expectFault runs a check on a faulty copy of the files and wants an
// error naming the fault.
func expectFault(t *testing.T, errs []error, want string) {
	t.Helper()
	if len(errs) == 0 {
		t.Fatalf("no error; want one saying %q", want)
	}
	var msgs []string
	for _, err := range errs {
		msgs = append(msgs, err.Error())
		if strings.Contains(err.Error(), want) {
			return
		}
	}
	sort.Strings(msgs)
	t.Fatalf("no error says %q; got:\n%s", want, strings.Join(msgs, "\n"))
}
