package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's user, its folder for the ledger, the API's port.
const (
	UID     = 65532
	DataDir = "/data"
	Port    = "8080/tcp"
	// Binary is where the image holds relayr.
	Binary = "/relayr"
	// Repository is the name the image is loaded under, with its tag.
	Repository = "ghcr.io/relayr-go/relayr"
)

// Spec is what an image is built from.
type Spec struct {
	// Binaries are the static relayr binaries by platform ("linux/amd64").
	Binaries map[string]string
	Version  string    // the release, as `relayr version` names it
	Revision string    // the commit
	Created  time.Time // the commit's time: every file and the config carry it
}

// Tag is the image's tag for version: a tag cannot hold '+', which a
// version of a tree with changes carries (v0.1.0+dirty).
func Tag(version string) string { return strings.ReplaceAll(version, "+", "-") }

// Ref is the name the image is loaded under.
func (s Spec) Ref() string { return Repository + ":" + Tag(s.Version) }

// Labels are the image's OCI annotations, in its config.
func (s Spec) Labels() map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":         "relayr",
		"org.opencontainers.image.description":   "Exactly-once writes to task trackers by key, and an exactly-once event stream of what people do in them",
		"org.opencontainers.image.source":        "https://github.com/relayr-go/relayr",
		"org.opencontainers.image.url":           "https://github.com/relayr-go/relayr",
		"org.opencontainers.image.documentation": "https://github.com/relayr-go/relayr/blob/main/docs/operating.md",
		"org.opencontainers.image.version":       s.Version,
		"org.opencontainers.image.revision":      s.Revision,
		"org.opencontainers.image.created":       s.Created.UTC().Format(time.RFC3339),
	}
}

// Index builds the multi-platform image index: per platform, one layer
// holding the binary, /etc/passwd and /etc/group naming the user, and
// /data owned by it; nothing pulled, no base image.
func Index(s Spec) (v1.ImageIndex, error) {
	if len(s.Binaries) == 0 {
		return nil, fmt.Errorf("image: no binary given")
	}
	platforms := make([]string, 0, len(s.Binaries))
	for p := range s.Binaries {
		platforms = append(platforms, p)
	}
	sort.Strings(platforms)
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		goos, arch, ok := strings.Cut(p, "/")
		if !ok || goos != "linux" || arch == "" {
			return nil, fmt.Errorf("image: platform %q: want linux/ARCH", p)
		}
		img, err := platformImage(s, arch, s.Binaries[p])
		if err != nil {
			return nil, fmt.Errorf("image: %s: %w", p, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: goos, Architecture: arch}},
		})
	}
	return idx, nil
}

func platformImage(s Spec, arch, binary string) (v1.Image, error) {
	bin, err := os.ReadFile(filepath.Clean(binary))
	if err != nil {
		return nil, err
	}
	rootfs, err := layerTar(bin, s.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(rootfs)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	created := v1.Time{Time: s.Created.UTC()}
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
		Created: created, CreatedBy: "relayr's tools/image: the static binary, its user, " + DataDir,
	}})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Created = "linux", arch, created
	cfg.Config.User = fmt.Sprintf("%d:%d", UID, UID)
	cfg.Config.Entrypoint = []string{Binary}
	cfg.Config.Cmd = []string{"serve"}
	cfg.Config.WorkingDir = DataDir
	cfg.Config.Env = []string{"PATH=/"}
	cfg.Config.ExposedPorts = map[string]struct{}{Port: {}}
	cfg.Config.Volumes = map[string]struct{}{DataDir: {}}
	cfg.Config.Labels = s.Labels()
	return mutate.ConfigFile(img, cfg)
}

// layerTar is the image's one layer, its entries sorted and timed at
// created, owned by root but for /data.
func layerTar(binary []byte, created time.Time) ([]byte, error) {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nrelayr:x:%d:%d:relayr:%s:/sbin/nologin\n", UID, UID, DataDir)
	group := fmt.Sprintf("root:x:0:\nrelayr:x:%d:\n", UID)
	entries := []struct {
		name string
		mode int64
		uid  int
		data []byte
		dir  bool
	}{
		{name: "data/", mode: 0o755, uid: UID, dir: true},
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "relayr", mode: 0o755, data: binary},
		{name: "tmp/", mode: 0o1777, dir: true},
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid, ModTime: created.UTC(), Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteArchive writes idx as an OCI image archive at out (an OCI layout,
// tarred: what `podman load -i` reads), named ref in its index.json. The
// archive's entries are sorted and timed at created, so the same index
// gives the same bytes.
func WriteArchive(idx v1.ImageIndex, ref string, created time.Time, out string) error {
	dir, err := os.MkdirTemp("", "relayr-image-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref,
	})); err != nil {
		return err
	}
	var names []string
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		names = append(names, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		return err
	}
	slices.Sort(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }()
	for _, name := range names {
		info, err := root.Stat(name)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: name, Mode: 0o644, ModTime: created.UTC(), Format: tar.FormatPAX, Typeflag: tar.TypeReg}
		var data []byte
		if info.IsDir() {
			h.Name, h.Mode, h.Typeflag = name+"/", 0o755, tar.TypeDir
		} else if data, err = root.ReadFile(name); err != nil {
			return err
		}
		h.Size = int64(len(data))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(out)), 0o750); err != nil {
		return err
	}
	return os.WriteFile(filepath.Clean(out), buf.Bytes(), 0o600)
}
