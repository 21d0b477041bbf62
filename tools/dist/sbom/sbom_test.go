package sbom

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/relayr-go/relayr/tools/dist/internal/cdxschema"
)

var at = time.Date(2026, 12, 4, 17, 11, 16, 0, time.UTC)

const commit = "daac671aad38ef82e9fd045e53b0610b1fdb2ff1"

func TestPurl(t *testing.T) {
	for _, c := range []struct{ path, version, want string }{
		{"modernc.org/sqlite", "v1.59.0", "pkg:golang/modernc.org/sqlite@v1.59.0"},
		{"github.com/CycloneDX/cyclonedx-go", "v0.12.0", "pkg:golang/github.com/CycloneDX/cyclonedx-go@v0.12.0"},
		{"github.com/relayr-go/relayr/apps/relayr", "v0.0.0-20261204171116-daac671aad38+dirty",
			"pkg:golang/github.com/relayr-go/relayr/apps/relayr@v0.0.0-20261204171116-daac671aad38%2Bdirty"},
		{"github.com/relayr-go/relayr/core", "", "pkg:golang/github.com/relayr-go/relayr/core"},
		{"example.com/a b", "v1.0.0", "pkg:golang/example.com/a%20b@v1.0.0"},
	} {
		if got := Purl(c.path, c.version); got != c.want {
			t.Errorf("Purl(%q, %q) = %s, want %s", c.path, c.version, got, c.want)
		}
	}
}

