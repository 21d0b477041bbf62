package linear_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/adapters/linear"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/coretest"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
	"github.com/relayr-go/relayr/fixtures/emukit"
	"github.com/relayr-go/relayr/fixtures/linearemu"
	"github.com/relayr-go/relayr/fixtures/memnet"
)

// The operations a filing takes, as the emulation counts them.
const (
	routeCreate = "mutation issueCreate"
	routeAttach = "mutation attachmentCreate"
	routeIssue  = "query issue"
)

// run is the write path over the emulation, served in memory inside a
// testing/synctest bubble.
type run struct {
	w    *writes.Writer
	l    *coretest.FailingRecord
	e    *linearemu.Emulator
	team string
}

func newRun(t *testing.T, opts linearemu.Options) run {
	t.Helper()
	opts.WebhookClient = discard()
	e := linearemu.New(opts)
	srv := memnet.NewServer(e)
	t.Cleanup(func() { srv.Close(); e.Close() })
	key := e.AddKey(e.AddUser("relayr bot", true))
	team := e.AddTeam("ENG", "Engineering")
	conn, err := linear.NewConnector(linear.Config{URL: srv.URL + "/graphql", Team: "ENG", Client: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	l := coretest.NewFailingRecord()
	wd := coretest.NewWorld(coretest.WorldOptions{Tenant: "t1", Workspace: "w1", Connector: conn, Credentials: tracker.Credentials{Token: key},
		Ledger: l, Clock: clock.System{}})
	return run{w: wd.Writer, l: l, e: e, team: team}
}

func (r run) ensure(key string) (writes.Result, map[string]int, error) {
	r.e.ResetCounts()
	res, err := r.w.EnsureItem(context.Background(), writes.EnsureParams{Tenant: "t1", Workspace: "w1", Key: key,
		Draft: tracker.Draft{Title: "build failed: " + key, Labels: []string{"ci"}}, Correlation: "run"})
	return res, r.e.RequestCounts(), err
}

// TestFilingThroughTheWritePath: a filing is one request, and a run that
// dies between Linear's create and relayr's record, or whose create's
// answer is lost, files one issue however often it is retried, whatever
// Linear answers a second create of an id.
func TestFilingThroughTheWritePath(t *testing.T) {
	for _, dup := range []linearemu.DuplicateAnswer{linearemu.DuplicateError, linearemu.DuplicateSuccess} {
		opts := linearemu.Options{DuplicateID: dup}
		t.Run(fmt.Sprintf("ANewFilingIsOneRequest/dup%d", dup), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRun(t, opts)
				if _, _, err := r.ensure("warm"); err != nil {
					t.Fatal(err)
				}
				res, got, err := r.ensure("k1")
				if err != nil || res.How != writes.Created || !maps.Equal(got, map[string]int{routeCreate: 1, routeAttach: 1}) {
					t.Fatalf("%s %v, requests %v, want one request of a create and its key", res.How, err, got)
				}
				if res.Item.Ref.Key != "k1" || !slices.Equal(res.Item.Labels, []string{"ci"}) {
					t.Fatalf("filed %+v", res.Item)
				}
			})
		})
		t.Run(fmt.Sprintf("ARunThatDiedBeforeItsRecordIsFoundNotFiledAgain/dup%d", dup), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRun(t, opts)
				r.l.Arm()
				if _, _, err := r.ensure("k1"); err == nil {
					t.Fatal("the run recorded")
				}
				time.Sleep(writes.DefaultRetakeAfter + time.Second)
				res, _, err := r.ensure("k1")
				if err != nil || (res.How != writes.Found && res.How != writes.Existing) {
					t.Fatalf("the retry: %s %v, want found", res.How, err)
				}
				if n := r.e.Titles(r.team)["build failed: k1"]; n != 1 {
					t.Fatalf("%d issues for k1, want one", n)
				}
			})
		})
		for _, applied := range []bool{false, true} {
			t.Run(fmt.Sprintf("ALostCreateFilesOnce/applied%v/dup%d", applied, dup), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					r := newRun(t, opts)
					if _, _, err := r.ensure("warm"); err != nil {
						t.Fatal(err)
					}
					r.e.Fail(1, emukit.Fault{Kind: emukit.Drop, Route: routeCreate, Applied: applied})
					_, _, err := r.ensure("k1")
					var res writes.Result
					for range 10 {
						if err == nil {
							break
						}
						if !writes.CodeOf(err).Retryable() {
							t.Fatalf("a retry: %v, want retryable", err)
						}
						time.Sleep(writes.DefaultRetakeAfter + time.Second)
						res, _, err = r.ensure("k1")
					}
					if err != nil {
						t.Fatalf("the retries: %v", err)
					}
					_ = res
					if n := r.e.Titles(r.team)["build failed: k1"]; n != 1 {
						t.Fatalf("%d issues for k1, want one", n)
					}
				})
			})
		}
	}
}

// Three callers retrying one key at once file one issue, whichever way
// Linear answers a second create of an id.
func TestRacingCallersFileOnce(t *testing.T) {
	for name, dup := range map[string]linearemu.DuplicateAnswer{"DuplicateRefused": linearemu.DuplicateError, "DuplicateAnsweredWithTheIssue": linearemu.DuplicateSuccess} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRun(t, linearemu.Options{DuplicateID: dup})
				done := make(chan error, 3)
				for range 3 {
					go func() {
						_, err := r.w.EnsureItem(context.Background(), writes.EnsureParams{Tenant: "t1", Workspace: "w1", Key: "race",
							Draft: tracker.Draft{Title: "raced"}, Correlation: "race"})
						done <- err
					}()
				}
				for range 3 {
					if err := <-done; err != nil {
						t.Fatal(err)
					}
				}
				if n := r.e.Titles(r.team)["raced"]; n != 1 {
					t.Fatalf("%d issues, want one", n)
				}
			})
		})
	}
}
