package source

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const commit = "daac671aad38ef82e9fd045e53b0610b1fdb2ff1"

var at = time.Date(2026, 12, 4, 17, 11, 16, 0, time.UTC)

func TestVersion(t *testing.T) {
	for _, c := range []struct {
		name string
		src  Source
		want string
	}{
		{"no tag", Source{Commit: commit, Time: at}, "v0.0.0-20261204171116-daac671aad38"},
		{"no tag, changed", Source{Commit: commit, Time: at, Dirty: true}, "v0.0.0-20261204171116-daac671aad38+dirty"},
		{"the tag's commit", Source{Commit: commit, Time: at, Tag: "v0.4.0"}, "v0.4.0"},
		{"the tag's commit, changed", Source{Commit: commit, Time: at, Tag: "v0.4.0", Dirty: true}, "v0.4.0+dirty"},
		{"after a release", Source{Commit: commit, Time: at, Tag: "v0.4.0", Ahead: 3}, "v0.4.1-0.20261204171116-daac671aad38"},
		{"after v1.9.9", Source{Commit: commit, Time: at, Tag: "v1.9.9", Ahead: 1}, "v1.9.10-0.20261204171116-daac671aad38"},
		{"after a prerelease", Source{Commit: commit, Time: at, Tag: "v0.4.0-rc.1", Ahead: 2}, "v0.4.0-rc.1.0.20261204171116-daac671aad38"},
		{"the time in UTC", Source{Commit: commit, Time: at.In(time.FixedZone("UTC-7", -7*3600))}, "v0.0.0-20261204171116-daac671aad38"},
	} {
		if got := c.src.Version(); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

func TestParseDescribe(t *testing.T) {
	for _, c := range []struct {
		in    string
		tag   string
		ahead int
		err   string
	}{
		{in: "apps/relayr/v0.4.0-0-gdaac671", tag: "v0.4.0"},
		{in: "apps/relayr/v0.4.0-12-gdaac671", tag: "v0.4.0", ahead: 12},
		{in: "apps/relayr/v1.2.3-rc.1-2-gdaac671", tag: "v1.2.3-rc.1", ahead: 2},
		{in: "apps/relayr/v1.2.3+meta-0-gdaac671", tag: "v1.2.3"},
		{in: "apps/relayr/v1.2-0-gdaac671", err: "semantic version"},
		{in: "apps/relayr/release-1-0-gdaac671", err: "semantic version"},
		{in: "core/v1.2.3-0-gdaac671", err: "want apps/relayr/"},
		{in: "apps/relayr/v1.2.3", err: "want apps/relayr/"},
	} {
		tag, ahead, err := parseDescribe(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: %v, want an error saying %q", c.in, err, c.err)
		case c.err == "" && (err != nil || tag != c.tag || ahead != c.ahead):
			t.Errorf("%s: %q %d %v, want %q %d", c.in, tag, ahead, err, c.tag, c.ahead)
		}
	}
}

func TestEpoch(t *testing.T) {
	src := Source{Commit: commit, Time: at}
	t.Setenv("SOURCE_DATE_EPOCH", "")
	if got, err := src.Epoch(); err != nil || !got.Equal(at) {
		t.Fatalf("without SOURCE_DATE_EPOCH: %v %v, want the commit's time %v", got, err, at)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	if got, err := src.Epoch(); err != nil || !got.Equal(time.Unix(1700000000, 0)) {
		t.Fatalf("SOURCE_DATE_EPOCH=1700000000: %v %v", got, err)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "yesterday")
	if _, err := src.Epoch(); err == nil {
		t.Fatal("SOURCE_DATE_EPOCH=yesterday: no error")
	}
}

// TestRead reads a repository made here: a commit without a tag, the
// tagged one, one after it, and a change not committed.
func TestRead(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	run := func(when time.Time, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		date := when.Format(time.RFC3339)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=relayr", "GIT_AUTHOR_EMAIL=relayr@example.invalid",
			"GIT_COMMITTER_NAME=relayr", "GIT_COMMITTER_EMAIL=relayr@example.invalid",
			"GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date, "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	head := func() string {
		t.Helper()
		out, err := git(ctx, dir, "rev-parse", "HEAD")
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out)
	}
	check := func(name string, want Source, version string) {
		t.Helper()
		got, err := Read(ctx, dir)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got != want || got.Version() != version {
			t.Fatalf("%s: %+v (%s), want %+v (%s)", name, got, got.Version(), want, version)
		}
	}
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(at, "init", "-q", "-b", "main")
	write("README.md", "one\n")
	run(at, "add", ".")
	run(at, "commit", "-q", "-m", "one")
	first := head()
	run(at, "tag", "core/v9.0.0") // another module's tag: not a release
	check("no release tag", Source{Commit: first, Time: at}, "v0.0.0-20261204171116-"+first[:12])

	second := at.Add(time.Hour)
	write("README.md", "two\n")
	run(second, "commit", "-q", "-am", "two")
	run(second, "tag", "-a", "-m", "v0.4.0", "apps/relayr/v0.4.0")
	tagged := head()
	check("the tagged commit", Source{Commit: tagged, Time: second, Tag: "v0.4.0"}, "v0.4.0")

	third := second.Add(time.Hour)
	write("README.md", "three\n")
	run(third, "commit", "-q", "-am", "three")
	after := head()
	check("after the tag", Source{Commit: after, Time: third, Tag: "v0.4.0", Ahead: 1}, "v0.4.1-0.20261204191116-"+after[:12])

	write("NEW", "not committed\n")
	check("a change not committed", Source{Commit: after, Time: third, Tag: "v0.4.0", Ahead: 1, Dirty: true}, "v0.4.1-0.20261204191116-"+after[:12]+"+dirty")
}
