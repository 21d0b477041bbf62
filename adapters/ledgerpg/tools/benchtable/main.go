// Command benchtable turns `go test -bench` output of the ledgers' filing
// and floor benchmarks into a table: per store and parallelism, filings per
// second (the median over -count runs) and the ratio to the floor of the
// database under it (PostgresRLS runs on Postgres's floor).
//
//	go test -run '^$' -bench . -count 3 ./core/ledger/memledger ./adapters/ledgersqlite ./adapters/ledgerpg |
//		go run ./adapters/ledgerpg/tools/benchtable
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

var line = regexp.MustCompile(`^Benchmark(Filing|Floor)/([^/\s]+)/p(\d+)(?:-\d+)?\s.*?([\d.]+) filings/s`)

type key struct {
	store string
	p     int
}

type results struct {
	filing, floor map[key][]float64
}

func parse(r io.Reader) (results, error) {
	res := results{filing: map[key][]float64{}, floor: map[key][]float64{}}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		p, _ := strconv.Atoi(m[3])
		v, err := strconv.ParseFloat(m[4], 64)
		if err != nil {
			return res, err
		}
		k := key{m[2], p}
		if m[1] == "Filing" {
			res.filing[k] = append(res.filing[k], v)
		} else {
			res.floor[k] = append(res.floor[k], v)
		}
	}
	return res, sc.Err()
}

func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// floorOf names the database a store's floor was measured on.
func floorOf(store string) string {
	return strings.TrimSuffix(store, "RLS")
}

func table(res results) string {
	keys := make([]key, 0, len(res.filing))
	for k := range res.filing {
		keys = append(keys, k)
	}
	order := map[string]int{"Memory": 0, "SQLite": 1, "Postgres": 2, "PostgresRLS": 3}
	slices.SortFunc(keys, func(a, b key) int {
		oa, ok := order[a.store]
		if !ok {
			oa = len(order)
		}
		ob, ok := order[b.store]
		if !ok {
			ob = len(order)
		}
		if oa != ob {
			return oa - ob
		}
		if c := strings.Compare(a.store, b.store); c != 0 {
			return c
		}
		return a.p - b.p
	})
	var b strings.Builder
	fmt.Fprintf(&b, "%-12s %4s %12s %12s %7s\n", "store", "p", "filings/s", "floor/s", "ratio")
	for _, k := range keys {
		f := median(res.filing[k])
		floor, ok := res.floor[key{floorOf(k.store), k.p}]
		if !ok {
			fmt.Fprintf(&b, "%-12s %4d %12.0f %12s %7s\n", k.store, k.p, f, "-", "-")
			continue
		}
		fl := median(floor)
		fmt.Fprintf(&b, "%-12s %4d %12.0f %12.0f %7.2f\n", k.store, k.p, f, fl, f/fl)
	}
	return b.String()
}

func main() {
	res, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	if len(res.filing) == 0 {
		fmt.Fprintln(os.Stderr, "benchtable: no BenchmarkFiling lines on stdin")
		os.Exit(1)
	}
	fmt.Print(table(res))
}
