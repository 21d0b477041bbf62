package figures

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/httpapi"
	"github.com/relayr-go/relayr/apps/relayr/internal/config"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/follow"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
	"github.com/relayr-go/relayr/fixtures/jiraemu"
)

// The whole loop's run: keys filed by callers at once, a rule's edits, a
// person's hand.
const (
	loopKeys    = 20
	loopCallers = 3 // a CI job and two re-runs, arriving together
	// loopCallerWait is what each caller tells relayr it waits (Prefer:
	// wait), and loopAttempts how often it sends a write before it gives
	// up, as the stalled figure's callers do.
	loopCallerWait = 15 * time.Second
	loopAttempts   = 6
	// loopPoll is the follower's poll: a webhook's nudge reads at once,
	// and where Jira's search lags the nudge's read comes before the
	// change shows in it; the next poll reads it. The default 30 s would
	// only make the run longer.
	loopPoll = time.Second
	// loopDeadline bounds the wait for the feed to hold what happened.
	loopDeadline = 45 * time.Second
)

// TestTheWholeLoopHoldsOnJira runs relayr, in-process, over the Jira
// emulation with its webhooks forwarded to relayr's webhook route, and
// drives it through the HTTP API as automation does while a person works
// in Jira:
//
//   - three callers file each of 20 keys at once, each retrying what relayr
//     answers retryable after its Retry-After;
//   - a rule edits every item through the API (labels and state, then the
//     title);
//   - a person retitles one of relayr's issues, comments on another,
//     transitions a third, and files an issue of their own;
//   - the person deletes two of relayr's issues.
//
// Then it holds the outcome to what happened: one Jira issue per key, every
// caller of a key answered that issue, the feed holds each of the person's
// changes once, their issue once and each deletion once, and nothing else
// (none of relayr's own writes as a person's change), and every exchange
// fits Atlassian's description of the API. It runs with Jira's search
// current, and with the search 2 s behind writes, the binding's
// search_lag (3 s) above it: the service runs on real time, so the lag is
// kept short (the driver's tests run a 20 s lag on virtual time).
func TestTheWholeLoopHoldsOnJira(t *testing.T) {
	for _, c := range []struct {
		name string
		// lag is the emulated search's; searchLag the binding's (the
		// driver's 30 s when 0).
		lag, searchLag time.Duration
	}{
		{"SearchCurrent", 0, 0},
		{"SearchLags2s", 2 * time.Second, 3 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*loopDeadline)
			defer cancel()
			j := newJiraSite(jiraemu.Options{Now: time.Now, SearchLag: c.lag}, c.searchLag)
			s := startService(t, j, serviceOptions{serve: true, timings: config.Timings{
				Poll: config.Duration{Duration: loopPoll}, Debounce: config.Duration{Duration: quietDebounce},
				// The loop checks what relayr writes and reads, not the
				// budget's share-out, which at 40 a minute would make the
				// run minutes long.
				Budget: unlimited,
			}})
			j.Forward(s.hookURL())
			feed := &feedReader{s: s}
			start := time.Now()

			keys, items := fileAtOnce(t, ctx, s)
			t.Logf("%d callers filed %d keys in %s", loopCallers*loopKeys, loopKeys, time.Since(start).Round(time.Millisecond))
			holdsOneIssuePerKey(t, j, keys, items, nil)
			if t.Failed() {
				t.FailNow()
			}

			edited := time.Now()
			ruleEdits(t, ctx, s, keys)
			t.Logf("the rule edited %d items in %s", loopKeys, time.Since(edited).Round(time.Millisecond))

			changes, err := personsChanges(j, items, keys)
			if err != nil {
				t.Fatalf("the person's changes: %v", err)
			}
			last := time.Now()

			if err := feed.until(ctx, loopDeadline, func() bool { return matchAll(changes, feed) }); err != nil {
				t.Errorf("the feed: %v", err)
			}
			arrived := time.Since(last)
			// Whatever relayr would publish of what happened, a poll that
			// began once the search showed the last change has published.
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
			holdsOneIssuePerKey(t, j, keys, items, changes)
			// Jira's limits are kept unsent by the driver: its burst
			// buckets and per-issue windows answered nothing 429.
			if n := j.e.Limited(); n != 0 {
				t.Errorf("Jira answered %d requests over its limits", n)
			}
			if v := j.e.Violations(); len(v) > 0 {
				t.Errorf("exchanges outside Atlassian's description:\n%s", strings.Join(v, "\n"))
			}
		})
	}
}

