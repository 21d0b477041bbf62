package follow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/coretest"
	"github.com/relayr-go/relayr/core/faketracker"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/ledger/memledger"
	"github.com/relayr-go/relayr/core/tracker"
)

// The cost of reading back, in requests to the tracker (ADR-0036's budget
// is counted in them): a poll of a project where nothing changed costs one
// request; a change costs at most its item's share of a page plus one
// request for its comments; seeding streams pages, so its memory stays
// flat however large the project.

// t0 is when benchProject's fake clock starts.
var t0 = time.Date(2026, 10, 17, 9, 0, 0, 0, time.UTC)

// benchFollower is one follower over a tracker and a store, its poll called
// directly, on clk.
func benchFollower(b *testing.B, tr tracker.Driver, l ledger.Ledger, clk clock.Clock) *follower {
	b.Helper()
	mem := memledger.New()
	wd := coretest.NewWorld(coretest.WorldOptions{Driver: tr, Clock: clk})
	// The daily sweep reads the whole project, a page a request, and is
	// measured apart (BenchmarkSeed reads the same way); here it is kept
	// out of the polls.
	fs := New(Config{Ledger: l, Log: mem, Connections: wd.Connections, Clock: clk, Logger: slog.New(slog.DiscardHandler), Holder: "bench",
		Options: Options{SweepEvery: math.MaxInt64, SweepMin: -1}})
	return newFollower(fs, wd.Binding)
}

func mustPoll(b *testing.B, f *follower) {
	b.Helper()
	if err := f.read(context.Background(), &pollRun{use: accessFloor}); err != nil {
		b.Fatal(err)
	}
}

// benchProject makes a fake project of n items, each changed gap after the
// one before, and seeds a follower on it.
//
// It and the poll benchmarks over it stay on a fake clock, not synctest: a
// benchmark has no *testing.T to open a bubble with (synctest.Test takes
// only a *testing.T), and in a bubble its own timing would read virtual
// time, which stands still while the code runs. Their loops let minutes
// pass between polls (the poll interval, the lookback), which real time
// cannot do in a benchmark.
func benchProject(b *testing.B, n int, gap time.Duration) (*faketracker.Tracker, *clock.Fake, *follower) {
	clk := clock.NewFake(t0)
	fake := faketracker.New(faketracker.LikePlane, faketracker.WithClock(clk))
	for i := range n {
		if _, err := fake.PersonCreate(tracker.Draft{Title: "item " + strconv.Itoa(i)}); err != nil {
			b.Fatal(err)
		}
		clk.Advance(gap)
	}
	f := benchFollower(b, fake, memledger.New(), clk)
	mustPoll(b, f) // the seeding
	clk.Advance(time.Hour)
	return fake, clk, f
}

// BenchmarkPollNothingChanged polls a project whose last change is long
// past. Each poll reads from two minutes before its cursor, so the items
// changed in the two minutes before the last change are read again at every
// poll: one page while they fit in one (spread), more after a burst of more
// than a page in those two minutes (burst), until the next change moves the
// cursor.
func BenchmarkPollNothingChanged(b *testing.B) {
	for _, c := range []struct {
		name string
		gap  time.Duration
		want float64
	}{{"spread", 10 * time.Minute, 1}, {"burst", time.Second, 3}} {
		b.Run(c.name, func(b *testing.B) {
			fake, clk, f := benchProject(b, 500, c.gap)
			// One poll first: items changed just before the seeding read
			// are read again once, until they settle.
			clk.Advance(DefaultPollEvery)
			mustPoll(b, f)
			fake.ResetCalls()
			polls := 0
			for b.Loop() {
				clk.Advance(DefaultPollEvery)
				mustPoll(b, f)
				polls++
			}
			perPoll := float64(fake.TotalCalls()) / float64(polls)
			if perPoll != c.want {
				b.Fatalf("a poll of a project where nothing changed made %v requests, want %v", perPoll, c.want)
			}
			b.ReportMetric(perPoll, "requests/poll")
		})
	}
}

