package ledgersqlite

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/relayr-go/relayr/core/ledger/ledgertest"
)

// BenchmarkFiling is a claim and its record, as one filing costs them.
func BenchmarkFiling(b *testing.B) {
	l, err := Open(b.Context(), filepath.Join(b.TempDir(), "relayr.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	for _, p := range []int{1, 8} {
		b.Run(fmt.Sprintf("SQLite/p%d", p), func(b *testing.B) {
			ledgertest.Filings(b, l, p)
		})
	}
}

// BenchmarkFloor is two bare durable single-row commits on a file opened
// as the ledger's is: the least a durable claim and record can cost.
func BenchmarkFloor(b *testing.B) {
	l, err := Open(b.Context(), filepath.Join(b.TempDir(), "relayr.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	if _, err := l.d.w.ExecContext(b.Context(), `CREATE TABLE floor (n INTEGER PRIMARY KEY, k TEXT NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	for _, p := range []int{1, 8} {
		b.Run(fmt.Sprintf("SQLite/p%d", p), func(b *testing.B) {
			ledgertest.Parallel(b, p, func(i int64) error {
				for range 2 {
					if _, err := l.d.w.ExecContext(b.Context(), `INSERT INTO floor (k) VALUES (?)`, fmt.Sprint(i)); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
}
