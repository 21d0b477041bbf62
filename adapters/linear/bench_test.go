package linear_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/linear"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/linearemu"
)

// spent answers the requests and complexity points fn spent.
func spent(em *emulated, fn func()) (float64, float64) {
	r0, c0 := em.e.Spent()
	fn()
	r1, c1 := em.e.Spent()
	return float64(r1 - r0), float64(c1 - c0)
}

// BenchmarkLinearRequests is what relayr's use of Linear costs in both of
// its units, counted by the emulation: requests and complexity points of
// a filing, of a poll that reads one change (a retitle), of a poll that
// finds nothing changed, and the filings an hour one key sustains on
// Linear's smaller documented limits (2,500 requests and 250,000 points an
// hour), a poll every 10 s beside them.
func BenchmarkLinearRequests(b *testing.B) {
	var fr, fc, cr, cc, ir, ic float64
	for b.Loop() {
		em := newEmulated(b, linearemu.Options{}, linear.Config{})
		d := em.driver(b)
		ctx := context.Background()
		first, err := d.Create(ctx, "k0", tracker.Draft{Title: "build failed", Labels: []string{"ci"}})
		if err != nil {
			b.Fatal(err)
		}
		id := first.Ref.ID
		// A filing once the label is known: the one request.
		r, c := spent(em, func() {
			if _, err := d.Create(ctx, "k1", tracker.Draft{Title: "build failed", Labels: []string{"ci"}}); err != nil {
				b.Fatal(err)
			}
		})
		fr, fc = fr+r, fc+c
		for i := 2; i < 5; i++ {
			if _, err := d.Create(ctx, fmt.Sprintf("k%d", i), tracker.Draft{Title: "build failed", Labels: []string{"ci"}}); err != nil {
				b.Fatal(err)
			}
		}
		em.clock.Advance(time.Hour)
		since := em.clock.Now().Add(-2 * time.Minute)
		r, c = spent(em, func() {
			if _, err := d.Items(ctx, tracker.Query{Since: since}); err != nil {
				b.Fatal(err)
			}
		})
		ir, ic = ir+r, ic+c
		if err := em.person.Retitle(id, "retitled by a person"); err != nil {
			b.Fatal(err)
		}
		em.clock.Advance(time.Second)
		r, c = spent(em, func() {
			pg, err := d.Items(ctx, tracker.Query{Since: since})
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := d.ProjectComments(ctx, since, 5); err != nil || len(pg.Items) != 1 {
				b.Fatalf("%d items, %v", len(pg.Items), err)
			}
		})
		cr, cc = cr+r, cc+c
	}
	n := float64(b.N)
	b.ReportMetric(fr/n, "requests/filing")
	b.ReportMetric(fc/n, "points/filing")
	b.ReportMetric(cr/n, "requests/change")
	b.ReportMetric(cc/n, "points/change")
	b.ReportMetric(ir/n, "requests/idle-poll")
	b.ReportMetric(ic/n, "points/idle-poll")
	// An hour of polls every 10 s takes 360 idle polls' worth; what is
	// left of each axis, and the writes' own share, files the rest.
	reqs := (2500 - 360*ir/n) / (fr / n)
	points := (250000 - 360*ic/n) / (fc / n)
	b.ReportMetric(min(reqs, points), "filings/hour")
}
