package jira_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/adapters/jira"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/coretest"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
	"github.com/relayr-go/relayr/fixtures/emukit"
	"github.com/relayr-go/relayr/fixtures/jiraemu"
	"github.com/relayr-go/relayr/fixtures/memnet"
)

// The routes a filing takes, as the description names them.
const (
	routeCreate    = "POST /rest/api/3/issue"
	routeIssue     = "GET /rest/api/3/issue/{issueIdOrKey}"
	routeSearch    = "POST /rest/api/3/search/jql"
	routeBulkFetch = "POST /rest/api/3/issue/bulkfetch"
	routePut       = "PUT /rest/api/3/issue/{issueIdOrKey}"
)

// run is the write path over the emulation, served in memory inside a
// testing/synctest bubble: the emulation, the driver (its waits) and the
// writer all run on the bubble's virtual time.
type run struct {
	w     *writes.Writer
	l     *coretest.FailingRecord
	e     *jiraemu.Emulator
	token string
}

func newRun(t *testing.T, opts jiraemu.Options) run {
	t.Helper()
	opts.WebhookClient = discard()
	e := jiraemu.New(opts)
	srv := memnet.NewServer(e)
	t.Cleanup(func() {
		srv.Close()
		e.Close()
		if v := e.Violations(); len(v) > 0 {
			t.Errorf("exchanges outside Atlassian's description:\n%s", strings.Join(v, "\n"))
		}
	})
	e.AddUser(botAccount, "relayr bot", nil)
	token := e.AddToken(botEmail, botAccount)
	e.CreateProject(projectKey, "Operations", jiraemu.DefaultWorkflow())
	conn, err := jira.NewConnector(jira.Config{BaseURL: srv.URL, Project: projectKey, Email: botEmail, Client: srv.Client()})
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

// bubble runs fn inside a synctest bubble.
func bubble(t *testing.T, fn func(t *testing.T)) {
	t.Helper()
	synctest.Test(t, fn)
}

// TestFilingThroughTheWritePath: what a CI job's run costs on Jira, and
// that a run which dies between Jira's create and relayr's record files
// one issue however often it is retried, whatever the search's lag.
func TestFilingThroughTheWritePath(t *testing.T) {
	t.Run("AFirstFilingReadsTheAccountAndTheProject", func(t *testing.T) {
		bubble(t, func(t *testing.T) {
			r := newRun(t, jiraemu.Options{})
			res, got, err := r.ensure("k1")
			want := map[string]int{"GET /rest/api/3/myself": 1, "GET /rest/api/3/project/{projectIdOrKey}": 1, "GET /rest/api/3/project/{projectIdOrKey}/statuses": 1, routeCreate: 1, routeIssue: 1}
			if err != nil || res.How != writes.Created || !maps.Equal(got, want) {
				t.Fatalf("%s %v, requests %v, want %v", res.How, err, got, want)
			}
		})
	})
	t.Run("ANewFilingIsACreateAndARead", func(t *testing.T) {
		bubble(t, func(t *testing.T) {
			r := newRun(t, jiraemu.Options{})
			if _, _, err := r.ensure("warm"); err != nil {
				t.Fatal(err)
			}
			res, got, err := r.ensure("k1")
			if err != nil || res.How != writes.Created || !maps.Equal(got, map[string]int{routeCreate: 1, routeIssue: 1}) {
				t.Fatalf("%s %v, requests %v, want a create and a read", res.How, err, got)
			}
			is, ok := r.e.Issue(res.Item.Ref.ID)
			if !ok || len(is.Properties[jira.PropertyKey]) == 0 {
				t.Fatalf("the issue holds no key property: %+v", is)
			}
		})
	})
	for _, lag := range []time.Duration{0, 20 * time.Second} {
		t.Run(fmt.Sprintf("ARunThatDiedBeforeItsRecordIsFoundNotFiledAgain/lag%s", lag), func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				r := newRun(t, jiraemu.Options{SearchLag: lag})
				r.l.Arm()
				if _, _, err := r.ensure("k1"); err == nil {
					t.Fatal("the run recorded")
				}
				time.Sleep(writes.DefaultRetakeAfter + time.Second)
				res, _, err := r.ensure("k1")
				if err != nil || res.How != writes.Found {
					t.Fatalf("the retry: %s %v, want found", res.How, err)
				}
				if n := len(r.e.Issues(projectKey)); n != 1 {
					t.Fatalf("%d issues in the project, want one", n)
				}
			})
		})
		for _, applied := range []bool{false, true} {
			name := "ACreateThatNeverLandedIsFiledOnceTheLagHasPassed"
			want := []string{writes.Created}
			if applied {
				// Found by the retry's look-up, or by relayr's own in the
				// background before it (then answered from the ledger).
				name, want = "ACreateWhoseAnswerWasLostIsFoundNotFiledAgain", []string{writes.Found, writes.Existing}
			}
			t.Run(fmt.Sprintf("%s/lag%s", name, lag), func(t *testing.T) {
				bubble(t, func(t *testing.T) {
					r := newRun(t, jiraemu.Options{SearchLag: lag})
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
					if n := len(r.e.Issues(projectKey)); n != 2 {
						t.Fatalf("%d issues in the project, want two: warm and k1 once", n)
					}
				})
			})
		}
	}
}

// TestALookUpConcludesNothingOnlyALagApart: Find of a key never filed
// answers not found only from two reads a lag apart, and one filed
// within the lag (absent from the search) is found at the second.
func TestALookUpConcludesNothingOnlyALagApart(t *testing.T) {
	em := newEmulated(t, jiraemu.Options{SearchLag: 20 * time.Second}, jira.Config{SearchLag: 25 * time.Second})
	d := em.driver(t)
	ctx := context.Background()
	start := em.clock.Now()
	if _, err := d.Find(ctx, "never"); !errors.Is(err, tracker.ErrNotFound) {
		t.Fatalf("Find of a key never filed: %v, want not found", err)
	}
	if waited := em.clock.Now().Sub(start); waited != 25*time.Second {
		t.Fatalf("concluded after %s, want the configured lag", waited)
	}
	// A key filed by a create whose answer was lost: absent from the
	// search for its lag, found by the second read.
	em.e.Fail(1, emukit.Fault{Kind: emukit.Drop, Route: routeCreate, Applied: true})
	if _, err := d.Create(ctx, "lost", tracker.Draft{Title: "lost answer"}); err == nil {
		t.Fatal("a lost answer answered")
	}
	got, err := d.Find(ctx, "lost")
	if err != nil || got.Title != "lost answer" {
		t.Fatalf("Find after a lost answer: %+v %v", got, err)
	}
	// With no room in the caller's deadline, the look-up is answered
	// rate-limited for the lag, unsent, and a later one settles it.
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err = d.Find(short, "never-2")
	var rl *tracker.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter != 25*time.Second {
		t.Fatalf("a look-up without room to wait: %v, want rate-limited for the lag", err)
	}
	em.clock.Advance(25 * time.Second)
	if _, err := d.Find(ctx, "never-2"); !errors.Is(err, tracker.ErrNotFound) {
		t.Fatalf("the look-up a lag later: %v, want not found", err)
	}
}
