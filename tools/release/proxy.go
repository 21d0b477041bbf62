package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// WriteProxy writes a file-system module proxy to out holding every module
// at version: its go.mod bumped as Bump would write it, its zip made from
// the files of the working tree git tracks or would track (not what
// .gitignore leaves out, not a nested module's files).
func WriteProxy(ctx context.Context, root string, mods []Module, version, out string) error {
	siblings := siblingSet(mods)
	stamp, err := commitTime(ctx, root)
	if err != nil {
		return err
	}
	tracked, err := trackedFiles(ctx, root)
	if err != nil {
		return err
	}
	for _, m := range mods {
		gomod, err := bumped(root, m, siblings, version)
		if err != nil {
			return err
		}
		if err := writeModule(root, out, m, version, gomod, stamp, filesOf(m, tracked)); err != nil {
			return fmt.Errorf("%s: %w", m.Dir, err)
		}
	}
	return nil
}

func writeModule(root, out string, m Module, version string, gomod []byte, stamp time.Time, names []string) error {
	escPath, err := module.EscapePath(m.Path)
	if err != nil {
		return err
	}
	escVersion, err := module.EscapeVersion(version)
	if err != nil {
		return err
	}
	dir := path.Join(escPath, "@v")
	proxy, err := openDir(out)
	if err != nil {
		return err
	}
	defer func() { _ = proxy.Close() }()
	if err := proxy.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	files := make([]modzip.File, 0, len(names))
	for _, name := range names {
		rel := strings.TrimPrefix(name, m.Dir+"/")
		if rel == "go.mod" {
			files = append(files, memFile{path: rel, data: gomod})
			continue
		}
		files = append(files, treeFile{path: rel, name: filepath.Join(root, filepath.FromSlash(name))})
	}
	var zipped bytes.Buffer
	if err := modzip.Create(&zipped, module.Version{Path: m.Path, Version: version}, files); err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, stamp.UTC()})
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		escVersion + ".zip":  zipped.Bytes(),
		escVersion + ".mod":  gomod,
		escVersion + ".info": info,
		"list":               []byte(version + "\n"),
	} {
		if err := proxy.WriteFile(path.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// trackedFiles lists, relative to root, the files git tracks or would
// track, that are in the working tree.
func trackedFiles(ctx context.Context, root string) ([]string, error) {
	cmd := exec.CommandContext(ctx, "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w: %s", err, stderr.Bytes())
	}
	tree := os.DirFS(root)
	var names []string
	for name := range strings.SplitSeq(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		// A file deleted but not yet staged is not in the tree.
		if _, err := fs.Stat(tree, name); err == nil {
			names = append(names, name)
		}
	}
	return names, nil
}

// filesOf picks m's files from the tree's: those under its directory and
// under no nested module's (a directory holding its own go.mod).
func filesOf(m Module, tracked []string) []string {
	nested := map[string]bool{}
	for _, name := range tracked {
		if strings.HasPrefix(name, m.Dir+"/") && strings.HasSuffix(name, "/go.mod") && name != m.Dir+"/go.mod" {
			nested[strings.TrimSuffix(name, "/go.mod")] = true
		}
	}
	var files []string
	for _, name := range tracked {
		if !strings.HasPrefix(name, m.Dir+"/") || inNested(name, nested) {
			continue
		}
		files = append(files, name)
	}
	return files
}

func inNested(name string, nested map[string]bool) bool {
	for dir := range nested {
		if strings.HasPrefix(name, dir+"/") {
			return true
		}
	}
	return false
}

// commitTime is HEAD's commit time, the versions' time in the proxy.
func commitTime(ctx context.Context, root string) (time.Time, error) {
	cmd := exec.CommandContext(ctx, "git", "log", "-1", "--format=%cI")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return time.Time{}, fmt.Errorf("git log: %w", err)
	}
	return time.Parse(time.RFC3339, strings.TrimSpace(string(out)))
}

// treeFile is a file of the working tree, zipped under path.
type treeFile struct{ path, name string }

func (f treeFile) Path() string                 { return f.path }
func (f treeFile) Lstat() (fs.FileInfo, error)  { return os.Lstat(f.name) }
func (f treeFile) Open() (io.ReadCloser, error) { return os.Open(f.name) }

// memFile is a file zipped from memory: the bumped go.mod.
type memFile struct {
	path string
	data []byte
}

func (f memFile) Path() string                 { return f.path }
func (f memFile) Lstat() (fs.FileInfo, error)  { return memInfo(f), nil }
func (f memFile) Open() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(f.data)), nil }

type memInfo memFile

func (i memInfo) Name() string       { return filepath.Base(i.path) }
func (i memInfo) Size() int64        { return int64(len(i.data)) }
func (i memInfo) Mode() fs.FileMode  { return 0o644 }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return false }
func (i memInfo) Sys() any           { return nil }

// openDir opens dir as a root, making it (in a directory that exists) if
// need be.
func openDir(dir string) (*os.Root, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	parent, err := os.OpenRoot(filepath.Dir(abs))
	if err != nil {
		return nil, err
	}
	defer func() { _ = parent.Close() }()
	if err := parent.MkdirAll(filepath.Base(abs), 0o750); err != nil {
		return nil, err
	}
	return os.OpenRoot(abs)
}
