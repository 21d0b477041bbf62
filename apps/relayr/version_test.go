package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestTheVersionIsReadFromTheBuildInfo(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	vcs := []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"},
		{Key: "vcs.time", Value: "2026-12-04T12:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}
	for _, c := range []struct {
		name  string
		info  *debug.BuildInfo
		ok    bool
		given string
		want  buildVersion
		line  string
	}{
		{"NoBuildInfo", nil, false, "", buildVersion{Release: "devel", Go: runtime.Version(), Platform: platform}, "relayr devel " + runtime.Version() + " " + platform},
		{"NoBuildInfoButAGivenRelease", nil, false, "v0.4.0", buildVersion{Release: "v0.4.0", Go: runtime.Version(), Platform: platform}, "relayr v0.4.0 " + runtime.Version() + " " + platform},
		{"GoInstallAtAVersion", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/relayr-go/relayr/apps/relayr", Version: "v0.4.0"}},
			true, "", buildVersion{Release: "v0.4.0", Go: "go1.26.8", Platform: platform}, "relayr v0.4.0 go1.26.8 " + platform},
		{"ACheckoutsBuildWithItsCommit", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs},
			true, "", buildVersion{Release: "devel", Commit: "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b", Time: "2026-12-04T12:00:00Z", Modified: true, Go: "go1.26.8", Platform: platform},
			"relayr devel (commit 1a2b3c4d5e6f, 2026-12-04T12:00:00Z, modified) go1.26.8 " + platform},
		{"AReleaseBuildNamesItsRelease", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: append(vcs[:3:3], debug.BuildSetting{Key: "GOOS", Value: "darwin"}, debug.BuildSetting{Key: "GOARCH", Value: "arm64"})},
			true, "v0.4.0", buildVersion{Release: "v0.4.0", Commit: "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b", Time: "2026-12-04T12:00:00Z", Go: "go1.26.8", Platform: "darwin/arm64"},
			"relayr v0.4.0 (commit 1a2b3c4d5e6f, 2026-12-04T12:00:00Z) go1.26.8 darwin/arm64"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := readVersion(c.info, c.ok, c.given)
			if got != c.want {
				t.Fatalf("%+v, want %+v", got, c.want)
			}
			if got.String() != c.line {
				t.Fatalf("%q, want %q", got.String(), c.line)
			}
		})
	}
}

// TestVersionOfTheBuiltBinary: a release build of this tree (its VCS
// stamp asked for, whatever GOFLAGS says, and its release given) names its
// release and the commit it was built from, plain, as JSON, and as
// -version.
func TestVersionOfTheBuiltBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "relayr")
	build := exec.Command("go", "build", "-buildvcs=true", "-ldflags", "-X main.release=v9.9.9-test", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("the tree is not a git checkout, whose commit a build stamps: %v", err)
	}
	commit := strings.TrimSpace(string(head))
	// Go stamps the commit of a checkout whose .git is a folder; a linked
	// worktree's (.git a file) it leaves out.
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatal(err)
	}
	dotGit, err := os.Stat(filepath.Join(strings.TrimSpace(string(top)), ".git"))
	if err != nil {
		t.Fatal(err)
	}
	want := "relayr v9.9.9-test (commit " + commit[:12]
	if !dotGit.IsDir() {
		t.Logf("a linked worktree: Go stamps no commit, so only the release and Go are checked")
		want, commit = "relayr v9.9.9-test "+runtime.Version(), ""
	}
	for _, args := range [][]string{{"version"}, {"-version"}, {"--version"}} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("relayr %v: %v\n%s", args, err, out)
		}
		line := strings.TrimSpace(string(out))
		if !strings.HasPrefix(line, want) || !strings.Contains(line, runtime.Version()) {
			t.Fatalf("relayr %v: %q, want it to begin %q and name %s", args, line, want, runtime.Version())
		}
	}
	out, err := exec.Command(bin, "version", "-json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var v buildVersion
	if err := json.Unmarshal(out, &v); err != nil || v.Commit != commit || v.Release != "v9.9.9-test" || v.Go != runtime.Version() {
		t.Fatalf("relayr version -json: %s (%v), want commit %s", out, err, commit)
	}
	var help bytes.Buffer
	if code := run(context.Background(), []string{"version", "extra"}, &help, &help); code != exitUsage {
		t.Fatalf("relayr version extra: exit %d", code)
	}
}
