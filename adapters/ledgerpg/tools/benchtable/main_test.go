package main

import (
	"strings"
	"testing"
)

const sample = `goos: linux
BenchmarkFiling/Memory/p1-2         	    2000	      1451 ns/op	    689385 filings/s
BenchmarkFiling/Postgres/p1-2       	    1874	   2632075 ns/op	       400.0 filings/s
BenchmarkFiling/Postgres/p1-2       	    1874	   2632075 ns/op	       900.0 filings/s
BenchmarkFiling/Postgres/p1-2       	    1874	   2632075 ns/op	       800.0 filings/s
BenchmarkFiling/PostgresRLS/p1-2    	    1208	   2515675 ns/op	       500 filings/s
BenchmarkFloor/Postgres/p1-2        	    4831	    889253 ns/op	      1000 filings/s
PASS
`

func TestTableTakesMediansAndRatiosToTheDatabasesFloor(t *testing.T) {
	res, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	got := table(res)
	want := []string{
		"Memory          1       689385            -       -",
		"Postgres        1          800         1000    0.80",
		"PostgresRLS     1          500         1000    0.50",
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("table lacks %q:\n%s", w, got)
		}
	}
	if strings.Index(got, "Memory") > strings.Index(got, "PostgresRLS") {
		t.Errorf("stores out of order:\n%s", got)
	}
}
