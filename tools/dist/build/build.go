// Package build holds the one definition of how relayr's release binaries
// are built: the go build flags (Flags), the environment (Env) and the build
// of one platform's binary (Binary). The release archives (go run
// ./tools/dist) and the container image both build through it, so an
// image's binary is the byte-identical twin of the archive's.
//
// A release binary is static and reproducible: no cgo, no file system
// paths (-trimpath), no symbol table or DWARF (-s -w), an empty Go build ID
// (-buildid=), the release named by -X main.release, and the VCS stamp
// (commit, commit time, modified) as the go command's default
// (-buildvcs=auto) makes it in a git checkout. (Go stamps nothing in a
// linked worktree, whose .git is a file.) The same commit, Go toolchain and
// platform give the same bytes, whatever the machine, the checkout's path or
// the build cache.
package build

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Package is the main package a release builds, relative to the
// repository's root.
const Package = "./apps/relayr"

// Flags are the go build flags of a release build naming itself version
// (set as main.release, which `relayr version` reports): -trimpath,
// -ldflags "-s -w -buildid= -X main.release=<version>", and -buildvcs=auto,
// the go command's default, written out because a GOFLAGS=-buildvcs=false
// (in the environment, or in go env's file) would drop the commit stamp.
func Flags(version string) []string {
	return []string{
		"-trimpath",
		"-buildvcs=auto",
		"-ldflags", "-s -w -buildid= -X main.release=" + version,
	}
}

// Env is the environment of a release build for goos/goarch: the
// process's own (PATH, HOME, GOCACHE, GOPROXY, GOWORK…), with cgo off, the
// target platform, the default instruction set levels (GOAMD64=v1,
// GOARM64=v8.0) whatever the caller's shell says, and GOFLAGS replaced by
// the default -buildvcs=auto, so that flags set in the caller's GOFLAGS
// (-race, -tags, -buildvcs=false), whether in the environment or in go
// env's file (go env -w), cannot change a release. An empty GOFLAGS would
// not do: the go command then reads go env's file.
func Env(goos, goarch string) []string {
	return append(os.Environ(),
		"CGO_ENABLED=0",
		"GOOS="+goos,
		"GOARCH="+goarch,
		"GOAMD64=v1",
		"GOARM64=v8.0",
		"GOFLAGS=-buildvcs=auto",
	)
}

// ExeName is the binary's file name on goos: relayr, or relayr.exe on
// Windows.
func ExeName(goos string) string {
	if goos == "windows" {
		return "relayr.exe"
	}
	return "relayr"
}

// Binary builds relayr for goos/goarch from the repository at repoRoot (the
// folder of its go.work) into outPath, with Flags(version) and Env, and
// creates outPath's folder when missing. A failed build's error carries the
// go command's output.
func Binary(ctx context.Context, repoRoot, goos, goarch, version, outPath string) error {
	if version == "" || strings.ContainsAny(version, " \t\n'\"") {
		return fmt.Errorf("build: version %q: want one word", version)
	}
	abs, err := filepath.Abs(outPath)
	if err != nil {
		return fmt.Errorf("build: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil { //nolint:gosec // G301: a folder of artifacts to publish, readable by all
		return fmt.Errorf("build: %w", err)
	}
	args := append([]string{"build"}, Flags(version)...)
	args = append(args, "-o", abs, Package)
	cmd := exec.CommandContext(ctx, "go", args...) //nolint:gosec // G204: the go command, with Flags and the caller's platform and path
	cmd.Dir = repoRoot
	cmd.Env = Env(goos, goarch)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build %s/%s: go %s: %w\n%s", goos, goarch, strings.Join(args, " "), err, out.Bytes())
	}
	return nil
}
