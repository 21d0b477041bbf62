package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/relayr-go/relayr/apps/relayr/internal/config"
)

// deployDir is the repository's deploy/ folder, which operators copy.
const deployDir = "../../../../deploy"

// eachSecret calls f with every secret a configuration names, wherever it
// sits (tables, arrays of tables, tables by name), by its field path.
func eachSecret(v reflect.Value, path string, f func(string, *config.Secret)) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			eachSecret(v.Elem(), path, f)
		}
	case reflect.Struct:
		if s, ok := v.Addr().Interface().(*config.Secret); ok {
			if s.Set() {
				f(path, s)
			}
			return
		}
		for i := range v.NumField() {
			if ft := v.Type().Field(i); ft.IsExported() {
				eachSecret(v.Field(i), path+"."+ft.Name, f)
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			eachSecret(v.Index(i), path+"["+strconv.Itoa(i)+"]", f)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			eachSecret(e, path+"["+k.String()+"]", f)
			v.SetMapIndex(k, e)
		}
	}
}

// exampleSecret reads the values of deploy/kubernetes/secret.example.yaml,
// the placeholders an operator replaces: its stringData, one quoted value a
// line (the deploy module's test decodes the file strictly as a Secret).
func exampleSecret(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deployDir, "kubernetes", "secret.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, data, ok := strings.Cut(string(b), "\nstringData:\n")
	if !ok {
		t.Fatal("secret.example.yaml has no stringData")
	}
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^  ([a-z0-9-]+): "([^"]*)"$`).FindAllStringSubmatch(data, -1) {
		out[m[1]] = m[2]
	}
	if len(out) == 0 {
		t.Fatal("secret.example.yaml's stringData holds no quoted value")
	}
	return out
}

// The configurations the deployments ship (deploy/kubernetes/relayr.toml,
// which the ConfigMap holds, and deploy/systemd/relayr.toml) load with this
// loader, which refuses a key it does not know, and their secrets read as
// the deployments hand them over: every one a file, under the Secret's
// mount with the example Secret's placeholder values on Kubernetes, under
// the unit's credentials on systemd. Tokens shorter than MinTokenBytes, or
// shared, are refused here as at start.
func TestTheDeploymentsConfigurationsLoad(t *testing.T) {
	for _, tc := range []struct {
		name   string
		dir    string
		under  string
		driver string
		values func(*testing.T) map[string]string
	}{
		{name: "kubernetes", dir: "kubernetes", under: "/run/secrets/relayr/", driver: "postgres", values: exampleSecret},
		{name: "systemd", dir: "systemd", under: "/run/credentials/relayr.service/", driver: "sqlite"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(deployDir, tc.dir, "relayr.toml")
			c, err := config.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if c.Ledger.Driver != tc.driver {
				t.Errorf("ledger.driver %q, not %q", c.Ledger.Driver, tc.driver)
			}
			if w := c.Warnings(); len(w) > 0 {
				t.Errorf("warnings: %v", w)
			}
			if tc.driver == "sqlite" && c.LedgerPath() != "/var/lib/relayr/relayr.db" {
				t.Errorf("the ledger is at %s, not in the unit's state directory /var/lib/relayr", c.LedgerPath())
			}
			var values map[string]string
			if tc.values != nil {
				values = tc.values(t)
			}
			tmp := t.TempDir()
			n := 0
			eachSecret(reflect.ValueOf(c), "config", func(where string, s *config.Secret) {
				n++
				name, ok := strings.CutPrefix(s.File, tc.under)
				if s.Env != "" || !ok || name == "" || strings.Contains(name, "/") {
					t.Errorf("%s: %+v is not a file under %s", where, *s, tc.under)
					return
				}
				v, ok := values[name]
				switch {
				case values == nil:
					// A credential of the operator's: long enough for a
					// token, and its own.
					v = "credential-" + name + "-" + strings.Repeat("0", config.MinTokenBytes)
				case !ok:
					t.Errorf("%s: the example Secret has no key %s", where, name)
					return
				}
				// The deployment's path cannot be written here: the same
				// value goes in a file of the test's own.
				s.File = filepath.Join(tmp, name)
				if err := os.WriteFile(s.File, []byte(v+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			})
			if n < 4 {
				t.Fatalf("found %d secrets: the walk missed the configuration's tables", n)
			}
			if _, err := c.ReadSecrets(func(string) string { return "" }); err != nil {
				t.Fatal(err)
			}

			// A key the loader does not know fails the file.
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), "shutdown_grace =") {
				t.Fatal("the configuration sets no shutdown_grace to misspell")
			}
			bad := strings.Replace(string(b), "shutdown_grace =", "shutdown_grase =", 1)
			if _, err := config.Parse([]byte(bad), path); !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), `unknown key "timings.shutdown_grase"`) {
				t.Errorf("a misspelt key: %v, want the loader's unknown key", err)
			}
		})
	}
}
