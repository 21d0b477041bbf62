package main

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// tree makes a git repository of two modules tied by go.work, as relayr's
// are: a requires b, with the replace directive a release must not carry; b
// holds a nested module and a file .gitignore leaves out.
func tree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"go.work":              "go 1.26.0\n\nuse (\n\t./a\n\t./b\n)\n",
		".gitignore":           "*.log\n",
		"a/go.mod":             "module example.com/r/a\n\ngo 1.26.0\n\nrequire example.com/r/b v0.0.0\n\nreplace example.com/r/b => ../b\n",
		"a/a.go":               "package a\n\nimport _ \"example.com/r/b\"\n",
		"b/go.mod":             "module example.com/r/b\n\ngo 1.26.0\n",
		"b/b.go":               "package b\n",
		"b/debug.log":          "not released\n",
		"b/nested/go.mod":      "module example.com/r/b/nested\n\ngo 1.26.0\n",
		"b/nested/nested.go":   "package nested\n",
		"b/testdata/input.txt": "released\n",
	}
	for name, data := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, root, "init", "-q")
	git(t, root, "add", ".")
	git(t, root, "-c", "user.name=relayr", "-c", "user.email=relayr@example.com", "commit", "-q", "-m", "tree")
	return root
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func runRelease(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out, errs bytes.Buffer
	code := run(args, &out, &errs)
	return code, out.String() + errs.String()
}

