package ledgertest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
)

// Parallel runs op b.N times over exactly parallelism goroutines, times
// them, and reports the rate as filings/s (one op is one filing).
func Parallel(b *testing.B, parallelism int, op func(i int64) error) {
	b.Helper()
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	b.ResetTimer()
	for range parallelism {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				if err := op(i); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "filings/s")
}

// Filings benchmarks what one filing costs the ledger: the claim of a new
// key and the record of what it made (ADR-0033), over parallelism
// goroutines.
func Filings(b *testing.B, l ledger.Ledger, parallelism int) {
	b.Helper()
	run := ledger.NewNonce()[:8]
	Parallel(b, parallelism, func(i int64) error {
		k := ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindItem, Key: fmt.Sprintf("%s/%012d", run, i)}
		c, _, err := l.Claim(b.Context(), ledger.ClaimParams{Key: k, Correlation: run, Now: t0, RetakeAfter: retakeAfter})
		if err != nil {
			return err
		}
		_, err = l.Record(b.Context(), ledger.RecordParams{Key: k, Nonce: c.Nonce, Ref: tracker.ItemRef{ID: k.Key, Number: i, Name: "OPS"}, Now: t0})
		return err
	})
}

// Beats benchmarks one replica's heartbeat (ledger.Holders.Beat) among
// three live replicas, carrying what it spent of one key: the ledger's
// whole cost of spreading the leases and splitting the budget, one beat a
// replica every third of a lease, none per tracker request. It reports
// ms/beat.
func Beats(b *testing.B, l ledger.Ledger) {
	b.Helper()
	for _, h := range []string{"bench-b", "bench-c"} {
		if _, err := l.Beat(b.Context(), ledger.BeatParams{Holder: h, Now: t0, TTL: 1 << 62, Spent: map[string]int{"acme/plane": 12}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := range b.N {
		hs, err := l.Beat(b.Context(), ledger.BeatParams{Holder: "bench-a", Now: t0, TTL: 20_000_000_000, Spent: map[string]int{"acme/plane": i % 13}})
		if err != nil {
			b.Fatal(err)
		}
		if len(hs) != 3 {
			b.Fatalf("%d live holders, want 3", len(hs))
		}
	}
	b.StopTimer()
	b.ReportMetric(b.Elapsed().Seconds()*1000/float64(b.N), "ms/beat")
}
