package app

import (
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/relayr-go/relayr/core/metrics"
)

// promLabels are the labels every relayr counter carries in Prometheus; a
// count that names fewer leaves the rest empty. name is a subscription's,
// reason a delivery failure's.
var promLabels = []string{"tenant", "workspace", "tracker", "name", "reason"}

// Prometheus binds core's counters to a Prometheus registry: a counter
// named relayr.trackers.loops is relayr_trackers_loops_total.
type Prometheus struct {
	reg *prometheus.Registry
	mu  sync.Mutex
	vec map[string]*prometheus.CounterVec
}

var _ metrics.Metrics = (*Prometheus)(nil)

// NewPrometheus registers core's counters with reg as they are first counted,
// and the ADRs' five at once, so they read 0 before anything happened.
func NewPrometheus(reg *prometheus.Registry) *Prometheus {
	p := &Prometheus{reg: reg, vec: map[string]*prometheus.CounterVec{}}
	for _, n := range []string{metrics.Unnudged, metrics.NudgesRefused, metrics.DeadLetters, metrics.Loops, metrics.FollowersStopped} {
		p.counter(n)
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
