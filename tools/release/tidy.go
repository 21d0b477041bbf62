package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Tidy runs `go mod tidy` in each module outside the workspace, as its
// users resolve it: its siblings at version from a proxy of this tree
// (written to a temporary directory), everything else from GOPROXY. It then
// takes the siblings' lines out of each go.sum: the tree's zips are not the
// tagged release's, and a go.sum holding a hash the release does not have
// would fail every `go install` of it, where one holding none has the
// checksum database answer.
func Tidy(ctx context.Context, root string, mods []Module, version string) error {
	tmp, err := os.MkdirTemp("", "relayr-tidy-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	base, err := filepath.Abs(tmp)
	if err != nil {
		return err
	}
	abs := filepath.Join(base, "proxy")
	if err := WriteProxy(ctx, root, mods, version, abs); err != nil {
		return err
	}
	// A module cache of its own: the shared one may hold this version
	// from an earlier tree, and would answer it for ever.
	cache := filepath.Join(base, "modcache")
	defer cleanModCache(ctx, cache)
	env, err := goEnv(ctx)
	if err != nil {
		return err
	}
	upstream := "file://" + filepath.ToSlash(filepath.Join(env.modCache, "cache", "download")) + "," + env.proxy
	siblings := siblingSet(mods)
	for _, m := range mods {
		cmd := exec.CommandContext(ctx, "go", "mod", "tidy")
		cmd.Dir = filepath.Join(root, m.Dir)
		cmd.Env = append(os.Environ(),
			"GOWORK=off", "GOFLAGS=-mod=mod", "GOMODCACHE="+cache,
			"GOPROXY=file://"+filepath.ToSlash(abs)+","+upstream,
			"GONOSUMDB=github.com/relayr-go/relayr")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s: go mod tidy: %w\n%s", m.Dir, err, out.Bytes())
		}
		if err := dropSiblingSums(filepath.Join(root, m.Dir), siblings); err != nil {
			return err
		}
	}
	return nil
}

// env is what Tidy reads of the go command's environment.
type env struct{ modCache, proxy string }

func goEnv(ctx context.Context) (env, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMODCACHE", "GOPROXY").Output()
	if err != nil {
		return env{}, fmt.Errorf("go env: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		return env{}, fmt.Errorf("go env: %q", out)
	}
	return env{modCache: lines[0], proxy: lines[1]}, nil
}

// dropSiblingSums takes the siblings' lines out of dir's go.sum.
func dropSiblingSums(dir string, siblings map[string]bool) error {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }()
	data, err := r.ReadFile("go.sum")
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var kept []string
	for line := range strings.SplitSeq(string(data), "\n") {
		path, _, _ := strings.Cut(line, " ")
		if line == "" || siblings[path] {
			continue
		}
		kept = append(kept, line)
	}
	if len(kept) == 0 {
		return r.Remove("go.sum")
	}
	return r.WriteFile("go.sum", []byte(strings.Join(kept, "\n")+"\n"), 0o600)
}

// cleanModCache removes a module cache (its files are read-only).
func cleanModCache(ctx context.Context, dir string) {
	cmd := exec.CommandContext(context.WithoutCancel(ctx), "go", "clean", "-modcache")
	cmd.Env = append(os.Environ(), "GOMODCACHE="+dir, "GOWORK=off")
	_ = cmd.Run()
}
