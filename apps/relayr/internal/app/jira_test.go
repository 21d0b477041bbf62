package app_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/relayr-go/relayr/adapters/jira"
	"github.com/relayr-go/relayr/apps/relayr/internal/app"
	"github.com/relayr-go/relayr/apps/relayr/internal/config"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/jiraemu"
)

// jiraSite is Jira's emulation of a site with project OPS, the account
// bot@acme.example and its API token, behind a listener that remembers the
// Authorization each request carried.
type jiraSite struct {
	e     *jiraemu.Emulator
	srv   *httptest.Server
	token string

	mu   sync.Mutex
	sent []string
}

func newJiraSite(t *testing.T) *jiraSite {
	t.Helper()
	j := &jiraSite{e: jiraemu.New(jiraemu.Options{})}
	j.e.AddUser("5b10ac8d82e05b22cc7d4ef5", "relayr bot", nil)
	j.token = j.e.AddToken("bot@acme.example", "5b10ac8d82e05b22cc7d4ef5")
	j.e.CreateProject("OPS", "Operations", jiraemu.DefaultWorkflow())
	j.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		j.mu.Lock()
		j.sent = append(j.sent, r.Header.Get("Authorization"))
		j.mu.Unlock()
		j.e.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		j.srv.Close()
		j.e.Close()
		if v := j.e.Violations(); len(v) > 0 {
			t.Errorf("exchanges outside Atlassian's description:\n%s", strings.Join(v, "\n"))
		}
	})
	return j
}

