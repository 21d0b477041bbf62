package app_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/adapters/gitlab"
	"github.com/relayr-go/relayr/apps/relayr/internal/app"
	"github.com/relayr-go/relayr/apps/relayr/internal/config"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/gitlabemu"
	"github.com/relayr-go/relayr/fixtures/memnet"
)

// gitlabProject is the project the GitLab tests bind, owned by the bot
// whose token relayr holds.
const gitlabProject = "acme/ops"

// gitlabSite is GitLab's emulation of an instance with project acme/ops,
// the user relayr-bot and a token of theirs, behind a listener that
// remembers the PRIVATE-TOKEN each request carried.
type gitlabSite struct {
	e     *gitlabemu.Emulator
	srv   *httptest.Server
	token string
	id    int64 // the project's numeric id

	mu   sync.Mutex
	sent []string
}

func newGitLabSite(t *testing.T) *gitlabSite {
	t.Helper()
	g := &gitlabSite{e: gitlabemu.New(gitlabemu.Options{})}
	g.token = g.e.AddToken("relayr-bot")
	g.id = g.e.CreateProject(gitlabProject, "relayr-bot")
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.sent = append(g.sent, r.Header.Get("PRIVATE-TOKEN"))
		g.mu.Unlock()
		g.e.ServeHTTP(w, r)
	}))
	g.e.SetBaseURL(g.srv.URL)
	t.Cleanup(func() {
		g.srv.Close()
		g.e.Close()
	})
	return g
}

// gitlabApp wires relayr over a GitLab instance: tenant acme's workspace
// support bound to a project as the binding b says.
func gitlabApp(t *testing.T, b config.Binding, creds tracker.Credentials) *app.App {
	t.Helper()
	return gitlabAppWith(t, b, creds, app.Options{})
}

