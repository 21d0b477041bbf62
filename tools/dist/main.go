// Command dist builds relayr's release artifacts, reproducibly: run from the
// repository's root,
//
//	go run ./tools/dist [-out bin/dist] [-version v] [-platforms linux/amd64,...] [-archives=true]
//
// For each platform (linux/amd64, linux/arm64, darwin/amd64, darwin/arm64
// and windows/amd64 unless -platforms names others) it writes, under -out:
//
//   - <os>_<arch>/relayr (relayr.exe on Windows): the static binary, built
//     by package build (no cgo, -trimpath, -ldflags "-s -w -buildid= -X
//     main.release=<version>", the commit stamped);
//   - relayr_<version>_<os>_<arch>.tar.gz (.zip on Windows) holding the
//     binary, README.md and LICENSE when the repository has one, written by
//     package archive (unless -archives=false);
//   - relayr_<version>_<os>_<arch>.cdx.json: the binary's CycloneDX 1.5
//     SBOM, written by package sbom;
//
// and SHA256SUMS, in sha256sum's format, over the archives and the SBOMs
// (over the binaries and the SBOMs with -archives=false), so that
// `sha256sum -c SHA256SUMS` in -out checks them.
//
// The version is -version, else the commit's (package source says how:
// v0.4.0 on a commit tagged apps/relayr/v0.4.0, else a Go pseudo-version).
// Every file's time is the commit's (SOURCE_DATE_EPOCH when set), so the
// same commit and Go toolchain give the same bytes. Builds run one at a
// time: go build already uses every core. A previous run's relayr_*
// archives and SBOMs in -out, and its SHA256SUMS, are removed first, so
// SHA256SUMS lists all that -out holds.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dist", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: go run ./tools/dist [-out bin/dist] [-version v] [-platforms linux/amd64,...] [-archives=true]")
		fs.PrintDefaults()
	}
	var cfg config
	fs.StringVar(&cfg.Out, "out", "bin/dist", "the folder the artifacts are written to")
	fs.StringVar(&cfg.Version, "version", "", "the release's version (default: the commit's, from its apps/relayr/v* tag or as a Go pseudo-version)")
	platforms := fs.String("platforms", strings.Join(defaultPlatforms, ","), "the comma-separated GOOS/GOARCH pairs to build")
	fs.BoolVar(&cfg.Archives, "archives", true, "write an archive per platform (false: the binaries and SBOMs only)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "dist: unexpected arguments %q\n", fs.Args())
		fs.Usage()
		return 2
	}
	var err error
	if cfg.Platforms, err = parsePlatforms(*platforms); err != nil {
		fmt.Fprintln(stderr, "dist:", err)
		return 2
	}
	if cfg.Root, err = repoRoot(ctx); err != nil {
		fmt.Fprintln(stderr, "dist:", err)
		return 1
	}
	cfg.Log = stdout
	if _, err := dist(ctx, cfg); err != nil {
		fmt.Fprintln(stderr, "dist:", err)
		return 1
	}
	return 0
}