func BenchmarkPollChanges(b *testing.B) {
	for _, changes := range []int{1, 10, 50} {
		b.Run(fmt.Sprintf("changes=%d", changes), func(b *testing.B) {
			fake, clk, f := benchProject(b, 500, 10*time.Minute)
			fake.ResetCalls()
			detected := 0
			next := 0
			for b.Loop() {
				for range changes {
					if err := fake.Retitle(context.Background(), fmt.Sprintf("it-%06d", 1+next%500), "changed "+strconv.Itoa(next)); err != nil {
						b.Fatal(err)
					}
					next++
				}
				// Far enough apart that the lookback holds only this
				// poll's changes.
				clk.Advance(DefaultLookback + DefaultPollEvery)
				mustPoll(b, f)
				detected += changes
			}
			// A change costs its share of the pages read plus one request
			// for its comments, and nothing else.
			pages, comments := fake.Calls(faketracker.MethodItems), fake.Calls(faketracker.MethodComments)
			if comments != detected || pages+comments != fake.TotalCalls() {
				b.Fatalf("%d changes cost %d pages, %d comment requests and %d others", detected, pages, comments, fake.TotalCalls()-pages-comments)
			}
			b.ReportMetric(float64(fake.TotalCalls())/float64(detected), "requests/change")
			b.ReportMetric(float64(pages)/float64(detected), "pages/change")
		})
	}
}

func BenchmarkSeed(b *testing.B) {
	for _, n := range []int{5_000, 50_000} {
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			var peak uint64
			var requests int
			for b.Loop() {
				// The project's n items changed a second apart, the
				// last a second ago.
				tr := &generated{n: n, start: time.Now().Add(-time.Duration(n) * time.Second)}
				f := benchFollower(b, tr, forgetful{memledger.New()}, clock.System{})
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				tr.base, tr.peak = ms.HeapAlloc, ms.HeapAlloc
				mustPoll(b, f)
				if c, _ := f.fs.ledger.Cursor(context.Background(), f.id); !c.Seeded {
					b.Fatal("the seeding did not finish")
				}
				peak = max(peak, tr.peak-tr.base)
				requests = tr.pages
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
			b.ReportMetric(float64(requests), "requests/seed")
		})
	}
}

// forgetful keeps no snapshot, so the seeding's measure is the follower's
// memory, not the store's.
type forgetful struct{ *memledger.Ledger }

func (forgetful) SaveSnapshots(context.Context, []ledger.SnapshotRow) error { return nil }

// generated is a project of n items made up as pages are asked for, so the
// tracker holds nothing either; it samples the heap at every page. Item i
// changed at start plus i seconds.
type generated struct {
	n              int
	start          time.Time
	pages          int
	base, peak     uint64
	tracker.Driver // every other method is unused
}

func (g *generated) Project() string { return "proj" }

func (g *generated) Capabilities() tracker.Capabilities {
	return tracker.Capabilities{Name: "generated", MaxPage: 100, TimePrecision: time.Nanosecond}
}

func (g *generated) Items(_ context.Context, q tracker.Query) (tracker.Page, error) {
	g.pages++
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	g.peak = max(g.peak, ms.HeapAlloc)
	start := 0
	if q.Page != "" {
		start, _ = strconv.Atoi(q.Page)
	} else if !q.Since.IsZero() {
		start = max(0, int(q.Since.Sub(g.start)/time.Second))
	}
	end := min(start+faketracker.PageSize, g.n)
	p := tracker.Page{Items: make([]tracker.Item, 0, end-start)}
	for i := start; i < end; i++ {
		id := fmt.Sprintf("it-%08d", i)
		p.Items = append(p.Items, tracker.Item{
			Ref:   tracker.ItemRef{ID: id, Number: int64(i), Name: "OPS-" + strconv.Itoa(i), Link: "https://example/" + id},
			Title: "item " + strconv.Itoa(i), State: tracker.Todo, Labels: []string{"bulk"},
			UpdatedAt: g.start.Add(time.Duration(i) * time.Second),
		})
	}
	if end < g.n {
		p.Next = strconv.Itoa(end)
	}
	return p, nil
}

func (g *generated) Comments(context.Context, string, time.Time) ([]tracker.Comment, error) {
	return nil, errors.New("a seeding asks for no comments")
}

func (g *generated) Nudge(string, http.Header, []byte) (tracker.Nudged, error) {
	return tracker.Nudged{}, tracker.ErrUnauthorized
}
