package figures

import (
	"context"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relayr-go/relayr/apps/relayr/internal/config"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/follow"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
)

// relayr's figures (the README's "The figures"), for each tracker side by
// side. Every
// metric a figure reports is named by its unit, which benchtable reads:
//
//	BenchmarkAPIFilings      filings/s, requests/filing, clients
//	BenchmarkRetriedFilings  duplicates/100filings, requests/retry
//	BenchmarkTrackerRequests requests/change, requests/poll
//	BenchmarkChangeToFeed    ms/change (webhook), ms/change@<interval> (polling)

// parallelism is b.SetParallelism's: the filing figures run this many
// clients per GOMAXPROCS, so requests wait on the service and the tracker
// rather than on the clients.
const parallelism = 8

// runID makes the keys of one benchmark run unlike any other's.
var runID atomic.Int64

func keyPrefix() string { return "fig-" + strconv.FormatInt(runID.Add(1), 10) + "-" }

// BenchmarkAPIFilings files fresh keys through relayr's write API (POST
// …/items/ensure, the claim, the create and the record in the SQLite
// ledger), and beside it creates the same items directly with the tracker's
// adapter, as a run does without relayr, against the same emulation: the
// filings a second each makes, and the tracker requests each filing costs.
func BenchmarkAPIFilings(b *testing.B) {
	for _, tr := range emulations {
		if tr.paced {
			continue
		}
		b.Run(tr.name+"/relayr", func(b *testing.B) {
			emu := tr.new(time.Now)
			s := startService(b, emu, serviceOptions{serve: true})
			prefix := keyPrefix()
			var n atomic.Int64
			emu.ResetRequests()
			before := spentOf(emu)
			b.SetParallelism(parallelism)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					key := prefix + strconv.FormatInt(n.Add(1), 10)
					how, err := s.ensure(b.Context(), key, prefix)
					if err != nil || how != writes.Created {
						b.Errorf("%s: %q %v", key, how, err)
						return
					}
				}
			})
			b.StopTimer()
			reportFilings(b, emu, before)
		})
		b.Run(tr.name+"/direct", func(b *testing.B) {
			emu := tr.new(time.Now)
			b.Cleanup(emu.Close)
			t := direct(b, emu)
			prefix := keyPrefix()
			var n atomic.Int64
			before := spentOf(emu)
			b.SetParallelism(parallelism)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					key := prefix + strconv.FormatInt(n.Add(1), 10)
					if _, err := t.Create(b.Context(), key, tracker.Draft{Title: title(key), Labels: []string{label}}); err != nil {
						b.Errorf("%s: %v", key, err)
						return
					}
				}
			})
			b.StopTimer()
			reportFilings(b, emu, before)
		})
	}
}

func reportFilings(b *testing.B, emu emulation, spentBefore int) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "filings/s")
	b.ReportMetric(float64(emu.Requests())/float64(b.N), "requests/filing")
	b.ReportMetric(float64(parallelism*runtime.GOMAXPROCS(0)), "clients")
	if spent, ok := emu.(limited); ok {
		b.ReportMetric(float64(spent.Spent()-spentBefore)/float64(b.N), "points/filing")
	}
}

// spentOf answers what the emulation's key has spent of its tracker's
// hourly limit so far (0 for a tracker that keeps none).
func spentOf(emu emulation) int {
	if spent, ok := emu.(limited); ok {
		return spent.Spent()
	}
	return 0
}

