// Command image builds relayr's container image without a container
// daemon or a base image: an OCI image index of linux/amd64 and
// linux/arm64, each image one layer holding the static binary (built as
// the release archives build it, tools/dist/build), /etc/passwd and
// /etc/group naming its non-root user (65532), and /data, the user's, for
// the SQLite ledger. `relayr serve` is its command, /data its working
// folder and volume, 8080 its port; the binary carries its root
// certificates, so HTTPS to a tracker works with nothing else in the image.
//
//	go run ./tools/image -out bin/relayr-image.tar          # make image
//	podman load -i bin/relayr-image.tar
//	podman run --rm ghcr.io/relayr-go/relayr:v0.1.0 version
//
// It writes an OCI image archive (an OCI layout, tarred), named
// ghcr.io/relayr-go/relayr:<version> in its index.json, with
// go-containerregistry; the same commit gives the same bytes.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/relayr-go/relayr/tools/dist/build"
	"github.com/relayr-go/relayr/tools/dist/source"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// binaries is -binary, given once per platform.
type binaries map[string]string

func (b binaries) String() string { return fmt.Sprint(map[string]string(b)) }

func (b binaries) Set(v string) error {
	p, path, ok := strings.Cut(v, "=")
	if !ok || p == "" || path == "" {
		return fmt.Errorf("want PLATFORM=PATH (linux/amd64=bin/relayr), not %q", v)
	}
	if _, dup := b[p]; dup {
		return fmt.Errorf("%s given twice", p)
	}
	b[p] = path
	return nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.SetOutput(stderr)
	root := fs.String("root", ".", "the repository's root, the folder of its go.work")
	out := fs.String("out", "bin/relayr-image.tar", "the OCI image archive to write")
	version := fs.String("version", "", "the release; default the commit's, as make dist names it")
	given := binaries{}
	fs.Var(given, "binary", "a prebuilt binary, PLATFORM=PATH (repeated); default: build linux/amd64 and linux/arm64")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	digest, ref, err := makeImage(ctx, *root, *out, *version, given, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "image: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s %s in %s\n", ref, digest, *out)
	return 0
}

func makeImage(ctx context.Context, root, out, version string, given binaries, log io.Writer) (v1.Hash, string, error) {
	src, err := source.Read(ctx, root)
	if err != nil {
		return v1.Hash{}, "", err
	}
	created, err := src.Epoch()
	if err != nil {
		return v1.Hash{}, "", err
	}
	if version == "" {
		version = src.Version()
	}
	if len(given) == 0 {
		tmp, err := os.MkdirTemp("", "relayr-image-bin-")
		if err != nil {
			return v1.Hash{}, "", err
		}
		defer func() { _ = os.RemoveAll(tmp) }()
		for _, arch := range []string{"amd64", "arm64"} {
			path := filepath.Join(tmp, "linux_"+arch, "relayr")
			fmt.Fprintf(log, "image: building relayr %s for linux/%s\n", version, arch)
			if err := build.Binary(ctx, root, "linux", arch, version, path); err != nil {
				return v1.Hash{}, "", err
			}
			given["linux/"+arch] = path
		}
	}
	spec := Spec{Binaries: given, Version: version, Revision: src.Commit, Created: created}
	idx, err := Index(spec)
	if err != nil {
		return v1.Hash{}, "", err
	}
	if err := WriteArchive(idx, spec.Ref(), created, out); err != nil {
		return v1.Hash{}, "", err
	}
	digest, err := idx.Digest()
	return digest, spec.Ref(), err
}
