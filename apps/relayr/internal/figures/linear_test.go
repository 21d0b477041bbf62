package figures

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relayr-go/relayr/apps/relayr/internal/config"
	"github.com/relayr-go/relayr/core/follow"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/linearemu"
)

// Linear's figures run in a team of their own, ENG, of workspace acme,
// filed by relayr's bot user, whose personal API key relayr holds, and
// changed by a member of the team in Linear's app.
const (
	linearTeam = "ENG"
	// linearArchive is the team a person moves an issue to.
	linearArchive = "OPS"
)

// linearPoll is the follower's poll in Linear's whole loop: the budget
// keeps the polls of the hour (ADR-0036's floor) out of Linear's 2,500
// requests an hour, and the loop's 1 s poll would want 3,600 of them,
// leaving a write none; a person's changes reach relayr by webhook.
const linearPoll = 5 * time.Second

type linear struct {
	e      *linearemu.Emulator
	srv    *httptest.Server
	key    string
	team   string // ENG's UUID
	other  string // OPS's UUID
	person string // the person's user UUID, as Linear names them
	p      *linearemu.Person
	hooks  hooks
	// deliveries is the client the workspace sends its webhooks with.
	deliveries *http.Client
	// base is what the emulation had charged at the last ResetRequests.
	base atomic.Int64
}

// newLinear is Linear's workspace with its limits off: Linear's limits
// are an hour's (2,500 requests, 250,000 complexity points a user), which
// relayr's budget keeps (budget.TrackerWindows) and a figure of filings a
// second would measure; its adapter's benchmark (BenchmarkLinearRequests)
// measures what a filing and a poll cost on virtual time instead, and
// TestTheWholeLoopHoldsOnLinear runs with them on.
func newLinear(now func() time.Time) *linear { return newLinearSite(linearemu.Options{Now: now}) }

// newLinearSite is a workspace set up by opts (its clock, its limits),
// delivering its webhooks on loopback.
func newLinearSite(opts linearemu.Options) *linear {
	opts.WebhookClient = &http.Client{Transport: loopback(), Timeout: 10 * time.Second}
	e, srv := linearemu.NewServer(opts)
	l := &linear{e: e, srv: srv, deliveries: opts.WebhookClient}
	l.key = e.AddKey(e.AddUser("relayr bot", false))
	l.person = e.AddUser("Ana Person", false)
	l.p = e.Person(l.person)
	l.team = e.AddTeam(linearTeam, "Engineering")
	l.other = e.AddTeam(linearArchive, "Operations")
	return l
}

func (l *linear) Name() string { return "Linear" }

func (l *linear) Binding() config.Binding {
	return config.Binding{Tenant: tenant, Workspace: workspace, Tracker: "linear", BaseURL: l.srv.URL + "/graphql", Team: linearTeam}
}

func (l *linear) Credentials() tracker.Credentials {
	return tracker.Credentials{Token: l.key, WebhookSecret: webhookSecret}
}

// Requests counts HTTP requests as Linear's limit does (the emulation's
// Spent), not its root fields: the driver sends a read of the issues
// changed and the comments made since as one request of two fields.
func (l *linear) Requests() int {
	n, _ := l.e.Spent()
	return n - int(l.base.Load())
}

func (l *linear) ResetRequests() {
	n, _ := l.e.Spent()
	l.base.Store(int64(n))
}

func (l *linear) PersonCreate(title string) (string, error) {
	return l.p.CreateIssue(l.team, title, "")
}
func (l *linear) PersonRetitle(id, title string) error { return l.p.Retitle(id, title) }

func (l *linear) PersonComment(id, text string) error {
	_, err := l.p.Comment(id, text)
	return err
}

// PersonDelete moves the issue to the trash, as a member deletes one in
// Linear's app: an Issue "remove" webhook is sent, and the issue reads as
// deleted.
func (l *linear) PersonDelete(id string) error { return l.p.Trash(id) }

// Forward registers one team webhook for Issue and Comment events,
// signed with the tenant's webhook secret; a trashing's remove comes with
// them.
func (l *linear) Forward(url string) {
	l.hooks.once(url, func() { l.e.AddWebhook(l.team, url, webhookSecret) })
}

func (l *linear) ForwardDeletions(url string) { l.Forward(url) }

// Titles implements counting.
func (l *linear) Titles() map[string]int { return l.e.Titles(l.team) }

// CloseIdleConnections implements delivering.
func (l *linear) CloseIdleConnections() { l.deliveries.CloseIdleConnections() }

func (l *linear) Close() {
	l.srv.Close()
	l.e.Close()
}

