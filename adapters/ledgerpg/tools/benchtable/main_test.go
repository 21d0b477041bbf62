package main

import (
	"strings"
	"testing"
)

const sample = `goos: linux
BenchmarkFiling/Memory/p1-2         	    2000	      1451 ns/op	    689385 filings/s
BenchmarkFiling/Postgres/p1-2       	    1874	   2632075 ns/op	       400.0 filings/s	      1000 floor/s	         0.4000 x-floor
BenchmarkFiling/Postgres/p1-2       	    1874	   2632075 ns/op	       900.0 filings/s	      1100 floor/s	         0.8182 x-floor
BenchmarkFiling/Postgres/p1-2       	    1874	   2632075 ns/op	       800.0 filings/s	       800 floor/s	         1.000 x-floor
BenchmarkFiling/PostgresRLS/p1-2    	    1208	   2515675 ns/op	       500 filings/s	      1000 floor/s	         0.5000 x-floor
BenchmarkAPIFilings/Vikunja/relayr-2       	     283	   4311057 ns/op	        16.00 clients	       232.0 filings/s	         2.007 requests/filing
BenchmarkAPIFilings/Plane/relayr-2         	     192	   5305889 ns/op	        16.00 clients	       200.0 filings/s	         1.016 requests/filing
BenchmarkAPIFilings/Plane/direct-2         	    3511	    507622 ns/op	        16.00 clients	      2000 filings/s	         1.009 requests/filing
BenchmarkRetriedFilings/Plane/relayr-2     	     152	   7194991 ns/op	         0 duplicates/100filings
BenchmarkRetriedFilings/Plane/direct-2     	    2688	    544754 ns/op	         0 duplicates/100filings
BenchmarkRetriedFilings/Plane/direct-no-external-id-2         	    3148	    576109 ns/op	       100.0 duplicates/100filings
BenchmarkTrackerRequests/Plane/change-2         	      37	  27214550 ns/op	         2.000 requests/change
BenchmarkTrackerRequests/Plane/idle-poll-2      	      67	  17501555 ns/op	         1.000 requests/poll
BenchmarkChangeToFeed/Plane/webhook-2           	      20	   9710085 ns/op	         9.708 ms/change	         8.353 p50-ms/change
BenchmarkChangeToFeed/Plane/polling-2           	       5	 234578317 ns/op	       110.0 ms/change@200ms	     15010 ms/change@30s	     30010 ms/change@60s
BenchmarkStalledTracker/Vikunja/late/relayr-2       	       1	18370346403 ns/op	         0 duplicates	         0 failed-callers	         1.280 requests/key	        13.35 s/run	         0 unfiled-keys
BenchmarkStalledTracker/Vikunja/late/direct-2       	       1	32256143260 ns/op	        90.00 duplicates	         0 failed-callers	         2.800 requests/key	        32.25 s/run	         0 unfiled-keys
BenchmarkDeletionToFeed/Vikunja/webhook-2       	      20	   4755198 ns/op	         4.754 ms/deletion	         3.851 p50-ms/deletion
BenchmarkTrackerRequests/GitHub/burst-2     	       4	   7234364 ns/op	         2.000 requests/poll
BenchmarkSustainedFilings-2   	       1	 494849724 ns/op	       500.0 filings/hour	         0 github-refusals	      9300 held/3h	         1.001 points/filing	         1.001 requests/filing
BenchmarkBeat/Postgres-2         	    1411	   2092045 ns/op	         2.091 ms/beat
BenchmarkBindings1000-2   	       1	6207366355 ns/op	      6934 bytes/binding	        16.00 conns	         1.053 goroutines/binding
PASS
    replicas.go:271: FIGURE replicas.lease_spread_start_max 100 bindings
    replicas.go:272: FIGURE replicas.lease_spread_start_min 99 bindings
    replicas.go:273: FIGURE replicas.takeover 32.0 s
    replicas.go:274: FIGURE replicas.requests_per_minute_worst 36 requests
`

