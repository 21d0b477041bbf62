package ledger

import (
	"errors"
	"fmt"
	"io/fs"
	"regexp"
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