// TestTheWholeLoopHoldsOnLinear runs relayr, in-process, over Linear's
// emulation on Linear's documented limits (2,500 requests and 250,000
// complexity points an hour a user), with its team webhook forwarded to
// relayr's webhook route, and drives it through the HTTP API as
// automation does while a person works in Linear, as
// TestTheWholeLoopHoldsOnJira does on Jira: three callers file each of 20
// keys at once, each retrying what relayr answers retryable; a rule edits
// every item (labels and state, then the title); a person retitles one of
// relayr's issues, comments on another, labels a third, completes a
// fourth, moves a fifth to another team (it is gone from the bound team:
// the sweep, run every two seconds here, finds it deleted), files an issue
// of their own, and trashes two of relayr's issues (Linear's remove
// webhook).
//
// Then it holds the outcome to what happened: one Linear issue per key,
// under the id the key derives, every caller of a key answered that
// issue, the feed holds each of the person's changes once and nothing
// else, and Linear answered nothing RATELIMITED. It runs in each of the
// emulation's positions on what Linear leaves undocumented that touch the
// loop: a second create of an id refused or answered with the issue, and
// comments moving their issue's updatedAt or not.
func TestTheWholeLoopHoldsOnLinear(t *testing.T) {
	for _, c := range []struct {
		name string
		opts linearemu.Options
		// binary runs relayr as the built binary, `relayr serve`.
		binary bool
	}{
		{"AsDocumented", linearemu.Options{}, false},
		{"DuplicateAnsweredCommentsMoveUpdatedAt", linearemu.Options{DuplicateID: linearemu.DuplicateSuccess, CommentsMoveUpdatedAt: true}, false},
		{"ThroughTheBinary", linearemu.Options{CommentsOldestFirst: true}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*loopDeadline)
			defer cancel()
			opts := c.opts
			opts.Now, opts.RequestsPerHour, opts.ComplexityPerHour = time.Now, 2500, 250_000
			l := newLinearSite(opts)
			s := startService(t, l, serviceOptions{serve: true, binary: c.binary, timings: config.Timings{
				Poll: config.Duration{Duration: linearPoll}, Debounce: config.Duration{Duration: quietDebounce},
				// A move to another team sends the bound team no webhook:
				// the sweep finds it, here within seconds, not the day's.
				Sweep: config.Duration{Duration: 2 * time.Second}, SweepMin: config.Duration{Duration: time.Second},
				Budget: unlimited,
			}})
			l.Forward(s.hookURL())
			feed := &feedReader{s: s}
			start := time.Now()

			keys, items := fileAtOnce(t, ctx, s)
			t.Logf("%d callers filed %d keys in %s", loopCallers*loopKeys, loopKeys, time.Since(start).Round(time.Millisecond))
			holdsOneLinearIssuePerKey(t, l, keys, items, nil)
			if t.Failed() {
				t.FailNow()
			}

			edited := time.Now()
			ruleEdits(t, ctx, s, keys)
			t.Logf("the rule edited %d items in %s", loopKeys, time.Since(edited).Round(time.Millisecond))

			changes, err := linearPersonsChanges(l, items, keys)
			if err != nil {
				t.Fatalf("the person's changes: %v", err)
			}
			last := time.Now()

			if err := feed.until(ctx, loopDeadline, func() bool { return matchAll(changes, feed) }); err != nil {
				t.Errorf("the feed: %v", err)
			}
			arrived := time.Since(last)
			if err := s.awaitPollBegunAfter(ctx, last); err != nil {
				t.Fatal(err)
			}
			if err := feed.drain(ctx); err != nil {
				t.Fatal(err)
			}
			t.Logf("the person's changes were in the feed %s after the last; %d events in all; run took %s",
				arrived.Round(time.Millisecond), len(feed.events), time.Since(start).Round(time.Millisecond))

			holdsTheFeed(t, changes, feed)
			for _, ch := range changes {
				if ch.first >= 0 {
					t.Logf("%s reached the feed %s after it was made", ch.what, feed.at[ch.first].Sub(ch.made).Round(time.Millisecond))
				}
			}
			holdsOneLinearIssuePerKey(t, l, keys, items, changes)
			requests, points := l.e.Spent()
			t.Logf("Linear was sent %d requests costing %d complexity points", requests, points)
			if n := l.e.Limited(); n != 0 {
				t.Errorf("Linear answered %d requests RATELIMITED", n)
			}
		})
	}
}

