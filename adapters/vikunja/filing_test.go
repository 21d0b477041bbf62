package vikunja_test

import (
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/vikunja"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/coretest"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
	"github.com/relayr-go/relayr/fixtures/vikunjaemu"
)

// filing is the write path over the emulation: a Writer on a memory ledger
// and a fake clock, which also runs the emulation's and the adapter's time.
type filing struct {
	w      *writes.Writer
	ledger *coretest.FailingRecord
	clock  *clock.Fake
	e      *vikunjaemu.Emulator
}

func newFiling(t *testing.T) *filing {
	t.Helper()
	c := clock.NewFake(time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC))
	e, srv := vikunjaemu.NewServer(vikunjaemu.Options{Now: c.Now})
	t.Cleanup(srv.Close)
	t.Cleanup(e.Close)
	conn := vikunja.Connector{BaseURL: srv.URL, Project: e.CreateProject("Lattice", "LAT"),
		Options: []vikunja.Option{vikunja.WithTransport(srv.Client().Transport), vikunja.WithClock(c.Now)}}
	l := coretest.NewFailingRecord()
	wd := coretest.NewWorld(coretest.WorldOptions{Tenant: "t1", Workspace: "w1", Connector: conn, Credentials: tracker.Credentials{Token: e.Token},
		Ledger: l, Clock: c})
	return &filing{w: wd.Writer, ledger: l, clock: c, e: e}
}

func (f *filing) ensure(t *testing.T, key string) (writes.Result, error) {
	t.Helper()
	return f.w.EnsureItem(ctx(t), writes.EnsureParams{Tenant: "t1", Workspace: "w1", Key: key,
		Draft: tracker.Draft{Title: "filed as " + key, Labels: []string{"relayr", "urgent"}}, Correlation: "run"})
}

// counted files key and answers the requests it cost, by route.
func (f *filing) counted(t *testing.T, key, how string) map[string]int {
	t.Helper()
	f.e.ResetCounts()
	res, err := f.ensure(t, key)
	if err != nil {
		t.Fatalf("filing %s: %v", key, err)
	}
	if res.How != how {
		t.Fatalf("filing %s answered %q, want %q", key, res.How, how)
	}
	return writeCounts(f.e.RequestCounts())
}

// The request counts a whole filing on Vikunja is held to, through the
// write path: the labels are known (an earlier filing made them), so each
// costs its add.
func TestFilingRequestCounts(t *testing.T) {
	const (
		create = "PUT /api/v1/projects/{id}/tasks"
		label  = "PUT /api/v1/tasks/{id}/labels"
		search = "GET /api/v1/projects/{id}/tasks"
		read   = "GET /api/v1/tasks/{id}"
	)
	setUp := func(t *testing.T) *filing {
		f := newFiling(t)
		if _, err := f.ensure(t, "warm"); err != nil {
			t.Fatal(err)
		}
		return f
	}
	check := func(t *testing.T, got, want map[string]int) {
		t.Helper()
		if !sameCounts(got, want) {
			t.Fatalf("requests %v, want %v", got, want)
		}
	}
	t.Run("AFreshClaimCostsTheCreateAndOneRequestPerLabel", func(t *testing.T) {
		f := setUp(t)
		check(t, f.counted(t, "k1", writes.Created), map[string]int{create: 1, label: 2})
	})
	t.Run("ARetakenClaimAddsOneSearchBeforeTheCreate", func(t *testing.T) {
		f := setUp(t)
		// An attempt claimed the key and died before sending anything.
		k := ledger.Key{Tenant: "t1", Workspace: "w1", Kind: ledger.KindItem, Key: "k1"}
		if _, _, err := f.ledger.Claim(ctx(t), ledger.ClaimParams{Key: k, Now: f.clock.Now(), RetakeAfter: writes.DefaultRetakeAfter}); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(writes.DefaultRetakeAfter + time.Second)
		check(t, f.counted(t, "k1", writes.Created), map[string]int{search: 1, create: 1, label: 2})
	})
	t.Run("ARetakenClaimFindsTheItemAnEarlierAttemptFiledWithOneSearch", func(t *testing.T) {
		f := setUp(t)
		f.ledger.Arm()
		if _, err := f.ensure(t, "k1"); err == nil {
			t.Fatal("the attempt recorded")
		}
		f.clock.Advance(writes.DefaultRetakeAfter + time.Second)
		check(t, f.counted(t, "k1", writes.Found), map[string]int{search: 1})
	})
	t.Run("ARetriedFilingOfARecordedKeyCostsNothing", func(t *testing.T) {
		f := setUp(t)
		if _, err := f.ensure(t, "k1"); err != nil {
			t.Fatal(err)
		}
		check(t, f.counted(t, "k1", writes.Existing), map[string]int{})
	})
}