func TestCheckRefusesAReplaceAndBumpMakesTheModulesReleasable(t *testing.T) {
	root := tree(t)
	code, out := runRelease(t, "check", "-root", root)
	if code != 1 || !strings.Contains(out, "a/go.mod replaces example.com/r/b") {
		t.Fatalf("check with a replace: %d %s", code, out)
	}
	// bump refuses the replace too: a module is not made releasable by
	// dropping a directive someone put there.
	if code, out := runRelease(t, "bump", "-root", root, "-version", "v0.2.0"); code != 1 || !strings.Contains(out, "replaces") {
		t.Fatalf("bump with a replace: %d %s", code, out)
	}

	gomod := filepath.Join(root, "a", "go.mod")
	if err := os.WriteFile(gomod, []byte("module example.com/r/a\n\ngo 1.26.0\n\nrequire example.com/r/b v0.0.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := runRelease(t, "check", "-root", root); code != 1 || !strings.Contains(out, "siblings are required at v0.0.0, not a release version") {
		t.Fatalf("check before bump: %d %s", code, out)
	}
	if code, out := runRelease(t, "bump", "-root", root, "-version", "v0.2.0"); code != 0 {
		t.Fatalf("bump: %d %s", code, out)
	}
	data, _ := os.ReadFile(gomod)
	if !strings.Contains(string(data), "require example.com/r/b v0.2.0") {
		t.Fatalf("a/go.mod after bump:\n%s", data)
	}
	work, _ := os.ReadFile(filepath.Join(root, "go.work"))
	for _, want := range []string{"example.com/r/a v0.2.0 => ./a", "example.com/r/b v0.2.0 => ./b"} {
		if !strings.Contains(string(work), want) {
			t.Fatalf("go.work lacks %q:\n%s", want, work)
		}
	}
	if code, out := runRelease(t, "check", "-root", root); code != 0 || !strings.Contains(out, "2 modules, no replace, siblings required at v0.2.0") {
		t.Fatalf("check after bump: %d %s", code, out)
	}
	// A second bump moves every requirement and go.work's block, and
	// leaves one block.
	if code, out := runRelease(t, "bump", "-root", root, "-version", "v0.3.0"); code != 0 {
		t.Fatalf("bump again: %d %s", code, out)
	}
	work, _ = os.ReadFile(filepath.Join(root, "go.work"))
	if strings.Count(string(work), "replace (") != 1 || strings.Contains(string(work), "v0.2.0") {
		t.Fatalf("go.work after a second bump:\n%s", work)
	}
	if code, out := runRelease(t, "check", "-root", root); code != 0 || !strings.HasSuffix(strings.TrimSpace(out), "v0.3.0") {
		t.Fatalf("check after a second bump: %d %s", code, out)
	}
}

func TestProxyHoldsEachModuleAsATagWouldRelease(t *testing.T) {
	root := tree(t)
	if err := os.WriteFile(filepath.Join(root, "a", "go.mod"), []byte("module example.com/r/a\n\ngo 1.26.0\n\nrequire example.com/r/b v0.0.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A file not yet committed is in the tree, and so in the zip.
	if err := os.WriteFile(filepath.Join(root, "a", "new.go"), []byte("package a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if code, msg := runRelease(t, "proxy", "-root", root, "-version", "v0.2.0", "-out", out); code != 0 {
		t.Fatalf("proxy: %d %s", code, msg)
	}
	mod, err := os.ReadFile(filepath.Join(out, "example.com/r/a/@v/v0.2.0.mod"))
	if err != nil || !strings.Contains(string(mod), "require example.com/r/b v0.2.0") {
		t.Fatalf("a's .mod: %v\n%s", err, mod)
	}
	list, _ := os.ReadFile(filepath.Join(out, "example.com/r/b/@v/list"))
	info, _ := os.ReadFile(filepath.Join(out, "example.com/r/b/@v/v0.2.0.info"))
	if string(list) != "v0.2.0\n" || !strings.Contains(string(info), `"Version":"v0.2.0"`) {
		t.Fatalf("b's list %q, info %s", list, info)
	}
	if got := zipped(t, filepath.Join(out, "example.com/r/a/@v/v0.2.0.zip")); strings.Join(got, " ") != "example.com/r/a@v0.2.0/a.go example.com/r/a@v0.2.0/go.mod example.com/r/a@v0.2.0/new.go" {
		t.Fatalf("a's zip: %v", got)
	}
	// b's zip: not the nested module, not what .gitignore leaves out.
	if got := zipped(t, filepath.Join(out, "example.com/r/b/@v/v0.2.0.zip")); strings.Join(got, " ") != "example.com/r/b@v0.2.0/b.go example.com/r/b@v0.2.0/go.mod example.com/r/b@v0.2.0/testdata/input.txt" {
		t.Fatalf("b's zip: %v", got)
	}
	r, err := zip.OpenReader(filepath.Join(out, "example.com/r/a/@v/v0.2.0.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	for _, f := range r.File {
		if strings.HasSuffix(f.Name, "/go.mod") {
			rc, _ := f.Open()
			data, _ := io.ReadAll(rc)
			_ = rc.Close()
			if !bytes.Equal(data, mod) {
				t.Fatalf("the zip's go.mod is not the .mod:\n%s\n%s", data, mod)
			}
		}
	}
}

func zipped(t *testing.T, name string) []string {
	t.Helper()
	r, err := zip.OpenReader(name)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	var names []string
	for _, f := range r.File {
		names = append(names, f.Name)
	}
	sort.Strings(names)
	return names
}

func TestAVersionMustBeARelease(t *testing.T) {
	for v, ok := range map[string]bool{
		"v0.2.0": true, "v1.10.3": true, "v0.2.0-rc.1": true,
		"": false, "v0.0.0": false, "0.2.0": false, "v0.2": false, "v0.02.0": false, "v0.2.0+meta": false, "vx.y.z": false,
	} {
		code, out := runRelease(t, "bump", "-root", t.TempDir(), "-version", v)
		if ok != (code != 2) {
			t.Errorf("version %q: code %d %s", v, code, out)
		}
	}
	if code, out := runRelease(t, "unknown", "-root", tree(t)); code != 2 || !strings.Contains(out, `unknown command "unknown"`) {
		t.Fatalf("an unknown command: %d %s", code, out)
	}
}

func TestDropSiblingSums(t *testing.T) {
	name := filepath.Join(t.TempDir(), "go.sum")
	sum := "example.com/r/b v0.2.0 h1:x=\nexample.com/r/b v0.2.0/go.mod h1:y=\ngolang.org/x/mod v0.43.0 h1:z=\n"
	if err := os.WriteFile(name, []byte(sum), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := dropSiblingSums(filepath.Dir(name), map[string]bool{"example.com/r/b": true}); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(name); string(data) != "golang.org/x/mod v0.43.0 h1:z=\n" {
		t.Fatalf("go.sum: %q", data)
	}
}