// BenchmarkRetriedFilings sends every key twice, one after the other, as a
// run retries a filing whose answer it lost, then counts the items the
// tracker holds per key. relayr answers the second attempt with the item
// the first filed; the adapter's create files again where the tracker
// doesn't refuse a key twice (Vikunja). Plane refuses a second item under
// an external_id with a 409, so a direct create that sends one is not
// duplicated; direct-no-external-id is the plain POST of a script that
// doesn't send one.
func BenchmarkRetriedFilings(b *testing.B) {
	for _, tr := range emulations {
		if tr.paced {
			continue
		}
		b.Run(tr.name+"/relayr", func(b *testing.B) {
			emu := tr.new(time.Now)
			s := startService(b, emu, serviceOptions{serve: true})
			prefix := keyPrefix()
			n, retried := 0, 0
			for b.Loop() {
				n++
				key := prefix + strconv.Itoa(n)
				for attempt, want := range []string{writes.Created, writes.Existing} {
					before := emu.Requests()
					how, err := s.ensure(b.Context(), key, prefix)
					if err != nil || how != want {
						b.Fatalf("%s, attempt %d: %q %v", key, attempt+1, how, err)
					}
					if attempt == 1 {
						retried += emu.Requests() - before
					}
				}
			}
			reportDuplicates(b, emu, n)
			// The retry of a recorded key is answered from the ledger.
			b.ReportMetric(float64(retried)/float64(n), "requests/retry")
		})
		b.Run(tr.name+"/direct", func(b *testing.B) {
			emu := tr.new(time.Now)
			b.Cleanup(emu.Close)
			t := direct(b, emu)
			prefix := keyPrefix()
			n := 0
			for b.Loop() {
				n++
				key := prefix + strconv.Itoa(n)
				for attempt := range 2 {
					_, err := t.Create(b.Context(), key, tracker.Draft{Title: title(key), Labels: []string{label}})
					if failed(attempt, err) {
						b.Fatalf("%s, attempt %d: %v", key, attempt+1, err)
					}
				}
			}
			reportDuplicates(b, emu, n)
		})
		if tr.name != "Plane" {
			continue
		}
		b.Run(tr.name+"/direct-no-external-id", func(b *testing.B) {
			emu := tr.new(time.Now)
			b.Cleanup(emu.Close)
			p := emu.(*plane)
			prefix := keyPrefix()
			n := 0
			for b.Loop() {
				n++
				key := prefix + strconv.Itoa(n)
				for attempt := range 2 {
					if err := p.postWithoutKey(b.Context(), title(key)); err != nil {
						b.Fatalf("%s, attempt %d: %v", key, attempt+1, err)
					}
				}
			}
			reportDuplicates(b, emu, n)
		})
	}
}

// reportDuplicates counts the items filed under each of the n keys: every
// item past a key's first is a duplicate.
func reportDuplicates(b *testing.B, emu emulation, n int) {
	var perTitle map[string]int
	if c, ok := emu.(counting); ok {
		perTitle = c.Titles()
	} else {
		var err error
		if perTitle, err = itemsPerTitle(context.Background(), direct(b, emu)); err != nil {
			b.Fatal(err)
		}
	}
	items := 0
	for _, c := range perTitle {
		items += c
	}
	if len(perTitle) != n {
		b.Fatalf("%d keys were filed, %d titles are in the tracker", n, len(perTitle))
	}
	b.ReportMetric(100*float64(items-n)/float64(n), "duplicates/100filings")
}

// projectItems is how many items the project of the reading figures holds,
// made by a person before relayr first reads it (and so seeded silently).
const projectItems = 200

// readingService is a service over a project of projectItems items a person
// made, ten minutes apart on the clock, whose follower read it once.
func readingService(b *testing.B, emu emulation, clk *clock.Fake, budget ...int) (*service, []string) {
	b.Helper()
	ids := make([]string, projectItems)
	for i := range ids {
		id, err := emu.PersonCreate("item " + strconv.Itoa(i))
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = id
		clk.Advance(10 * time.Minute)
	}
	// Sweeps ahead of their day (sweep_min) are measured apart, by the
	// deletion figures: here polls are what is counted, the daily sweep
	// among them.
	t := config.Timings{SweepMin: config.Duration{Duration: 24 * time.Hour}}
	if len(budget) > 0 {
		t.Budget = budget[0]
	}
	s := startService(b, emu, serviceOptions{clock: clk, timings: t})
	// The first read may take more than one poll: its further pages take
	// only what the budget's minute spares (a code forge's walk of windows
	// is more pages than the minute spares), and the next poll goes on.
	for range 60 {
		if err := s.app.Followers.PollOnce(b.Context(), tenant, workspace); err != nil {
			b.Fatal(err)
		}
		if cur, err := s.app.Store.Cursor(b.Context(), s.follower()); err == nil && cur.Seeded {
			clk.Advance(time.Hour)
			return s, ids
		}
		clk.Advance(time.Minute)
	}
	b.Fatal("the follower never read the project, in an hour of polls")
	return nil, nil
}

