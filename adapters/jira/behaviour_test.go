package jira_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/jira"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/jiraemu"
)

// TestARulesBurstOnOneIssueIsPacedNeverRefused: a rule editing one issue
// sixty times as fast as it can (a retitle and a state change each) is
// held within Jira's per-issue windows by the driver: every edit lands and
// Jira answers none over its limit.
func TestARulesBurstOnOneIssueIsPacedNeverRefused(t *testing.T) {
	em := newEmulated(t, jiraemu.Options{}, jira.Config{})
	d := em.driver(t)
	ctx := context.Background()
	it, err := d.Create(ctx, "burst", tracker.Draft{Title: "burst"})
	if err != nil {
		t.Fatal(err)
	}
	start := em.clock.Now()
	states := []tracker.State{tracker.Started, tracker.Todo}
	for i := range 60 {
		title, state := fmt.Sprintf("edit %d", i), states[i%2]
		if _, err := d.Update(ctx, it.Ref.ID, tracker.Patch{Title: &title, State: &state}); err != nil {
			t.Fatalf("edit %d: %v", i, err)
		}
	}
	if n := em.e.Limited(); n != 0 {
		t.Fatalf("Jira answered %d requests over its limits", n)
	}
	if took := em.clock.Now().Sub(start); took < 30*time.Second {
		t.Fatalf("120 writes to one issue took %s: not paced to Jira's 100 in 30 s", took)
	}
	got, _ := em.e.Issue(it.Ref.ID)
	if got.Summary != "edit 59" {
		t.Fatalf("the last edit did not land: %q", got.Summary)
	}
}

