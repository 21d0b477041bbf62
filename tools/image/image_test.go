package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/relayr-go/relayr/tools/dist/build"
)

var created = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)

// The image is built from the real relayr for linux/amd64 (the host's
// platform, so the test runs it). The arm64 image holds the same bytes as
// a stand-in: what is checked here (config, layer, names) is the same for
// both, and make image builds the real arm64 binary through the same
// build.Binary.
func TestTheImageReadsBackAsBuiltAndItsBinaryRuns(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Fatalf("the test runs the image's linux/amd64 binary: run it on linux/amd64, not %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "relayr")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if err := build.Binary(context.Background(), root, "linux", "amd64", "v0.9.0", bin); err != nil {
		t.Fatal(err)
	}
	spec := Spec{Binaries: map[string]string{"linux/amd64": bin, "linux/arm64": bin}, Version: "v0.9.0", Revision: "0123456789abcdef", Created: created}
	idx, err := Index(spec)
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "image.tar")
	if err := WriteArchive(idx, spec.Ref(), created, archive); err != nil {
		t.Fatal(err)
	}

	// Read back from the archive alone, as podman would.
	unpacked := filepath.Join(dir, "layout")
	untar(t, archive, unpacked)
	p, err := layout.FromPath(unpacked)
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	topm, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(topm.Manifests) != 1 || topm.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "ghcr.io/relayr-go/relayr:v0.9.0" {
		t.Fatalf("index.json: %+v", topm.Manifests)
	}
	multi, err := top.ImageIndex(topm.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	m, err := multi.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, d := range m.Manifests {
		platforms = append(platforms, d.Platform.OS+"/"+d.Platform.Architecture)
		img, err := multi.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		c := cfg.Config
		if cfg.OS != "linux" || cfg.Architecture != d.Platform.Architecture || !cfg.Created.Equal(created) {
			t.Fatalf("%s: os %s arch %s created %v", d.Platform.Architecture, cfg.OS, cfg.Architecture, cfg.Created)
		}
		if c.User != "65532:65532" || !slices.Equal(c.Entrypoint, []string{"/relayr"}) || !slices.Equal(c.Cmd, []string{"serve"}) || c.WorkingDir != "/data" {
			t.Fatalf("user %q entrypoint %v cmd %v workdir %q", c.User, c.Entrypoint, c.Cmd, c.WorkingDir)
		}
		if _, ok := c.ExposedPorts["8080/tcp"]; !ok || len(c.ExposedPorts) != 1 {
			t.Fatalf("exposed ports %v", c.ExposedPorts)
		}
		if _, ok := c.Volumes["/data"]; !ok || len(c.Volumes) != 1 {
			t.Fatalf("volumes %v", c.Volumes)
		}
		for k, want := range map[string]string{
			"org.opencontainers.image.title": "relayr", "org.opencontainers.image.version": "v0.9.0",
			"org.opencontainers.image.revision": "0123456789abcdef", "org.opencontainers.image.created": "2026-12-04T12:00:00Z",
			"org.opencontainers.image.source": "https://github.com/relayr-go/relayr",
		} {
			if c.Labels[k] != want {
				t.Fatalf("label %s = %q, want %q", k, c.Labels[k], want)
			}
		}
		files := layerFiles(t, img)
		var names []string
		for name := range files {
			names = append(names, name)
		}
		slices.Sort(names)
		if strings.Join(names, " ") != "data/ etc/ etc/group etc/passwd relayr tmp/" {
			t.Fatalf("the layer holds %v", names)
		}
		if h := files["data/"].h; h.Uid != UID || h.Gid != UID || h.Typeflag != tar.TypeDir {
			t.Fatalf("/data: uid %d gid %d type %c", h.Uid, h.Gid, h.Typeflag)
		}
		if !strings.Contains(string(files["etc/passwd"].data), "relayr:x:65532:65532:") {
			t.Fatalf("/etc/passwd: %s", files["etc/passwd"].data)
		}
		if h := files["relayr"].h; h.Mode != 0o755 || h.Uid != 0 || !h.ModTime.Equal(created) {
			t.Fatalf("/relayr: mode %o uid %d mtime %v", h.Mode, h.Uid, h.ModTime)
		}
		if d.Platform.Architecture == "amd64" {
			run := filepath.Join(dir, "from-image")
			if err := os.WriteFile(run, files["relayr"].data, 0o700); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(run, "version").CombinedOutput()
			if err != nil || !strings.HasPrefix(string(out), "relayr v0.9.0 ") {
				t.Fatalf("relayr version from the image: %v %s", err, out)
			}
		}
	}
	if strings.Join(platforms, " ") != "linux/amd64 linux/arm64" {
		t.Fatalf("platforms %v", platforms)
	}

	// The same inputs give the same bytes.
	again := filepath.Join(dir, "again.tar")
	if err := WriteArchive(idx, spec.Ref(), created, again); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(archive)
	b, _ := os.ReadFile(again)
	if !bytes.Equal(a, b) {
		t.Fatal("two archives of one index differ")
	}
	idx2, err := Index(spec)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := idx.Digest()
	d2, _ := idx2.Digest()
	if d1 != d2 {
		t.Fatalf("two builds of one spec: %s and %s", d1, d2)
	}
}

func TestBadSpecsAreRefused(t *testing.T) {
	if _, err := Index(Spec{Version: "v1.0.0"}); err == nil {
		t.Fatal("no binary: no error")
	}
	if _, err := Index(Spec{Binaries: map[string]string{"darwin/arm64": "x"}, Version: "v1.0.0"}); err == nil || !strings.Contains(err.Error(), "want linux/ARCH") {
		t.Fatalf("darwin: %v", err)
	}
	if _, err := Index(Spec{Binaries: map[string]string{"linux/amd64": filepath.Join(t.TempDir(), "missing")}, Version: "v1.0.0"}); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a missing binary: %v", err)
	}
	b := binaries{}
	for _, bad := range []string{"linux/amd64", "=x", "linux/amd64="} {
		if b.Set(bad) == nil {
			t.Fatalf("-binary %q accepted", bad)
		}
	}
	if b.Set("linux/amd64=a") != nil || b.Set("linux/amd64=b") == nil {
		t.Fatal("a platform given twice is accepted")
	}
	if Tag("v0.1.0+dirty") != "v0.1.0-dirty" {
		t.Fatal(Tag("v0.1.0+dirty"))
	}
}

type file struct {
	h    *tar.Header
	data []byte
}

func layerFiles(t *testing.T, img v1.Image) map[string]file {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	files := map[string]file{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = file{h: h, data: data}
	}
}

func untar(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Join(dir, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(name, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
