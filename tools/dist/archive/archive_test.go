package archive_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relayr-go/relayr/tools/dist/archive"
)

var (
	mtime = time.Date(2026, 12, 4, 17, 11, 16, 0, time.UTC)
	files = map[string]string{
		"relayr":    "\x7fELF a binary's bytes",
		"README.md": "# relayr\n",
		"LICENSE":   "the license\n",
	}
)

// disk writes files into a new folder, each with its own mode and time on
// disk, in the order given, and answers the archive's entries for them in
// that order.
func disk(t *testing.T, order []string, diskMode fs.FileMode, diskTime time.Time) []archive.Entry {
	t.Helper()
	dir := t.TempDir()
	var entries []archive.Entry
	for _, name := range order {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(files[name]), diskMode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, diskMode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, diskTime, diskTime); err != nil {
			t.Fatal(err)
		}
		mode := fs.FileMode(0o644)
		if name == "relayr" {
			mode = 0o755
		}
		entries = append(entries, archive.Entry{Name: name, Mode: mode, Path: p})
	}
	return entries
}

type writer func(io.Writer, []archive.Entry, time.Time) error

func write(t *testing.T, w writer, entries []archive.Entry, at time.Time) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := w(&b, entries, at); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestSameBytesWhateverTheDisk: the same files, written to disk at other
// times, with other modes and in another order, and given in another
// order, make the same archive, byte for byte; another mtime makes
// another.
func TestSameBytesWhateverTheDisk(t *testing.T) {
	a := disk(t, []string{"relayr", "README.md", "LICENSE"}, 0o600, time.Date(2020, 1, 2, 3, 4, 5, 6, time.UTC))
	b := disk(t, []string{"LICENSE", "relayr", "README.md"}, 0o777, time.Now())
	b[0], b[2] = b[2], b[0]
	for name, w := range map[string]writer{"tar.gz": archive.TarGz, "zip": archive.Zip} {
		t.Run(name, func(t *testing.T) {
			first, second := write(t, w, a, mtime), write(t, w, b, mtime)
			if !bytes.Equal(first, second) {
				t.Fatalf("two archives of the same files differ: %d and %d bytes", len(first), len(second))
			}
			// The local zone of the time given changes nothing.
			if zoned := write(t, w, a, mtime.In(time.FixedZone("UTC+5", 5*3600))); !bytes.Equal(first, zoned) {
				t.Fatal("the same instant in another zone makes another archive")
			}
			if later := write(t, w, a, mtime.Add(time.Hour)); bytes.Equal(first, later) {
				t.Fatal("an archive timed an hour later has the same bytes: the time is not written")
			}
		})
	}
}

// TestTarGz: sorted names, owner 0 with no names, the entries' modes, the
// given time, the files' bytes, and a gzip header with no name and no time.
func TestTarGz(t *testing.T) {
	data := write(t, archive.TarGz, disk(t, []string{"relayr", "README.md", "LICENSE"}, 0o600, time.Now()), mtime)
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if zr.Name != "" || zr.Comment != "" || !zr.ModTime.IsZero() || len(zr.Extra) != 0 || zr.OS != 255 {
		t.Fatalf("gzip header: name %q, comment %q, time %v, extra %q, OS %d", zr.Name, zr.Comment, zr.ModTime, zr.Extra, zr.OS)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		wantMode := int64(0o644)
		if h.Name == "relayr" {
			wantMode = 0o755
		}
		if h.Typeflag != tar.TypeReg || h.Mode != wantMode || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" ||
			!h.ModTime.Equal(mtime) || h.Format != tar.FormatUSTAR {
			t.Errorf("%s: type %c, mode %o, owner %d:%d (%q:%q), time %v, format %v", h.Name, h.Typeflag, h.Mode, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime, h.Format)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if string(body) != files[h.Name] {
			t.Errorf("%s holds %q, want %q", h.Name, body, files[h.Name])
		}
	}
	if got := strings.Join(names, " "); got != "LICENSE README.md relayr" {
		t.Fatalf("entries %s, want LICENSE README.md relayr", got)
	}
}

// TestZip: sorted names, the entries' modes, the given time in UTC, the
// files' bytes, deflated.
func TestZip(t *testing.T) {
	data := write(t, archive.Zip, disk(t, []string{"relayr", "README.md", "LICENSE"}, 0o600, time.Now()), mtime)
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
		wantMode := fs.FileMode(0o644)
		if f.Name == "relayr" {
			wantMode = 0o755
		}
		if f.Mode() != wantMode || !f.Modified.Equal(mtime) || f.Method != zip.Deflate {
			t.Errorf("%s: mode %v, time %v, method %d", f.Name, f.Mode(), f.Modified, f.Method)
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if string(body) != files[f.Name] {
			t.Errorf("%s holds %q, want %q", f.Name, body, files[f.Name])
		}
	}
	if got := strings.Join(names, " "); got != "LICENSE README.md relayr" {
		t.Fatalf("entries %s, want LICENSE README.md relayr", got)
	}
}

// TestRefused: no entries, a name twice, a name that is not a plain
// relative path, a mode beyond permissions, a folder, a missing file.
func TestRefused(t *testing.T) {
	ok := disk(t, []string{"relayr"}, 0o644, mtime)[0]
	for _, c := range []struct {
		name    string
		entries []archive.Entry
		want    string
	}{
		{"none", nil, "no entries"},
		{"twice", []archive.Entry{ok, ok}, "twice"},
		{"absolute", []archive.Entry{{Name: "/etc/relayr", Mode: 0o644, Path: ok.Path}}, "relative"},
		{"up", []archive.Entry{{Name: "../relayr", Mode: 0o644, Path: ok.Path}}, "relative"},
		{"dot", []archive.Entry{{Name: ".", Mode: 0o644, Path: ok.Path}}, "relative"},
		{"setuid", []archive.Entry{{Name: "relayr", Mode: 0o755 | fs.ModeSetuid, Path: ok.Path}}, "permission bits"},
		{"folder", []archive.Entry{{Name: "relayr", Mode: 0o755, Path: t.TempDir()}}, "not a regular file"},
		{"missing", []archive.Entry{{Name: "relayr", Mode: 0o755, Path: filepath.Join(t.TempDir(), "gone")}}, "no such file"},
	} {
		for kind, w := range map[string]writer{"tar.gz": archive.TarGz, "zip": archive.Zip} {
			err := w(io.Discard, c.entries, mtime)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s %s: %v, want an error saying %q", c.name, kind, err, c.want)
			}
		}
	}
}
