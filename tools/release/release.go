// Command release cuts relayr's releases: every module go.work lists is
// released in lockstep, at one version, each under its own tag
// (core/v0.2.0, adapters/vikunja/v0.2.0, …), and requires its siblings at
// that same version. go.work joins them for development; no go.mod holds a
// replace directive, so each module resolves from a module proxy as a user
// would require it.
//
//	go run ./tools/release modules              # dir and path of each released module
//	go run ./tools/release bump -version v0.2.0 # every sibling requirement at v0.2.0
//	go run ./tools/release check                # no replace, siblings required at one version
//	go run ./tools/release tidy -version v0.2.0 # go mod tidy in each module, outside the workspace
//	go run ./tools/release proxy -version v0.2.0 -out bin/proxy
//
// proxy writes a file-system module proxy (GOPROXY=file://…) holding every
// module at the version, zipped with golang.org/x/mod/zip from the working
// tree (files git tracks or would track) with its go.mod's sibling
// requirements set to the version: the tree as `bump` would leave it. `make
// release-check` installs and builds from it, offline; scripts/release.sh
// bumps, checks and tags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: release <command> [flags]

commands:
  modules                      print each released module's directory and path
  bump -version vX.Y.Z         require every sibling at vX.Y.Z in every go.mod
  check                        fail on a replace directive or siblings at two versions
  tidy -version vX.Y.Z         go mod tidy in each module as its users resolve it
  proxy -version vX.Y.Z -out D write a file-system module proxy of every module at vX.Y.Z
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	fs := flag.NewFlagSet("release "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	root := fs.String("root", ".", "the repository's root, where go.work is")
	version := fs.String("version", "", "the release's version, vX.Y.Z")
	out := fs.String("out", "bin/proxy", "the directory to write the module proxy to (proxy)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	err := dispatch(context.Background(), args[0], *root, *version, *out, stdout)
	var bad usageError
	switch {
	case errors.As(err, &bad):
		fmt.Fprintf(stderr, "release: %v\n%s", err, usage)
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "release: %v\n", err)
		return 1
	}
	return 0
}

// usageError is a command line that names no command or no valid version.
type usageError string

func (e usageError) Error() string { return string(e) }

func dispatch(ctx context.Context, cmd, root, version, out string, stdout io.Writer) error {
	needsVersion := cmd == "bump" || cmd == "proxy" || cmd == "tidy"
	if needsVersion {
		if err := checkVersion(version); err != nil {
			return err
		}
	}
	mods, err := Modules(root)
	if err != nil {
		return err
	}
	switch cmd {
	case "modules":
		for _, m := range mods {
			fmt.Fprintf(stdout, "%s\t%s\n", m.Dir, m.Path)
		}
		return nil
	case "bump":
		return Bump(root, mods, version)
	case "check":
		v, err := Check(root, mods)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%d modules, no replace, siblings required at %s\n", len(mods), v)
		return nil
	case "tidy":
		return Tidy(ctx, root, mods, version)
	case "proxy":
		if err := WriteProxy(ctx, root, mods, version, out); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%d modules at %s in %s\n", len(mods), version, out)
		return nil
	}
	return usageError(fmt.Sprintf("unknown command %q", cmd))
}

// checkVersion accepts a release's version: vX.Y.Z, with an optional
// pre-release (v0.2.0-rc.1), never a build suffix or a pseudo-version's
// shape a tag cannot carry.
func checkVersion(v string) error {
	if v == "" {
		return usageError("-version is required (vX.Y.Z)")
	}
	if !validRelease(v) {
		return usageError(fmt.Sprintf("-version %q is not a release version vX.Y.Z (or vX.Y.Z-pre)", v))
	}
	return nil
}

func validRelease(v string) bool {
	// v0.0.0 is the placeholder a module required before it was released.
	if !strings.HasPrefix(v, "v") || strings.Contains(v, "+") || v == "v0.0.0" {
		return false
	}
	core, _, _ := strings.Cut(v[1:], "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return false
	}
	for _, p := range parts {
		if p == "" || strings.Trim(p, "0123456789") != "" || (len(p) > 1 && p[0] == '0') {
			return false
		}
	}
	return true
}
