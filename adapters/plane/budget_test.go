package plane_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/adapters/plane"
	"github.com/relayr-go/relayr/core/binding"
	"github.com/relayr-go/relayr/core/budget"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/coretest"
	"github.com/relayr-go/relayr/core/follow"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/memnet"
	"github.com/relayr-go/relayr/fixtures/planeemu"
)

// TestFigureFiftyProjectsUnderOneKeyDrawNo429 follows 50 projects of one Plane
// workspace under one key, Plane's own limit on (60 requests a minute), on
// virtual time: each connection reads the project and its states, each
// first poll seeds, then the polls go on every interval while a person
// works in one project. The budget counts every request, the connections'
// reads among them, and paces them within its 40 a minute: Plane answers
// none of them 429, at the start or after.
func TestFigureFiftyProjectsUnderOneKeyDrawNo429(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		emu := planeemu.New(planeemu.Options{Now: time.Now})
		srv := memnet.NewServer(emu)
		defer srv.Close()
		projects := []string{emu.Project}
		for i := 1; i < 50; i++ {
			projects = append(projects, emu.AddProject(fmt.Sprintf("P%d", i), fmt.Sprintf("project %d", i)))
		}
		var bindings []binding.Binding
		for i, p := range projects {
			conn, err := plane.NewConnector(plane.Config{
				BaseURL: srv.URL, WebURL: "https://plane.example.com", Workspace: emu.Workspace, Project: p, Client: srv.Client(),
			})
			if err != nil {
				t.Fatal(err)
			}
			bindings = append(bindings, binding.Binding{Tenant: "acme", Workspace: fmt.Sprintf("ws-%02d", i), Connector: conn})
		}
		bud := budget.New(clock.System{}, budget.DefaultLimit)
		wd := coretest.NewWorld(coretest.WorldOptions{Bindings: bindings, Credentials: tracker.Credentials{Token: emu.Bot.Key}, Budget: bud})
		led := wd.Memory
		fs := follow.New(follow.Config{Ledger: led, Log: led, Connections: wd.Connections, Budget: bud, Logger: slog.New(slog.DiscardHandler), Holder: "replica"})
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		wg.Go(func() {
			// A person files and retitles items in the first project.
			for i := 0; ctx.Err() == nil; i++ {
				id := emu.CreateItem(fmt.Sprint("work ", i))
				_ = emu.Retitle(id, fmt.Sprint("work ", i, " renamed"))
				select {
				case <-ctx.Done():
				case <-time.After(20 * time.Second):
				}
			}
		})
		fs.Start(ctx)
		time.Sleep(15 * time.Minute)
		fs.Stop()
		cancel()
		wg.Wait()

		reads := emu.Total()
		t.Logf("FIGURE plane.start50.throttled %d 429s", emu.Throttled())
		t.Logf("requests in 15 minutes: %d (%.1f a minute)", reads, float64(reads)/15)
		if n := emu.Throttled(); n != 0 {
			t.Fatalf("Plane answered %d requests 429 of %d", n, reads)
		}
		if n := emu.Count("GET", "project"); n < len(projects) {
			t.Fatalf("%d connections read their project, want all %d", n, len(projects))
		}
		evs, err := led.Read(context.Background(), "acme", "ws-00", 0, 10000)
		if err != nil || len(evs) == 0 {
			t.Fatalf("the person's work in the first project published %d events: %v", len(evs), err)
		}
	})
}

// TestFigurePlaneDeletionToFeed measures, on virtual time, how long a
// person's deletion of an item takes to reach the log as
// tracker:item_removed on Plane, which sends no deletion webhook: a sweep
// finds it, and on a key the budget leaves mostly idle one comes every
// minute (sweep_min), where the seeds' rule waited for the day's. Twelve
// deletions, each at another moment of the poll's and the sweep's cycle.
func TestFigurePlaneDeletionToFeed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		emu := planeemu.New(planeemu.Options{Now: time.Now})
		srv := memnet.NewServer(emu)
		defer srv.Close()
		conn, err := plane.NewConnector(plane.Config{BaseURL: srv.URL, WebURL: "https://plane.example.com", Workspace: emu.Workspace, Project: emu.Project, Client: srv.Client()})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for i := range 12 {
			ids = append(ids, emu.CreateItem(fmt.Sprint("item ", i)))
		}
		bud := budget.New(clock.System{}, budget.DefaultLimit)
		wd := coretest.NewWorld(coretest.WorldOptions{Connector: conn, Credentials: tracker.Credentials{Token: emu.Bot.Key}, Budget: bud})
		led := wd.Memory
		fs := follow.New(follow.Config{Ledger: led, Log: led, Connections: wd.Connections, Budget: bud, Logger: slog.New(slog.DiscardHandler), Holder: "replica"})
		fs.Start(t.Context())
		defer fs.Stop()
		time.Sleep(2 * time.Minute) // seeded
		var delays []time.Duration
		for i, id := range ids {
			time.Sleep(time.Duration(7+11*i) * time.Second) // another moment of the cycles each time
			if err := emu.Delete(id); err != nil {
				t.Fatal(err)
			}
			at := time.Now()
			for removed := false; !removed; {
				time.Sleep(time.Second)
				evs, err := led.Read(context.Background(), "acme", "ops", 0, 1000)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range evs {
					if e.Type == follow.TypeItemRemoved && strings.Contains(string(e.Data), id) {
						removed = true
					}
				}
				if time.Since(at) > time.Hour {
					t.Fatalf("deletion %d not in the log within an hour", i)
				}
			}
			delays = append(delays, time.Since(at))
		}
		slices.Sort(delays)
		median, worst := delays[len(delays)/2], delays[len(delays)-1]
		t.Logf("FIGURE plane.deletion_to_feed.median %.0f s", median.Seconds())
		t.Logf("FIGURE plane.deletion_to_feed.worst %.0f s", worst.Seconds())
		if worst > 2*time.Minute+follow.DefaultPollEvery {
			t.Fatalf("a deletion took %v to reach the log on an idle budget, want within a sweep's minute and a poll", worst)
		}
	})
}