// fileAtOnce files loopKeys fresh keys, each by loopCallers callers at
// once, and answers the keys and each key's issue id, every caller of a
// key having been answered that issue.
func fileAtOnce(t *testing.T, ctx context.Context, s *service) ([]string, map[string]string) {
	t.Helper()
	prefix := keyPrefix() + "loop-"
	keys := make([]string, loopKeys)
	answered := make([][]string, loopKeys)
	var retries, created atomic.Int64
	var wg sync.WaitGroup
	for k := range keys {
		keys[k] = prefix + strconv.Itoa(k)
		answered[k] = make([]string, loopCallers)
		for c := range loopCallers {
			wg.Go(func() {
				var res httpapi.ItemResponse
				req := httpapi.EnsureRequest{Key: keys[k], Title: title(keys[k]), Labels: []string{label}, Correlation: "ci-" + strconv.Itoa(c)}
				n, err := s.retrying(ctx, func(ctx context.Context) error { return s.write(ctx, "items/ensure", req, &res) })
				retries.Add(int64(n))
				if err != nil {
					t.Errorf("caller %d of %s: %v", c, keys[k], err)
					return
				}
				answered[k][c] = res.Item.ID
				if res.How == writes.Created {
					created.Add(1)
				}
			})
		}
	}
	wg.Wait()
	t.Logf("of %d callers, %d were answered created, the rest the item filed; they retried %d times",
		loopKeys*loopCallers, created.Load(), retries.Load())
	items := map[string]string{}
	for k, key := range keys {
		for c, id := range answered[k] {
			if id != answered[k][0] {
				t.Errorf("%s: caller %d was answered issue %s, caller 0 issue %s", key, c, id, answered[k][0])
			}
		}
		items[key] = answered[k][0]
	}
	return keys, items
}