// BenchmarkTrackerRequests counts the tracker requests of reading a
// project back, on virtual time: the follower's poll (PollOnce, the poll
// its loop makes every 30 s) after each of a person's changes, alternately
// a new title and a comment, and polls of the project while nothing
// changes. The daily sweep is left on: it is part of what polling costs.
func BenchmarkTrackerRequests(b *testing.B) {
	for _, tr := range emulations {
		b.Run(tr.name+"/change", func(b *testing.B) {
			clk := clock.NewFake(time.Date(2026, 10, 17, 9, 0, 0, 0, time.UTC))
			emu := tr.new(clk.Now)
			s, ids := readingService(b, emu, clk)
			emu.ResetRequests()
			before := spentOf(emu)
			changes := 0
			for b.Loop() {
				id := ids[changes%len(ids)]
				var err error
				if changes%2 == 0 {
					err = emu.PersonRetitle(id, "changed "+strconv.Itoa(changes))
				} else {
					err = emu.PersonComment(id, "comment "+strconv.Itoa(changes))
				}
				if err != nil {
					b.Fatal(err)
				}
				changes++
				clk.Advance(follow.DefaultPollEvery)
				if err := s.app.Followers.PollOnce(b.Context(), tenant, workspace); err != nil {
					b.Fatal(err)
				}
			}
			requests := emu.Requests()
			evs, err := s.app.Log.Read(context.Background(), tenant, workspace, 0, changes+1)
			if err != nil {
				b.Fatal(err)
			}
			if len(evs) != changes {
				b.Fatalf("%d changes were made, %d events are in the feed", changes, len(evs))
			}
			b.ReportMetric(float64(requests)/float64(changes), "requests/change")
			if _, ok := emu.(limited); ok {
				b.ReportMetric(float64(spentOf(emu)-before)/float64(changes), "points/change")
			}
		})
		b.Run(tr.name+"/burst", func(b *testing.B) {
			// burstItems items commented between two polls: one request for
			// the changed items and one for their comments, on a tracker that
			// lists a project's comments in one read; one more an item on one
			// that doesn't.
			clk := clock.NewFake(time.Date(2026, 10, 17, 9, 0, 0, 0, time.UTC))
			emu := tr.new(clk.Now)
			// The items gather comments poll after poll, and a tracker that
			// pages an item's comments reads more of them each time: the
			// budget is raised past what that takes, since the figure's
			// clock moves only between polls and a poll held for the
			// minute's room would wait for ever.
			s, ids := readingService(b, emu, clk, 100_000)
			emu.ResetRequests()
			polls, changes := 0, 0
			for b.Loop() {
				for i := range burstItems {
					if err := emu.PersonComment(ids[i], "burst "+strconv.Itoa(changes)); err != nil {
						b.Fatal(err)
					}
					changes++
				}
				clk.Advance(follow.DefaultPollEvery)
				if err := s.app.Followers.PollOnce(b.Context(), tenant, workspace); err != nil {
					b.Fatal(err)
				}
				polls++
			}
			if evs, err := s.app.Log.Read(context.Background(), tenant, workspace, 0, changes+1); err != nil || len(evs) != changes {
				b.Fatalf("%d comments were made, %d events are in the feed (%v)", changes, len(evs), err)
			}
			b.ReportMetric(float64(emu.Requests())/float64(polls), "requests/poll")
		})
		b.Run(tr.name+"/idle-poll", func(b *testing.B) {
			clk := clock.NewFake(time.Date(2026, 10, 17, 9, 0, 0, 0, time.UTC))
			emu := tr.new(clk.Now)
			s, _ := readingService(b, emu, clk)
			emu.ResetRequests()
			_, metered := emu.(limited)
			before := spentOf(emu)
			polls := 0
			for b.Loop() {
				clk.Advance(follow.DefaultPollEvery)
				if err := s.app.Followers.PollOnce(b.Context(), tenant, workspace); err != nil {
					b.Fatal(err)
				}
				polls++
			}
			if evs, _ := s.app.Log.Read(context.Background(), tenant, workspace, 0, 1); len(evs) != 0 {
				b.Fatalf("polls of a project where nothing changed published %s", evs[0].Type)
			}
			b.ReportMetric(float64(emu.Requests())/float64(polls), "requests/poll")
			if metered {
				// GitHub counts no 304 against its hour: the goal is 0.
				b.ReportMetric(float64(spentOf(emu)-before)/float64(polls), "points/poll")
			}
		})
	}
}

// The change-to-feed figures' project: items a person made before relayr
// first read it.
const feedItems = 20

// burstItems is how many items a person comments on between two polls in
// the burst figure.
const burstItems = 10

// shortPoll is the interval the polling figure is measured at, then scaled
// to the default 30 s and to a minute.
const shortPoll = 200 * time.Millisecond

// phases is how many changes a round of the polling figure makes, one in
// each equal part of the interval.
const phases = 4

// unlimited is a budget no figure reaches: the change-to-feed figures
// measure the path of one change, not the budget's share-out (ADR-0036),
// which a person changing an item every two seconds for a minute would
// reach at the default of 40.
const unlimited = 1 << 30

