package github_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/github"
	"github.com/relayr-go/relayr/core/budget"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/coretest"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
	"github.com/relayr-go/relayr/fixtures/githubemu"
)

// run is the write path over the emulation, with a budget on the
// emulation's clock.
type run struct {
	w     *writes.Writer
	l     *coretest.FailingRecord
	bud   *budget.Budget
	em    *emulated
	clock *clock.Fake
}

func newRun(t testing.TB, opts githubemu.Options, windows map[string][]budget.TrackerWindow) run {
	t.Helper()
	// One clock for the emulation, the driver, the writer and the budget.
	clk := clock.NewFake(t0)
	opts.Now = clk.Now
	em := newEmulated(t, opts, github.Config{Now: clk.Now})
	l := coretest.NewFailingRecord()
	bud := budget.NewWith(clk, 0, budget.Options{Windows: windows})
	wd := coretest.NewWorld(coretest.WorldOptions{Tenant: "t1", Workspace: "w1", Connector: em.conn, Credentials: tracker.Credentials{Token: em.token},
		Ledger: l, Clock: clk, Budget: bud})
	return run{w: wd.Writer, l: l, bud: bud, em: em, clock: clk}
}

func (r run) ensure(key string) (writes.Result, map[string]int, error) {
	r.em.e.ResetCounts()
	res, err := r.w.EnsureItem(context.Background(), writes.EnsureParams{Tenant: "t1", Workspace: "w1", Key: key,
		Draft: tracker.Draft{Title: "build failed: " + key, Labels: []string{"ci"}}, Correlation: "run"})
	return res, r.em.e.RequestCounts(), err
}

// TestFilingThroughTheWritePath: what a CI job's run costs on GitHub, and
// that a run which dies between GitHub's create and relayr's record files
// one issue however often it is retried.
func TestFilingThroughTheWritePath(t *testing.T) {
	const (
		create = "POST /repos/{owner}/{repo}/issues"
		list   = "GET /repos/{owner}/{repo}/issues"
	)
	t.Run("AFirstFilingReadsTheAccountAndTheRepository", func(t *testing.T) {
		r := newRun(t, githubemu.Options{}, nil)
		res, got, err := r.ensure("k1")
		want := map[string]int{"GET /user": 1, "GET /repos/{owner}/{repo}": 1, create: 1}
		if err != nil || res.How != writes.Created || !maps.Equal(got, want) {
			t.Fatalf("%s %v, requests %v, want %v", res.How, err, got, want)
		}
	})
	t.Run("ANewFilingIsOneRequestLabelsAndAll", func(t *testing.T) {
		r := newRun(t, githubemu.Options{}, nil)
		if _, _, err := r.ensure("warm"); err != nil {
			t.Fatal(err)
		}
		res, got, err := r.ensure("k1")
		if err != nil || res.How != writes.Created || !maps.Equal(got, map[string]int{create: 1}) {
			t.Fatalf("%s %v, requests %v, want one create", res.How, err, got)
		}
	})
	t.Run("ARunThatDiedBeforeItsRecordIsFoundNotFiledAgain", func(t *testing.T) {
		r := newRun(t, githubemu.Options{}, nil)
		r.l.Arm()
		if _, _, err := r.ensure("k1"); err == nil {
			t.Fatal("the run recorded")
		}
		r.clock.Advance(writes.DefaultRetakeAfter + time.Second)
		res, got, err := r.ensure("k1")
		if err != nil || res.How != writes.Found || !maps.Equal(got, map[string]int{list: 1}) {
			t.Fatalf("the retry: %s %v, requests %v, want found by one list", res.How, err, got)
		}
		if n := len(walk(t, tracker.New(r.em.driver(t)), time.Time{}, nil)); n != 1 {
			t.Fatalf("%d issues in the repository, want one", n)
		}
	})
}

// TestASteadyRunNeverMeetsGitHubsLimits: a job filing as fast as it can
// is held by relayr, unsent, before GitHub would refuse it: past the
// minute's 80 content creations, and past the hour the budget keeps.
func TestASteadyRunNeverMeetsGitHubsLimits(t *testing.T) {
	r := newRun(t, githubemu.Options{HourlyLimit: 150}, map[string][]budget.TrackerWindow{
		"github": {{Span: time.Hour, Limit: 150, Reported: true}},
	})
	filed, held := 0, 0
	for i := range 200 {
		_, _, err := r.ensure(fmt.Sprintf("k%03d", i))
		switch {
		case err == nil:
			filed++
		case errors.Is(err, tracker.ErrRateLimited) || writes.CodeOf(err).Retryable():
			held++
		default:
			t.Fatalf("filing %d: %v", i, err)
		}
	}
	if filed != github.CreatesPerMinute {
		t.Fatalf("%d filed in the minute, want GitHub's %d", filed, github.CreatesPerMinute)
	}
	if got := r.em.e.ContentCreated(r.em.token); got != filed {
		t.Fatalf("GitHub counts %d creations, relayr filed %d: a refused one was sent", got, filed)
	}
	if held != 200-filed {
		t.Fatalf("%d held, want the rest", held)
	}
	// An hour on, the budget's hour (150, less what the floor keeps) holds
	// the run before GitHub's would.
	r.clock.Advance(time.Hour)
	filed = 0
	for i := range 200 {
		if _, _, err := r.ensure(fmt.Sprintf("h%03d", i)); err == nil {
			filed++
		} else if !errors.Is(err, tracker.ErrRateLimited) && !writes.CodeOf(err).Retryable() {
			t.Fatalf("filing %d in the second hour: %v", i, err)
		}
		r.clock.Advance(time.Second)
	}
	if filed == 0 || r.em.e.Used(r.em.token) > 150 {
		t.Fatalf("%d filed, GitHub counted %d of its 150: relayr's pace met GitHub's limit", filed, r.em.e.Used(r.em.token))
	}
}
