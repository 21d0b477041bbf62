package plane_test

import (
	"log/slog"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/plane"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/coretest"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/follow"
	"github.com/relayr-go/relayr/core/ledger/memledger"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
	"github.com/relayr-go/relayr/fixtures/planeemu"
)

// readBack is the write path and the follower over the emulation, on one
// fake clock.
type readBack struct {
	emu   *planeemu.Server
	clock *clock.Fake
	store *memledger.Ledger
	w     *writes.Writer
	fs    *follow.Followers
}

func newReadBack(t *testing.T, opts planeemu.Options) *readBack {
	t.Helper()
	c := clock.NewFake(time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC))
	opts.Now = c.Now
	if opts.RateLimit == 0 {
		opts.RateLimit = -1
	}
	emu := planeemu.New(opts)
	srv := httptest.NewServer(emu)
	t.Cleanup(srv.Close)
	conn, err := plane.NewConnector(plane.Config{BaseURL: srv.URL, Workspace: emu.Workspace, Project: emu.Project, Client: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	wd := coretest.NewWorld(coretest.WorldOptions{Connector: conn, Credentials: tracker.Credentials{Token: emu.Bot.Key}, Clock: c})
	return &readBack{
		emu: emu, clock: c, store: wd.Memory, w: wd.Writer,
		fs: follow.New(follow.Config{Ledger: wd.Memory, Log: wd.Memory, Connections: wd.Connections, Clock: c, Logger: slog.New(slog.DiscardHandler)}),
	}
}

func (r *readBack) poll(t *testing.T) {
	t.Helper()
	r.clock.Advance(10 * time.Second)
	if err := r.fs.PollOnce(ctx, "acme", "ops"); err != nil {
		t.Fatal(err)
	}
}

func (r *readBack) events(t *testing.T) int {
	t.Helper()
	evs, err := r.store.Read(ctx, "acme", "ops", 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		t.Logf("event %s %s", e.Type, e.Data)
	}
	return len(evs)
}

// TestRelayrsDescriptionsAreNotPeoplesChanges: every corpus description,
// filed and then edited in through relayr, reads back as Plane's sanitizer
// stored it and is dropped as relayr's own write: no event. A person's edit
// after them is published.
func TestRelayrsDescriptionsAreNotPeoplesChanges(t *testing.T) {
	r := newReadBack(t, planeemu.Options{})
	var ids []string
	refused := func(d string) bool {
		// Plane refuses markup with no element (lxml's "Document is
		// empty"); relayr answers refused and records nothing.
		_, err := planeemu.NormalizeHTML(sendDescriptionOf(d))
		return err != nil
	}
	for i, d := range planeemu.DescriptionCorpus {
		if refused(d) {
			continue
		}
		res, err := r.w.EnsureItem(ctx, writes.EnsureParams{Tenant: "acme", Workspace: "ops", Key: "filed-" + strconv.Itoa(i),
			Draft: tracker.Draft{Title: "filed " + strconv.Itoa(i), Description: d}})
		if err != nil {
			t.Fatalf("filing %q: %v", d, err)
		}
		ids = append(ids, res.Item.Ref.ID)
	}
	r.poll(t) // seeds
	for i, d := range planeemu.DescriptionCorpus {
		if refused(d) {
			continue
		}
		key := "edited-" + strconv.Itoa(i)
		if _, err := r.w.EnsureItem(ctx, writes.EnsureParams{Tenant: "acme", Workspace: "ops", Key: key,
			Draft: tracker.Draft{Title: "edited " + strconv.Itoa(i), Description: "before"}}); err != nil {
			t.Fatal(err)
		}
		r.poll(t)
		if _, err := r.w.Update(ctx, writes.UpdateParams{Tenant: "acme", Workspace: "ops", Key: key, Patch: tracker.Patch{Description: &d}}); err != nil {
			t.Fatalf("editing in %q: %v", d, err)
		}
		r.poll(t)
		if n := r.events(t); n != 0 {
			t.Fatalf("editing in %q published %d events, want none", d, n)
		}
	}
	if err := r.emu.Retitle(ids[0], "a person's title"); err != nil {
		t.Fatal(err)
	}
	r.poll(t)
	if n := r.events(t); n != 1 {
		t.Fatalf("a person's edit published %d events, want 1", n)
	}
}

// TestAnItemUnarchivedIsCreatedAgain: over the emulation, relayr's item and
// a person's are archived, the sweep publishes their removals (Plane reads
// an archived item by its id as missing; relayr's key finds it archived),
// and, unarchived, each is published as created again, restored, once.
func TestAnItemUnarchivedIsCreatedAgain(t *testing.T) {
	r := newReadBack(t, planeemu.Options{})
	filed, err := r.w.EnsureItem(ctx, writes.EnsureParams{Tenant: "acme", Workspace: "ops", Key: "k", Draft: tracker.Draft{Title: "relayr's"}})
	if err != nil {
		t.Fatal(err)
	}
	theirs := r.emu.CreateItem("a person's")
	r.poll(t) // seeds
	ids := []string{filed.Item.Ref.ID, theirs}
	for _, id := range ids {
		if err := r.emu.Archive(id); err != nil {
			t.Fatal(err)
		}
	}
	sweep := func() {
		t.Helper()
		r.clock.Advance(2 * time.Minute) // an idle budget sweeps each minute
		r.poll(t)
	}
	sweep()
	evs := r.feed(t)
	if len(evs) != 2 || evs[0].Type != follow.TypeItemRemoved || evs[1].Type != follow.TypeItemRemoved {
		t.Fatalf("after the sweep: %d events, want the two removals", len(evs))
	}
	for _, id := range ids {
		if err := r.emu.Unarchive(id); err != nil {
			t.Fatal(err)
		}
	}
	r.poll(t)
	sweep()
	evs = r.feed(t)
	if len(evs) != 4 {
		t.Fatalf("after the unarchive: %d events, want two more", len(evs))
	}
	for _, e := range evs[2:] {
		d, err := follow.DataOf(e)
		if err != nil || e.Type != follow.TypeItemCreated || !d.Restored {
			t.Fatalf("%s %s, want a restored creation", e.Type, e.Data)
		}
		if d.Item.ID == filed.Item.Ref.ID && d.Item.Key != "k" {
			t.Fatalf("relayr's item restored without its key: %+v", d.Item)
		}
	}
}

func (r *readBack) feed(t *testing.T) []eventlog.Event {
	t.Helper()
	evs, err := r.store.Read(ctx, "acme", "ops", 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}
