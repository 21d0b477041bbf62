package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemoOfTheBuiltBinary builds relayr from the tree and runs `relayr
// demo`: the end-to-end test of the whole loop. It exits 0 only if every
// step held.
func TestDemoOfTheBuiltBinary(t *testing.T) {
	bin := relayrBinary(t)
	var out bytes.Buffer
	cmd := exec.Command(bin, "demo")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("relayr demo: %v\n%s", err, out.String())
	}
	for _, want := range []string{"make one item", "correlation=run-42", "dropped as an echo", "tracker_loop", "Every step held"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the demo's story lacks %q:\n%s", want, out.String())
		}
	}
	t.Log(out.String())
}

func TestEveryCommandHasHelp(t *testing.T) {
	for _, c := range commands() {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			if code := run(context.Background(), []string{c.name, "-h"}, &out, &out); code != exitOK {
				t.Fatalf("exit %d", code)
			}
			if !strings.Contains(out.String(), "relayr "+c.name) {
				t.Fatalf("help: %s", out.String())
			}
		})
	}
	var out bytes.Buffer
	if code := run(context.Background(), []string{"nonsense"}, &out, &out); code != exitUsage {
		t.Fatalf("an unknown command exits %d", code)
	}
}

func TestServeRefusesABadConfigurationBeforeStarting(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "relayr.toml")
	if err := os.WriteFile(path, []byte("listen = \"127.0.0.1:0\"\nlisten_twice = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if code := run(context.Background(), []string{"serve", "-config", path}, &out, &out); code != exitFail {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(out.String(), `line 2: unknown key "listen_twice"`) {
		t.Fatalf("output %s", out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "relayr.db")); err == nil {
		t.Fatal("a refused configuration created a ledger")
	}
}
