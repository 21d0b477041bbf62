// Package sbom writes a release binary's software bill of materials in
// CycloneDX 1.5 JSON, from the binary's own build info (debug/buildinfo):
// what the binary says it was built from, not what a go.mod says it might
// be.
//
// The BOM's metadata names the application: the main module, at the
// release's version, with the binary's SHA-256, its GOOS, GOARCH,
// CGO_ENABLED and Go version (the cdx:gomod:build:env properties of
// CycloneDX's property taxonomy), every build setting the binary records
// (relayr:go:build:<key>, as `go version -m` prints it: -trimpath,
// GOAMD64, vcs.revision, vcs.time, vcs.modified…; a -trimpath build records
// no -ldflags, so the release comes from Options), and the commit
// (relayr:source:revision). Its components are Go's standard library
// (stdlib, at the toolchain's version, as the Go vulnerability database
// names it) and every dependency module, each with its version, its purl
// (pkg:golang/<path>@<version>), its go.sum hash as a SHA-256 (the h1 hash
// in hex, as cyclonedx-gomod writes it) and verbatim (relayr:go:module:sum).
// A module built from the local tree (relayr's own modules, through go.work
// or a replace by folder) has no version: it is the release's commit.
//
// The BOM is deterministic: components and properties sorted, the
// timestamp given (the commit's time), and the serial number a UUID made
// of the binary's SHA-256, so the same binary gives the same bytes.
package sbom

import (
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// Options are what the binary cannot say of itself.
type Options struct {
	// Version is the release, the application's version when the binary's
	// build info has none of its own (a build from a checkout says
	// "(devel)").
	Version string
	// Revision is the commit the binary was built from. The binary's own
	// vcs.revision, when it has one, must be the same; when it has none (a
	// linked git worktree, which Go does not stamp), Revision is the one
	// the BOM names.
	Revision string
	// Time is the BOM's timestamp: the commit's time, for a BOM that is the
	// same whenever it is made.
	Time time.Time
	// Tool names what wrote the BOM (metadata.tools).
	Tool string
}

// Generate answers the CycloneDX 1.5 JSON BOM of the Go binary at path.
func Generate(path string, opts Options) ([]byte, error) {
	data, err := os.ReadFile(path) //nolint:gosec // G304: the binary the caller names
	if err != nil {
		return nil, fmt.Errorf("sbom: %w", err)
	}
	info, err := buildinfo.Read(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("sbom: %s: %w", path, err)
	}
	sum := sha256.Sum256(data)
	bom, err := fromBuildInfo(info, filepath.Base(path), sum, opts)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	enc := cdx.NewBOMEncoder(&out, cdx.BOMFileFormatJSON)
	enc.SetPretty(true).SetEscapeHTML(false)
	if err := enc.EncodeVersion(bom, cdx.SpecVersion1_5); err != nil {
		return nil, fmt.Errorf("sbom: %w", err)
	}
	return out.Bytes(), nil
}

// Purl is the package URL of the Go module path at version
// (pkg:golang/<path>@<version>), or of the module without a version when
// version is empty. Each part is percent-encoded as the purl specification
// asks (a version's "+" is %2B); the path's slashes stay.
func Purl(path, version string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		segs[i] = escape(s)
	}
	p := "pkg:golang/" + strings.Join(segs, "/")
	if version != "" {
		p += "@" + escape(version)
	}
	return p
}

