package config_test

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/relayr-go/relayr/apps/relayr/internal/config"
)

// Every key the loader accepts (every toml tag of the configuration's
// types, nested tables included) is on the configuration page, in
// backticks as the file spells it.
func TestTheConfigurationPageNamesEveryKey(t *testing.T) {
	page, err := os.ReadFile("../../../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(ty reflect.Type) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice || ty.Kind() == reflect.Map {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct || seen[ty] || ty == reflect.TypeFor[time.Time]() {
			return
		}
		seen[ty] = true
		for f := range ty.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
			if name == "" || name == "-" {
				continue
			}
			keys[name] = true
			walk(f.Type)
		}
	}
	walk(reflect.TypeFor[config.Config]())
	if len(keys) < 20 {
		t.Fatalf("found %d keys: the walk missed the configuration's tables", len(keys))
	}
	for k := range keys {
		if !strings.Contains(string(page), "`"+k+"`") {
			t.Errorf("docs/configuration.md does not name `%s`", k)
		}
	}
}
