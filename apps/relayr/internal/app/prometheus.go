package app

import (
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/relayr-go/relayr/core/budget"
	"github.com/relayr-go/relayr/core/follow"
	"github.com/relayr-go/relayr/core/metrics"
)

// promLabels are the labels every relayr counter carries in Prometheus; a
// count that names fewer leaves the rest empty. name is a subscription's,
// reason a delivery failure's, key a tenant's tracker key.
var promLabels = []string{"tenant", "workspace", "tracker", "name", "reason", "key"}

// Prometheus binds core's counters to a Prometheus registry: a counter
// named relayr.trackers.loops is relayr_trackers_loops_total.
type Prometheus struct {
	reg *prometheus.Registry
	mu  sync.Mutex
	vec map[string]*prometheus.CounterVec
}

var _ metrics.Metrics = (*Prometheus)(nil)

// NewPrometheus registers core's counters with reg as they are first counted,
// and the ADRs' five, the writes and the reads at once, so they read 0 before anything
// happened.
func NewPrometheus(reg *prometheus.Registry) *Prometheus {
	p := &Prometheus{reg: reg, vec: map[string]*prometheus.CounterVec{}}
	for _, n := range []string{metrics.Unnudged, metrics.NudgesRefused, metrics.DeadLetters, metrics.Loops, metrics.FollowersStopped, metrics.Writes, metrics.Reads} {
		// A series of no labels, so that the counter is scraped (and an
		// alert on it has a series) before the first count.
		p.counter(n).WithLabelValues(make([]string, len(promLabels))...)
	}
	return p
}

func (p *Prometheus) counter(name string) *prometheus.CounterVec {
	p.mu.Lock()
	defer p.mu.Unlock()
	if v, ok := p.vec[name]; ok {
		return v
	}
	v := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: strings.NewReplacer(".", "_", "-", "_").Replace(name) + "_total",
		Help: "relayr's " + name + " counter.",
	}, promLabels)
	p.reg.MustRegister(v)
	p.vec[name] = v
	return v
}

// Add implements metrics.Metrics.
func (p *Prometheus) Add(name string, n float64, l metrics.Labels) {
	values := make([]string, len(promLabels))
	for i, k := range promLabels {
		values[i] = l[k]
	}
	p.counter(name).WithLabelValues(values...).Add(n)
}

// gauges reads what the counters cannot say at each scrape: how long ago
// each binding this replica follows completed a poll, the interval its
// polls come at, and each key's budget this minute. It reads memory only,
// never the ledger or a tracker, so a scrape stays cheap.
type gauges struct {
	fs  *follow.Followers
	bud *budget.Budget
}

var (
	binLabels = []string{"tenant", "workspace", "tracker"}
	pollAge   = prometheus.NewDesc("relayr_follower_poll_age_seconds",
		"Seconds since the binding's follower last completed a poll (since it took its lease, before its first).", binLabels, nil)
	pollInterval = prometheus.NewDesc("relayr_follower_interval_seconds",
		"How often the binding polls on its floor: the poll interval, stretched where its key has more bindings than its budget can poll.", binLabels, nil)
	pollLate = prometheus.NewDesc("relayr_follower_late",
		"1 when the binding's follower completed no poll in three intervals.", binLabels, nil)
	budgetSpent = prometheus.NewDesc("relayr_budget_spent",
		"Requests a tenant's tracker key sent in the last minute, writes and reads.", []string{"key"}, nil)
	budgetLeft = prometheus.NewDesc("relayr_budget_left",
		"Requests the key's budget leaves this minute.", []string{"key"}, nil)
	budgetLimit = prometheus.NewDesc("relayr_budget_limit",
		"The key's budget: requests a minute, across every replica.", []string{"key"}, nil)
	budgetShare = prometheus.NewDesc("relayr_budget_replica_limit",
		"What this replica may spend of the key a minute: the limit over the live replicas.", []string{"key"}, nil)
	replicas = prometheus.NewDesc("relayr_replicas",
		"Live replicas, by their heartbeats in the ledger, this one included.", nil, nil)
	leasesHeld = prometheus.NewDesc("relayr_leases_held",
		"Tracker followers' leases this replica holds.", nil, nil)
	leasesFair = prometheus.NewDesc("relayr_leases_fair",
		"This replica's fair share of the bindings: ceil(bindings / replicas).", nil, nil)
)

// Describe implements prometheus.Collector.
func (g *gauges) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{pollAge, pollInterval, pollLate, budgetSpent, budgetLeft, budgetLimit, budgetShare, replicas, leasesHeld, leasesFair} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (g *gauges) Collect(ch chan<- prometheus.Metric) {
	for _, b := range g.fs.Local() {
		l := []string{b.Tenant, b.Workspace, b.Tracker}
		late := 0.0
		if b.Late {
			late = 1
		}
		ch <- prometheus.MustNewConstMetric(pollAge, prometheus.GaugeValue, b.LagSeconds, l...)
		ch <- prometheus.MustNewConstMetric(pollInterval, prometheus.GaugeValue, b.IntervalSeconds, l...)
		ch <- prometheus.MustNewConstMetric(pollLate, prometheus.GaugeValue, late, l...)
	}
	for _, k := range g.bud.Status() {
		ch <- prometheus.MustNewConstMetric(budgetSpent, prometheus.GaugeValue, float64(k.Spent), k.Key)
		ch <- prometheus.MustNewConstMetric(budgetLeft, prometheus.GaugeValue, float64(k.Left), k.Key)
		ch <- prometheus.MustNewConstMetric(budgetLimit, prometheus.GaugeValue, float64(k.Limit), k.Key)
		ch <- prometheus.MustNewConstMetric(budgetShare, prometheus.GaugeValue, float64(k.ReplicaLimit), k.Key)
	}
	sh := g.fs.Share()
	ch <- prometheus.MustNewConstMetric(replicas, prometheus.GaugeValue, float64(len(sh.Replicas)))
	ch <- prometheus.MustNewConstMetric(leasesHeld, prometheus.GaugeValue, float64(sh.Held))
	ch <- prometheus.MustNewConstMetric(leasesFair, prometheus.GaugeValue, float64(sh.Fair))
}