// jiraApp wires relayr over a Jira site: tenant acme's workspace support
// bound to project OPS as the binding b says, the tenant's table for jira
// being cr.
func jiraApp(t *testing.T, b config.Binding, cr config.TrackerCredentials, creds tracker.Credentials) *app.App {
	t.Helper()
	dir := t.TempDir()
	b.Tenant, b.Workspace, b.Tracker = "acme", "support", jira.Kind
	c := &config.Config{
		Holder:   "jira",
		Ledger:   config.Ledger{Driver: "sqlite", Path: filepath.Join(dir, "relayr.db")},
		Tenants:  []config.Tenant{{Name: "acme", Trackers: map[string]config.TrackerCredentials{jira.Kind: cr}}},
		Bindings: []config.Binding{b},
		Dir:      dir,
	}
	secrets := &config.Secrets{Tokens: map[string]string{"jira-token-of-acme-0123456789abcdef": "acme"},
		Trackers: tracker.StaticCredentials{"acme/jira": creds}}
	a, err := app.New(t.Context(), c, secrets, app.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

// TestAJiraBindingConnectsAsConfigured: the binding's connector goes to
// the site with the tenant's email and key (Basic), or with the key as a
// bearer token when the tenant names no email, and files the binding's
// issue type through the statuses it names.
func TestAJiraBindingConnectsAsConfigured(t *testing.T) {
	for _, c := range []struct {
		name  string
		b     config.Binding
		email string
		auth  string // "basic" or "bearer"
		want  string // "" connects; else the error says it
	}{
		{"TheAccountsEmailAndToken", config.Binding{Project: "OPS"}, "bot@acme.example", "basic", ""},
		{"AnOAuthBearerToken", config.Binding{Project: "OPS"}, "", "bearer", ""},
		{"StatusesOfTheWorkflow", config.Binding{Project: "OPS", Statuses: map[string]string{"todo": "To Do", "started": "In Progress"}}, "bot@acme.example", "basic", ""},
		{"AnIssueTypeTheProjectHasNot", config.Binding{Project: "OPS", IssueType: "Epic"}, "bot@acme.example", "basic", `no issue type "Epic" in the project`},
		{"AStatusNotInTheWorkflow", config.Binding{Project: "OPS", Statuses: map[string]string{"todo": "Selected for Development"}}, "bot@acme.example", "basic",
			`the todo status "Selected for Development" is not in the Task workflow`},
	} {
		t.Run(c.name, func(t *testing.T) {
			site := newJiraSite(t)
			auth := "Bearer " + site.token
			if c.auth == "basic" {
				auth = "Basic " + base64.StdEncoding.EncodeToString([]byte("bot@acme.example:"+site.token))
			}
			c.b.BaseURL = site.srv.URL
			a := jiraApp(t, c.b, config.TrackerCredentials{Email: c.email}, tracker.Credentials{Token: site.token})
			b, err := a.Conns.Binding("acme", "support")
			if err != nil {
				t.Fatal(err)
			}
			if b.Kind() != jira.Kind {
				t.Fatalf("the binding's connector is %s", b.Kind())
			}
			_, err = a.Conns.Tracker(t.Context(), b)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("connecting: %v (sent %q)", err, site.sent)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("connecting answered %v, want it to say %s", err, c.want)
			case c.want != "" && !errors.Is(err, tracker.ErrRefused):
				t.Fatalf("%v is not refused", err)
			}
			site.mu.Lock()
			defer site.mu.Unlock()
			for _, got := range site.sent {
				if got != auth {
					t.Fatalf("sent Authorization %q, want %q", got, auth)
				}
			}
			if len(site.sent) == 0 {
				t.Fatal("nothing was sent")
			}
		})
	}
}

// TestAJiraDeliveryWakesTheBinding: Jira's admin webhooks, signed
// X-Hub-Signature: sha256=<hex>, delivered to relayr's webhook route as
// the emulation sends them: the bound project's issue created, updated
// and deleted answers 204; a delivery signed with another secret, or of a
// project not bound, 401.
func TestAJiraDeliveryWakesTheBinding(t *testing.T) {
	const secret = "jira-webhook-secret"
	site := newJiraSite(t)
	site.e.CreateProject("WEB", "Website", jiraemu.DefaultWorkflow())
	a := jiraApp(t, config.Binding{BaseURL: site.srv.URL, Project: "OPS"}, config.TrackerCredentials{Email: "bot@acme.example"},
		tracker.Credentials{Token: site.token, WebhookSecret: secret})
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
	route := srv.URL + "/relayr/v1/trackers/acme/jira"
	events := []string{"jira:issue_created", "jira:issue_updated", "jira:issue_deleted"}
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
	person := site.e.Person("5b10ac8d82e05b22cc7d4ef5")
	site.e.AddWebhook("relayr", route, secret, events, "project = OPS")
	var id string
	if got := answered(func() (err error) { id, err = person.Create("OPS", "A person's issue", ""); return err }); !slices.Equal(got, []int{http.StatusNoContent}) {
		t.Fatalf("the creation's delivery answered %v, want 204", got)
	}
	if got := answered(func() error { return person.Retitle(id, "Retitled") }); !slices.Equal(got, []int{http.StatusNoContent}) {
		t.Fatalf("the update's delivery answered %v, want 204", got)
	}
	site.e.AddWebhook("another secret", route, "not-the-secret", events, "project = OPS")
	if got := answered(func() error { return person.Retitle(id, "Retitled again") }); !slices.Equal(got, []int{http.StatusNoContent, http.StatusUnauthorized}) {
		t.Fatalf("deliveries signed with the secret and another answered %v, want 204 and 401", got)
	}
	site.e.AddWebhook("every project", route, secret, events, "project = WEB")
	if got := answered(func() error { _, err := person.Create("WEB", "Not bound", ""); return err }); !slices.Equal(got, []int{http.StatusUnauthorized}) {
		t.Fatalf("a delivery of a project not bound answered %v, want 401", got)
	}
	if got := answered(func() error {
		if !site.e.DeleteIssue(id) {
			return fmt.Errorf("no issue %s", id)
		}
		return nil
	}); len(got) != 2 || got[0] != http.StatusNoContent {
		t.Fatalf("the deletion's deliveries answered %v, want 204 from the hook of its secret", got)
	}
}
