package metrics_test

import (
	"testing"

	"github.com/relayr-go/relayr/core/metrics"
)

func TestMemoryCountsTotalsAndLabelSets(t *testing.T) {
	m := metrics.NewMemory()
	m.Add(metrics.Loops, 1, metrics.Labels{"tenant": "a"})
	m.Add(metrics.Loops, 2, metrics.Labels{"tenant": "b"})
	m.Add(metrics.Loops, 1, nil)
	if got := m.Get(metrics.Loops); got != 4 {
		t.Fatalf("total %v, want 4", got)
	}
	if got := m.With(metrics.Loops, metrics.Labels{"tenant": "b"}); got != 2 {
		t.Fatalf("tenant b %v, want 2", got)
	}
}