// linearPersonsChanges makes the person's changes in Linear's app, right
// after the rule's edits, and answers them as the feed must hold them.
func linearPersonsChanges(l *linear, items map[string]string, keys []string) ([]*change, error) {
	renamed, comment, own, urgent := "renamed by a person", "a person's comment", "a person's own issue", "urgent"
	retitled, commented, labelled, completed, moved := items[keys[3]], items[keys[5]], items[keys[6]], items[keys[7]], items[keys[9]]
	// The rule left label and "triaged" on every item, state started.
	changes := []*change{
		{what: "the retitle of " + keys[3], act: func() error { return l.p.Retitle(retitled, renamed) },
			typ: follow.TypeItemChanged, item: retitled, field: tracker.FieldTitle, value: jsonText(renamed)},
		{what: "the comment on " + keys[5], act: func() error { _, err := l.p.Comment(commented, comment); return err },
			typ: follow.TypeItemCommented, item: commented, body: comment},
		{what: "the label on " + keys[6], act: func() error { return l.p.SetLabels(labelled, []string{label, "triaged", urgent}) },
			typ: follow.TypeItemChanged, item: labelled, field: tracker.FieldLabels, value: jsonLabels(label, "triaged", urgent)},
		{what: "the completion of " + keys[7], act: func() error { return l.p.SetStateType(completed, "completed") },
			typ: follow.TypeItemChanged, item: completed, field: tracker.FieldState, value: jsonText(string(tracker.Done))},
		{what: "the move of " + keys[9], act: func() error { return l.p.MoveTeam(moved, l.other) },
			typ: follow.TypeItemRemoved, item: moved},
		{what: "the person's own issue", act: func() error { _, err := l.p.CreateIssue(l.team, own, ""); return err },
			typ: follow.TypeItemCreated, title: own},
	}
	for _, key := range keys[10:12] {
		changes = append(changes, &change{what: "the trashing of " + key, act: func() error { return l.PersonDelete(items[key]) },
			typ: follow.TypeItemRemoved, item: items[key]})
	}
	return makeChanges(changes, l.person)
}

// holdsOneLinearIssuePerKey checks the team's issues, as Linear holds
// them, against the keys filed: each key's one issue, the one its callers
// were answered, carrying the key in relayr's attachment; and, once the
// person acted (changes), the trashed keys' issues in the trash, the
// moved one in the other team, and the person's issue the one without a
// key.
func holdsOneLinearIssuePerKey(t *testing.T, l *linear, keys []string, items map[string]string, changes []*change) {
	t.Helper()
	removed, own := map[string]bool{}, 0
	for _, c := range changes {
		switch c.typ {
		case follow.TypeItemRemoved:
			removed[c.item] = true
		case follow.TypeItemCreated:
			own++
		}
	}
	// The attachment's URL names the workspace's source and the key
	// (linear.DefaultKeyURL).
	src := tracker.Source{Namespace: tracker.DefaultNamespace, Tenant: tenant, Workspace: workspace}
	prefix := "https://relayr.invalid/key/" + url.PathEscape(src.String()) + "/"
	perKey, keyless, seen := map[string][]string{}, 0, map[string]bool{}
	// Identifiers are a team's sequence; a moved issue keeps its old one
	// among its previous identifiers, and is read by its id below.
	for n := 1; n <= loopKeys*loopCallers+10; n++ {
		is, ok := l.e.Issue(linearTeam + "-" + strconv.Itoa(n))
		if !ok || seen[is.ID] || is.TeamID != l.team {
			continue
		}
		seen[is.ID] = true
		if removed[is.ID] && !is.Trashed {
			t.Errorf("issue %s is out of the trash", is.ID)
		}
		key := ""
		for _, a := range is.Attachments {
			if rest, ok := strings.CutPrefix(a, prefix); ok {
				key, _ = url.PathUnescape(rest)
			}
		}
		if key == "" {
			keyless++
			continue
		}
		perKey[key] = append(perKey[key], is.ID)
	}
	for _, key := range keys {
		want := []string{items[key]}
		if removed[items[key]] {
			if is, ok := l.e.Issue(items[key]); !ok || (is.TeamID == l.team) == !is.Trashed {
				t.Errorf("%s: issue %s is %+v, want it trashed or in another team", key, items[key], is)
			}
			if is, _ := l.e.Issue(items[key]); is.TeamID != l.team {
				want = nil
			}
		}
		if got := perKey[key]; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: Linear holds issues %v under it, want %v", key, got, want)
		}
		delete(perKey, key)
	}
	for key, ids := range perKey {
		t.Errorf("Linear holds issues %v under %s, which no caller filed", ids, key)
	}
	if keyless != own {
		t.Errorf("Linear holds %d issues without relayr's key, the person filed %d", keyless, own)
	}
}