// feedService runs relayr, on real time, over a project of feedItems items
// its follower has read once.
func feedService(b *testing.B, emu emulation, timings config.Timings) (*service, []string) {
	b.Helper()
	ids := make([]string, feedItems)
	for i := range ids {
		id, err := emu.PersonCreate("item " + strconv.Itoa(i))
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = id
	}
	timings.Budget = unlimited
	return startService(b, emu, serviceOptions{serve: true, timings: timings}), ids
}

// BenchmarkChangeToFeed measures, on real time, from a person's change in
// the tracker (a new title) to its event in the feed, read by a consumer
// long-polling GET …/events:
//
//   - webhook: the emulation's delivery goes to relayr's webhook route,
//     which nudges the follower; after a quiet spell it polls at once
//     (the debounce gathers only the burst after that poll), polls every
//     30 s. Each change comes after a quiet spell (a person's changes
//     seconds apart); the debounce is shortened so that the spell is
//     short, which changes nothing of the first nudge's poll.
//   - polling: no webhook; the follower polls every 200 ms and the changes
//     come at evenly spread moments of the interval, so their mean is
//     half the interval plus relayr's own time to read, publish and
//     deliver. That own time, the mean less 100 ms, is added to half of
//     30 s (ms/change@30s, the default poll) and to half a minute
//     (ms/change@60s, what integration tools that poll every minute
//     average). ms/change@200ms is what was measured.
func BenchmarkChangeToFeed(b *testing.B) {
	for _, tr := range emulations {
		b.Run(tr.name+"/webhook", func(b *testing.B) {
			emu := tr.new(time.Now)
			s, ids := feedService(b, emu, config.Timings{Debounce: config.Duration{Duration: quietDebounce}})
			emu.Forward(s.hookURL())
			var after int64
			var took []time.Duration
			n := 0
			for b.Loop() {
				quietSpell(b)
				id := ids[n%len(ids)]
				start := time.Now()
				if err := emu.PersonRetitle(id, "changed "+strconv.Itoa(n)); err != nil {
					b.Fatal(err)
				}
				if err := s.awaitItemEvent(b.Context(), &after, id); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
				n++
			}
			reportLatency(b, took, "change")
		})
		b.Run(tr.name+"/polling", func(b *testing.B) {
			emu := tr.new(time.Now)
			s, ids := feedService(b, emu, config.Timings{Poll: config.Duration{Duration: shortPoll}})
			var after int64
			var total time.Duration
			n := 0
			for b.Loop() {
				// The last event came as a poll ended, and the next poll
				// is an interval later: waiting a share of it puts the
				// change at that point of the interval. Each round puts
				// one at the middle of each quarter, so every round's mean
				// wait is half the interval.
				for k := range phases {
					id := ids[n%len(ids)]
					time.Sleep(time.Duration((float64(k) + 0.5) / phases * float64(shortPoll)))
					start := time.Now()
					if err := emu.PersonRetitle(id, "changed "+strconv.Itoa(n)); err != nil {
						b.Fatal(err)
					}
					if err := s.awaitItemEvent(b.Context(), &after, id); err != nil {
						b.Fatal(err)
					}
					total += time.Since(start)
					n++
				}
			}
			mean := ms(total) / float64(n)
			own := mean - ms(shortPoll)/2
			b.ReportMetric(mean, "ms/change@200ms")
			b.ReportMetric(ms(follow.DefaultPollEvery)/2+own, "ms/change@30s")
			b.ReportMetric(ms(time.Minute)/2+own, "ms/change@60s")
		})
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// quietDebounce is the debounce of the latency figures' services, and a
// quiet spell a little longer than it.
const quietDebounce = 200 * time.Millisecond

// quietSpell waits, off the clock, for a quiet spell: no poll began within
// the debounce, so the next nudge reads at once. Twice the debounce: the
// last change's deliveries may have gathered a poll a debounce after the
// one that published it (a filing's create and update, say).
func quietSpell(b *testing.B) {
	b.StopTimer()
	time.Sleep(2*quietDebounce + 50*time.Millisecond)
	b.StartTimer()
}

// reportLatency reports a latency figure's mean and median, per what.
func reportLatency(b *testing.B, took []time.Duration, what string) {
	if len(took) == 0 {
		return
	}
	var total time.Duration
	for _, d := range took {
		total += d
	}
	sorted := slices.Clone(took)
	slices.Sort(sorted)
	b.ReportMetric(ms(total)/float64(len(took)), "ms/"+what)
	b.ReportMetric(ms(sorted[len(sorted)/2]), "p50-ms/"+what)
}
