package tracker_test

import (
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
)

func TestMissesConcludeOnlyALagApart(t *testing.T) {
	var m tracker.Misses
	src := tracker.Source{Tenant: "t", Workspace: "w"}
	t0 := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	if w := m.Wait(src, []string{"a"}, t0, 5*time.Second); w != 5*time.Second {
		t.Fatalf("a first miss waits %s, want the lag", w)
	}
	if w := m.Wait(src, []string{"a", "b"}, t0.Add(3*time.Second), 5*time.Second); w != 5*time.Second {
		t.Fatalf("a new key beside an old one waits %s, want the new one's lag", w)
	}
	if w := m.Wait(src, []string{"a"}, t0.Add(5*time.Second), 5*time.Second); w > 0 {
		t.Fatalf("a miss a lag after the first waits %s", w)
	}
	if w := m.Wait(tracker.Source{Tenant: "t", Workspace: "other"}, []string{"a"}, t0.Add(5*time.Second), 5*time.Second); w != 5*time.Second {
		t.Fatalf("another source's miss waits %s, want its own lag", w)
	}
	m.Forget(src, []string{"a"})
	if w := m.Wait(src, []string{"a"}, t0.Add(6*time.Second), 5*time.Second); w != 5*time.Second {
		t.Fatalf("a forgotten key waits %s, want the lag anew", w)
	}
}
