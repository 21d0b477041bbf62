package jira_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/jira"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/jiraemu"
)

// BenchmarkJiraRequests is what relayr's use of Jira costs, counted by the
// emulation: the requests of a filing, of a change to one field, of a
// change of state (a transition), of a poll that finds nothing changed,
// and a rule's burst of 60 edits (a retitle and a state change each, 120
// writes) on one issue: Jira's answers over a limit (goal 0: the driver
// paces the burst within Jira's per-issue windows) and the virtual
// seconds the burst took (Jira's 100 writes in 30 s make it at least 30).
func BenchmarkJiraRequests(b *testing.B) {
	var filing, change, state, idle, limited, burst float64
	for b.Loop() {
		em := newEmulated(b, jiraemu.Options{}, jira.Config{})
		d, err := em.conn.Driver(context.Background(), tracker.Credentials{Token: em.token}, source)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		em.e.ResetCounts()
		it, err := d.Create(ctx, "k", tracker.Draft{Title: "build failed", Labels: []string{"ci"}})
		if err != nil {
			b.Fatal(err)
		}
		filing += float64(em.e.TotalRequests())

		em.e.ResetCounts()
		title := "build failed twice"
		if _, err := d.Update(ctx, it.Ref.ID, tracker.Patch{Title: &title}); err != nil {
			b.Fatal(err)
		}
		change += float64(em.e.TotalRequests())

		em.e.ResetCounts()
		started := tracker.Started
		if _, err := d.Update(ctx, it.Ref.ID, tracker.Patch{State: &started}); err != nil {
			b.Fatal(err)
		}
		state += float64(em.e.TotalRequests())

		em.clock.Advance(time.Hour)
		em.e.ResetCounts()
		if _, err := d.Items(ctx, tracker.Query{Since: em.clock.Now().Add(-2 * time.Minute)}); err != nil {
			b.Fatal(err)
		}
		idle += float64(em.e.TotalRequests())

		start := em.clock.Now()
		states := []tracker.State{tracker.Todo, tracker.Started}
		for i := range 60 {
			t, s := fmt.Sprintf("edit %d", i), states[i%2]
			if _, err := d.Update(ctx, it.Ref.ID, tracker.Patch{Title: &t, State: &s}); err != nil {
				b.Fatalf("edit %d: %v", i, err)
			}
		}
		burst += em.clock.Now().Sub(start).Seconds()
		limited += float64(em.e.Limited())
	}
	n := float64(b.N)
	b.ReportMetric(filing/n, "requests/filing")
	b.ReportMetric(change/n, "requests/change")
	b.ReportMetric(state/n, "requests/state-change")
	b.ReportMetric(idle/n, "requests/idle-poll")
	b.ReportMetric(limited/n, "burst-429s")
	b.ReportMetric(burst/n, "burst-s")
}
