package app_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/relayr-go/relayr/adapters/jira"
	"github.com/relayr-go/relayr/apps/relayr/internal/app"
	"github.com/relayr-go/relayr/apps/relayr/internal/config"
	"github.com/relayr-go/relayr/core/tracker"
)

// jiraSite answers what a Jira binding reads as it connects (/myself,
// project OPS and its statuses) and an empty search, to the Authorization
// it is given only, and remembers the Authorization it was sent.
type jiraSite struct {
	auth string

	mu   sync.Mutex
	sent []string
}

func (j *jiraSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	j.mu.Lock()
	j.sent = append(j.sent, r.Header.Get("Authorization"))
	j.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("Authorization") != j.auth {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = fmt.Fprint(w, `{"errorMessages":["You are not authenticated."],"errors":{}}`)
		return
	}
	switch r.Method + " " + r.URL.Path {
	case "GET /rest/api/3/myself":
		_, _ = fmt.Fprint(w, `{"accountId":"5b10ac8d82e05b22cc7d4ef5","timeZone":"UTC"}`)
	case "GET /rest/api/3/project/OPS":
		_, _ = fmt.Fprint(w, `{"id":"10000","key":"OPS","name":"Operations"}`)
	case "GET /rest/api/3/project/OPS/statuses":
		_, _ = fmt.Fprint(w, `[{"id":"10001","name":"Task","statuses":[`+
			`{"id":"1","name":"To Do","statusCategory":{"key":"new"}},`+
			`{"id":"3","name":"In Progress","statusCategory":{"key":"indeterminate"}},`+
			`{"id":"10002","name":"Done","statusCategory":{"key":"done"}}]}]`)
	case "POST /rest/api/3/search/jql":
		_, _ = fmt.Fprint(w, `{"issues":[],"isLast":true}`)
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = fmt.Fprint(w, `{"errorMessages":["no such route here"],"errors":{}}`)
	}
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
	const token = "ATATT3xFfGF0-jira-api-token"
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("bot@acme.example:"+token))
	for _, c := range []struct {
		name  string
		b     config.Binding
		email string
		auth  string
		want  string // "" connects; else the error says it
	}{
		{"TheAccountsEmailAndToken", config.Binding{Project: "OPS"}, "bot@acme.example", basic, ""},
		{"AnOAuthBearerToken", config.Binding{Project: "OPS"}, "", "Bearer " + token, ""},
		{"StatusesOfTheWorkflow", config.Binding{Project: "OPS", Statuses: map[string]string{"todo": "To Do", "started": "In Progress"}}, "bot@acme.example", basic, ""},
		{"AnIssueTypeTheProjectHasNot", config.Binding{Project: "OPS", IssueType: "Bug"}, "bot@acme.example", basic, `no issue type "Bug" in the project`},
		{"AStatusNotInTheWorkflow", config.Binding{Project: "OPS", Statuses: map[string]string{"todo": "Selected for Development"}}, "bot@acme.example", basic,
			`the todo status "Selected for Development" is not in the Task workflow`},
	} {
		t.Run(c.name, func(t *testing.T) {
			site := &jiraSite{auth: c.auth}
			js := httptest.NewServer(site)
			defer js.Close()
			c.b.BaseURL = js.URL
			a := jiraApp(t, c.b, config.TrackerCredentials{Email: c.email}, tracker.Credentials{Token: token})
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
		})
	}
}

// TestAJiraDeliveryWakesTheBinding: an admin webhook's delivery, signed
// X-Hub-Signature: sha256=<hex>, through relayr's webhook route: a good
// signature of the bound project's issue answers 204; a bad signature, or
// another project's issue, the one 401.
func TestAJiraDeliveryWakesTheBinding(t *testing.T) {
	const token, secret = "ATATT3xFfGF0-jira-api-token", "jira-webhook-secret"
	site := &jiraSite{auth: "Basic " + base64.StdEncoding.EncodeToString([]byte("bot@acme.example:"+token))}
	js := httptest.NewServer(site)
	defer js.Close()
	a := jiraApp(t, config.Binding{BaseURL: js.URL, Project: "OPS"}, config.TrackerCredentials{Email: "bot@acme.example"},
		tracker.Credentials{Token: token, WebhookSecret: secret})
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
	deliver := func(key, body string) int {
		t.Helper()
		mac := hmac.New(sha256.New, []byte(key))
		mac.Write([]byte(body))
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+"/relayr/v1/trackers/acme/jira", bytes.NewReader([]byte(body)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(jira.SignatureHeader, "sha256="+hex.EncodeToString(mac.Sum(nil)))
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		return res.StatusCode
	}
	updated := `{"webhookEvent":"jira:issue_updated","timestamp":1764846000000,"issue":{"id":"10042","key":"OPS-7","fields":{"project":{"id":"10000","key":"OPS"}}}}`
	if code := deliver(secret, updated); code != http.StatusNoContent {
		t.Fatalf("a signed delivery of OPS answered %d, want 204", code)
	}
	deleted := `{"webhookEvent":"jira:issue_deleted","timestamp":1764846001000,"issue":{"id":"10042","key":"OPS-7","fields":{"project":{"id":"10000","key":"OPS"}}}}`
	if code := deliver("not-the-secret", deleted); code != http.StatusUnauthorized {
		t.Fatalf("a delivery signed with another secret answered %d, want 401", code)
	}
	other := `{"webhookEvent":"jira:issue_created","timestamp":1764846002000,"issue":{"id":"20001","key":"WEB-1","fields":{"project":{"id":"10100","key":"WEB"}}}}`
	if code := deliver(secret, other); code != http.StatusUnauthorized {
		t.Fatalf("a signed delivery of a project not bound answered %d, want 401", code)
	}
	if code := deliver(secret, deleted); code != http.StatusNoContent {
		t.Fatalf("a signed deletion of OPS answered %d, want 204", code)
	}
}
