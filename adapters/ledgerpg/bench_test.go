package ledgerpg_test

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/relayr-go/relayr/adapters/ledgerpg/pgtest"
	"github.com/relayr-go/relayr/core/ledger/ledgertest"
)

func poolFor(parallelism int) func(*pgxpool.Config) {
	return func(cfg *pgxpool.Config) { cfg.MaxConns = int32(max(4, parallelism)) }
}

// BenchmarkFiling is a claim and its record, as one filing costs them:
// with RLS each is still one round trip, set_config riding in its batch.
func BenchmarkFiling(b *testing.B) {
	for _, run := range pgtest.Modes {
		// One store per configuration, made before its runs: a schema made
		// and dropped around every run of b.N would be measured too.
		s := newStore(b, run.RLS, poolFor(8))
		for _, p := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/p%d", run.Name, p), func(b *testing.B) {
				ledgertest.Filings(b, s, p)
			})
		}
	}
}

// BenchmarkFloor is two bare durable single-row commits on the same server,
// the least any durable claim and record can cost.
func BenchmarkFloor(b *testing.B) {
	s := newStore(b, false, poolFor(8))
	table := pgx.Identifier{s.schema, "bench_floor"}.Sanitize()
	if _, err := s.pool.Exec(b.Context(), `CREATE TABLE `+table+` (n bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, k text NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	for _, p := range []int{1, 8} {
		b.Run(fmt.Sprintf("Postgres/p%d", p), func(b *testing.B) {
			insert := `INSERT INTO ` + table + ` (k) VALUES ($1)`
			ledgertest.Parallel(b, p, func(i int64) error {
				for range 2 {
					if _, err := s.pool.Exec(b.Context(), insert, fmt.Sprint(i)); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
}

// BenchmarkBeat is one replica's heartbeat, what spreading the leases and
// splitting the budget cost the ledger (issue 13).
func BenchmarkBeat(b *testing.B) {
	for _, run := range pgtest.Modes {
		s := newStore(b, run.RLS, nil)
		b.Run(run.Name, func(b *testing.B) { ledgertest.Beats(b, s) })
	}
}
