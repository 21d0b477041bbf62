package figures

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/relayr-go/relayr/apps/relayr/internal/config"
	"github.com/relayr-go/relayr/core/follow"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/gitlabemu"
)

// GitLab's figures run in a project of its own, owned by relayr's bot
// user, whose personal access token relayr holds, and changed by a
// developer of the team in the web UI.
const (
	gitlabProject = "acme/ops"
	gitlabBot     = "relayr-bot"
	gitlabPerson  = "alice"
	// gitlabArchive is the project a person moves an issue to.
	gitlabArchive = "acme/archive"
)

type gitlab struct {
	e     *gitlabemu.Emulator
	srv   *httptest.Server
	token string
	p     *gitlabemu.Person
	hooks hooks
	// deliveries is the client the instance sends its webhooks with.
	deliveries *http.Client
	// listLag is the binding's list_lag (the driver's 5 s when 0), and
	// limits its [bindings.limits] (GitLab.com's when nil).
	listLag time.Duration
	limits  *config.GitLabLimits
}

// newGitLab is a self-managed GitLab with its limits off, as an instance
// is installed (its API throttle is off by default), and the binding's
// limits none: the figures measure relayr, paced by its budget as on
// GitHub. GitLab.com's limits are the driver's to keep, measured on
// virtual time by adapters/gitlab's BenchmarkGitLabRequests, and kept in
// TestTheWholeLoopHoldsOnGitLab. Its lists read current.
func newGitLab(now func() time.Time) *gitlab {
	return newGitLabSite(gitlabemu.Options{Now: now}, 0, &config.GitLabLimits{Requests: -1, IssueCreates: -1, Notes: -1})
}

// newGitLabSite is an instance set up by opts (its clock, its limits, its
// lists' lag), whose binding takes listLag and limits, delivering its
// webhooks on loopback.
func newGitLabSite(opts gitlabemu.Options, listLag time.Duration, limits *config.GitLabLimits) *gitlab {
	opts.WebhookClient = &http.Client{Transport: loopback(), Timeout: 10 * time.Second}
	e, srv := gitlabemu.NewServer(opts)
	g := &gitlab{e: e, srv: srv, token: e.AddToken(gitlabBot), deliveries: opts.WebhookClient, listLag: listLag, limits: limits}
	e.CreateProject(gitlabProject, gitlabBot)
	e.CreateProject(gitlabArchive, gitlabBot)
	g.p = e.Person(gitlabPerson, gitlabProject)
	return g
}

func (g *gitlab) Name() string { return "GitLab" }

func (g *gitlab) Binding() config.Binding {
	return config.Binding{
		Tenant: tenant, Workspace: workspace, Tracker: "gitlab", BaseURL: g.srv.URL, Project: gitlabProject,
		ListLag: config.Duration{Duration: g.listLag}, Limits: g.limits,
	}
}

func (g *gitlab) Credentials() tracker.Credentials {
	return tracker.Credentials{Token: g.token, WebhookSecret: webhookSecret}
}

func (g *gitlab) Requests() int  { return g.e.TotalRequests() }
func (g *gitlab) ResetRequests() { g.e.ResetCounts() }

func (g *gitlab) PersonCreate(title string) (string, error) {
	n, err := g.p.CreateIssue(title, "")
	return strconv.FormatInt(n, 10), err
}

func (g *gitlab) PersonRetitle(id, title string) error { return g.p.Retitle(number(id), title) }

func (g *gitlab) PersonComment(id, text string) error {
	_, err := g.p.Comment(number(id), text)
	return err
}

// PersonDelete deletes the issue for good, as its owner does in the web
// UI: GitLab sends no webhook for it, and the sweep finds it.
func (g *gitlab) PersonDelete(id string) error { return g.p.Delete(number(id)) }

// Forward registers one project webhook for issue and note events, its
// secret token the tenant's webhook secret.
func (g *gitlab) Forward(url string) {
	g.hooks.once(url, func() { g.e.AddHook(gitlabProject, url, webhookSecret, "") })
}

// Titles implements counting.
func (g *gitlab) Titles() map[string]int { return g.e.Titles(gitlabProject) }

// CloseIdleConnections implements delivering.
func (g *gitlab) CloseIdleConnections() { g.deliveries.CloseIdleConnections() }

