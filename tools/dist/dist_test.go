package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/relayr-go/relayr/tools/dist/internal/cdxschema"
	"github.com/relayr-go/relayr/tools/dist/sbom"
	"github.com/relayr-go/relayr/tools/dist/source"
)

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// TestReleaseIsReproducible builds linux/amd64's artifacts twice from the
// same commit, into two folders, the second time with a build cache of its
// own (so nothing of the first build is reused), and checks that every file
// is the same, byte for byte and time for time; then that SHA256SUMS
// verifies (by sha256sum itself), that the archive holds the binary and the
// README, and that the SBOM is valid CycloneDX 1.5 naming the binary, the
// commit, the main module and modernc.org/sqlite.
func TestReleaseIsReproducible(t *testing.T) {
	ctx := context.Background()
	t.Setenv("SOURCE_DATE_EPOCH", "")
	root, err := repoRoot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	src, err := source.Read(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	linux := []platform{{"linux", "amd64"}}
	outA, outB := t.TempDir(), t.TempDir()
	first, err := dist(ctx, config{Root: root, Out: outA, Platforms: linux, Archives: true, Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	t.Setenv("GOCACHE", cache)
	second, err := dist(ctx, config{Root: root, Out: outB, Platforms: linux, Archives: true, Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	if n := treeSize(t, cache); n < 10<<20 {
		t.Fatalf("the second build left %d bytes in its own GOCACHE: it did not build there", n)
	}

	if first.Version != src.Version() || second.Version != first.Version {
		t.Fatalf("versions %s and %s, want the commit's %s", first.Version, second.Version, src.Version())
	}
	base := "relayr_" + first.Version + "_linux_amd64"
	want := []string{"SHA256SUMS", "linux_amd64/relayr", base + ".cdx.json", base + ".tar.gz"}
	filesA, filesB := tree(t, outA), tree(t, outB)
	if got := slices.Sorted(maps.Keys(filesA)); !slices.Equal(got, want) {
		t.Fatalf("the first run wrote %v, want %v", got, want)
	}
	for _, name := range want {
		a, b := filesA[name], filesB[name]
		if !bytes.Equal(a.data, b.data) {
			t.Errorf("%s differs between the two builds (%d and %d bytes)", name, len(a.data), len(b.data))
		}
		if !a.mtime.Equal(src.Time) || !b.mtime.Equal(src.Time) {
			t.Errorf("%s is timed %v and %v, want the commit's %v", name, a.mtime, b.mtime, src.Time)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	binary := filesA["linux_amd64/relayr"].data
	if !bytes.Contains(binary, []byte(first.Version)) {
		t.Errorf("the binary does not hold its release %s (-X main.release)", first.Version)
	}

	checkSums(t, outA, filesA, []string{base + ".cdx.json", base + ".tar.gz"})
	checkTarGz(t, root, filesA[base+".tar.gz"].data, binary)
	checkSBOM(t, filesA[base+".cdx.json"].data, binary, first.Version, src)
}

// checkSums: one line per archive and SBOM, in sha256sum's format, each
// sum the file's; and sha256sum --check --strict agrees.
func checkSums(t *testing.T, out string, files map[string]file, names []string) {
	t.Helper()
	sums := string(files["SHA256SUMS"].data)
	line := regexp.MustCompile(`^([0-9a-f]{64})  (\S+)$`)
	var listed []string
	for _, l := range strings.Split(strings.TrimSuffix(sums, "\n"), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("SHA256SUMS line %q: want <sha256>  <name>", l)
		}
		sum := sha256.Sum256(files[m[2]].data)
		if hex.EncodeToString(sum[:]) != m[1] {
			t.Fatalf("SHA256SUMS: %s is %x, the file says %s", m[2], sum, m[1])
		}
		listed = append(listed, m[2])
	}
	if !slices.Equal(listed, names) {
		t.Fatalf("SHA256SUMS lists %v, want %v", listed, names)
	}
	cmd := exec.Command("sha256sum", "--check", "--strict", "SHA256SUMS")
	cmd.Dir = out
	if got, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sha256sum --check: %v\n%s", err, got)
	}
}

// checkTarGz: LICENSE when the repository has one, README.md and the
// binary, in that order, as they are, owned by 0.
func checkTarGz(t *testing.T, root string, data, binary []byte) {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{"README.md": readme, "relayr": binary}
	names := []string{"README.md", "relayr"}
	license, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	switch {
	case err == nil:
		want["LICENSE"] = license
		names = append([]string{"LICENSE"}, names...)
	case !errors.Is(err, fs.ErrNotExist):
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var got []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(body, want[h.Name]) || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("the archive's %s: %d bytes, owner %d:%d; want the file's %d bytes, owner 0:0", h.Name, len(body), h.Uid, h.Gid, len(want[h.Name]))
		}
		got = append(got, h.Name)
	}
	if !slices.Equal(got, names) {
		t.Fatalf("the archive holds %v, want %v", got, names)
	}
}

// checkSBOM: valid CycloneDX 1.5; the application is the main module at
// the release, with the binary's SHA-256, its platform and its commit; the
// components include the standard library and modernc.org/sqlite with a
// purl and a hash.
func checkSBOM(t *testing.T, doc, binary []byte, version string, src source.Source) {
	t.Helper()
	if err := cdxschema.Validate(context.Background(), doc); err != nil {
		t.Fatal(err)
	}
	type hash struct {
		Alg     string `json:"alg"`
		Content string `json:"content"`
	}
	type component struct {
		Name       string `json:"name"`
		Version    string `json:"version"`
		Purl       string `json:"purl"`
		Hashes     []hash `json:"hashes"`
		Properties []struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"properties"`
	}
	var bom struct {
		SerialNumber string `json:"serialNumber"`
		Metadata     struct {
			Timestamp string    `json:"timestamp"`
			Component component `json:"component"`
		} `json:"metadata"`
		Components []component `json:"components"`
	}
	if err := json.Unmarshal(doc, &bom); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(binary)
	app := bom.Metadata.Component
	const mainModule = "github.com/relayr-go/relayr/apps/relayr"
	if app.Name != mainModule || app.Version != version || app.Purl != sbom.Purl(mainModule, version) ||
		len(app.Hashes) != 1 || app.Hashes[0] != (hash{"SHA-256", hex.EncodeToString(sum[:])}) {
		t.Fatalf("the SBOM's application: %+v, want %s at %s with the binary's SHA-256 %x", app, mainModule, version, sum)
	}
	if bom.SerialNumber != sbom.SerialNumber(sum) || bom.Metadata.Timestamp != src.Time.UTC().Format(time.RFC3339) {
		t.Fatalf("serial number %s, timestamp %s", bom.SerialNumber, bom.Metadata.Timestamp)
	}
	props := map[string]string{}
	for _, p := range app.Properties {
		props[p.Name] = p.Value
	}
	for name, want := range map[string]string{
		"cdx:gomod:build:env:GOOS": "linux", "cdx:gomod:build:env:GOARCH": "amd64", "cdx:gomod:build:env:CGO_ENABLED": "0",
		"relayr:go:build:-trimpath": "true", "relayr:source:revision": src.Commit,
	} {
		if props[name] != want {
			t.Errorf("the application's %s: %q, want %q", name, props[name], want)
		}
	}
	byName := map[string]component{}
	for _, c := range bom.Components {
		byName[c.Name] = c
	}
	sqlite := byName["modernc.org/sqlite"]
	if !strings.HasPrefix(sqlite.Purl, "pkg:golang/modernc.org/sqlite@v") || sqlite.Purl != sbom.Purl(sqlite.Name, sqlite.Version) ||
		len(sqlite.Hashes) != 1 || len(sqlite.Hashes[0].Content) != 64 {
		t.Errorf("modernc.org/sqlite: %+v", sqlite)
	}
	if std := byName["stdlib"]; !strings.HasPrefix(std.Purl, "pkg:golang/stdlib@go1.") {
		t.Errorf("stdlib: %+v", std)
	}
}

type file struct {
	data  []byte
	mtime time.Time
}

// tree reads every file under dir, by slash-separated relative name.
func tree(t *testing.T, dir string) map[string]file {
	t.Helper()
	files := map[string]file{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		st, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = file{data, st.ModTime()}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func treeSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		st, err := d.Info()
		n += st.Size()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestParsePlatforms(t *testing.T) {
	got, err := parsePlatforms("linux/amd64, windows/amd64")
	if err != nil || !slices.Equal(got, []platform{{"linux", "amd64"}, {"windows", "amd64"}}) {
		t.Fatalf("%v %v", got, err)
	}
	if got, err := parsePlatforms(strings.Join(defaultPlatforms, ",")); err != nil || len(got) != 5 {
		t.Fatalf("the default platforms: %v %v", got, err)
	}
	for _, bad := range []string{"", "linux", "linux/", "linux/amd64/v3", "linux/amd64,linux/amd64", "Linux/AMD64"} {
		if _, err := parsePlatforms(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestClean: an earlier run's archives, SBOMs and SHA256SUMS go; anything
// else stays.
func TestClean(t *testing.T) {
	out := t.TempDir()
	for _, n := range []string{"SHA256SUMS", "relayr_v1_linux_amd64.tar.gz", "relayr_v1_windows_amd64.zip", "relayr_v1_linux_amd64.cdx.json", "notes.txt", "relayr.txt"} {
		if err := os.WriteFile(filepath.Join(out, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(out, "linux_amd64"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := clean(out); err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(tree(t, out))); !slices.Equal(got, []string{"notes.txt", "relayr.txt"}) {
		t.Fatalf("after clean: %v", got)
	}
}

// TestUsage: a wrong flag, platform or argument is a usage error, before
// anything is built.
func TestUsage(t *testing.T) {
	for _, args := range [][]string{{"-nope"}, {"-platforms", "linux"}, {"extra"}} {
		var out bytes.Buffer
		if code := run(context.Background(), args, &out, &out); code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", args, code, out.String())
		}
	}
	var out bytes.Buffer
	if code := run(context.Background(), []string{"-h"}, &out, &out); code != 0 || !strings.Contains(out.String(), "-platforms") {
		t.Errorf("-h: exit %d\n%s", code, out.String())
	}
}
