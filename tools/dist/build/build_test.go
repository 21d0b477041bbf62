package build_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/relayr-go/relayr/tools/dist/build"
)

// TestFlags: the release's flags, which the container image's build shares.
func TestFlags(t *testing.T) {
	want := []string{"-trimpath", "-buildvcs=auto", "-ldflags", "-s -w -buildid= -X main.release=v0.4.0"}
	if got := build.Flags("v0.4.0"); !slices.Equal(got, want) {
		t.Fatalf("Flags: %q, want %q", got, want)
	}
}

// TestEnv: whatever the caller's environment says, a build's go command
// sees cgo off, the platform asked for, the default instruction sets and
// GOFLAGS holding only the default -buildvcs=auto (the last of a name wins,
// in os/exec as in a shell).
func TestEnv(t *testing.T) {
	t.Setenv("CGO_ENABLED", "1")
	t.Setenv("GOAMD64", "v3")
	t.Setenv("GOOS", "plan9")
	// GOFLAGS in go env's file (go env -w), then in the environment too.
	goenv := filepath.Join(t.TempDir(), "env")
	if err := os.WriteFile(goenv, []byte("GOFLAGS=-buildvcs=false -tags=nope\nGOTOOLCHAIN=local\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOENV", goenv)
	for _, flags := range []string{"", "-buildvcs=false -race"} {
		t.Setenv("GOFLAGS", flags)
		cmd := exec.Command("go", "env", "CGO_ENABLED", "GOOS", "GOARCH", "GOAMD64", "GOARM64", "GOFLAGS")
		cmd.Env = build.Env("windows", "amd64")
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		if got, want := strings.Fields(string(out)), []string{"0", "windows", "amd64", "v1", "v8.0", "-buildvcs=auto"}; !slices.Equal(got, want) {
			t.Fatalf("GOFLAGS=%q: go env in build.Env: %q, want %q", flags, got, want)
		}
	}
}

func TestExeName(t *testing.T) {
	if build.ExeName("windows") != "relayr.exe" || build.ExeName("linux") != "relayr" || build.ExeName("darwin") != "relayr" {
		t.Fatal("ExeName")
	}
}

// TestBinaryRefusesAVersionOfTwoWords: a version is one word of -ldflags.
func TestBinaryRefusesAVersionOfTwoWords(t *testing.T) {
	for _, v := range []string{"", "v1 -X main.x=y", "v1'"} {
		if err := build.Binary(context.Background(), ".", "linux", "amd64", v, t.TempDir()+"/relayr"); err == nil || !strings.Contains(err.Error(), "want one word") {
			t.Errorf("version %q: %v", v, err)
		}
	}
}
