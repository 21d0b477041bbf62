package app_test

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/linear"
	"github.com/relayr-go/relayr/apps/relayr/internal/app"
	"github.com/relayr-go/relayr/apps/relayr/internal/config"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/linearemu"
)

// linearSite is Linear's emulation of workspace acme with team ENG, the
// user relayr bot and a personal API key and an OAuth token of theirs, a
// person of the team, behind a listener that remembers the Authorization
// each request carried. Its clock is the test's, standing at now.
type linearSite struct {
	e      *linearemu.Emulator
	srv    *httptest.Server
	clock  *linearemu.Clock
	key    string // the bot's personal API key, lin_api_…
	oauth  string // an OAuth token acting as the bot
	team   string // ENG's UUID
	person *linearemu.Person

	mu   sync.Mutex
	sent []string
}

func newLinearSite(t *testing.T) *linearSite {
	t.Helper()
	l := &linearSite{clock: linearemu.NewClock(time.Now())}
	l.e = linearemu.New(linearemu.Options{Now: l.clock.Now})
	bot := l.e.AddUser("relayr bot", true)
	l.key, l.oauth = l.e.AddKey(bot), l.e.AddOAuthToken(bot)
	l.team = l.e.AddTeam("ENG", "Engineering")
	l.person = l.e.Person(l.e.AddUser("Ana Person", false))
	l.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.sent = append(l.sent, r.Header.Get("Authorization"))
		l.mu.Unlock()
		l.e.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		l.srv.Close()
		l.e.Close()
	})
	return l
}

// endpoint is the emulation's GraphQL endpoint, the binding's base_url.
func (l *linearSite) endpoint() string { return l.srv.URL + "/graphql" }

