package gitlab_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/adapters/gitlab"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/coretest"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
	"github.com/relayr-go/relayr/fixtures/emukit"
	"github.com/relayr-go/relayr/fixtures/gitlabemu"
	"github.com/relayr-go/relayr/fixtures/memnet"
)

// The routes a filing takes, as the emulation names them.
const (
	routeCreate = "POST /api/v4/projects/{id}/issues"
	routeList   = "GET /api/v4/projects/{id}/issues"
	routeIssue  = "GET /api/v4/projects/{id}/issues/{iid}"
	routePut    = "PUT /api/v4/projects/{id}/issues/{iid}"
	routeNote   = "POST /api/v4/projects/{id}/issues/{iid}/notes"
)

// run is the write path over the emulation, served in memory inside a
// testing/synctest bubble: the emulation, the driver (its waits) and the
// writer all run on the bubble's virtual time.
type run struct {
	w     *writes.Writer
	l     *coretest.FailingRecord
	e     *gitlabemu.Emulator
	token string
}

func newRun(t *testing.T, opts gitlabemu.Options) run {
	t.Helper()
	opts.WebhookClient = discard()
	e := gitlabemu.New(opts)
	srv := memnet.NewServer(e)
	e.SetBaseURL(srv.URL)
	t.Cleanup(func() { srv.Close(); e.Close() })
	e.AddUser(bot)
	token := e.AddToken(bot)
	e.CreateProject(project, bot)
	conn, err := gitlab.NewConnector(gitlab.Config{BaseURL: srv.URL, Project: project, Client: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	l := coretest.NewFailingRecord()
	wd := coretest.NewWorld(coretest.WorldOptions{Tenant: "t1", Workspace: "w1", Connector: conn, Credentials: tracker.Credentials{Token: token},
		Ledger: l, Clock: clock.System{}})
	return run{w: wd.Writer, l: l, e: e, token: token}
}

func (r run) ensure(key string) (writes.Result, map[string]int, error) {
	r.e.ResetCounts()
	res, err := r.w.EnsureItem(context.Background(), writes.EnsureParams{Tenant: "t1", Workspace: "w1", Key: key,
		Draft: tracker.Draft{Title: "build failed: " + key, Labels: []string{"ci"}}, Correlation: "run"})
	return res, r.e.RequestCounts(), err
}

// TestFilingThroughTheWritePath: what a CI job's run costs on GitLab, and
// that a run which dies between GitLab's create and relayr's record files
// one issue however often it is retried, whether GitLab's lists lag or
// not.
func TestFilingThroughTheWritePath(t *testing.T) {
	t.Run("AFirstFilingReadsTheUserAndTheProject", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newRun(t, gitlabemu.GitLabCom())
			res, got, err := r.ensure("k1")
			want := map[string]int{"GET /api/v4/user": 1, "GET /api/v4/projects/{id}": 1, routeCreate: 1}
			if err != nil || res.How != writes.Created || !maps.Equal(got, want) {
				t.Fatalf("%s %v, requests %v, want %v", res.How, err, got, want)
			}
		})
	})
	t.Run("ANewFilingIsOneCreate", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newRun(t, gitlabemu.GitLabCom())
			if _, _, err := r.ensure("warm"); err != nil {
				t.Fatal(err)
			}
			res, got, err := r.ensure("k1")
			if err != nil || res.How != writes.Created || !maps.Equal(got, map[string]int{routeCreate: 1}) {
				t.Fatalf("%s %v, requests %v, want one create", res.How, err, got)
			}
			if res.Item.Ref.Key != "k1" || !slices.Equal(res.Item.Labels, []string{"ci"}) || res.Item.State != tracker.Todo {
				t.Fatalf("filed %+v", res.Item)
			}
		})
	})
	for _, lag := range []time.Duration{0, 3 * time.Second} {
		t.Run(fmt.Sprintf("ARunThatDiedBeforeItsRecordIsFoundNotFiledAgain/lag%s", lag), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRun(t, gitlabemu.Options{ListLag: lag})
				r.l.Arm()
				if _, _, err := r.ensure("k1"); err == nil {
					t.Fatal("the run recorded")
				}
				time.Sleep(writes.DefaultRetakeAfter + time.Second)
				res, _, err := r.ensure("k1")
				if err != nil || res.How != writes.Found {
					t.Fatalf("the retry: %s %v, want found", res.How, err)
				}
				if n := r.e.Titles(project)["build failed: k1"]; n != 1 {
					t.Fatalf("%d issues for k1, want one", n)
				}
			})
		})
		for _, applied := range []bool{false, true} {
			name := "ACreateThatNeverLandedIsFiledOnceTheLagHasPassed"
			want := []string{writes.Created}
			if applied {
				name, want = "ACreateWhoseAnswerWasLostIsFoundNotFiledAgain", []string{writes.Found, writes.Existing}
			}
			t.Run(fmt.Sprintf("%s/lag%s", name, lag), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					r := newRun(t, gitlabemu.Options{ListLag: lag})
					if _, _, err := r.ensure("warm"); err != nil {
						t.Fatal(err)
					}
					r.e.Fail(1, emukit.Fault{Kind: emukit.Drop, Route: routeCreate, Applied: applied})
					if _, _, err := r.ensure("k1"); err == nil {
						t.Fatal("a dropped create answered")
					}
					var res writes.Result
					var err error
					for range 10 {
						time.Sleep(writes.DefaultRetakeAfter + time.Second)
						if res, _, err = r.ensure("k1"); err == nil {
							break
						}
						if !writes.CodeOf(err).Retryable() {
							t.Fatalf("the retry: %v, want retryable", err)
						}
					}
					if err != nil || !slices.Contains(want, res.How) {
						t.Fatalf("the retries: %s %v, want %s", res.How, err, want)
					}
					if n := r.e.Titles(project)["build failed: k1"]; n != 1 {
						t.Fatalf("%d issues for k1, want one", n)
					}
				})
			})
		}
	}
}

