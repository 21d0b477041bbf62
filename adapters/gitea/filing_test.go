package gitea_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/coretest"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
	"github.com/relayr-go/relayr/fixtures/giteaemu"
)

// TestFilingThroughTheWritePath: what a CI job's run costs on Gitea, and
// that a run which dies between Gitea's create and relayr's record files
// one issue however often it is retried.
func TestFilingThroughTheWritePath(t *testing.T) {
	const (
		create = "POST /api/v1/repos/{owner}/{repo}/issues"
		list   = "GET /api/v1/repos/{owner}/{repo}/issues"
		labels = "GET /api/v1/repos/{owner}/{repo}/labels"
		label  = "POST /api/v1/repos/{owner}/{repo}/labels"
	)
	type world struct {
		w     *writes.Writer
		l     *coretest.FailingRecord
		clock *clock.Fake
		em    *emulated
	}
	setUp := func(t *testing.T) world {
		em := newEmulated(t, giteaemu.Options{WebhookClient: discard()})
		clk := clock.NewFake(t0)
		l := coretest.NewFailingRecord()
		wd := coretest.NewWorld(coretest.WorldOptions{Tenant: "t1", Workspace: "w1", Connector: em.conn, Credentials: tracker.Credentials{Token: em.token},
			Ledger: l, Clock: clk})
		return world{w: wd.Writer, l: l, clock: clk, em: em}
	}
	ensure := func(t *testing.T, wd world, key string) (writes.Result, map[string]int, error) {
		wd.em.e.ResetCounts()
		res, err := wd.w.EnsureItem(context.Background(), writes.EnsureParams{Tenant: "t1", Workspace: "w1", Key: key,
			Draft: tracker.Draft{Title: "build failed: " + key, Labels: []string{"ci"}}, Correlation: "run"})
		return res, wd.em.e.RequestCounts(), err
	}
	t.Run("AFirstFilingReadsTheAccountTheRepositoryAndItsLabelsAndMakesTheLabel", func(t *testing.T) {
		wd := setUp(t)
		res, got, err := ensure(t, wd, "k1")
		want := map[string]int{"GET /api/v1/user": 1, "GET /api/v1/repos/{owner}/{repo}": 1, labels: 1, label: 1, create: 1}
		if err != nil || res.How != writes.Created || !maps.Equal(got, want) {
			t.Fatalf("%s %v, requests %v, want %v", res.How, err, got, want)
		}
	})
	t.Run("ANewFilingWithKnownLabelsIsOneRequest", func(t *testing.T) {
		wd := setUp(t)
		if _, _, err := ensure(t, wd, "warm"); err != nil {
			t.Fatal(err)
		}
		res, got, err := ensure(t, wd, "k1")
		if err != nil || res.How != writes.Created || !maps.Equal(got, map[string]int{create: 1}) {
			t.Fatalf("%s %v, requests %v, want one create", res.How, err, got)
		}
	})
	t.Run("ARunThatDiedBeforeItsRecordIsFoundNotFiledAgain", func(t *testing.T) {
		wd := setUp(t)
		wd.l.Arm()
		if _, _, err := ensure(t, wd, "k1"); err == nil {
			t.Fatal("the run recorded")
		}
		wd.clock.Advance(writes.DefaultRetakeAfter + time.Second)
		res, got, err := ensure(t, wd, "k1")
		if err != nil || res.How != writes.Found || !maps.Equal(got, map[string]int{list: 1}) {
			t.Fatalf("the retry: %s %v, requests %v, want found by one list", res.How, err, got)
		}
		for range 3 {
			if res, _, err := ensure(t, wd, "k1"); err != nil || res.How != writes.Existing {
				t.Fatalf("a later retry: %s %v", res.How, err)
			}
		}
		seen := walk(t, tracker.New(wd.em.driver(t)), time.Time{}, nil)
		if len(seen) != 1 {
			t.Fatalf("%d issues in the repository, want one", len(seen))
		}
	})
}
