package ledger_test

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/relayr-go/relayr/core/ledger"
)

func TestLoadMigrations(t *testing.T) {
	file := &fstest.MapFile{Data: []byte("SELECT 1;")}
	for name, c := range map[string]struct {
		files fstest.MapFS
		want  string
	}{
		"AGapIsRefused":                   {fstest.MapFS{"m/001_a.up.sql": file, "m/003_c.up.sql": file}, "gap"},
		"ADuplicateVersionIsRefused":      {fstest.MapFS{"m/001_a.up.sql": file, "m/002_b.up.sql": file, "m/002_c.up.sql": file}, "twice"},
		"AStrayFileIsRefused":             {fstest.MapFS{"m/001_a.up.sql": file, "m/001_a.down.sql": file}, "not named"},
		"AHistoryNotStartingAt1IsRefused": {fstest.MapFS{"m/002_b.up.sql": file}, "gap"},
		"AFileNotAMigrationIsRefused":     {fstest.MapFS{"m/.keep": file}, "not named"},
		"NoMigrationsIsRefused":           {fstest.MapFS{"m": &fstest.MapFile{Mode: fs.ModeDir}}, "no migrations"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ledger.LoadMigrations(c.files, "m")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want it to say %q", err, c.want)
			}
		})
	}
	ms, err := ledger.LoadMigrations(fstest.MapFS{"m/002_b.up.sql": file, "m/001_a.up.sql": file}, "m")
	if err != nil || len(ms) != 2 || ms[0].Name != "a" || ms[1].Version != 2 || ms[0].SQL != "SELECT 1;" {
		t.Fatalf("%+v %v", ms, err)
	}
}

func TestCheckApplied(t *testing.T) {
	ms := []ledger.Migration{{Version: 1, Name: "a"}, {Version: 2, Name: "b"}}
	for name, c := range map[string]struct {
		applied map[int]string
		want    string
	}{
		"ANewerMigrationIsRefused":   {map[int]string{1: "a", 2: "b", 3: "c"}, "has migration 003_c, newer than this relayr's (2)"},
		"ARenamedMigrationIsRefused": {map[int]string{1: "a", 2: "other"}, "applied migration 002_other where this relayr has 002_b"},
		"AVersionBelow1IsRefused":    {map[int]string{0: "zero"}, "applied migration 000_zero where this relayr has none"},
		"TheLowestIsNamed":           {map[int]string{1: "x", 2: "y"}, "applied migration 001_x"},
	} {
		t.Run(name, func(t *testing.T) {
			if err := ledger.CheckApplied(c.applied, ms); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want it to say %q", err, c.want)
			}
		})
	}
	for _, applied := range []map[int]string{nil, {1: "a"}, {1: "a", 2: "b"}} {
		if err := ledger.CheckApplied(applied, ms); err != nil {
			t.Fatalf("%v: %v", applied, err)
		}
	}
}