func TestTableTakesMediansAndRatiosToTheDatabasesFloor(t *testing.T) {
	res, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	got := table(res)
	want := []string{
		"| Ledger filings/s (claim and record), Memory, 1 at a time | 689,385 | – | – |",
		// Each a median: 0.82 is the second run's ratio, not 800 over 1,000.
		"| Ledger filings/s (claim and record), Postgres, 1 at a time | 800 | 1,000 floor (two bare commits) | 0.82 |",
		"| Ledger filings/s (claim and record), PostgresRLS, 1 at a time | 500 | 1,000 floor (two bare commits) | 0.50 |",
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

// A ledger without the floor beside it (a run of an older benchmark) has
// its row, with no ratio.
func TestALedgerWithoutItsFloorHasNoRatio(t *testing.T) {
	res, err := parse(strings.NewReader("BenchmarkFiling/SQLite/p1-2 	100	1 ns/op	1500 filings/s\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := "| Ledger filings/s (claim and record), SQLite, 1 at a time | 1,500 | – | – |"
	if got := table(res); !strings.Contains(got, want) {
		t.Errorf("table lacks %q:\n%s", want, got)
	}
}

func TestTableSetsEachTrackersFiguresBesideWhatTheyAreMeasuredAgainst(t *testing.T) {
	res, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	got := table(res)
	want := []string{
		"| Figure | relayr | Against | Ratio |",
		"| Filings/s through relayr's HTTP API, Plane (16 clients) | 200 | 2,000 direct creates/s | 0.10 |",
		"| Duplicates per 100 keys each sent twice, Plane | 0 | 0 direct create with external_id (Plane's 409); 100 plain POST without external_id | – |",
		"| Tracker requests per filing, Plane | 1.02 | 1.01 direct | 1.01 |",
		"| Tracker requests per change detected, Plane | 2.00 | – | – |",
		"| Tracker requests per idle poll, Plane | 1.00 | – | – |",
		"| Change to feed with a webhook nudge after a quiet spell, median (mean), Plane | 8.35 ms (9.71 ms) | 30,010 ms polling every minute (modelled) | 0.00 |",
		"| Change to feed polling every 30 s, no webhook, Plane (modelled: 110 ms measured at 200 ms) | 15,010 ms | 30,010 ms polling every minute (modelled) | 0.50 |",
		"| Deletion to feed with a webhook after a quiet spell, median (mean), Vikunja | 3.85 ms (4.75 ms) | the next daily sweep without one | – |",
		"| A slow tracker, 50 keys each sent by two callers with 15 s timeouts, 30% of creates answered 12 s late (504), Vikunja | 13.35 s; 0 failed callers, 0 unfiled, 0 duplicates; 1.28 requests a key | 32.25 s; 0 failed callers, 0 unfiled, 90 duplicates; 2.80 requests a key (direct creates) | – |",
		"| Points of the tracker's hourly limit per filing, GitHub | 1.00 | – | – |",
		"| Tracker requests per filing, GitHub (a new key a second, virtual time) | 1.00 | – | – |",
		"| Tracker requests per poll after comments on 10 items, GitHub | 2.00 | 11 reading each item's comments | – |",
		"| Filings an hour one token sustains, a new key every second for 3 h (virtual time), GitHub | 500, 0 answers over a limit | GitHub's 500 content creations an hour, 80 a minute | – |",
		// A figure without its counterpart still has its row.
		"| Filings/s through relayr's HTTP API, Vikunja (16 clients) | 232 | – | – |",
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("table lacks %q:\n%s", w, got)
		}
	}
	plane, vikunja, ledger := strings.Index(got, "Plane"), strings.Index(got, "Vikunja"), strings.Index(got, "Ledger")
	if plane > vikunja || vikunja > ledger {
		t.Errorf("rows out of order (Plane, Vikunja, then the ledgers):\n%s", got)
	}
}

func TestNumbersReadAsFigures(t *testing.T) {
	for v, want := range map[float64]string{0: "0.00", 1.016: "1.02", 99.99: "99.99", 100: "100", 1970: "1,970", 689385: "689,385", 1234567: "1,234,567"} {
		if got := num(v); got != want {
			t.Errorf("num(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestTableSetsTheNATSFiguresBesideAPlainPublish(t *testing.T) {
	res, err := parse(strings.NewReader(`BenchmarkNATS/one/relayr-2 4 279498688 ns/op 3500 events/s
BenchmarkNATS/one/relayr-2 4 279498688 ns/op 3600 events/s
BenchmarkNATS/one/relayr-2 4 279498688 ns/op 3000 events/s
BenchmarkNATS/one/direct-2 7 168408876 ns/op 6000 events/s
BenchmarkNATS/eight/relayr-2 1 1179651166 ns/op 6800 events/s
BenchmarkNATSLatency-2 450 2430677 ns/op 1.96 ms-p50 7.9 ms-p99
`))
	if err != nil {
		t.Fatal(err)
	}
	got := table(res)
	for _, w := range []string{
		"| Events/s from the log into NATS JetStream, one subscription | 3,500 | 6,000 plain JetStream publishes/s, each acked | 0.58 |",
		"| Events/s from the log into NATS JetStream, eight subscriptions | 6,800 | – | – |",
		"| Append to JetStream ack, median | 1.96 ms (p99 7.90 ms) | – | – |",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("table lacks %q:\n%s", w, got)
		}
	}
}

func TestTableShowsWhatABindingCostsAtAThousand(t *testing.T) {
	res, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	want := "| Per binding, 1,000 bindings on one tracker server (one pool, tracker_conns 16) | 1.1 goroutines, 6,934 B heap; 16 connections to the server |"
	if got := table(res); !strings.Contains(got, want) {
		t.Errorf("table lacks %q:\n%s", want, got)
	}
}

func TestTableShowsTheReplicasFigures(t *testing.T) {
	res, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	got := table(res)
	for _, want := range []string{
		"two lease periods on (PostgreSQL; virtual time) | 100 / 99 |",
		"survivors within 10 (PostgreSQL, lease 30 s; virtual time) | 32.00 s |",
		"three replicas through start, kill and restart (PostgreSQL; virtual time) | 36 | budget 40 (120 a minute before: 40 per replica) | 0.90 |",
		"Ledger cost of sharing leases and budget, Postgres: one heartbeat a replica every 10 s, none per tracker request | 2.09 ms/beat |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
}

func TestTableShowsJirasRequestsAndItsBurst(t *testing.T) {
	res, err := parse(strings.NewReader("BenchmarkJiraRequests-2   	       3	 420206459 ns/op	         0 burst-429s	        30.00 burst-s	         3.000 requests/change	         2.000 requests/filing	         1.000 requests/idle-poll	         4.000 requests/state-change\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := table(res)
	for _, want := range []string{
		"| Jira's driver alone: requests per filing (a create, a read) | 2.00 | – | – |",
		"| Jira's driver alone: requests per change of state (with the transitions read and taken) | 4.00 | – | – |",
		"| A rule's 60 edits of one issue (120 writes), Jira | 0 answers over a limit, paced over 30.00 s |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the table lacks %q:\n%s", want, got)
		}
	}
}

func TestTableShowsGitLabsRequestsAndItsBurst(t *testing.T) {
	res, err := parse(strings.NewReader("BenchmarkGitLabRequests-2   	      15	 105039943 ns/op	         0 burst-429s	        61.00 burst-s	         0 comment-burst-429s	       122.0 comment-burst-s	         2.000 requests/change	         1.000 requests/filing	         1.000 requests/idle-poll	        11.00 requests/poll-10-commented\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := table(res)
	for _, want := range []string{
		"| GitLab's driver alone: requests per filing (one POST) | 1.00 | – | – |",
		"| GitLab's driver alone: requests per poll after comments on 10 issues (each issue's notes) | 11.00 | – | – |",
		"| A burst of 300 filings, GitLab.com's limits (virtual time) | 0 answers over a limit, paced over 61.00 s |",
		"| A burst of 150 comments, GitLab.com's limits (virtual time) | 0 answers over a limit, paced over 122 s | GitLab.com's 60 notes a minute a user |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the table lacks %q:\n%s", want, got)
		}
	}
}

func TestTableShowsLinearsRequestsPointsAndFilingsAnHour(t *testing.T) {
	res, err := parse(strings.NewReader("BenchmarkLinearRequests-2   	     170	   7051122 ns/op	      1295 filings/hour	      2174 points/change	       192.0 points/filing	         4.000 points/idle-poll	         4.000 requests/change	         1.000 requests/filing	         1.000 requests/idle-poll\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := table(res)
	for _, want := range []string{
		"| Linear's driver alone: requests per filing (one request: the issue and its key's attachment) | 1.00 | – | – |",
		"| Linear's driver alone: complexity points per filing | 192 | – | – |",
		"| Linear's driver alone: complexity points per poll that reads one change | 2,174 | – | – |",
		"| Linear's driver alone: requests per idle poll | 1.00 | – | – |",
		"| Filings an hour one key sustains, a poll every 10 s beside them, Linear (virtual time) | 1,295 | Linear's 2,500 requests and 250,000 complexity points an hour a user | – |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the table lacks %q:\n%s", want, got)
		}
	}
}
