package ledgertest

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
)

// Filings benchmarks what one filing costs the ledger: the claim of a new
// key and the record of what it made (ADR-0033), over parallelism
// goroutines.
func Filings(b *testing.B, l ledger.Ledger, parallelism int) {
	b.Helper()
	var next atomic.Int64
	b.ResetTimer()
	d, err := phase(parallelism, b.N, filing(b, l), &next)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/d.Seconds(), "filings/s")
}

// filing is one filing's op: the claim of a new key and its record.
func filing(b *testing.B, l ledger.Ledger) func(i int64) error {
	run := ledger.NewNonce()[:8]
	return func(i int64) error {
		k := ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindItem, Key: fmt.Sprintf("%s/%012d", run, i)}
		c, _, err := l.Claim(b.Context(), ledger.ClaimParams{Key: k, Correlation: run, Now: t0, RetakeAfter: retakeAfter})
		if err != nil {
			return err
		}
		_, err = l.Record(b.Context(), ledger.RecordParams{Key: k, Nonce: c.Nonce, Ref: tracker.ItemRef{ID: k.Key, Number: i, Name: "OPS"}, Now: t0})
		return err
	}
}

// phaseOps is how many operations a goroutine runs in one phase of
// FilingsBesideFloor: about 20 to 60 ms with one filer on PostgreSQL.
const phaseOps = 32

// FilingsBesideFloor benchmarks l's filings (as Filings does) side by side
// with floor, an op of the same rate's unit (two bare durable commits on
// the same database): b.N of each, over parallelism goroutines, in phases
// of phaseOps operations a goroutine that alternate between the two, each
// phase timed. It reports filings/s, the floor's rate as floor/s, and
// x-floor, the floor's time over the filings' for as many operations. Its
// ns/op is a floor operation's and a filing's together.
//
// The machine's speed moves while a benchmark runs (on two shared cores,
// the floor of one filer moved by a third between runs seconds apart): in
// runs of their own, a floor and a filing measured moments apart could
// differ by that much whatever the ledger did. Phases a few tens of
// milliseconds long put both through the same moments.
func FilingsBesideFloor(b *testing.B, l ledger.Ledger, parallelism int, floor func(i int64) error) {
	b.Helper()
	file := filing(b, l)
	var next atomic.Int64
	// Warm: each op's statements are prepared before the clock starts.
	if err := floor(next.Add(1)); err != nil {
		b.Fatal(err)
	}
	if err := file(next.Add(1)); err != nil {
		b.Fatal(err)
	}
	var floorTime, filingTime time.Duration
	b.ResetTimer()
	for pair := 0; pair*phaseOps*parallelism < b.N; pair++ {
		n := min(phaseOps*parallelism, b.N-pair*phaseOps*parallelism)
		// Floor first in one pair, filings first in the next: whatever
		// one phase leaves the next (a flush under way, a warm cache)
		// falls on both alike.
		ops, times := []func(int64) error{floor, file}, []*time.Duration{&floorTime, &filingTime}
		if pair%2 == 1 {
			slices.Reverse(ops)
			slices.Reverse(times)
		}
		for i, op := range ops {
			d, err := phase(parallelism, n, op, &next)
			if err != nil {
				b.Fatal(err)
			}
			*times[i] += d
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/filingTime.Seconds(), "filings/s")
	b.ReportMetric(float64(b.N)/floorTime.Seconds(), "floor/s")
	b.ReportMetric(floorTime.Seconds()/filingTime.Seconds(), "x-floor")
}

// phase runs op n times over parallelism goroutines and answers how long
// they took, or the first error.
func phase(parallelism, n int, op func(i int64) error, next *atomic.Int64) (time.Duration, error) {
	var (
		wg    sync.WaitGroup
		taken atomic.Int64
		mu    sync.Mutex
		first error
	)
	start := time.Now()
	for range parallelism {
		wg.Go(func() {
			for taken.Add(1) <= int64(n) {
				if err := op(next.Add(1)); err != nil {
					mu.Lock()
					first = cmp.Or(first, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start), first
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
