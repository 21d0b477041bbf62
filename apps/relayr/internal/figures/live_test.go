package figures

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/httpapi"
	"github.com/relayr-go/relayr/apps/relayr/internal/config"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/follow"
	"github.com/relayr-go/relayr/core/tracker"
)

// TestLiveFeedLatency measures, against a live tracker on loopback (a
// Vikunja or a Gitea built from its source, named by the live runs'
// variables: docs/development.md), what the emulations' figures measure:
// from a person's comment to its event in the feed, each after a quiet
// spell, with the tracker's own webhook delivered to relayr's route; and
// relayr's headline case, an item filed with a title alone and closed by a
// person at once, before relayr's first read. It prints FIGURE lines, and
// is skipped without the variables (RELAYR_REQUIRE_LIVE=1 fails instead).
func TestLiveFeedLatency(t *testing.T) {
	for _, lt := range liveTrackers(t) {
		t.Run(lt.Name(), func(t *testing.T) { measureLive(t, lt) })
	}
}

// liveTrackers are the live trackers the live runs' variables name; none
// skips the test (RELAYR_REQUIRE_LIVE=1 fails it instead).
func liveTrackers(t *testing.T) []live {
	t.Helper()
	var trackers []live
	if u := os.Getenv("RELAYR_VIKUNJA_URL"); u != "" {
		trackers = append(trackers, &liveVikunja{base: strings.TrimRight(u, "/"), token: os.Getenv("RELAYR_VIKUNJA_TOKEN"), project: os.Getenv("RELAYR_VIKUNJA_PROJECT")})
	}
	if u := os.Getenv("RELAYR_GITEA_URL"); u != "" {
		person := os.Getenv("RELAYR_GITEA_PERSON_TOKEN")
		if person == "" {
			person = os.Getenv("RELAYR_GITEA_TOKEN")
		}
		trackers = append(trackers, &liveGitea{base: strings.TrimRight(u, "/"), token: os.Getenv("RELAYR_GITEA_TOKEN"), person: person, repo: os.Getenv("RELAYR_GITEA_REPO")})
	}
	if len(trackers) == 0 {
		if os.Getenv("RELAYR_REQUIRE_LIVE") != "" {
			t.Fatal("RELAYR_REQUIRE_LIVE is set, and no live tracker is named (RELAYR_VIKUNJA_URL, RELAYR_GITEA_URL)")
		}
		t.Skip("no live tracker named (RELAYR_VIKUNJA_URL, RELAYR_GITEA_URL)")
	}
	return trackers
}

// liveRounds is how many comments the live figure times.
const liveRounds = 20

