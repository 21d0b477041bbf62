package ledgerpg_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/relayr-go/relayr/adapters/ledgerpg/pgtest"
	"github.com/relayr-go/relayr/core/ledger/ledgertest"
)

func poolFor(parallelism int) func(*pgxpool.Config) {
	return func(cfg *pgxpool.Config) { cfg.MaxConns = int32(max(4, parallelism)) }
}

// BenchmarkFiling is a claim and its record, as one filing costs them
// (with RLS each is still one round trip, set_config riding in its batch),
// side by side with the floor: two bare durable single-row commits on the
// same server, by the tables' owner, the least any durable claim and
// record can cost (ledgertest.FilingsBesideFloor).
func BenchmarkFiling(b *testing.B) {
	floorStore := newStore(b, false, poolFor(8))
	table := pgx.Identifier{floorStore.schema, "bench_floor"}.Sanitize()
	if _, err := floorStore.pool.Exec(b.Context(), `CREATE TABLE `+table+` (n bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, k text NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	insert := `INSERT INTO ` + table + ` (k) VALUES ($1)`
	floor := func(i int64) error {
		for range 2 {
			if _, err := floorStore.pool.Exec(b.Context(), insert, strconv.FormatInt(i, 10)); err != nil {
				return err
			}
		}
		return nil
	}
	for _, run := range pgtest.Modes {
		// One store per configuration, made before its runs: a schema made
		// and dropped around every run of b.N would be measured too.
		s := newStore(b, run.RLS, poolFor(8))
		for _, p := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/p%d", run.Name, p), func(b *testing.B) {
				ledgertest.FilingsBesideFloor(b, s, p, floor)
			})
		}
	}
}

// BenchmarkBeat is one replica's heartbeat, what spreading the leases and
// splitting the budget cost the ledger (ADR-1002, ADR-1001).
func BenchmarkBeat(b *testing.B) {
	for _, run := range pgtest.Modes {
		s := newStore(b, run.RLS, nil)
		b.Run(run.Name, func(b *testing.B) { ledgertest.Beats(b, s) })
	}
}
