// Command benchtable turns the output of `make bench` (go test -bench over
// the ledgers and apps/relayr/internal/figures) into one markdown table for
// the README: per tracker, filings per second through relayr's API against
// a direct create, duplicates when a filing is sent twice, tracker requests
// per filing, per change and per idle poll, and the time from a person's
// change to its event in the feed; per ledger and parallelism, filings per
// second against the floor of the database under it, which each run of
// the ledger's benchmark measures in phases that alternate with its
// filings (ledgertest.FilingsBesideFloor; PostgresRLS on Postgres's
// floor). Every figure is the median over -count runs, a ledger's ratio
// the median of each run's own (x-floor); a figure whose benchmark is
// missing from the input is left out.
//
//	go test -run '^$' -bench . -count 3 ./core/ledger/memledger ./adapters/ledgersqlite \
//		./adapters/ledgerpg ./apps/relayr/internal/figures | go run ./adapters/ledgerpg/tools/benchtable
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

// results holds every metric read: benchmark name (without "Benchmark" and
// the GOMAXPROCS suffix) → unit → one value per run.
type results map[string]map[string][]float64

var (
	benchLine = regexp.MustCompile(`^Benchmark(\S+)\s+\d+\s+(.*)$`)
	// figLine is a figure a virtual-time test logs ("FIGURE name value
	// unit"): the budget's, which no benchmark can time.
	figLine = regexp.MustCompile(`FIGURE (\S+) (\S+) (\S+)`)
	procs   = regexp.MustCompile(`-\d+$`)
	ledger  = regexp.MustCompile(`^Filing/([^/]+)/p(\d+)$`)
)