func (g *gitlab) Close() {
	g.srv.Close()
	g.e.Close()
}

// TestTheWholeLoopHoldsOnGitLab runs relayr, in-process, over the GitLab
// emulation on GitLab.com's limits, with its project webhook forwarded to
// relayr's webhook route, and drives it through the HTTP API as
// automation does while a person works in GitLab, as
// TestTheWholeLoopHoldsOnJira does on Jira: three callers file each of 20
// keys at once; a rule edits every item (labels and state, then the
// title); a person retitles one of relayr's issues, comments on another
// and labels a third within the minute of the rule's edits (GitLab's
// throttled touch leaves their updated_at as it was: the followers read
// them again until the quiet span is over), closes a fourth, moves a
// fifth to another project and closes it there (followed: its closing
// there is its key's one change; no deletion, no new issue), files
// an issue of their own, and deletes two of relayr's issues (no webhook:
// the sweep, run every two seconds here, finds them).
//
// Then it holds the outcome to what happened: one GitLab issue per key,
// every caller of a key answered that issue, the feed holds each of the
// person's changes once and nothing else, and GitLab answered nothing 429
// (the driver keeps GitLab.com's limits unsent). It runs with GitLab's
// lists current, and with them 2 s behind writes (a replica), the
// binding's list_lag (3 s) above it: the service runs on real time, so
// the lag is kept short.
func TestTheWholeLoopHoldsOnGitLab(t *testing.T) {
	for _, c := range []struct {
		name string
		// lag is the emulated lists'; listLag the binding's (the
		// driver's 5 s when 0).
		lag, listLag time.Duration
		// binary runs relayr as the built binary, `relayr serve`.
		binary bool
	}{
		{"ListsCurrent", 0, 0, false},
		{"ListsLag2s", 2 * time.Second, 3 * time.Second, false},
		{"ThroughTheBinary", 0, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*loopDeadline)
			defer cancel()
			opts := gitlabemu.GitLabCom()
			opts.Now, opts.ListLag = time.Now, c.lag
			g := newGitLabSite(opts, c.listLag, nil)
			s := startService(t, g, serviceOptions{serve: true, binary: c.binary, timings: config.Timings{
				Poll: config.Duration{Duration: loopPoll}, Debounce: config.Duration{Duration: quietDebounce},
				// GitLab sends no webhook for a deletion: the sweep finds
				// it, here within seconds, not the day's.
				Sweep: config.Duration{Duration: 2 * time.Second}, SweepMin: config.Duration{Duration: time.Second},
				Budget: unlimited,
			}})
			g.Forward(s.hookURL())
			feed := &feedReader{s: s}
			start := time.Now()

			keys, items := fileAtOnce(t, ctx, s)
			t.Logf("%d callers filed %d keys in %s", loopCallers*loopKeys, loopKeys, time.Since(start).Round(time.Millisecond))
			holdsOneGitLabIssuePerKey(t, g, keys, items, nil)
			if t.Failed() {
				t.FailNow()
			}

			edited := time.Now()
			ruleEdits(t, ctx, s, keys)
			t.Logf("the rule edited %d items in %s", loopKeys, time.Since(edited).Round(time.Millisecond))

			changes, err := gitlabPersonsChanges(g, items, keys)
			if err != nil {
				t.Fatalf("the person's changes: %v", err)
			}
			last := time.Now()

			if err := feed.until(ctx, loopDeadline, func() bool { return matchAll(changes, feed) }); err != nil {
				t.Errorf("the feed: %v", err)
			}
			arrived := time.Since(last)
			if err := s.awaitPollBegunAfter(ctx, last.Add(c.lag)); err != nil {
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
			holdsOneGitLabIssuePerKey(t, g, keys, items, changes)
			if n := g.e.Over(); n != 0 {
				t.Errorf("GitLab answered %d requests over its limits", n)
			}
		})
	}
}

