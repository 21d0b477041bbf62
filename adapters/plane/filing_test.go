package plane_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/plane"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/coretest"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
	"github.com/relayr-go/relayr/fixtures/planeemu"
)

// filing is the write path over the emulation: a Writer on a memory ledger
// and a fake clock, which is also the emulation's.
type filing struct {
	w      *writes.Writer
	ledger *coretest.FailingRecord
	clock  *clock.Fake
	emu    *planeemu.Server
}

func newFiling(t *testing.T) *filing {
	t.Helper()
	c := clock.NewFake(time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC))
	emu := planeemu.New(planeemu.Options{RateLimit: -1, Now: c.Now})
	srv := httptest.NewServer(emu)
	t.Cleanup(srv.Close)
	conn, err := plane.NewConnector(plane.Config{BaseURL: srv.URL, Workspace: emu.Workspace, Project: emu.Project, Client: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	l := coretest.NewFailingRecord()
	wd := coretest.NewWorld(coretest.WorldOptions{Connector: conn, Credentials: tracker.Credentials{Token: emu.Bot.Key}, Ledger: l, Clock: c})
	return &filing{w: wd.Writer, ledger: l, clock: c, emu: emu}
}

func (f *filing) ensure(key string) (writes.Result, error) {
	return f.w.EnsureItem(ctx, writes.EnsureParams{Tenant: "acme", Workspace: "ops", Key: key,
		Draft: tracker.Draft{Title: "filed as " + key, State: tracker.Todo, Labels: []string{"ci", "urgent"}}, Correlation: "run"})
}

// counted files key and answers how many requests it cost.
func (f *filing) counted(t *testing.T, key, how string) int {
	t.Helper()
	f.emu.ResetCounts()
	res, err := f.ensure(key)
	if err != nil {
		t.Fatalf("filing %s: %v", key, err)
	}
	if res.How != how {
		t.Fatalf("filing %s answered %q, want %q", key, res.How, how)
	}
	return f.emu.Total()
}

// The request counts a whole filing on Plane is held to, through the write
// path, once an earlier filing cached the project's states and labels:
// Plane's create is itself the lookup (Capabilities.KeysEnforced), so a retaken
// claim costs what a fresh one does, and only a 409 adds the external-id
// lookup.
func TestFilingRequestCounts(t *testing.T) {
	setUp := func(t *testing.T) *filing {
		f := newFiling(t)
		must(f.ensure("warm"))(t)
		return f
	}
	check := func(t *testing.T, f *filing, total int, want map[[2]string]int) {
		t.Helper()
		for route, n := range want {
			if got := f.emu.Count(route[0], route[1]); got != n {
				t.Errorf("%s %s: %d requests, want %d", route[0], route[1], got, n)
			}
		}
		if got := f.emu.Total(); got != total {
			t.Errorf("%d requests in all, want %d", got, total)
		}
	}
	create := [2]string{"POST", "work-items"}
	t.Run("AFreshClaimCostsOneRequestTheCreate", func(t *testing.T) {
		f := setUp(t)
		f.counted(t, "k1", writes.Created)
		check(t, f, 1, map[[2]string]int{create: 1})
	})
	t.Run("ARetakenClaimCostsTheCreateAloneWithNoLookup", func(t *testing.T) {
		f := setUp(t)
		// An attempt claimed the key and died before sending anything.
		k := ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindItem, Key: "k1"}
		if _, _, err := f.ledger.Claim(ctx, ledger.ClaimParams{Key: k, Now: f.clock.Now(), RetakeAfter: writes.DefaultRetakeAfter}); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(writes.DefaultRetakeAfter + time.Second)
		f.counted(t, "k1", writes.Created)
		check(t, f, 1, map[[2]string]int{create: 1})
	})
	t.Run("ARetakenClaimWhoseItemExistsCostsTheCreateAndOn409TheLookup", func(t *testing.T) {
		f := setUp(t)
		f.ledger.Arm()
		if _, err := f.ensure("k1"); err == nil {
			t.Fatal("the attempt recorded")
		}
		f.clock.Advance(writes.DefaultRetakeAfter + time.Second)
		f.counted(t, "k1", writes.Found)
		check(t, f, 2, map[[2]string]int{create: 1, {"GET", "work-items"}: 1})
	})
	t.Run("ARetriedFilingOfARecordedKeyCostsNothing", func(t *testing.T) {
		f := setUp(t)
		must(f.ensure("k1"))(t)
		f.counted(t, "k1", writes.Existing)
		check(t, f, 0, nil)
	})
}