// ruleEdits edits every key's item through the API, the keys at once and
// each key's edits in turn, as a rule reacting to the filings does: the
// labels and the state, then the title.
func ruleEdits(t *testing.T, ctx context.Context, s *service, keys []string) {
	t.Helper()
	started := tracker.Started
	var wg sync.WaitGroup
	for _, key := range keys {
		wg.Go(func() {
			retitled := title(key) + " (triaged)"
			for _, req := range []httpapi.UpdateRequest{
				{Key: key, Labels: &[]string{label, "triaged"}, State: &started, Correlation: "rule"},
				{Key: key, Title: &retitled, Correlation: "rule"},
			} {
				var res httpapi.ItemResponse
				if _, err := s.retrying(ctx, func(ctx context.Context) error { return s.write(ctx, "items/update", req, &res) }); err != nil {
					t.Errorf("the rule's edit of %s: %v", key, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// change is one of the person's changes, as the feed must hold it once.
type change struct {
	what string
	// act makes it, by the person's hand.
	act func() error
	// typ is the event's type; item the issue's id ("" for the person's
	// own issue, known by its title).
	typ, item string
	// field and value are an item_changed's field and new value (JSON);
	// body a comment's, title a created issue's.
	field, value, body, title string
	// person is who made it, as the tracker names them (an event's
	// actor, a comment's author).
	person string
	// made is when the person made it; seen how many events of the feed
	// are it, first the index of the first.
	made        time.Time
	seen, first int
}

func (c *change) matches(e eventlog.Event, d follow.Data) bool {
	if e.Type != c.typ || (c.item != "" && d.Item.ID != c.item) {
		return false
	}
	switch c.typ {
	case follow.TypeItemChanged:
		// The actor is the person, or unknown where the read that showed
		// the change showed relayr's own edits too (ADR-0036): never
		// relayr's account.
		return d.Field == c.field && string(d.New) == c.value && (d.Actor == c.person || d.Actor == "")
	case follow.TypeItemCommented:
		return d.Comment != nil && d.Comment.Body == c.body && d.Comment.Author == c.person
	case follow.TypeItemCreated:
		return d.Item.Key == "" && d.Title == c.title
	case follow.TypeItemRemoved:
		return d.Deleted != nil && *d.Deleted
	}
	return false
}

// personsChanges makes the person's changes in Jira's web UI, right after
// the rule's edits: a retitle, a comment and a transition of three of
// relayr's issues, an issue of their own, and two of relayr's issues
// deleted. It answers them as the feed must hold them.
func personsChanges(j *jira, items map[string]string, keys []string) ([]*change, error) {
	renamed, comment, own := "renamed by a person", "a person's comment", "a person's own issue"
	retitled, commented, closed := items[keys[3]], items[keys[5]], items[keys[7]]
	changes := []*change{
		{what: "the retitle of " + keys[3], act: func() error { return j.p.Retitle(retitled, renamed) },
			typ: follow.TypeItemChanged, item: retitled, field: tracker.FieldTitle, value: jsonText(renamed)},
		{what: "the comment on " + keys[5], act: func() error { _, err := j.p.Comment(commented, comment); return err },
			typ: follow.TypeItemCommented, item: commented, body: comment},
		{what: "the transition of " + keys[7], act: func() error { return j.p.Transition(closed, "Done") },
			typ: follow.TypeItemChanged, item: closed, field: tracker.FieldState, value: jsonText(string(tracker.Done))},
		{what: "the person's own issue", act: func() error { _, err := j.p.Create(jiraProject, own, ""); return err },
			typ: follow.TypeItemCreated, title: own},
	}
	for _, key := range keys[10:12] {
		changes = append(changes, &change{what: "the deletion of " + key, act: func() error { return j.PersonDelete(items[key]) },
			typ: follow.TypeItemRemoved, item: items[key]})
	}
	return makeChanges(changes, jiraPerson)
}

// makeChanges makes each change by the person's hand, in turn.
func makeChanges(changes []*change, person string) ([]*change, error) {
	for _, c := range changes {
		c.person, c.made = person, time.Now()
		if err := c.act(); err != nil {
			return nil, fmt.Errorf("%s: %w", c.what, err)
		}
	}
	return changes, nil
}

func jsonText(s string) string { raw, _ := json.Marshal(s); return string(raw) }

// matchAll counts each change's events in the feed afresh and reports
// whether every change has one.
func matchAll(changes []*change, f *feedReader) bool {
	for _, c := range changes {
		c.seen, c.first = 0, -1
	}
	for i, e := range f.events {
		d, err := follow.DataOf(e)
		if err != nil {
			continue
		}
		for _, c := range changes {
			if c.matches(e, d) {
				if c.seen == 0 {
					c.first = i
				}
				c.seen++
				break
			}
		}
	}
	for _, c := range changes {
		if c.seen == 0 {
			return false
		}
	}
	return true
}

// holdsTheFeed checks that the feed holds each change once and nothing
// else: an event no change of the person's explains is relayr's own
// write come back as a person's.
func holdsTheFeed(t *testing.T, changes []*change, f *feedReader) {
	t.Helper()
	matchAll(changes, f)
	for _, c := range changes {
		if c.seen != 1 {
			t.Errorf("%s is in the feed %d times, want once", c.what, c.seen)
		}
	}
	for _, e := range f.events {
		d, err := follow.DataOf(e)
		explained := false
		for _, c := range changes {
			explained = explained || (err == nil && c.matches(e, d))
		}
		if !explained {
			t.Errorf("an event no change of the person's explains: #%d %s %s", e.Seq, e.Type, e.Data)
		}
	}
}

// holdsOneIssuePerKey checks the project's issues, as Jira holds them,
// against the keys filed: each key's one issue, the one its callers were
// answered, carrying the key in relayr's property; and, once the person
// acted (changes), the deleted keys' issues gone and the person's issue
// the one without a key.
func holdsOneIssuePerKey(t *testing.T, j *jira, keys []string, items map[string]string, changes []*change) {
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
	perKey, keyless := map[string][]string{}, 0
	for _, is := range j.e.Issues(jiraProject) {
		var v struct {
			Key string `json:"key"`
		}
		raw, ok := is.Properties["lattice-key"] // the driver's jira.PropertyKey
		if !ok || json.Unmarshal(raw, &v) != nil || v.Key == "" {
			keyless++
			continue
		}
		perKey[v.Key] = append(perKey[v.Key], is.ID)
	}
	for _, key := range keys {
		want := []string{items[key]}
		if deleted[items[key]] {
			want = nil
		}
		if got := perKey[key]; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: Jira holds issues %v under it, want %v", key, got, want)
		}
		delete(perKey, key)
	}
	for key, ids := range perKey {
		t.Errorf("Jira holds issues %v under %s, which no caller filed", ids, key)
	}
	if keyless != own {
		t.Errorf("Jira holds %d issues without relayr's key, the person filed %d", keyless, own)
	}
}

// feedReader reads the workspace's feed as a consumer does, keeping every
// event and when it arrived.
type feedReader struct {
	s      *service
	after  int64
	events []eventlog.Event
	at     []time.Time
}

// until long-polls the feed until done says it holds enough, for at most
// within.
func (f *feedReader) until(ctx context.Context, within time.Duration, done func() bool) error {
	deadline := time.Now().Add(within)
	for !done() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not everything arrived within %s", within)
		}
		if err := f.read(ctx, time.Second); err != nil {
			return err
		}
	}
	return nil
}

// drain reads whatever the feed holds now.
func (f *feedReader) drain(ctx context.Context) error {
	for {
		n := len(f.events)
		if err := f.read(ctx, 0); err != nil || len(f.events) == n {
			return err
		}
	}
}

func (f *feedReader) read(ctx context.Context, wait time.Duration) error {
	evs, err := f.s.events(ctx, f.after, wait)
	if err != nil {
		return err
	}
	now := time.Now()
	for _, e := range evs {
		f.events, f.at = append(f.events, e), append(f.at, now)
		f.after = e.Seq
	}
	return nil
}

// awaitPollBegunAfter waits until the follower has completed a poll that
// began after at: one completed after at, and the one after it.
func (s *service) awaitPollBegunAfter(ctx context.Context, at time.Time) error {
	first, err := s.awaitPoll(ctx, at)
	if err != nil {
		return err
	}
	_, err = s.awaitPoll(ctx, first)
	return err
}

// awaitPoll waits for a poll completed after at, and answers when it
// completed.
func (s *service) awaitPoll(ctx context.Context, at time.Time) (time.Time, error) {
	for {
		cur, err := s.store.Cursor(ctx, s.follower())
		if err == nil && cur.PolledAt.After(at) {
			return cur.PolledAt, nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("no poll completed after %s: %w", at.Format(time.RFC3339Nano), ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// retryAfter is a write's answer a caller sends again: relayr said the
// write may succeed (claimed, unavailable), after Retry-After.
type retryAfter struct {
	wait time.Duration
	err  error
}

func (r *retryAfter) Error() string { return fmt.Sprintf("%v (retry after %s)", r.err, r.wait) }
func (r *retryAfter) Unwrap() error { return r.err }

// retrying sends a write until it is answered, waiting what each
// retryable answer asks, loopAttempts times at most, and answers how many
// times it retried.
func (s *service) retrying(ctx context.Context, send func(context.Context) error) (int, error) {
	for attempt := 0; ; attempt++ {
		err := send(ctx)
		var r *retryAfter
		if !errors.As(err, &r) || attempt+1 == loopAttempts {
			return attempt, err
		}
		select {
		case <-ctx.Done():
			return attempt, fmt.Errorf("%w, and the caller gave up: %w", err, ctx.Err())
		case <-time.After(r.wait):
		}
	}
}

// write posts one write of the API (route "items/ensure",
// "items/update") as a caller that waits loopCallerWait, and decodes its
// answer into out. A refusal relayr says may be retried is a *retryAfter.
func (s *service) write(ctx context.Context, route string, body any, out *httpapi.ItemResponse) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/relayr/v1/tenants/"+tenant+"/workspaces/"+workspace+"/"+route, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Prefer", "wait="+strconv.Itoa(int(loopCallerWait/time.Second)))
	res, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = res.Body.Close() }()
	answer, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode/100 == 2 {
		return json.Unmarshal(answer, out)
	}
	err = fmt.Errorf("%s: %d %s", route, res.StatusCode, bytes.TrimSpace(answer))
	var refusal struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(answer, &refusal) != nil || !writes.Code(refusal.Error.Code).Retryable() {
		return err
	}
	wait, perr := strconv.Atoi(res.Header.Get("Retry-After"))
	if perr != nil || wait < 0 {
		return fmt.Errorf("%w, retryable with no Retry-After in seconds", err)
	}
	return &retryAfter{wait: time.Duration(wait) * time.Second, err: err}
}
