package ledger

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
)

// Migration is one versioned schema change of a SQL store, read from a file
// named NNN_name.up.sql.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

var migrationName = regexp.MustCompile(`^(\d{3})_([a-z0-9_]+)\.up\.sql$`)

// LoadMigrations reads dir's NNN_name.up.sql files in version order, and
// refuses a set with a gap, a duplicate version or a stray file, so a store
// never applies a partial history. Both SQL stores embed their migrations
// and load them through it.
func LoadMigrations(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	var out []Migration
	for _, e := range entries {
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migration %q is not named NNN_name.up.sql", e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		body, err := fs.ReadFile(fsys, dir+"/"+e.Name())
		if err != nil {
			return nil, fmt.Errorf("migration %s: %w", e.Name(), err)
		}
		out = append(out, Migration{Version: v, Name: m[2], SQL: string(body)})
	}
	if len(out) == 0 {
		return nil, errors.New("no migrations")
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != i+1 {
			if i > 0 && out[i-1].Version == m.Version {
				return nil, fmt.Errorf("migration %03d appears twice", m.Version)
			}
			return nil, fmt.Errorf("migrations have a gap before %03d_%s", m.Version, m.Name)
		}
	}
	return out, nil
}

// CheckApplied refuses a store whose applied migrations (version to name,
// as its migrations table holds them) are not this relayr's of the same
// versions: one another build named its own way, or one newer than
// migrations. Nothing is applied on top of such a history. The lowest
// such version is named.
func CheckApplied(applied map[int]string, migrations []Migration) error {
	for _, v := range slices.Sorted(maps.Keys(applied)) {
		name := applied[v]
		switch {
		case v > len(migrations):
			return fmt.Errorf("has migration %03d_%s, newer than this relayr's (%d)", v, name, len(migrations))
		case v < 1:
			return fmt.Errorf("applied migration %03d_%s where this relayr has none", v, name)
		case migrations[v-1].Name != name:
			return fmt.Errorf("applied migration %03d_%s where this relayr has %03d_%s", v, name, v, migrations[v-1].Name)
		}
	}
	return nil
}