// linearApp wires relayr over a Linear workspace: tenant acme's workspace
// support bound to a team as the binding b says.
func linearApp(t *testing.T, b config.Binding, creds tracker.Credentials) *app.App {
	t.Helper()
	dir := t.TempDir()
	b.Tenant, b.Workspace, b.Tracker = "acme", "support", linear.Kind
	c := &config.Config{
		Holder:   "linear",
		Ledger:   config.Ledger{Driver: "sqlite", Path: filepath.Join(dir, "relayr.db")},
		Tenants:  []config.Tenant{{Name: "acme", Trackers: map[string]config.TrackerCredentials{linear.Kind: {}}}},
		Bindings: []config.Binding{b},
		Dir:      dir,
	}
	secrets := &config.Secrets{Tokens: map[string]string{"linear-token-of-acme-0123456789abcdef": "acme"},
		Trackers: tracker.StaticCredentials{"acme/linear": creds}}
	a, err := app.New(t.Context(), c, secrets, app.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

// TestALinearBindingConnectsAsConfigured: the binding's connector goes to
// the endpoint with the tenant's key as Authorization (a personal API key
// bare, an OAuth token as Bearer), finds the team by its key or its UUID,
// files in the state asked, and keeps the key where Linear keeps it, an
// attachment of the issue; a team the workspace does not have is refused
// as not found.
func TestALinearBindingConnectsAsConfigured(t *testing.T) {
	for _, c := range []struct {
		name  string
		team  func(l *linearSite) string
		oauth bool
		// missing: the team is not the workspace's.
		missing bool
	}{
		{"ByItsKey", func(*linearSite) string { return "ENG" }, false, false},
		{"ByItsUUID", func(l *linearSite) string { return l.team }, false, false},
		{"WithAnOAuthToken", func(*linearSite) string { return "ENG" }, true, false},
		{"ATeamTheWorkspaceHasNot", func(*linearSite) string { return "OPS" }, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			site := newLinearSite(t)
			key, want := site.key, site.key
			if c.oauth {
				key, want = site.oauth, "Bearer "+site.oauth
			}
			a := linearApp(t, config.Binding{BaseURL: site.endpoint(), Team: c.team(site)}, tracker.Credentials{Token: key})
			b, err := a.Conns.Binding("acme", "support")
			if err != nil {
				t.Fatal(err)
			}
			if b.Kind() != linear.Kind {
				t.Fatalf("the binding's connector is %s", b.Kind())
			}
			tr, err := a.Conns.Tracker(t.Context(), b)
			switch {
			case c.missing && !errors.Is(err, tracker.ErrNotFound):
				t.Fatalf("connecting to a team the workspace has not answered %v, want not found", err)
			case !c.missing && err != nil:
				t.Fatalf("connecting: %v", err)
			case !c.missing:
				if tr.Project() != site.team {
					t.Fatalf("the tracker's project is %q, want the team's UUID %s (as a delivery names it)", tr.Project(), site.team)
				}
				it, err := tr.Create(t.Context(), "started-key", tracker.Draft{Title: "A filing under way", State: tracker.Started, Labels: []string{"ci"}})
				if err != nil {
					t.Fatal(err)
				}
				is, ok := site.e.Issue(it.Ref.ID)
				if !ok || is.TeamID != site.team || is.StateType != "started" || !slices.Equal(is.Labels, []string{"ci"}) || len(is.Attachments) != 1 {
					t.Fatalf("the filing is %+v, want it in ENG, started, labelled ci, its key attached", is)
				}
				if got, err := tr.Find(t.Context(), "started-key"); err != nil || got.Ref.ID != it.Ref.ID {
					t.Fatalf("finding the key answered %+v %v, want %s", got.Ref, err, it.Ref.ID)
				}
			}
			site.mu.Lock()
			defer site.mu.Unlock()
			if len(site.sent) == 0 {
				t.Fatal("nothing was sent")
			}
			for _, got := range site.sent {
				if got != want {
					t.Fatalf("sent Authorization %q, want %q", got, want)
				}
			}
		})
	}
}

// TestALinearDeliveryWakesTheBinding: Linear's team webhooks, signed
// Linear-Signature (hex HMAC-SHA256 of the body under the webhook's
// secret) and stamped webhookTimestamp, delivered to relayr's webhook
// route as the emulation sends them: the bound team's issue created,
// updated, commented and trashed answers 200 (Linear retries any other); a delivery signed with
// another secret, or of a team not bound, 401; and so does one stamped
// over a minute from now, as a captured delivery replayed a minute on is.
func TestALinearDeliveryWakesTheBinding(t *testing.T) {
	const secret = "linear-webhook-secret"
	site := newLinearSite(t)
	web := site.e.AddTeam("WEB", "Web")
	a := linearApp(t, config.Binding{BaseURL: site.endpoint(), Team: "ENG"}, tracker.Credentials{Token: site.key, WebhookSecret: secret})
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
	route := srv.URL + "/relayr/v1/trackers/acme/linear"
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
	site.e.AddWebhook(site.team, route, secret)
	var id string
	if got := answered(func() (err error) { id, err = site.person.CreateIssue(site.team, "A person's issue", ""); return err }); !slices.Equal(got, []int{http.StatusOK}) {
		t.Fatalf("the creation's delivery answered %v, want 200", got)
	}
	if got := answered(func() error { return site.person.Retitle(id, "Retitled") }); !slices.Equal(got, []int{http.StatusOK}) {
		t.Fatalf("the update's delivery answered %v, want 200", got)
	}
	if got := answered(func() error { _, err := site.person.Comment(id, "a comment"); return err }); !slices.Equal(got, []int{http.StatusOK}) {
		t.Fatalf("the comment's delivery answered %v, want 200", got)
	}
	site.e.AddWebhook(site.team, route, "not-the-secret")
	if got := answered(func() error { return site.person.Retitle(id, "Retitled again") }); !slices.Equal(got, []int{http.StatusOK, http.StatusUnauthorized}) {
		t.Fatalf("deliveries signed with the secret and another answered %v, want 200 and 401", got)
	}
	site.e.AddWebhook(web, route, secret)
	if got := answered(func() error { _, err := site.person.CreateIssue(web, "Not bound", ""); return err }); !slices.Equal(got, []int{http.StatusUnauthorized}) {
		t.Fatalf("a delivery of a team not bound answered %v, want 401", got)
	}
	// Linear stamps each attempt when it sends it: a clock two minutes
	// behind relayr's stamps deliveries outside the minute.
	site.clock.Set(time.Now().Add(-2 * time.Minute))
	if got := answered(func() error { return site.person.Retitle(id, "Retitled late") }); !slices.Equal(got, []int{http.StatusUnauthorized, http.StatusUnauthorized}) {
		t.Fatalf("deliveries stamped two minutes ago answered %v, want 401 from both hooks", got)
	}
	site.clock.Set(time.Now())
	if got := answered(func() error { return site.person.Trash(id) }); !slices.Equal(got, []int{http.StatusOK, http.StatusUnauthorized}) {
		t.Fatalf("the trashing's deliveries answered %v, want 200 (and 401 for the other secret's)", got)
	}
}
