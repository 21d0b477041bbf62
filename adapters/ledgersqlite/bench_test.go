package ledgersqlite

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/relayr-go/relayr/core/ledger/ledgertest"
)

// BenchmarkFiling is a claim and its record, as one filing costs them,
// side by side with the floor: two bare durable single-row commits on the
// ledger's own file, the least a durable claim and record can cost
// (ledgertest.FilingsBesideFloor).
func BenchmarkFiling(b *testing.B) {
	l, err := Open(b.Context(), filepath.Join(b.TempDir(), "relayr.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	if _, err := l.d.w.ExecContext(b.Context(), `CREATE TABLE floor (n INTEGER PRIMARY KEY, k TEXT NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	floor := func(i int64) error {
		for range 2 {
			if _, err := l.d.w.ExecContext(b.Context(), `INSERT INTO floor (k) VALUES (?)`, strconv.FormatInt(i, 10)); err != nil {
				return err
			}
		}
		return nil
	}
	for _, p := range []int{1, 8} {
		b.Run(fmt.Sprintf("SQLite/p%d", p), func(b *testing.B) {
			ledgertest.FilingsBesideFloor(b, l, p, floor)
		})
	}
}
