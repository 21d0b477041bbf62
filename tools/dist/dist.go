package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/relayr-go/relayr/tools/dist/archive"
	"github.com/relayr-go/relayr/tools/dist/build"
	"github.com/relayr-go/relayr/tools/dist/sbom"
	"github.com/relayr-go/relayr/tools/dist/source"
)

// defaultPlatforms are the platforms a release is built for.
var defaultPlatforms = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64"}

// sumsName is the checksums file's name.
const sumsName = "SHA256SUMS"

// toolName names this command in the SBOMs it writes.
const toolName = "github.com/relayr-go/relayr/tools/dist"

// platform is a GOOS/GOARCH pair.
type platform struct{ os, arch string }

func (p platform) String() string { return p.os + "/" + p.arch }

// dir is the platform's folder under -out, and its part of the artifacts'
// names: linux_amd64.
func (p platform) dir() string { return p.os + "_" + p.arch }

// config is one run's.
type config struct {
	Root      string // the repository's root, the folder of its go.work
	Out       string // where the artifacts go
	Version   string // the release; empty: the commit's (source.Source.Version)
	Platforms []platform
	Archives  bool
	Log       io.Writer // a line per step, or nil
}

// result is what a run wrote, each path relative to the run's Out.
type result struct {
	Version  string
	Epoch    time.Time
	Binaries []string
	Archives []string
	SBOMs    []string
}

var platformRE = regexp.MustCompile(`^[a-z0-9]+/[a-z0-9]+$`)

// parsePlatforms reads -platforms: GOOS/GOARCH pairs, comma-separated,
// each once.
func parsePlatforms(s string) ([]platform, error) {
	var ps []platform
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if !platformRE.MatchString(f) {
			return nil, fmt.Errorf("-platforms: %q: want GOOS/GOARCH (linux/amd64)", f)
		}
		goos, goarch, _ := strings.Cut(f, "/")
		p := platform{goos, goarch}
		if slices.Contains(ps, p) {
			return nil, fmt.Errorf("-platforms: %s twice", p)
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// repoRoot is the folder of the go.work the go command uses here: the
// repository's root.
func repoRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOWORK").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOWORK: %w", err)
	}
	work := strings.TrimSpace(string(out))
	if work == "" || work == "off" {
		return "", errors.New("no go.work: run it from relayr's repository, in workspace mode (GOWORK not off)")
	}
	return filepath.Dir(work), nil
}

// versionRE is what a version may hold: it is part of file names and of
// -ldflags.
var versionRE = regexp.MustCompile(`^v[0-9A-Za-z.+_-]+$`)

// dist builds cfg's platforms and writes their artifacts.
func dist(ctx context.Context, cfg config) (result, error) {
	var res result
	if len(cfg.Platforms) == 0 {
		return res, errors.New("no platforms")
	}
	src, err := source.Read(ctx, cfg.Root)
	if err != nil {
		return res, err
	}
	res.Version = cfg.Version
	if res.Version == "" {
		res.Version = src.Version()
	}
	if !versionRE.MatchString(res.Version) {
		return res, fmt.Errorf("version %q: want v and letters, digits, '.', '+', '-' or '_'", res.Version)
	}
	if res.Epoch, err = src.Epoch(); err != nil {
		return res, err
	}
	out, err := filepath.Abs(cfg.Out)
	if err != nil {
		return res, err
	}
	if err := clean(out); err != nil {
		return res, err
	}
	logf(cfg.Log, "relayr %s from %s (%s), files timed %s, into %s",
		res.Version, src.Commit[:12], src.Time.Format(time.RFC3339), res.Epoch.Format(time.RFC3339), out)

	docs, err := docEntries(cfg.Root)
	if err != nil {
		return res, err
	}
	var stamped, warned bool
	for _, p := range cfg.Platforms {
		start := time.Now()
		bin := path.Join(p.dir(), build.ExeName(p.os))
		binPath := filepath.Join(out, filepath.FromSlash(bin))
		if err := build.Binary(ctx, cfg.Root, p.os, p.arch, res.Version, binPath); err != nil {
			return res, err
		}
		if err := os.Chtimes(binPath, res.Epoch, res.Epoch); err != nil {
			return res, err
		}
		res.Binaries = append(res.Binaries, bin)
		built := time.Since(start)
		if !stamped && !warned {
			stamped, err = hasCommitStamp(binPath)
			if err != nil {
				return res, err
			}
			if !stamped {
				logf(cfg.Log, "note: the go command stamped no commit (a linked git worktree, whose .git is a file, gets none): "+
					"these binaries differ from a clone's by that stamp; the SBOMs name the commit git names")
				warned = true
			}
		}

		base := "relayr_" + res.Version + "_" + p.dir()
		bom, err := sbom.Generate(binPath, sbom.Options{Version: res.Version, Revision: src.Commit, Time: res.Epoch, Tool: toolName})
		if err != nil {
			return res, err
		}
		if err := writeFile(filepath.Join(out, base+".cdx.json"), res.Epoch, func(w io.Writer) error {
			_, err := w.Write(bom)
			return err
		}); err != nil {
			return res, err
		}
		res.SBOMs = append(res.SBOMs, base+".cdx.json")

		if cfg.Archives {
			entries := append([]archive.Entry{{Name: build.ExeName(p.os), Mode: 0o755, Path: binPath}}, docs...)
			name, write := base+".tar.gz", archive.TarGz
			if p.os == "windows" {
				name, write = base+".zip", archive.Zip
			}
			if err := writeFile(filepath.Join(out, name), res.Epoch, func(w io.Writer) error {
				return write(w, entries, res.Epoch)
			}); err != nil {
				return res, err
			}
			res.Archives = append(res.Archives, name)
		}
		logf(cfg.Log, "%s: built in %s, written in %s", p, built.Round(100*time.Millisecond), (time.Since(start) - built).Round(100*time.Millisecond))
	}

	summed := append(slices.Clone(res.Archives), res.SBOMs...)
	if !cfg.Archives {
		summed = append(slices.Clone(res.Binaries), res.SBOMs...)
	}
	if err := writeSums(out, summed, res.Epoch); err != nil {
		return res, err
	}
	logf(cfg.Log, "%s: %d files", filepath.Join(out, sumsName), len(summed))
	return res, nil
}