// TestAnUnpacedBurstMeetsJirasLimit shows the emulation keeps the window
// the pacing keeps to: 21 PUTs on one issue sent at once, outside the
// driver, are answered 429 for the 21st, with its reason.
func TestAnUnpacedBurstMeetsJirasLimit(t *testing.T) {
	em := newEmulated(t, jiraemu.Options{}, jira.Config{})
	it, err := em.driver(t).Create(context.Background(), "k", tracker.Draft{Title: "one"})
	if err != nil {
		t.Fatal(err)
	}
	var last *http.Response
	for i := range 21 {
		req, _ := http.NewRequest(http.MethodPut, em.srv.URL+"/rest/api/3/issue/"+it.Ref.ID, strings.NewReader(fmt.Sprintf(`{"fields":{"summary":"s%d"}}`, i)))
		req.SetBasicAuth(botEmail, em.token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := em.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		last = resp
	}
	if last.StatusCode != http.StatusTooManyRequests || last.Header.Get("RateLimit-Reason") != "jira-per-issue-on-write" || last.Header.Get("Retry-After") == "" {
		t.Fatalf("the 21st write in 2 s: %d %v, want 429 per issue", last.StatusCode, last.Header)
	}
}

// TestReadingBackInTheAccountsZone: JQL reads times to the minute in the
// account's time zone; every issue changed at or after a poll's since is
// read, for an account far east and far west of UTC and one in New York
// across the night its clocks turn back.
func TestReadingBackInTheAccountsZone(t *testing.T) {
	for _, c := range []struct {
		zone  string
		start time.Time
	}{
		{"Pacific/Kiritimati", t0},
		{"Pacific/Pago_Pago", t0},
		{"America/New_York", time.Date(2026, 11, 1, 5, 20, 0, 0, time.UTC)},
		{"America/New_York", time.Date(2026, 3, 8, 6, 20, 0, 0, time.UTC)},
	} {
		t.Run(c.zone+c.start.Format("0102"), func(t *testing.T) {
			loc, err := time.LoadLocation(c.zone)
			if err != nil {
				t.Fatal(err)
			}
			clk := jiraemu.NewClock(c.start)
			e, srv := jiraemu.NewServer(jiraemu.Options{Now: clk.Now, WebhookClient: discard()})
			t.Cleanup(srv.Close)
			e.AddUser(botAccount, "relayr bot", loc)
			e.AddUser(personID, "Ana Person", nil)
			token := e.AddToken(botEmail, botAccount)
			e.CreateProject(projectKey, "Operations", jiraemu.DefaultWorkflow())
			conn, err := jira.NewConnector(jira.Config{BaseURL: srv.URL, Project: projectKey, Email: botEmail, Client: srv.Client(), Now: clk.Now, SearchLag: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			d, err := conn.Driver(context.Background(), tracker.Credentials{Token: token}, source)
			if err != nil {
				t.Fatal(err)
			}
			p := e.Person(personID)
			var ids []string
			for i := range 12 {
				id, err := p.Create(projectKey, fmt.Sprintf("issue %d", i), "")
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
				clk.Advance(11 * time.Minute)
			}
			// Every issue changed at or after each one's time is read.
			for i, id := range ids {
				is, _ := e.Issue(id)
				items := readAll(t, d, is.Updated)
				for _, want := range ids[i:] {
					if !slices.ContainsFunc(items, func(it tracker.Item) bool { return it.Ref.ID == want }) {
						t.Fatalf("a read since %v (%s) missed issue %s", is.Updated, is.Updated.In(loc), want)
					}
				}
				if !slices.IsSortedFunc(items, func(a, b tracker.Item) int {
					if (tracker.Cursor{UpdatedAt: a.UpdatedAt, ID: a.Ref.ID}).Before(tracker.Cursor{UpdatedAt: b.UpdatedAt, ID: b.Ref.ID}) {
						return -1
					}
					return 1
				}) {
					t.Fatal("a read out of (updated, id) order")
				}
			}
			if v := e.Violations(); len(v) > 0 {
				t.Fatalf("outside the description: %v", v)
			}
		})
	}
}

func readAll(t *testing.T, d tracker.Driver, since time.Time) []tracker.Item {
	t.Helper()
	var out []tracker.Item
	q := tracker.Query{Since: since}
	for {
		pg, err := d.Items(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, pg.Items...)
		if pg.Next == "" {
			return out
		}
		q.Page = pg.Next
	}
}

// TestAStateTheWorkflowCannotReachIsRefused: on Jira's classic workflow a
// resolved issue has no transition to In Progress: the change is refused,
// typed, and nothing is sent but the read of the transitions.
func TestAStateTheWorkflowCannotReachIsRefused(t *testing.T) {
	clk := jiraemu.NewClock(t0)
	e, srv := jiraemu.NewServer(jiraemu.Options{Now: clk.Now, WebhookClient: discard()})
	t.Cleanup(srv.Close)
	e.AddUser(botAccount, "relayr bot", nil)
	token := e.AddToken(botEmail, botAccount)
	e.CreateProject("CL", "Classic", jiraemu.ClassicWorkflow())
	conn, err := jira.NewConnector(jira.Config{BaseURL: srv.URL, Project: "CL", Email: botEmail, Client: srv.Client(), Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := conn.Connect(context.Background(), tracker.Credentials{Token: token}, source)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Holds(tracker.Backlog) != tracker.Todo || tr.Holds(tracker.Cancelled) != tracker.Done {
		t.Fatalf("the classic workflow holds backlog as %s, cancelled as %s", tr.Holds(tracker.Backlog), tr.Holds(tracker.Cancelled))
	}
	ctx := context.Background()
	it, err := tr.Create(ctx, "k", tracker.Draft{Title: "resolved at once", State: tracker.Done})
	if err != nil || it.State != tracker.Done {
		t.Fatalf("a done filing: %+v %v", it, err)
	}
	e.ResetCounts()
	started := tracker.Started
	_, err = tr.Update(ctx, it.Ref.ID, tracker.Patch{State: &started})
	if !errors.Is(err, tracker.ErrRefused) || !errors.Is(err, jira.ErrNoTransition) {
		t.Fatalf("resolved to started: %v, want refused: no transition", err)
	}
	if n := e.Requests("POST /rest/api/3/issue/{issueIdOrKey}/transitions"); n != 0 {
		t.Fatalf("%d transitions sent", n)
	}
	// One transition away, it is taken.
	todo := tracker.Todo
	if got, err := tr.Update(ctx, it.Ref.ID, tracker.Patch{State: &todo}); err != nil || got.State != tracker.Todo {
		t.Fatalf("resolved to todo (reopened): %+v %v", got, err)
	}
}

// TestAWalkMissesNoIssueUpdatedUnderIt: a read of 250 changed issues,
// three pages, while a person updates issues the walk has read and has
// yet to read: every issue is read, the updated ones after their update.
func TestAWalkMissesNoIssueUpdatedUnderIt(t *testing.T) {
	em := newEmulated(t, jiraemu.Options{NoLimits: true}, jira.Config{SearchLag: time.Second})
	d := em.driver(t)
	since := em.clock.Now()
	var ids []string
	for i := range 250 {
		id, err := em.person.Create(projectKey, fmt.Sprintf("issue %d", i), "")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		em.clock.Advance(time.Second)
	}
	seen := map[string]string{}
	q := tracker.Query{Since: since}
	for pages := 0; ; pages++ {
		pg, err := d.Items(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range pg.Items {
			seen[it.Ref.ID] = it.Title
		}
		if pages == 0 {
			// Under the walk: one read already, one not yet.
			em.clock.Advance(time.Second)
			for _, id := range []string{ids[10], ids[200]} {
				if err := em.person.Retitle(id, "moved under the walk"); err != nil {
					t.Fatal(err)
				}
			}
		}
		if pg.Next == "" {
			break
		}
		if pages > 10 {
			t.Fatal("the walk does not end")
		}
		q.Page = pg.Next
	}
	for _, id := range ids {
		if _, ok := seen[id]; !ok {
			t.Fatalf("issue %s was never read", id)
		}
	}
	if seen[ids[10]] != "moved under the walk" || seen[ids[200]] != "moved under the walk" {
		t.Fatalf("the issues updated under the walk read as %q and %q", seen[ids[10]], seen[ids[200]])
	}
	if _, err := d.Items(context.Background(), tracker.Query{Since: since, Page: "not-a-page"}); !errors.Is(err, tracker.ErrInvalid) {
		t.Fatalf("a page the driver never gave: %v", err)
	}
}