func measureLive(t *testing.T, lt live) {
	ctx := t.Context()
	s := startService(t, lt, serviceOptions{serve: true, timings: config.Timings{Debounce: config.Duration{Duration: quietDebounce}, Budget: unlimited}})
	hook, err := lt.hook(ctx, s.hookURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lt.unhook(context.WithoutCancel(ctx), hook) })
	var after int64
	if evs, err := s.events(ctx, 0, 0); err == nil && len(evs) > 0 {
		after = evs[len(evs)-1].Seq
	}

	// A person's item, read once, then commented on after quiet spells.
	id, err := lt.PersonCreate(fmt.Sprintf("live figure %d", time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.awaitItemEvent(ctx, &after, id); err != nil {
		t.Fatalf("the person's item: %v", err)
	}
	var took []time.Duration
	for i := range liveRounds {
		time.Sleep(quietDebounce + 50*time.Millisecond)
		start := time.Now()
		if err := lt.PersonComment(id, "live comment "+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
		if err := s.awaitItemEvent(ctx, &after, id); err != nil {
			t.Fatalf("comment %d: %v", i, err)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	var total time.Duration
	for _, d := range took {
		total += d
	}
	name := strings.ToLower(lt.Name())
	t.Logf("FIGURE live.%s.comment_to_feed.p50 %.1f ms", name, ms(took[len(took)/2]))
	t.Logf("FIGURE live.%s.comment_to_feed.mean %.1f ms", name, ms(total)/float64(len(took)))
	t.Logf("FIGURE live.%s.comment_to_feed.max %.1f ms", name, ms(took[len(took)-1]))

	// The headline case: filed with a title alone, closed by a person at
	// once, before relayr's first read: the close reaches the feed once.
	time.Sleep(quietDebounce + 50*time.Millisecond)
	key := fmt.Sprintf("live-close-%d", time.Now().UnixNano())
	filed, err := s.ensureTitle(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := lt.PersonClose(filed); err != nil {
		t.Fatal(err)
	}
	// Read for a while past the close, so a second publication of it, or
	// one of relayr's filing, would show.
	evs, at, err := s.itemEvents(ctx, &after, filed, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	closes, first := 0, time.Duration(0)
	for i, e := range evs {
		d, _ := follow.DataOf(e)
		switch {
		case e.Type == follow.TypeItemChanged && d.Field == tracker.FieldState:
			if closes == 0 {
				first = at[i].Sub(start)
			}
			closes++
		default:
			t.Errorf("an event of relayr's filing: %s %s", e.Type, e.Data)
		}
	}
	if closes != 1 {
		t.Fatalf("the person's close of %s was published %d times, want once", key, closes)
	}
	t.Logf("FIGURE live.%s.close_at_once_to_feed %.1f ms (published once in 30 s)", name, ms(first))
}

// ensureTitle files key with a title alone through the write API and
// answers the item's id.
func (s *service) ensureTitle(ctx context.Context, key string) (string, error) {
	body, _ := json.Marshal(httpapi.EnsureRequest{Key: key, Title: title(key)})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/relayr/v1/tenants/"+tenant+"/workspaces/"+workspace+"/items/ensure", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := s.client.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = res.Body.Close() }()
	var r httpapi.ItemResponse
	if res.StatusCode/100 != 2 {
		raw, _ := io.ReadAll(res.Body)
		return "", fmt.Errorf("ensure %s: %d %s", key, res.StatusCode, raw)
	}
	if err := json.NewDecoder(res.Body).Decode(&r); err != nil {
		return "", err
	}
	return r.Item.ID, nil
}

// itemEvents reads the feed's events about the item for a while, moving
// *after past them, and answers each with when it arrived.
func (s *service) itemEvents(ctx context.Context, after *int64, itemID string, within time.Duration) ([]eventlog.Event, []time.Time, error) {
	var out []eventlog.Event
	var at []time.Time
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		evs, err := s.events(ctx, *after, time.Second)
		if err != nil {
			return nil, nil, err
		}
		now := time.Now()
		for _, e := range evs {
			*after = e.Seq
			if d, err := follow.DataOf(e); err == nil && d.Item.ID == itemID {
				out, at = append(out, e), append(at, now)
			}
		}
	}
	return out, at, nil
}

// live is a live tracker as the figures drive it: a person's hands
// through its API, and its webhooks registered on relayr's route.
type live interface {
	emulation
	PersonClose(id string) error
	hook(ctx context.Context, url string) (string, error)
	unhook(ctx context.Context, id string) error
}

// call makes one API call of a live tracker's.
func call(ctx context.Context, method, url, token, contentType string, body any, out any) error {
	var r io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := loopbackClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = res.Body.Close() }()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, url, res.StatusCode, raw)
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

var loopbackClient = &http.Client{Transport: loopback(), Timeout: 30 * time.Second}

// liveVikunja is a live Vikunja.
type liveVikunja struct{ base, token, project string }

func (v *liveVikunja) Name() string { return "Vikunja" }
func (v *liveVikunja) Binding() config.Binding {
	return config.Binding{Tenant: tenant, Workspace: workspace, Tracker: "vikunja", BaseURL: v.base, Project: v.project}
}
func (v *liveVikunja) Credentials() tracker.Credentials {
	return tracker.Credentials{Token: v.token, WebhookSecret: webhookSecret}
}
func (v *liveVikunja) Requests() int  { return 0 }
func (v *liveVikunja) ResetRequests() {}
func (v *liveVikunja) Forward(string) {}
func (v *liveVikunja) Close()         {}

func (v *liveVikunja) PersonCreate(title string) (string, error) {
	var task struct {
		ID int64 `json:"id"`
	}
	err := call(context.Background(), http.MethodPut, v.base+"/api/v1/projects/"+v.project+"/tasks", v.token, "application/json", map[string]string{"title": title}, &task)
	return strconv.FormatInt(task.ID, 10), err
}

func (v *liveVikunja) PersonRetitle(id, title string) error {
	return call(context.Background(), http.MethodPatch, v.base+"/api/v2/tasks/"+id, v.token, "application/merge-patch+json", map[string]string{"title": title}, nil)
}

func (v *liveVikunja) PersonComment(id, text string) error {
	return call(context.Background(), http.MethodPut, v.base+"/api/v1/tasks/"+id+"/comments", v.token, "application/json", map[string]string{"comment": text}, nil)
}

func (v *liveVikunja) PersonClose(id string) error {
	return call(context.Background(), http.MethodPatch, v.base+"/api/v2/tasks/"+id, v.token, "application/merge-patch+json", map[string]bool{"done": true}, nil)
}

func (v *liveVikunja) hook(ctx context.Context, url string) (string, error) {
	var h struct {
		ID int64 `json:"id"`
	}
	err := call(ctx, http.MethodPut, v.base+"/api/v1/projects/"+v.project+"/webhooks", v.token, "application/json", map[string]any{
		"target_url": url, "secret": webhookSecret,
		"events": []string{"task.created", "task.updated", "task.deleted", "task.comment.created"},
	}, &h)
	return strconv.FormatInt(h.ID, 10), err
}

func (v *liveVikunja) unhook(ctx context.Context, id string) error {
	return call(ctx, http.MethodDelete, v.base+"/api/v1/projects/"+v.project+"/webhooks/"+id, v.token, "", nil, nil)
}

// liveGitea is a live Gitea: relayr's bot files with token, a person acts
// with person (the same token when no other is named).
type liveGitea struct{ base, token, person, repo string }

func (g *liveGitea) Name() string { return "Gitea" }
func (g *liveGitea) Binding() config.Binding {
	return config.Binding{Tenant: tenant, Workspace: workspace, Tracker: "gitea", BaseURL: g.base, Project: g.repo}
}
func (g *liveGitea) Credentials() tracker.Credentials {
	return tracker.Credentials{Token: g.token, WebhookSecret: webhookSecret}
}
func (g *liveGitea) Requests() int  { return 0 }
func (g *liveGitea) ResetRequests() {}
func (g *liveGitea) Forward(string) {}
func (g *liveGitea) Close()         {}

func (g *liveGitea) issues() string { return g.base + "/api/v1/repos/" + g.repo + "/issues" }

func (g *liveGitea) PersonCreate(title string) (string, error) {
	var issue struct {
		Number int64 `json:"number"`
	}
	err := call(context.Background(), http.MethodPost, g.issues(), g.person, "application/json", map[string]string{"title": title}, &issue)
	return strconv.FormatInt(issue.Number, 10), err
}

func (g *liveGitea) PersonRetitle(id, title string) error {
	return call(context.Background(), http.MethodPatch, g.issues()+"/"+id, g.person, "application/json", map[string]string{"title": title}, nil)
}

func (g *liveGitea) PersonComment(id, text string) error {
	return call(context.Background(), http.MethodPost, g.issues()+"/"+id+"/comments", g.person, "application/json", map[string]string{"body": text}, nil)
}

func (g *liveGitea) PersonClose(id string) error {
	return call(context.Background(), http.MethodPatch, g.issues()+"/"+id, g.person, "application/json", map[string]string{"state": "closed"}, nil)
}

func (g *liveGitea) hook(ctx context.Context, url string) (string, error) {
	var h struct {
		ID int64 `json:"id"`
	}
	err := call(ctx, http.MethodPost, g.base+"/api/v1/repos/"+g.repo+"/hooks", g.token, "application/json", map[string]any{
		"type": "gitea", "active": true, "events": []string{"issues", "issue_comment"},
		"config": map[string]string{"url": url, "content_type": "json", "secret": webhookSecret},
	}, &h)
	return strconv.FormatInt(h.ID, 10), err
}

func (g *liveGitea) unhook(ctx context.Context, id string) error {
	return call(ctx, http.MethodDelete, g.base+"/api/v1/repos/"+g.repo+"/hooks/"+id, g.token, "", nil, nil)
}

// TestLiveStalledTracker is BenchmarkStalledTracker's late and lost runs
// against a live Vikunja (RELAYR_VIKUNJA_*) behind the same fault proxy on
// loopback, through relayr's API: it prints FIGURE lines, and fails on a
// caller that never got its item, a key left unfiled or one filed twice.
func TestLiveStalledTracker(t *testing.T) {
	u := os.Getenv("RELAYR_VIKUNJA_URL")
	if u == "" {
		if os.Getenv("RELAYR_REQUIRE_LIVE") != "" {
			t.Fatal("RELAYR_REQUIRE_LIVE is set, and RELAYR_VIKUNJA_URL is not")
		}
		t.Skip("no live Vikunja named (RELAYR_VIKUNJA_URL)")
	}
	lv := &liveVikunja{base: strings.TrimRight(u, "/"), token: os.Getenv("RELAYR_VIKUNJA_TOKEN"), project: os.Getenv("RELAYR_VIKUNJA_PROJECT")}
	for _, mode := range stallFaults {
		t.Run(mode, func(t *testing.T) {
			px := newFaultProxy(t, originOf(lv.base), mode)
			s := startService(t, proxied{lv, px}, serviceOptions{serve: true, timings: quietTimings})
			px.requests.Store(0)
			out := stallRun(t, func(ctx context.Context, key string) (time.Duration, error) { return s.ensureAnswer(ctx, key) })
			time.Sleep(5 * time.Second)
			out.requests = px.requests.Load()
			countStalled(t, proxied{lv, px}, &out)
			t.Logf("FIGURE live.vikunja.stalled.%s.wall %.2f s", mode, out.took.Seconds())
			t.Logf("FIGURE live.vikunja.stalled.%s.requests_per_key %.2f requests", mode, float64(out.requests)/stallKeys)
			if out.failed != 0 || out.unfiled != 0 || out.duplicates != 0 {
				t.Fatalf("%d callers failed, %d keys unfiled, %d filed twice; want none", out.failed, out.unfiled, out.duplicates)
			}
		})
	}
}