func parse(r io.Reader) (results, error) {
	res := results{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if m := figLine.FindStringSubmatch(sc.Text()); m != nil {
			v, err := strconv.ParseFloat(m[2], 64)
			if err != nil {
				return res, fmt.Errorf("figure %s: %q is not a number", m[1], m[2])
			}
			name := "Figure/" + m[1]
			if res[name] == nil {
				res[name] = map[string][]float64{}
			}
			res[name][m[3]] = append(res[name][m[3]], v)
			continue
		}
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		name := procs.ReplaceAllString(m[1], "")
		f := strings.Fields(m[2])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return res, fmt.Errorf("%s: %q is not a number", name, f[i])
			}
			if res[name] == nil {
				res[name] = map[string][]float64{}
			}
			res[name][f[i+1]] = append(res[name][f[i+1]], v)
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

// get is the median of a benchmark's metric.
func (r results) get(name, unit string) (float64, bool) {
	vs := r[name][unit]
	if len(vs) == 0 {
		return 0, false
	}
	return median(vs), true
}

// num prints a figure: whole numbers with thousands separators from 100
// up, two decimals below.
func num(v float64) string {
	if v < 100 {
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	s := strconv.FormatFloat(v, 'f', 0, 64)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// count prints a count per 100: whole when it is, one decimal when not.
func count(v float64) string {
	if v == float64(int64(v)) {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func ratio(a, b float64) string {
	if b == 0 {
		return "–"
	}
	return strconv.FormatFloat(a/b, 'f', 2, 64)
}

// row is one line of the table.
type row struct{ figure, relayr, against, ratio string }

// figures are the benchmarks of apps/relayr/internal/figures, each named
// <figure>/<tracker>/<variant>.
var figures = []string{"APIFilings", "RetriedFilings", "TrackerRequests", "ChangeToFeed"}

// trackers lists the trackers the figures were measured for: Plane and
// Vikunja first, then any other by name.
func (r results) trackers() []string {
	var out []string
	for name := range r {
		parts := strings.Split(name, "/")
		figure := len(parts) == 3 && slices.Contains(figures, parts[0]) ||
			len(parts) == 4 && parts[0] == "StalledTracker" // <figure>/<tracker>/<mode>/<side>
		if figure && !slices.Contains(out, parts[1]) {
			out = append(out, parts[1])
		}
	}
	slices.SortFunc(out, byOrder([]string{"Plane", "Vikunja"}))
	return out
}

// byOrder sorts the names of order first, in that order, then the others
// by name.
func byOrder(order []string) func(a, b string) int {
	return func(a, b string) int {
		ia, ib := slices.Index(order, a), slices.Index(order, b)
		if ia < 0 {
			ia = len(order)
		}
		if ib < 0 {
			ib = len(order)
		}
		if ia != ib {
			return ia - ib
		}
		return strings.Compare(a, b)
	}
}

func (r results) trackerRows(t string) []row {
	var rows []row
	// plain is a row of one figure, against nothing.
	plain := func(bench, metric, label string) {
		if v, ok := r.get(bench, metric); ok {
			rows = append(rows, row{label, num(v), "–", "–"})
		}
	}
	if rel, ok := r.get("APIFilings/"+t+"/relayr", "filings/s"); ok {
		fig := "Filings/s through relayr's HTTP API, " + t
		if c, ok := r.get("APIFilings/"+t+"/relayr", "clients"); ok {
			fig += fmt.Sprintf(" (%.0f clients)", c)
		}
		against, rat := "–", "–"
		if dir, ok := r.get("APIFilings/"+t+"/direct", "filings/s"); ok {
			against, rat = num(dir)+" direct creates/s", ratio(rel, dir)
		}
		rows = append(rows, row{fig, num(rel), against, rat})
	}
	if rel, ok := r.get("RetriedFilings/"+t+"/relayr", "duplicates/100filings"); ok {
		var against []string
		if dir, ok := r.get("RetriedFilings/"+t+"/direct", "duplicates/100filings"); ok {
			a := count(dir) + " direct create"
			if t == "Plane" {
				a += " with external_id (Plane's 409)"
			}
			against = append(against, a)
		}
		if dir, ok := r.get("RetriedFilings/"+t+"/direct-no-external-id", "duplicates/100filings"); ok {
			against = append(against, count(dir)+" plain POST without external_id")
		}
		if len(against) == 0 {
			against = []string{"–"}
		}
		rows = append(rows, row{"Duplicates per 100 keys each sent twice, " + t, count(rel), strings.Join(against, "; "), "–"})
	}
	if rel, ok := r.get("APIFilings/"+t+"/relayr", "requests/filing"); ok {
		against, rat := "–", "–"
		if dir, ok := r.get("APIFilings/"+t+"/direct", "requests/filing"); ok {
			against, rat = num(dir)+" direct", ratio(rel, dir)
		}
		rows = append(rows, row{"Tracker requests per filing, " + t, num(rel), against, rat})
	}
	plain("APIFilings/"+t+"/relayr", "points/filing", "Points of the tracker's hourly limit per filing, "+t)
	plain("TrackerRequests/"+t+"/change", "points/change", "Points of the tracker's hourly limit per change detected, "+t)
	plain("TrackerRequests/"+t+"/change", "requests/change", "Tracker requests per change detected, "+t)
	if t == "GitHub" {
		// GitHub's filings run on virtual time, within its content limits
		// (adapters/github): at real time they would measure the limit.
		plain("SustainedFilings", "requests/filing", "Tracker requests per filing, GitHub (a new key a second, virtual time)")
		plain("SustainedFilings", "points/filing", "Points of the tracker's hourly limit per filing, GitHub")
	}
	if v, ok := r.get("SustainedFilings", "filings/hour"); ok && t == "GitHub" {
		refused, _ := r.get("SustainedFilings", "github-refusals")
		rows = append(rows, row{"Filings an hour one token sustains, a new key every second for 3 h (virtual time), GitHub", fmt.Sprintf("%s, %s answers over a limit", num(v), count(refused)), "GitHub's 500 content creations an hour, 80 a minute", "–"})
	}
	if v, ok := r.get("TrackerRequests/"+t+"/burst", "requests/poll"); ok {
		rows = append(rows, row{"Tracker requests per poll after comments on 10 items, " + t, num(v), "11 reading each item's comments", "–"})
	}
	plain("TrackerRequests/"+t+"/idle-poll", "requests/poll", "Tracker requests per idle poll, "+t)
	rows = append(rows, r.stalledRows(t)...)
	if v, ok := r.get("TrackerRequests/"+t+"/idle-poll", "points/poll"); ok {
		rows = append(rows, row{"Points of the tracker's hourly limit per idle poll (a 304 costs none), " + t, num(v), "1 point an unconditional poll", "–"})
	}
	minute, hasMinute := r.get("ChangeToFeed/"+t+"/polling", "ms/change@60s")
	against := func(v float64) (string, string) {
		if !hasMinute {
			return "–", "–"
		}
		return num(minute) + " ms polling every minute (modelled)", ratio(v, minute)
	}
	if v, ok := r.get("ChangeToFeed/"+t+"/webhook", "ms/change"); ok {
		a, rat := against(v)
		fig, val := "Change to feed with a webhook nudge, "+t, num(v)+" ms"
		if p, ok := r.get("ChangeToFeed/"+t+"/webhook", "p50-ms/change"); ok {
			fig, val = "Change to feed with a webhook nudge after a quiet spell, median (mean), "+t, num(p)+" ms ("+num(v)+" ms)"
			a, rat = against(p)
		}
		rows = append(rows, row{fig, val, a, rat})
	}
	if v, ok := r.get("ChangeToFeed/"+t+"/polling", "ms/change@30s"); ok {
		a, rat := against(v)
		fig := "Change to feed polling every 30 s, no webhook, " + t
		if m, ok := r.get("ChangeToFeed/"+t+"/polling", "ms/change@200ms"); ok {
			fig += fmt.Sprintf(" (modelled: %s ms measured at 200 ms)", num(m))
		}
		rows = append(rows, row{fig, num(v) + " ms", a, rat})
	}
	if v, ok := r.get("RetriedFilings/"+t+"/relayr", "requests/retry"); ok {
		rows = append(rows, row{"Tracker requests per retried filing of a recorded key, " + t, num(v), "1 read (ADR-0033: a recorded item is read before it is returned)", "–"})
	}
	if v, ok := r.get("DeletionToFeed/"+t+"/webhook", "ms/deletion"); ok {
		fig, val := "Deletion to feed with a webhook, "+t, num(v)+" ms"
		if p, ok := r.get("DeletionToFeed/"+t+"/webhook", "p50-ms/deletion"); ok {
			fig, val = "Deletion to feed with a webhook after a quiet spell, median (mean), "+t, num(p)+" ms ("+num(v)+" ms)"
		}
		rows = append(rows, row{fig, val, "the next daily sweep without one", "–"})
	}
	if t == "Plane" {
		if v, ok := r.get("Figure/plane.deletion_to_feed.median", "s"); ok {
			fig := "Deletion to feed, Plane (no webhook: a sweep each minute on an idle budget; virtual time)"
			val := num(v) + " s"
			if w, ok := r.get("Figure/plane.deletion_to_feed.worst", "s"); ok {
				val += " (worst " + num(w) + " s)"
			}
			rows = append(rows, row{fig, val, "up to 24 h (the daily sweep)", "–"})
		}
	}
	return rows
}

// budgetRows are the budget's figures, from virtual-time tests (FIGURE
// lines): the floor's worst gap under writes at twice the budget, how 500
// bindings' polls spread, and the 429s a start draws from Plane's limit.
// stallModes name BenchmarkStalledTracker's fault modes in the table.
var stallModes = []struct{ mode, what string }{
	{"none", "no faults"},
	{"late", "30% of creates answered 12 s late (504)"},
	{"lost", "30% of creates' answers lost"},
}

// stalledRows are a tracker's rows of the slow tracker: 50 keys each sent
// by two callers at once with 15 s timeouts, per fault mode, relayr beside
// the tracker's own create.
func (r results) stalledRows(t string) []row {
	var rows []row
	for _, m := range stallModes {
		name := "StalledTracker/" + t + "/" + m.mode
		outcome := func(side string) (string, bool) {
			wall, ok := r.get(name+"/"+side, "s/run")
			if !ok {
				return "", false
			}
			failed, _ := r.get(name+"/"+side, "failed-callers")
			unfiled, _ := r.get(name+"/"+side, "unfiled-keys")
			dups, _ := r.get(name+"/"+side, "duplicates")
			reqs, _ := r.get(name+"/"+side, "requests/key")
			return fmt.Sprintf("%s s; %s failed callers, %s unfiled, %s duplicates; %s requests a key",
				num(wall), count(failed), count(unfiled), count(dups), num(reqs)), true
		}
		rel, ok := outcome("relayr")
		if !ok {
			continue
		}
		against := "–"
		if dir, ok := outcome("direct"); ok {
			against = dir + " (direct creates)"
		}
		rows = append(rows, row{"A slow tracker, 50 keys each sent by two callers with 15 s timeouts, " + m.what + ", " + t, rel, against, "–"})
	}
	return rows
}

func (r results) budgetRows() []row {
	var rows []row
	if v, ok := r.get("Figure/budget.worst_poll_gap", "s"); ok {
		rows = append(rows, row{"Worst gap between two polls of a binding, 10 bindings, writes at twice the budget for 10 min (virtual time)",
			num(v) + " s", "30 s interval (polls that take only what writes leave: none)", "–"})
	}
	for _, c := range []struct{ unit, words string }{
		{"budget2000", "budget 2,000 a minute (every 30 s)"},
		{"budget40", "budget 40 (stretched to one poll each 14 min)"},
	} {
		if v, ok := r.get("Figure/budget.polls500.most_per_second."+c.unit, "polls"); ok {
			rows = append(rows, row{"Most polls in any one second, 500 bindings on one key, " + c.words, count(v), "500 (every binding at once, as before phases)", "–"})
		}
	}
	if v, ok := r.get("Figure/plane.start50.throttled", "429s"); ok {
		rows = append(rows, row{"429s from Plane's 60 a minute, 50 projects under one key, 15 min from the start (virtual time)", count(v), "–", "–"})
	}
	return rows
}

// replicaRows are the figures of replicas and of a replica's many
// bindings (ADR-1002): what a binding costs at 1,000 bindings on one
// tracker server, with the connections the server saw open at once.
func (r results) replicaRows() []row {
	var rows []row
	if hi, ok := r.get("Figure/replicas.lease_spread_start_max", "bindings"); ok {
		v := count(hi)
		if lo, ok := r.get("Figure/replicas.lease_spread_start_min", "bindings"); ok {
			v += " / " + count(lo)
		}
		rows = append(rows, row{"Leases held (most / fewest), three replicas started 0.31 s apart, 300 bindings, two lease periods on (PostgreSQL; virtual time)",
			v, "300 / 0 before: the first replica took every binding and kept it", "–"})
	}
	if v, ok := r.get("Figure/replicas.takeover", "s"); ok {
		rows = append(rows, row{"Every binding held again after a SIGKILL of the busiest, survivors within 10 (PostgreSQL, lease 30 s; virtual time)",
			num(v) + " s", "29.2 s before, every lease to one survivor", "–"})
	}
	if v, ok := r.get("Figure/replicas.requests_per_minute_worst", "requests"); ok {
		rows = append(rows, row{"Most requests of one key in any minute, three replicas through start, kill and restart (PostgreSQL; virtual time)",
			count(v), "budget 40 (120 a minute before: 40 per replica)", ratio(v, 40)})
	}
	for _, store := range []string{"Postgres", "PostgresRLS"} {
		if p50, ok := r.get("SecondReplicasWait/"+store, "p50-ms"); ok {
			v := num(p50) + " ms"
			if p99, ok := r.get("SecondReplicasWait/"+store, "p99-ms"); ok {
				v += " (p99 " + num(p99) + " ms)"
			}
			rows = append(rows, row{"A caller on another replica than the holder's, answered past the holder's record, median, " + store,
				v, "the write bound's 20 s before (tracker_claimed, Retry-After 20)", "–"})
		}
	}
	for _, store := range []string{"Postgres", "PostgresRLS"} {
		if v, ok := r.get("Beat/"+store, "ms/beat"); ok {
			rows = append(rows, row{"Ledger cost of sharing leases and budget, " + store + ": one heartbeat a replica every 10 s, none per tracker request",
				num(v) + " ms/beat", "–", "–"})
		}
	}
	if g, ok := r.get("Bindings1000", "goroutines/binding"); ok {
		v := count(g) + " goroutines"
		if by, ok := r.get("Bindings1000", "bytes/binding"); ok {
			v += ", " + num(by) + " B heap"
		}
		against := "one transport per binding: 500 bindings held 500 connections and 1,510 goroutines"
		if c, ok := r.get("Bindings1000", "conns"); ok {
			v += "; " + count(c) + " connections to the server"
		}
		rows = append(rows, row{"Per binding, 1,000 bindings on one tracker server (one pool, tracker_conns 16)", v, against, "–"})
	}
	return rows
}

type ledgerKey struct {
	store string
	p     int
}

func (r results) ledgerRows() []row {
	var keys []ledgerKey
	for name := range r {
		m := ledger.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		if _, ok := r.get(name, "filings/s"); !ok {
			continue
		}
		p, _ := strconv.Atoi(m[2])
		keys = append(keys, ledgerKey{m[1], p})
	}
	order := byOrder([]string{"Memory", "SQLite", "Postgres", "PostgresRLS"})
	slices.SortFunc(keys, func(a, b ledgerKey) int {
		if c := order(a.store, b.store); c != 0 {
			return c
		}
		return a.p - b.p
	})
	var rows []row
	for _, k := range keys {
		filing := fmt.Sprintf("Filing/%s/p%d", k.store, k.p)
		f, _ := r.get(filing, "filings/s")
		fig := fmt.Sprintf("Ledger filings/s (claim and record), %s, %d at a time", k.store, k.p)
		// The floor each run measured beside its filings
		// (ledgertest.FilingsBesideFloor), and each run's ratio to it.
		floor, okFloor := r.get(filing, "floor/s")
		rat, okRatio := r.get(filing, "x-floor")
		if !okFloor || !okRatio {
			rows = append(rows, row{fig, num(f), "–", "–"})
			continue
		}
		rows = append(rows, row{fig, num(f), num(floor) + " floor (two bare commits)", strconv.FormatFloat(rat, 'f', 2, 64)})
	}
	return rows
}

// natsRows are the JetStream figures (BenchmarkNATS, BenchmarkNATSLatency):
// events a second from the log into JetStream against a plain publish of
// the same messages, with one subscription and eight, and the time from
// the append to the broker's ack.
func (r results) natsRows() []row {
	var rows []row
	for _, subs := range []struct{ name, words string }{{"one", "one subscription"}, {"eight", "eight subscriptions"}} {
		rel, ok := r.get("NATS/"+subs.name+"/relayr", "events/s")
		if !ok {
			continue
		}
		against, rat := "–", "–"
		if dir, ok := r.get("NATS/"+subs.name+"/direct", "events/s"); ok {
			against, rat = num(dir)+" plain JetStream publishes/s, each acked", ratio(rel, dir)
		}
		rows = append(rows, row{"Events/s from the log into NATS JetStream, " + subs.words, num(rel), against, rat})
	}
	if p50, ok := r.get("NATSLatency", "ms-p50"); ok {
		v := num(p50) + " ms"
		if p99, ok := r.get("NATSLatency", "ms-p99"); ok {
			v += " (p99 " + num(p99) + " ms)"
		}
		rows = append(rows, row{"Append to JetStream ack, median", v, "–", "–"})
	}
	return rows
}

// jiraRows are Jira's driver figures over its emulation
// (adapters/jira's BenchmarkJiraRequests): what a filing, a change, a state
// change and an idle poll cost, and a rule's burst on one issue.
func (r results) jiraRows() []row {
	var rows []row
	for _, m := range []struct{ metric, label string }{
		{"requests/filing", "Jira's driver alone: requests per filing (a create, a read)"},
		{"requests/change", "Jira's driver alone: requests per edit of a field (a read, a PUT, a read)"},
		{"requests/state-change", "Jira's driver alone: requests per change of state (with the transitions read and taken)"},
		{"requests/idle-poll", "Jira's driver alone: requests per idle poll"},
	} {
		if v, ok := r.get("JiraRequests", m.metric); ok {
			rows = append(rows, row{m.label, num(v), "–", "–"})
		}
	}
	if v, ok := r.get("JiraRequests", "burst-429s"); ok {
		secs, _ := r.get("JiraRequests", "burst-s")
		rows = append(rows, row{"A rule's 60 edits of one issue (120 writes), Jira", fmt.Sprintf("%s answers over a limit, paced over %s s", count(v), num(secs)), "Jira's 20 writes an issue in 2 s, 100 in 30 s", "–"})
	}
	return rows
}

// gitlabRows are GitLab's driver figures over its emulation on
// GitLab.com's limits (adapters/gitlab's BenchmarkGitLabRequests, on
// virtual time): what a filing, a change, an idle poll and a poll after
// comments on 10 issues cost, a burst of 300 filings paced within the
// 200 issues a minute, and a burst of 150 comments within the 60 notes a
// minute.
func (r results) gitlabRows() []row {
	var rows []row
	for _, m := range []struct{ metric, label string }{
		{"requests/filing", "GitLab's driver alone: requests per filing (one POST)"},
		{"requests/change", "GitLab's driver alone: requests per poll that reads one change"},
		{"requests/idle-poll", "GitLab's driver alone: requests per idle poll"},
		{"requests/poll-10-commented", "GitLab's driver alone: requests per poll after comments on 10 issues (each issue's notes)"},
	} {
		if v, ok := r.get("GitLabRequests", m.metric); ok {
			rows = append(rows, row{m.label, num(v), "–", "–"})
		}
	}
	if v, ok := r.get("GitLabRequests", "burst-429s"); ok {
		secs, _ := r.get("GitLabRequests", "burst-s")
		rows = append(rows, row{"A burst of 300 filings, GitLab.com's limits (virtual time)", fmt.Sprintf("%s answers over a limit, paced over %s s", count(v), num(secs)), "GitLab.com's 200 issues a minute a project and user", "–"})
	}
	if v, ok := r.get("GitLabRequests", "comment-burst-429s"); ok {
		secs, _ := r.get("GitLabRequests", "comment-burst-s")
		rows = append(rows, row{"A burst of 150 comments, GitLab.com's limits (virtual time)", fmt.Sprintf("%s answers over a limit, paced over %s s", count(v), num(secs)), "GitLab.com's 60 notes a minute a user", "–"})
	}
	return rows
}

// linearRows are Linear's driver figures over its emulation
// (adapters/linear's BenchmarkLinearRequests, on virtual time), in both of
// Linear's units, requests and complexity points: what a filing, a poll
// that reads one change and an idle poll cost, and the filings an hour one
// key sustains on Linear's documented limits, a poll every 10 s beside
// them.
func (r results) linearRows() []row {
	var rows []row
	for _, m := range []struct{ metric, label string }{
		{"requests/filing", "Linear's driver alone: requests per filing (one request: the issue and its key's attachment)"},
		{"points/filing", "Linear's driver alone: complexity points per filing"},
		{"requests/change", "Linear's driver alone: requests per poll that reads one change"},
		{"points/change", "Linear's driver alone: complexity points per poll that reads one change"},
		{"requests/idle-poll", "Linear's driver alone: requests per idle poll"},
		{"points/idle-poll", "Linear's driver alone: complexity points per idle poll"},
	} {
		if v, ok := r.get("LinearRequests", m.metric); ok {
			rows = append(rows, row{m.label, num(v), "–", "–"})
		}
	}
	if v, ok := r.get("LinearRequests", "filings/hour"); ok {
		rows = append(rows, row{"Filings an hour one key sustains, a poll every 10 s beside them, Linear (virtual time)", num(v), "Linear's 2,500 requests and 250,000 complexity points an hour a user", "–"})
	}
	return rows
}

func table(r results) string {
	var rows []row
	for _, t := range r.trackers() {
		rows = append(rows, r.trackerRows(t)...)
	}
	rows = append(rows, r.jiraRows()...)
	rows = append(rows, r.gitlabRows()...)
	rows = append(rows, r.linearRows()...)
	rows = append(rows, r.budgetRows()...)
	rows = append(rows, r.replicaRows()...)
	rows = append(rows, r.natsRows()...)
	rows = append(rows, r.ledgerRows()...)
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("| Figure | relayr | Against | Ratio |\n|---|---:|---:|---:|\n")
	for _, w := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", w.figure, w.relayr, w.against, w.ratio)
	}
	return b.String()
}

func main() {
	res, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	out := table(res)
	if out == "" {
		fmt.Fprintln(os.Stderr, "benchtable: no figure or ledger benchmark on stdin")
		os.Exit(1)
	}
	fmt.Print(out)
}