// TestSerialNumber: an RFC 9562 version 8 UUID of the sum's first bytes.
func TestSerialNumber(t *testing.T) {
	sum := sha256.Sum256([]byte("relayr"))
	got := SerialNumber(sum)
	if !regexp.MustCompile(`^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(got) {
		t.Fatalf("%s: want a version 8 UUID of the RFC's variant", got)
	}
	h := strings.ReplaceAll(strings.TrimPrefix(got, "urn:uuid:"), "-", "")
	want := []byte(strings.ToLower(strings.TrimSpace(hexOf(sum[:16]))))
	for i := range h {
		if i == 12 || i == 16 { // the version and variant nibbles
			continue
		}
		if h[i] != want[i] {
			t.Fatalf("%s: not the sum's first bytes %s", got, want)
		}
	}
	other := sha256.Sum256([]byte("relayr!"))
	if SerialNumber(other) == got {
		t.Fatal("two binaries, one serial number")
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	var s strings.Builder
	for _, c := range b {
		s.WriteByte(digits[c>>4])
		s.WriteByte(digits[c&15])
	}
	return s.String()
}

func info(settings ...string) *debug.BuildInfo {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Path:      "github.com/relayr-go/relayr/apps/relayr",
		Main:      debug.Module{Path: "github.com/relayr-go/relayr/apps/relayr", Version: "(devel)"},
		Deps: []*debug.Module{
			{Path: "modernc.org/sqlite", Version: "v1.59.0", Sum: "h1:X1es1GpqBlS/5T+vbM4HLUdaa8OtQx468DF2vrx+38A="},
			{Path: "github.com/relayr-go/relayr/core", Version: "(devel)"},
			{Path: "github.com/relayr-go/relayr/adapters/plane", Version: "v0.0.0", Replace: &debug.Module{Path: "../../adapters/plane"}},
			{Path: "example.com/old", Version: "v1.0.0", Replace: &debug.Module{Path: "example.com/fork", Version: "v1.0.1", Sum: "h1:VlbKKnNfV8bJzeqoa4cOKqO6bYr3WgKZxO8Z16+hsOM="}},
		},
	}
	for i := 0; i+1 < len(settings); i += 2 {
		bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
	}
	return bi
}

func find(bom *cdx.BOM, name string) *cdx.Component {
	for i, c := range *bom.Components {
		if c.Name == name {
			return &(*bom.Components)[i]
		}
	}
	return nil
}

func prop(props *[]cdx.Property, name string) string {
	if props == nil {
		return ""
	}
	for _, p := range *props {
		if p.Name == name {
			return p.Value
		}
	}
	return ""
}

// TestFromBuildInfo: the application, the standard library and each module
// as build info says, a replacement as the module built, a local module
// without a version.
func TestFromBuildInfo(t *testing.T) {
	sum := sha256.Sum256([]byte("binary"))
	bom, err := fromBuildInfo(info("GOOS", "linux", "GOARCH", "arm64", "CGO_ENABLED", "0", "vcs.revision", commit),
		"relayr", sum, Options{Version: "v0.4.0", Revision: commit, Time: at.In(time.FixedZone("x", 3600))})
	if err != nil {
		t.Fatal(err)
	}
	app := bom.Metadata.Component
	if app.Name != "github.com/relayr-go/relayr/apps/relayr" || app.Version != "v0.4.0" ||
		app.PackageURL != "pkg:golang/github.com/relayr-go/relayr/apps/relayr@v0.4.0" || app.Type != cdx.ComponentTypeApplication {
		t.Fatalf("application: %+v", app)
	}
	if (*app.Hashes)[0].Value != hexOf(sum[:]) {
		t.Fatalf("application's hash %v, want the binary's %s", *app.Hashes, hexOf(sum[:]))
	}
	for name, want := range map[string]string{
		"cdx:gomod:build:env:GOOS": "linux", "cdx:gomod:build:env:GOARCH": "arm64", "cdx:gomod:build:env:CGO_ENABLED": "0",
		"cdx:gomod:build:env:GOVERSION": "go1.26.8", "relayr:go:build:vcs.revision": commit, "relayr:source:revision": commit,
		"cdx:gomod:binary:name": "relayr",
	} {
		if got := prop(app.Properties, name); got != want {
			t.Errorf("application's %s: %q, want %q", name, got, want)
		}
	}
	if bom.Metadata.Timestamp != "2026-12-04T17:11:16Z" || bom.SerialNumber != SerialNumber(sum) {
		t.Fatalf("timestamp %s, serial %s", bom.Metadata.Timestamp, bom.SerialNumber)
	}

	sqlite := find(bom, "modernc.org/sqlite")
	if sqlite == nil || sqlite.PackageURL != "pkg:golang/modernc.org/sqlite@v1.59.0" || sqlite.Version != "v1.59.0" ||
		(*sqlite.Hashes)[0].Value != "5f57acd46a6a0654bfe53faf6cce072d475a6bc3ad431e3af03176bebc7edfc0" ||
		prop(sqlite.Properties, "relayr:go:module:sum") != "h1:X1es1GpqBlS/5T+vbM4HLUdaa8OtQx468DF2vrx+38A=" {
		t.Fatalf("modernc.org/sqlite: %+v", sqlite)
	}
	if std := find(bom, "stdlib"); std == nil || std.PackageURL != "pkg:golang/stdlib@go1.26.8" {
		t.Fatalf("stdlib: %+v", std)
	}
	if core := find(bom, "github.com/relayr-go/relayr/core"); core == nil || core.Version != "" || core.Hashes != nil ||
		core.PackageURL != "pkg:golang/github.com/relayr-go/relayr/core" {
		t.Fatalf("a workspace module: %+v", core)
	}
	if plane := find(bom, "../../adapters/plane"); plane == nil || plane.Version != "" ||
		prop(plane.Properties, "relayr:go:module:replaces") != "github.com/relayr-go/relayr/adapters/plane@v0.0.0" {
		t.Fatalf("a module replaced by a folder: %+v", plane)
	}
	if fork := find(bom, "example.com/fork"); fork == nil || fork.PackageURL != "pkg:golang/example.com/fork@v1.0.1" ||
		prop(fork.Properties, "relayr:go:module:replaces") != "example.com/old@v1.0.0" || find(bom, "example.com/old") != nil {
		t.Fatalf("a module replaced by another: %+v", fork)
	}
	deps := *bom.Dependencies
	if len(deps) != 1 || deps[0].Ref != app.BOMRef || len(*deps[0].Dependencies) != len(*bom.Components) {
		t.Fatalf("dependencies %+v", deps)
	}
}

func TestFromBuildInfoRefuses(t *testing.T) {
	sum := sha256.Sum256(nil)
	for _, c := range []struct {
		name string
		bi   *debug.BuildInfo
		opts Options
		want string
	}{
		{"another commit", info("vcs.revision", "1111111111111111111111111111111111111111"), Options{Version: "v1.0.0", Revision: commit}, "built from commit 1111"},
		{"no version", info(), Options{Revision: commit}, "no version"},
		{"no main module", &debug.BuildInfo{GoVersion: "go1.26.8"}, Options{Version: "v1.0.0"}, "no main module"},
		{"a hash that is not h1", func() *debug.BuildInfo {
			bi := info()
			bi.Deps = append(bi.Deps, &debug.Module{Path: "example.com/x", Version: "v1.0.0", Sum: "h2:abc"})
			return bi
		}(), Options{Version: "v1.0.0"}, "want h1:"},
	} {
		if _, err := fromBuildInfo(c.bi, "relayr", sum, c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
	// Without a stamp of its own, the binary takes the commit it is given.
	bom, err := fromBuildInfo(info(), "relayr", sum, Options{Version: "v1.0.0", Revision: commit})
	if err != nil || prop(bom.Metadata.Component.Properties, "relayr:source:revision") != commit {
		t.Fatalf("an unstamped binary: %v", err)
	}
}

// TestGenerateOfABinary: the BOM of a real Go binary (tools/dist's own,
// built here) is valid CycloneDX 1.5 by the specification's own schema,
// names the binary's SHA-256, lists the modules it links (cyclonedx-go
// among them), and is the same when made again.
func TestGenerateOfABinary(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "dist")
	build := exec.Command("go", "build", "-trimpath", "-o", exe, "github.com/relayr-go/relayr/tools/dist")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	opts := Options{Version: "v0.0.0-test", Time: at, Tool: "test"}
	doc, err := Generate(exe, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := cdxschema.Validate(context.Background(), doc); err != nil {
		t.Fatal(err)
	}
	again, err := Generate(exe, opts)
	if err != nil || !bytes.Equal(doc, again) {
		t.Fatalf("a second BOM of the same binary differs (%v)", err)
	}
	var bom struct {
		SpecVersion  string `json:"specVersion"`
		SerialNumber string `json:"serialNumber"`
		Metadata     struct {
			Timestamp string `json:"timestamp"`
			Component struct {
				Name   string `json:"name"`
				Hashes []struct {
					Alg     string `json:"alg"`
					Content string `json:"content"`
				} `json:"hashes"`
			} `json:"component"`
		} `json:"metadata"`
		Components []struct {
			Name string `json:"name"`
			Purl string `json:"purl"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &bom); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if bom.SpecVersion != "1.5" || bom.SerialNumber != SerialNumber(sum) || bom.Metadata.Timestamp != "2026-12-04T17:11:16Z" ||
		len(bom.Metadata.Component.Hashes) != 1 || bom.Metadata.Component.Hashes[0].Content != hexOf(sum[:]) {
		t.Fatalf("BOM head: %+v", bom)
	}
	found := false
	for _, c := range bom.Components {
		found = found || c.Name == "github.com/CycloneDX/cyclonedx-go" && strings.HasPrefix(c.Purl, "pkg:golang/github.com/CycloneDX/cyclonedx-go@v")
	}
	if !found {
		t.Fatalf("no cyclonedx-go among the components: %+v", bom.Components)
	}
}
