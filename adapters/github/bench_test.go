package github_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/github"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
	"github.com/relayr-go/relayr/fixtures/githubemu"
)

// BenchmarkSustainedFilings is a CI fleet filing a new key every second,
// as fast as relayr lets it, through the write path, for three virtual
// hours against GitHub's documented limits (5,000 requests an hour, 900
// points and 80 content creations a minute, 500 an hour) at relayr's
// default budget: the filings an hour one token sustains once the first
// hour is past, and the answers over a limit GitHub sent (goal 0: relayr
// holds a filing, unsent, before GitHub would refuse it), and what each
// filing cost in requests and in points of GitHub's hour.
func BenchmarkSustainedFilings(b *testing.B) {
	var perHour, refused, held, requests, points, filings float64
	for b.Loop() {
		r := newRun(b, githubemu.Options{}, nil)
		start := r.clock.Now()
		filed := map[int]int{} // by hour
		for i := 0; r.clock.Now().Sub(start) < 3*time.Hour; i++ {
			before := r.em.e.Spent(r.em.token)
			_, counts, err := r.ensure(fmt.Sprintf("k%05d", i))
			switch {
			case err == nil:
				filed[int(r.clock.Now().Sub(start)/time.Hour)]++
				filings++
				for _, n := range counts {
					requests += float64(n)
				}
				points += float64(r.em.e.Spent(r.em.token) - before)
			case errors.Is(err, tracker.ErrRateLimited) || writes.CodeOf(err).Retryable():
				held++
			default:
				b.Fatalf("filing %d: %v", i, err)
			}
			r.clock.Advance(time.Second)
		}
		perHour += float64(filed[1]+filed[2]) / 2
		refused += float64(r.em.e.Refused())
		if got := filed[1] + filed[2]; got > 2*github.CreatesPerHour {
			b.Fatalf("%d filed in two hours, past GitHub's %d an hour", got, github.CreatesPerHour)
		}
	}
	n := float64(b.N)
	b.ReportMetric(perHour/n, "filings/hour")
	b.ReportMetric(refused/n, "github-refusals")
	b.ReportMetric(held/n, "held/3h")
	// What a filing costs, the connection's first reads spread over all.
	b.ReportMetric(requests/filings, "requests/filing")
	b.ReportMetric(points/filings, "points/filing")
}