// gitlabPersonsChanges makes the person's changes in GitLab's web UI,
// right after the rule's edits, and answers them as the feed must hold
// them.
func gitlabPersonsChanges(g *gitlab, items map[string]string, keys []string) ([]*change, error) {
	renamed, comment, own, urgent := "renamed by a person", "a person's comment", "a person's own issue", "urgent"
	retitled, commented, labelled, closed, moved := items[keys[3]], items[keys[5]], items[keys[6]], items[keys[7]], items[keys[9]]
	// The rule left label and "triaged" on every item, state started.
	withUrgent := jsonLabels(label, "triaged", urgent)
	changes := []*change{
		{what: "the retitle of " + keys[3], act: func() error { return g.p.Retitle(number(retitled), renamed) },
			typ: follow.TypeItemChanged, item: retitled, field: tracker.FieldTitle, value: jsonText(renamed)},
		{what: "the comment on " + keys[5], act: func() error { _, err := g.p.Comment(number(commented), comment); return err },
			typ: follow.TypeItemCommented, item: commented, body: comment},
		{what: "the label on " + keys[6], act: func() error { return g.p.AddLabel(number(labelled), urgent) },
			typ: follow.TypeItemChanged, item: labelled, field: tracker.FieldLabels, value: withUrgent},
		{what: "the closing of " + keys[7], act: func() error { return g.p.Close(number(closed)) },
			typ: follow.TypeItemChanged, item: closed, field: tracker.FieldState, value: jsonText(string(tracker.Done))},
		// The move is followed: the issue's closing where it went is its
		// key's change, and the move itself (the original closed, a new
		// issue) is no event.
		{what: "the move of " + keys[9] + " and its closing where it went", act: func() error {
			n, err := g.p.Move(number(moved), gitlabArchive)
			if err != nil {
				return err
			}
			return g.e.Person(gitlabPerson, gitlabArchive).Close(n)
		}, typ: follow.TypeItemChanged, item: moved, field: tracker.FieldState, value: jsonText(string(tracker.Done))},
		{what: "the person's own issue", act: func() error { _, err := g.p.CreateIssue(own, ""); return err },
			typ: follow.TypeItemCreated, title: own},
	}
	for _, key := range keys[10:12] {
		changes = append(changes, &change{what: "the deletion of " + key, act: func() error { return g.PersonDelete(items[key]) },
			typ: follow.TypeItemRemoved, item: items[key]})
	}
	return makeChanges(changes, gitlabPerson)
}

// jsonLabels is a label set's value in an event: its names sorted.
func jsonLabels(names ...string) string {
	slices.Sort(names)
	raw, _ := json.Marshal(names)
	return string(raw)
}

// holdsOneGitLabIssuePerKey checks the project's issues, as GitLab holds
// them, against the keys filed: each key's one issue, the one its callers
// were answered, carrying the key in relayr's marker; and, once the person
// acted (changes), the deleted keys' issues gone, the moved one still
// there, and the person's issue the one without a key.
func holdsOneGitLabIssuePerKey(t *testing.T, g *gitlab, keys []string, items map[string]string, changes []*change) {
	t.Helper()
	deleted, own := map[string]bool{}, 0
	for _, c := range changes {
		switch c.typ {
		case follow.TypeItemRemoved:
			deleted[c.item] = true
		case follow.TypeItemCreated:
			own++
		}
	}
	marker := tracker.HiddenMarker{Source: tracker.Source{Namespace: tracker.DefaultNamespace, Tenant: tenant, Workspace: workspace}}
	perKey, keyless := map[string][]string{}, 0
	// iids are a project's sequence: every issue ever made is at most
	// every caller's filing and the person's.
	for iid := int64(1); iid <= loopKeys*loopCallers+10; iid++ {
		is, ok := g.e.Issue(gitlabProject, iid)
		if !ok {
			continue
		}
		key, _ := marker.Unmark(is.Description)
		if key == "" {
			keyless++
			continue
		}
		perKey[key] = append(perKey[key], strconv.FormatInt(iid, 10))
	}
	for _, key := range keys {
		want := []string{items[key]}
		if deleted[items[key]] {
			want = nil
		}
		if got := perKey[key]; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: GitLab holds issues %v under it, want %v", key, got, want)
		}
		delete(perKey, key)
	}
	for key, ids := range perKey {
		t.Errorf("GitLab holds issues %v under %s, which no caller filed", ids, key)
	}
	if keyless != own {
		t.Errorf("GitLab holds %d issues without relayr's key, the person filed %d", keyless, own)
	}
}
