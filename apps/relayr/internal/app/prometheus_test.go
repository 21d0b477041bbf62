package app

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/relayr-go/relayr/core/binding"
	"github.com/relayr-go/relayr/core/budget"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/follow"
	"github.com/relayr-go/relayr/core/ledger/memledger"
	"github.com/relayr-go/relayr/core/tracker"
)

func TestTheGaugesShowTheReplicasShareOfLeasesAndBudget(t *testing.T) {
	bud := budget.New(clock.System{}, 40)
	bud.Spend("acme/plane", 1)
	bud.SetReplicas(2)
	fs := follow.New(follow.Config{
		Ledger: memledger.New(), Connections: binding.NewConnections(clock.System{}, tracker.StaticCredentials{}),
		Budget: bud, Holder: "replica-1",
	})
	reg := prometheus.NewRegistry()
	reg.MustRegister(&gauges{fs: fs, bud: bud})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			got[mf.GetName()] = m.GetGauge().GetValue()
		}
	}
	for name, want := range map[string]float64{
		"relayr_budget_limit": 40, "relayr_budget_replica_limit": 20, "relayr_budget_spent": 1,
		"relayr_replicas": 1, "relayr_leases_held": 0, "relayr_leases_fair": 0,
	} {
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("%s = %v (%v), want %v", name, v, ok, want)
		}
	}
}

// TestTheCountersAnAlertWatchesAreScrapedBeforeTheFirstCount: ADR-0036's
// and ADR-0015's counters and the tracker writes read 0 on a fresh
// registry, so an alert on them has a series to watch.
func TestTheCountersAnAlertWatchesAreScrapedBeforeTheFirstCount(t *testing.T) {
	reg := prometheus.NewRegistry()
	NewPrometheus(reg)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			got[f.GetName()] += m.GetCounter().GetValue()
		}
	}
	for _, name := range []string{"relayr_trackers_unnudged_total", "relayr_trackers_nudges_refused_total", "relayr_trackers_dead_letters_total",
		"relayr_trackers_loops_total", "relayr_followers_stopped_total", "relayr_trackers_writes_total", "relayr_trackers_reads_total"} {
		if v, ok := got[name]; !ok || v != 0 {
			t.Errorf("%s: %v (scraped: %v), want a series at 0", name, v, ok)
		}
	}
}
