package main

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// Module is one released module: its directory relative to the root (its
// tags' prefix) and its module path.
type Module struct {
	Dir  string // e.g. adapters/vikunja
	Path string // e.g. github.com/relayr-go/relayr/adapters/vikunja
}

// Tag is the module's tag for a version: adapters/vikunja/v0.2.0.
func (m Module) Tag(version string) string { return m.Dir + "/" + version }

// Modules reads the modules go.work uses, in its order.
func Modules(root string) ([]Module, error) {
	wf, err := readWork(root)
	if err != nil {
		return nil, err
	}
	var mods []Module
	for _, u := range wf.Use {
		dir := filepath.ToSlash(filepath.Clean(u.Path))
		mf, err := readModFile(root, dir)
		if err != nil {
			return nil, err
		}
		if mf.Module == nil {
			return nil, fmt.Errorf("%s/go.mod names no module", dir)
		}
		mods = append(mods, Module{Dir: dir, Path: mf.Module.Mod.Path})
	}
	return mods, nil
}

func readModFile(root, dir string) (*modfile.File, error) {
	name := path.Join(dir, "go.mod")
	data, err := fs.ReadFile(os.DirFS(root), name)
	if err != nil {
		return nil, err
	}
	return modfile.Parse(name, data, nil)
}

// writeFile writes a file of the tree: an existing one keeps its mode.
func writeFile(root, name string, data []byte) error {
	r, err := os.OpenRoot(root)
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }()
	return r.WriteFile(name, data, 0o600)
}

// bumped is a module's go.mod with every sibling requirement at version.
// A replace directive is an error: go.work is for development, and a
// module a user requires must resolve without one.
func bumped(root string, m Module, siblings map[string]bool, version string) ([]byte, error) {
	mf, err := readModFile(root, m.Dir)
	if err != nil {
		return nil, err
	}
	if len(mf.Replace) > 0 {
		return nil, fmt.Errorf("%s/go.mod replaces %s: modules resolve from go.work in development, and from a proxy for their users", m.Dir, mf.Replace[0].Old.Path)
	}
	for _, r := range mf.Require {
		if siblings[r.Mod.Path] && r.Mod.Version != version {
			if err := mf.AddRequire(r.Mod.Path, version); err != nil {
				return nil, err
			}
		}
	}
	mf.Cleanup()
	return mf.Format()
}

func siblingSet(mods []Module) map[string]bool {
	s := make(map[string]bool, len(mods))
	for _, m := range mods {
		s[m.Path] = true
	}
	return s
}

// Bump requires every sibling at version in every module's go.mod, and
// points go.work's replacements of that version at the tree.
func Bump(root string, mods []Module, version string) error {
	siblings := siblingSet(mods)
	for _, m := range mods {
		data, err := bumped(root, m, siblings, version)
		if err != nil {
			return err
		}
		if err := writeFile(root, path.Join(m.Dir, "go.mod"), data); err != nil {
			return err
		}
	}
	work, err := workReplacing(root, mods, version)
	if err != nil {
		return err
	}
	return writeFile(root, "go.work", work)
}

// workReplacing is go.work with one replacement a module, of the version
// its siblings require, by its directory. The go command reads the go.mod
// of every version a workspace module is required at, even one the
// workspace stands in for; a release not yet tagged is in no proxy, so
// go.work says where it is: here.
func workReplacing(root string, mods []Module, version string) ([]byte, error) {
	wf, err := readWork(root)
	if err != nil {
		return nil, err
	}
	for _, r := range slices.Clone(wf.Replace) {
		if err := wf.DropReplace(r.Old.Path, r.Old.Version); err != nil {
			return nil, err
		}
	}
	wf.Cleanup()
	var b strings.Builder
	b.Write(modfile.Format(wf.Syntax))
	b.WriteString("\n// Each released module at the version its siblings require, from this\n// tree (tools/release writes this block).\nreplace (\n")
	for _, m := range mods {
		fmt.Fprintf(&b, "\t%s %s => ./%s\n", m.Path, version, m.Dir)
	}
	b.WriteString(")\n")
	return []byte(b.String()), nil
}

func readWork(root string) (*modfile.WorkFile, error) {
	data, err := fs.ReadFile(os.DirFS(root), "go.work")
	if err != nil {
		return nil, err
	}
	return modfile.ParseWork("go.work", data, nil)
}

// Check fails on a replace directive in any go.mod, or on siblings
// required at more than one version (a release is cut in lockstep), and
// answers the one version they are required at.
func Check(root string, mods []Module) (string, error) {
	siblings := siblingSet(mods)
	at := map[string][]string{}
	for _, m := range mods {
		mf, err := readModFile(root, m.Dir)
		if err != nil {
			return "", err
		}
		if len(mf.Replace) > 0 {
			return "", fmt.Errorf("%s/go.mod replaces %s: modules resolve from go.work in development, and from a proxy for their users", m.Dir, mf.Replace[0].Old.Path)
		}
		for _, r := range mf.Require {
			if siblings[r.Mod.Path] {
				at[r.Mod.Version] = append(at[r.Mod.Version], m.Dir+" requires "+r.Mod.Path)
			}
		}
	}
	versions := make([]string, 0, len(at))
	for v := range at {
		versions = append(versions, v)
	}
	slices.SortFunc(versions, semver.Compare)
	switch len(versions) {
	case 0:
		return "", fmt.Errorf("no module requires a sibling")
	case 1:
		if !semver.IsValid(versions[0]) || !validRelease(versions[0]) {
			return "", fmt.Errorf("siblings are required at %s, not a release version", versions[0])
		}
		return versions[0], checkWork(root, mods, versions[0])
	}
	return "", fmt.Errorf("siblings are required at %d versions (%v); run bump: e.g. %s", len(versions), versions, at[versions[0]][0])
}

// checkWork fails unless go.work replaces each module at version, and
// nothing else, by its own directory.
func checkWork(root string, mods []Module, version string) error {
	wf, err := readWork(root)
	if err != nil {
		return err
	}
	want := map[string]string{}
	for _, m := range mods {
		want[m.Path] = m.Dir
	}
	seen := map[string]bool{}
	for _, r := range wf.Replace {
		dir, ok := want[r.Old.Path]
		if !ok || r.Old.Version != version || filepath.Clean(r.New.Path) != filepath.Clean(dir) {
			return fmt.Errorf("go.work replaces %s %s => %s; run bump -version %s", r.Old.Path, r.Old.Version, r.New.Path, version)
		}
		seen[r.Old.Path] = true
	}
	for _, m := range mods {
		if !seen[m.Path] {
			return fmt.Errorf("go.work does not replace %s %s by ./%s; run bump -version %s", m.Path, version, m.Dir, version)
		}
	}
	return nil
}