// SerialNumber is the BOM serial number of a binary whose SHA-256 is sum:
// an RFC 9562 version 8 UUID of the sum's first 16 bytes (the name-based
// SHA-256 UUID of RFC 9562's appendix B.2), as a urn:uuid.
func SerialNumber(sum [sha256.Size]byte) string {
	var u [16]byte
	copy(u[:], sum[:16])
	u[6] = u[6]&0x0f | 0x80 // version 8
	u[8] = u[8]&0x3f | 0x80 // the RFC's variant
	h := hex.EncodeToString(u[:])
	return "urn:uuid:" + h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func fromBuildInfo(info *debug.BuildInfo, name string, sum [sha256.Size]byte, opts Options) (*cdx.BOM, error) {
	if info.Main.Path == "" {
		return nil, fmt.Errorf("sbom: %s: its build info names no main module", name)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	revision := settings["vcs.revision"]
	switch {
	case revision == "":
		revision = opts.Revision
	case opts.Revision != "" && revision != opts.Revision:
		return nil, fmt.Errorf("sbom: %s: built from commit %s, not %s", name, revision, opts.Revision)
	}
	version := info.Main.Version
	if version == "" || version == "(devel)" {
		version = opts.Version
	}
	if version == "" {
		return nil, fmt.Errorf("sbom: %s: no version: its build info has none, and none was given", name)
	}

	props := []cdx.Property{
		{Name: "cdx:gomod:binary:name", Value: name},
		{Name: "cdx:gomod:build:env:GOVERSION", Value: info.GoVersion},
	}
	for _, key := range []string{"GOOS", "GOARCH", "CGO_ENABLED"} {
		if v, ok := settings[key]; ok {
			props = append(props, cdx.Property{Name: "cdx:gomod:build:env:" + key, Value: v})
		}
	}
	for _, s := range info.Settings {
		props = append(props, cdx.Property{Name: "relayr:go:build:" + s.Key, Value: s.Value})
	}
	if revision != "" {
		props = append(props, cdx.Property{Name: "relayr:source:revision", Value: revision})
	}
	sortProps(props)
	mainRef := Purl(info.Main.Path, version)
	app := cdx.Component{
		BOMRef:     mainRef,
		Type:       cdx.ComponentTypeApplication,
		Name:       info.Main.Path,
		Version:    version,
		PackageURL: mainRef,
		Hashes:     &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: hex.EncodeToString(sum[:])}},
		Properties: &props,
	}

	std := Purl("stdlib", info.GoVersion)
	components := []cdx.Component{{
		BOMRef:      std,
		Type:        cdx.ComponentTypeLibrary,
		Name:        "stdlib",
		Version:     info.GoVersion,
		Description: "Go's standard library and runtime, of the toolchain that built the binary",
		Scope:       cdx.ScopeRequired,
		PackageURL:  std,
	}}
	for _, dep := range info.Deps {
		c, err := component(dep)
		if err != nil {
			return nil, fmt.Errorf("sbom: %s: %w", name, err)
		}
		components = append(components, c)
	}
	slices.SortFunc(components, func(a, b cdx.Component) int { return strings.Compare(a.BOMRef, b.BOMRef) })
	refs := make([]string, len(components))
	for i, c := range components {
		if i > 0 && components[i-1].BOMRef == c.BOMRef {
			return nil, fmt.Errorf("sbom: %s: module %s twice", name, c.BOMRef)
		}
		refs[i] = c.BOMRef
	}

	bom := cdx.NewBOM()
	bom.SerialNumber = SerialNumber(sum)
	bom.Metadata = &cdx.Metadata{
		Timestamp: opts.Time.UTC().Format(time.RFC3339),
		Component: &app,
	}
	if opts.Tool != "" {
		bom.Metadata.Tools = &cdx.ToolsChoice{Components: &[]cdx.Component{{Type: cdx.ComponentTypeApplication, Name: opts.Tool}}}
	}
	bom.Components = &components
	// Build info lists the modules linked in, not who imports whom: the
	// application depends on each, and the BOM says no more.
	bom.Dependencies = &[]cdx.Dependency{{Ref: mainRef, Dependencies: &refs}}
	return bom, nil
}

// component is a dependency module as a CycloneDX library: the module the
// binary was built with (a replacement, when the dependency was replaced).
func component(dep *debug.Module) (cdx.Component, error) {
	m := dep
	if dep.Replace != nil {
		m = dep.Replace
	}
	version := m.Version
	local := version == "" || version == "(devel)"
	if local {
		version = ""
	}
	ref := Purl(m.Path, version)
	c := cdx.Component{
		BOMRef:     ref,
		Type:       cdx.ComponentTypeLibrary,
		Name:       m.Path,
		Version:    version,
		Scope:      cdx.ScopeRequired,
		PackageURL: ref,
	}
	var props []cdx.Property
	if local {
		c.Description = "built from the local tree, the release's own commit, not a published version"
	}
	if m.Sum != "" {
		h1, ok := strings.CutPrefix(m.Sum, "h1:")
		raw, err := base64.StdEncoding.DecodeString(h1)
		if !ok || err != nil || len(raw) != sha256.Size {
			return c, fmt.Errorf("module %s@%s: hash %q: want h1:<base64 SHA-256>", m.Path, m.Version, m.Sum)
		}
		c.Hashes = &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: hex.EncodeToString(raw)}}
		props = append(props, cdx.Property{Name: "relayr:go:module:sum", Value: m.Sum})
	}
	if dep.Replace != nil {
		props = append(props, cdx.Property{Name: "relayr:go:module:replaces", Value: strings.TrimSuffix(dep.Path+"@"+dep.Version, "@")})
	}
	if len(props) > 0 {
		sortProps(props)
		c.Properties = &props
	}
	return c, nil
}

func sortProps(props []cdx.Property) {
	slices.SortStableFunc(props, func(a, b cdx.Property) int { return strings.Compare(a.Name, b.Name) })
}

// escape percent-encodes all but the purl specification's unreserved
// characters.
func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}