// docEntries are the repository's files every archive holds beside the
// binary: README.md, and LICENSE when there is one.
func docEntries(root string) ([]archive.Entry, error) {
	var entries []archive.Entry
	for _, doc := range []struct {
		name     string
		required bool
	}{{"LICENSE", false}, {"README.md", true}} {
		p := filepath.Join(root, doc.name)
		_, err := os.Stat(p)
		switch {
		case err == nil:
			entries = append(entries, archive.Entry{Name: doc.name, Mode: 0o644, Path: p})
		case errors.Is(err, fs.ErrNotExist) && !doc.required:
		default:
			return nil, err
		}
	}
	return entries, nil
}

// clean removes what an earlier run left at out's top: its archives, SBOMs
// and SHA256SUMS (the binaries are overwritten), so that SHA256SUMS lists
// all that out holds.
func clean(out string) error {
	if err := os.MkdirAll(out, 0o755); err != nil { //nolint:gosec // G301: a folder of artifacts to publish, readable by all
		return err
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		return err
	}
	for _, e := range entries {
		n := e.Name()
		stale := n == sumsName || strings.HasPrefix(n, "relayr_") &&
			(strings.HasSuffix(n, ".tar.gz") || strings.HasSuffix(n, ".zip") || strings.HasSuffix(n, ".cdx.json"))
		if stale && e.Type().IsRegular() {
			if err := os.Remove(filepath.Join(out, n)); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeSums writes SHA256SUMS in out: a line "<hex>  <name>" per file (the
// form `sha256sum` writes and -c reads: two spaces, a binary's folder
// slash-separated), sorted by name.
func writeSums(out string, names []string, mtime time.Time) error {
	names = slices.Sorted(slices.Values(names))
	var b bytes.Buffer
	for _, n := range names {
		sum, err := fileSHA256(filepath.Join(out, filepath.FromSlash(n)))
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, n)
	}
	return writeFile(filepath.Join(out, sumsName), mtime, func(w io.Writer) error {
		_, err := w.Write(b.Bytes())
		return err
	})
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p) //nolint:gosec // G304: a file this run wrote
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeFile writes a file whole or not at all (a temporary file in its
// folder, renamed), mode 0644, timed mtime.
func writeFile(p string, mtime time.Time, write func(io.Writer) error) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(p), ".dist-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := write(tmp); err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(p), err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chtimes(tmp.Name(), mtime, mtime); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), p)
}

func logf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}

// hasCommitStamp says whether the go command stamped the binary with its
// commit (vcs.revision).
func hasCommitStamp(p string) (bool, error) {
	info, err := buildinfo.ReadFile(p)
	if err != nil {
		return false, err
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			return true, nil
		}
	}
	return false, nil
}