// TestABurstIsPacedUnderTheCreateLimit: 300 filings at once on
// GitLab.com's limits (200 issue creations a minute, whose 429 says not
// when to come back) are all filed, once each, with no answer over a
// limit: the driver keeps the limit unsent, answering the callers it
// cannot file within their deadline rate-limited, and they retry.
func TestABurstIsPacedUnderTheCreateLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRun(t, gitlabemu.GitLabCom())
		if _, _, err := r.ensure("warm"); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, 300)
		for i := range 300 {
			wg.Go(func() {
				retryAsCI(start, errs, func() error {
					_, err := r.w.EnsureItem(context.Background(), writes.EnsureParams{Tenant: "t1", Workspace: "w1", Key: fmt.Sprintf("burst-%d", i),
						Draft: tracker.Draft{Title: fmt.Sprintf("burst %d", i)}, Correlation: "burst"})
					return err
				})
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("a filing failed: %v", err)
		}
		titles := r.e.Titles(project)
		for i := range 300 {
			if n := titles[fmt.Sprintf("burst %d", i)]; n != 1 {
				t.Errorf("burst %d filed %d times", i, n)
			}
		}
		if n := r.e.Over(); n != 0 {
			t.Errorf("%d answers over a limit, want none", n)
		}
		if took := time.Since(start); took < time.Minute || took > 2*time.Minute+5*time.Second {
			t.Errorf("the burst took %s, want the second minute's hundred paced past the first", took)
		}
	})
}

// TestALookUpConcludesNothingOnlyALagApart: Find of a key never filed
// answers not found only from two reads the list's lag apart, and one
// filed within the lag (absent from a lagging list) is found at the
// second.
func TestALookUpConcludesNothingOnlyALagApart(t *testing.T) {
	em := newEmulated(t, gitlabemu.Options{ListLag: 3 * time.Second}, gitlab.Config{ListLag: 4 * time.Second})
	d := em.driver(t)
	ctx := context.Background()
	start := em.clock.Now()
	if _, err := d.Find(ctx, "never"); !errors.Is(err, tracker.ErrNotFound) {
		t.Fatalf("Find of a key never filed: %v, want not found", err)
	}
	if waited := em.clock.Now().Sub(start); waited != 4*time.Second {
		t.Fatalf("concluded after %s, want the configured lag", waited)
	}
	em.e.Fail(1, emukit.Fault{Kind: emukit.Drop, Route: routeCreate, Applied: true})
	if _, err := d.Create(ctx, "lost", tracker.Draft{Title: "lost answer"}); err == nil {
		t.Fatal("a lost answer answered")
	}
	got, err := d.Find(ctx, "lost")
	if err != nil || got.Title != "lost answer" {
		t.Fatalf("Find after a lost answer: %+v %v", got, err)
	}
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err = d.Find(short, "never-2")
	var rl *tracker.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter != 4*time.Second {
		t.Fatalf("a look-up without room to wait: %v, want rate-limited for the lag", err)
	}
	em.clock.Advance(4 * time.Second)
	if _, err := d.Find(ctx, "never-2"); !errors.Is(err, tracker.ErrNotFound) {
		t.Fatalf("the look-up a lag later: %v, want not found", err)
	}
}

// retryAsCI calls call until it succeeds, as a CI job retries what it was
// told to retry, 5 s apart, for ten minutes; a failure it may not retry,
// or one past the ten minutes, goes to errs.
func retryAsCI(start time.Time, errs chan<- error, call func() error) {
	for {
		err := call()
		if err == nil {
			return
		}
		if !writes.CodeOf(err).Retryable() || time.Since(start) > 10*time.Minute {
			errs <- err
			return
		}
		time.Sleep(5 * time.Second)
	}
}