// gitlabAppWith is gitlabApp with options (a log discarded when none).
func gitlabAppWith(t *testing.T, b config.Binding, creds tracker.Credentials, o app.Options) *app.App {
	t.Helper()
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	dir := t.TempDir()
	b.Tenant, b.Workspace, b.Tracker = "acme", "support", gitlab.Kind
	c := &config.Config{
		Holder:   "gitlab",
		Ledger:   config.Ledger{Driver: "sqlite", Path: filepath.Join(dir, "relayr.db")},
		Tenants:  []config.Tenant{{Name: "acme", Trackers: map[string]config.TrackerCredentials{gitlab.Kind: {}}}},
		Bindings: []config.Binding{b},
		Dir:      dir,
	}
	secrets := &config.Secrets{Tokens: map[string]string{"gitlab-token-of-acme-0123456789abcdef": "acme"},
		Trackers: tracker.StaticCredentials{"acme/gitlab": creds}}
	a, err := app.New(t.Context(), c, secrets, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

// TestAGitLabBindingConnectsAsConfigured: the binding's connector goes to
// the instance with the tenant's key as PRIVATE-TOKEN, finds the project
// by its path or its numeric id, and holds the states on the labels the
// binding names; a project the token cannot see is refused as not found.
func TestAGitLabBindingConnectsAsConfigured(t *testing.T) {
	for _, c := range []struct {
		name    string
		project func(g *gitlabSite) string
		labels  map[string]string
		// started is the label a filing in state started carries.
		started string
		missing bool // the project is not one the token sees
	}{
		{"ByItsPath", func(*gitlabSite) string { return gitlabProject }, nil, gitlab.DefaultLabels.Started, false},
		{"ByItsNumericID", func(g *gitlabSite) string { return strconv.FormatInt(g.id, 10) }, nil, gitlab.DefaultLabels.Started, false},
		{"StateLabelsOfItsOwn", func(*gitlabSite) string { return gitlabProject }, map[string]string{"started": "doing"}, "doing", false},
		{"AProjectTheTokenCannotSee", func(g *gitlabSite) string {
			g.e.CreateProject("someone/private", "someone")
			return "someone/private"
		}, nil, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			site := newGitLabSite(t)
			a := gitlabApp(t, config.Binding{BaseURL: site.srv.URL, Project: c.project(site), Labels: c.labels},
				tracker.Credentials{Token: site.token})
			b, err := a.Conns.Binding("acme", "support")
			if err != nil {
				t.Fatal(err)
			}
			if b.Kind() != gitlab.Kind {
				t.Fatalf("the binding's connector is %s", b.Kind())
			}
			tr, err := a.Conns.Tracker(t.Context(), b)
			switch {
			case c.missing && !errors.Is(err, tracker.ErrNotFound):
				t.Fatalf("connecting to a project the token cannot see answered %v, want not found", err)
			case !c.missing && err != nil:
				t.Fatalf("connecting: %v", err)
			case !c.missing:
				it, err := tr.Create(t.Context(), "started-key", tracker.Draft{Title: "A filing under way", State: tracker.Started})
				if err != nil {
					t.Fatal(err)
				}
				is, ok := site.e.Issue(gitlabProject, it.Ref.Number)
				if !ok || !slices.Contains(is.Labels, c.started) {
					t.Fatalf("the filing is %+v, want it opened with label %q", is, c.started)
				}
			}
			site.mu.Lock()
			defer site.mu.Unlock()
			if len(site.sent) == 0 {
				t.Fatal("nothing was sent")
			}
			for _, got := range site.sent {
				if got != site.token {
					t.Fatalf("sent PRIVATE-TOKEN %q, want the tenant's key", got)
				}
			}
		})
	}
}

// TestAGitLabDeliveryWakesTheBinding: GitLab's project webhooks, carrying
// the hook's secret token in X-Gitlab-Token, delivered to relayr's webhook
// route as the emulation sends them: the bound project's issue opened and
// updated answers 204, and so does a signed delivery (Standard Webhooks,
// signing token the same secret); a delivery with another token, or signed
// with another signing token, or of a project not bound, 401. A delivery
// resent with its Idempotency-Key is a replay (204; that it wakes no poll
// is TestAGitLabReplayWakesNoPoll's), and a deletion sends nothing.
func TestAGitLabDeliveryWakesTheBinding(t *testing.T) {
	const secret = "gitlab-webhook-secret"
	site := newGitLabSite(t)
	site.e.CreateProject("acme/web", "relayr-bot")
	a := gitlabApp(t, config.Binding{BaseURL: site.srv.URL, Project: gitlabProject}, tracker.Credentials{Token: site.token, WebhookSecret: secret})
	b, err := a.Conns.Binding("acme", "support")
	if err != nil {
		t.Fatal(err)
	}
	// A delivery is verified with the credentials the followers last
	// asked for: connect as a follower does.
	if _, err := a.Conns.Tracker(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.API)
	defer srv.Close()
	route := srv.URL + "/relayr/v1/trackers/acme/gitlab"
	answered := func(act func() error) []int {
		t.Helper()
		before := len(site.e.Deliveries())
		if err := act(); err != nil {
			t.Fatal(err)
		}
		var codes []int
		for _, d := range site.e.Deliveries()[before:] {
			codes = append(codes, d.Status)
		}
		return codes
	}
	person := site.e.Person("alice", gitlabProject)
	site.e.AddHook(gitlabProject, route, secret, "")
	var iid int64
	if got := answered(func() (err error) { iid, err = person.CreateIssue("A person's issue", ""); return err }); !slices.Equal(got, []int{http.StatusNoContent}) {
		t.Fatalf("the opening's delivery answered %v, want 204", got)
	}
	if got := answered(func() error { return person.Retitle(iid, "Retitled") }); !slices.Equal(got, []int{http.StatusNoContent}) {
		t.Fatalf("the update's delivery answered %v, want 204", got)
	}
	last := len(site.e.Deliveries()) - 1
	if got := answered(func() error { return site.e.Resend(last) }); !slices.Equal(got, []int{http.StatusNoContent}) {
		t.Fatalf("the delivery resent answered %v, want 204", got)
	}
	if d := site.e.Deliveries(); d[last].Header.Get("Idempotency-Key") != d[len(d)-1].Header.Get("Idempotency-Key") {
		t.Fatal("the resend carries another Idempotency-Key")
	}
	site.e.AddHook(gitlabProject, route, "not-the-secret", "")
	if got := answered(func() error { return person.Retitle(iid, "Retitled again") }); !slices.Equal(got, []int{http.StatusNoContent, http.StatusUnauthorized}) {
		t.Fatalf("deliveries with the token and another answered %v, want 204 and 401", got)
	}
	site.e.AddHook(gitlabProject, route, secret, secret)
	site.e.AddHook(gitlabProject, route, secret, "another-signing-token")
	if got := answered(func() error { return person.Close(iid) }); !slices.Equal(got, []int{http.StatusNoContent, http.StatusUnauthorized, http.StatusNoContent, http.StatusUnauthorized}) {
		t.Fatalf("the four hooks' deliveries answered %v, want 204, 401, a signed 204 and 401 for one signed with another token", got)
	}
	site.e.AddHook("acme/web", route, secret, "")
	other := site.e.Person("alice", "acme/web")
	if got := answered(func() error { _, err := other.CreateIssue("Not bound", ""); return err }); !slices.Equal(got, []int{http.StatusUnauthorized}) {
		t.Fatalf("a delivery of a project not bound answered %v, want 401", got)
	}
	if got := answered(func() error { return person.Delete(iid) }); len(got) != 0 {
		t.Fatalf("the deletion's deliveries answered %v: GitLab sends none", got)
	}
}

// TestAGitLabReplayWakesNoPoll: relayr and GitLab's emulation in one
// testing/synctest bubble, the emulation served in memory and its hook
// delivering to relayr's webhook route in process, the binding's follower
// running on the bubble's virtual time. A person's change delivered
// wakes a poll at once (the follower reads the project's issues, well
// within its 30 s interval); the delivery resent from GitLab's UI, its
// Idempotency-Key the same, answers 204 and wakes none; a new delivery (a
// comment's Note Hook, a new Idempotency-Key) wakes one again.
func TestAGitLabReplayWakesNoPoll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const secret = "gitlab-webhook-secret"
		var api http.Handler
		e := gitlabemu.New(gitlabemu.Options{WebhookClient: &http.Client{Transport: gitlabemu.RoundTripFunc(func(r *http.Request) (*http.Response, error) {
			rec := httptest.NewRecorder()
			api.ServeHTTP(rec, r)
			return rec.Result(), nil
		})}})
		srv := memnet.NewServer(e)
		e.SetBaseURL(srv.URL)
		token := e.AddToken("relayr-bot")
		e.CreateProject(gitlabProject, "relayr-bot")
		a := gitlabAppWith(t, config.Binding{BaseURL: srv.URL, Project: gitlabProject}, tracker.Credentials{Token: token, WebhookSecret: secret},
			app.Options{Transport: srv.Transport()})
		api = a.API
		ctx, cancel := context.WithCancel(context.Background())
		defer func() {
			cancel()
			a.Followers.Stop()
			a.Close()
			srv.Close()
			e.Close()
		}()
		b, err := a.Conns.Binding("acme", "support")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Conns.Tracker(ctx, b); err != nil {
			t.Fatal(err)
		}
		a.Followers.Start(ctx)
		// The follower's first polls, at its phase of the interval.
		time.Sleep(time.Minute)
		synctest.Wait()
		const list = "GET /api/v4/projects/{id}/issues"
		if e.Requests(list) == 0 {
			t.Fatal("the follower never polled")
		}
		e.AddHook(gitlabProject, "http://relayr.invalid/relayr/v1/trackers/acme/gitlab", secret, "")
		person := e.Person("alice", gitlabProject)
		// delivered runs act and answers the statuses of its deliveries and
		// the list reads the follower made within the second after it.
		delivered := func(what string, act func() error) ([]int, int) {
			t.Helper()
			before, polls := len(e.Deliveries()), e.Requests(list)
			if err := act(); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			time.Sleep(time.Second)
			synctest.Wait()
			var codes []int
			for _, d := range e.Deliveries()[before:] {
				codes = append(codes, d.Status)
			}
			return codes, e.Requests(list) - polls
		}
		iid, err := person.CreateIssue("A person's issue", "")
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		codes, polls := delivered("a retitle", func() error { return person.Retitle(iid, "Retitled") })
		if !slices.Equal(codes, []int{http.StatusNoContent}) || polls == 0 {
			t.Fatalf("the retitle's delivery answered %v and woke %d list reads, want 204 and a poll", codes, polls)
		}
		time.Sleep(5 * time.Second) // past the 2 s debounce, well within the interval
		last := len(e.Deliveries()) - 1
		codes, polls = delivered("the resend", func() error { return e.Resend(last) })
		if !slices.Equal(codes, []int{http.StatusNoContent}) || polls != 0 {
			t.Fatalf("the delivery resent answered %v and woke %d list reads, want 204 and none", codes, polls)
		}
		if d := e.Deliveries(); d[last].Header.Get("Idempotency-Key") != d[len(d)-1].Header.Get("Idempotency-Key") {
			t.Fatal("the resend carries another Idempotency-Key")
		}
		time.Sleep(5 * time.Second)
		codes, polls = delivered("a comment", func() error { _, err := person.Comment(iid, "Seen on main too"); return err })
		if !slices.Equal(codes, []int{http.StatusNoContent}) || polls == 0 {
			t.Fatalf("the comment's delivery answered %v and woke %d list reads, want 204 and a poll", codes, polls)
		}
	})
}
