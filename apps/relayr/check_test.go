package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relayr-go/relayr/fixtures/gitlabemu"
	"github.com/relayr-go/relayr/fixtures/jiraemu"
	"github.com/relayr-go/relayr/fixtures/linearemu"
	"github.com/relayr-go/relayr/fixtures/planeemu"
)

// TestCheckReachesEveryBoundTrackerWithItsCredentials runs `relayr check`
// against the Plane emulation with a good key and a bad one.
func TestCheckReachesEveryBoundTrackerWithItsCredentials(t *testing.T) {
	plane := planeemu.New(planeemu.Options{Now: time.Now, RateLimit: -1})
	ps := httptest.NewServer(plane)
	defer ps.Close()
	path := filepath.Join(t.TempDir(), "relayr.toml")
	cfg := acmeOnPlane(ps.URL, plane)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ACME_TOKEN", "check-token-of-acme-0123456789abcdef")

	t.Setenv("ACME_PLANE_KEY", plane.Bot.Key)
	var out bytes.Buffer
	if code := run(context.Background(), []string{"check", "-config", path}, &out, &out); code != exitOK {
		t.Fatalf("exit %d with a good key:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "acme/ops") || !strings.Contains(out.String(), "reachable") {
		t.Fatalf("output:\n%s", out.String())
	}

	t.Setenv("ACME_PLANE_KEY", "plane_api_00000000000000000000000000000000")
	out.Reset()
	if code := run(context.Background(), []string{"check", "-config", path}, &out, &out); code != exitFail {
		t.Fatalf("exit %d with a bad key:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "FAILED") || !strings.Contains(out.String(), "unauthorized") {
		t.Fatalf("output:\n%s", out.String())
	}

	t.Setenv("ACME_PLANE_KEY", "")
	out.Reset()
	if code := run(context.Background(), []string{"check", "-config", path}, &out, &out); code != exitFail {
		t.Fatalf("exit %d with the key unset", code)
	}
	if !strings.Contains(out.String(), "ACME_PLANE_KEY") {
		t.Fatalf("a missing secret is not named:\n%s", out.String())
	}
}

// jiraConfig is tenant acme bound to project OPS on the Jira site at url,
// with extra lines in the binding.
func jiraConfig(t *testing.T, url, extra string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "relayr.toml")
	cfg := fmt.Sprintf(`[[tenants]]
name = "acme"
token = {env = "ACME_TOKEN"}
[tenants.trackers.jira]
email = "bot@acme.example"
key = {env = "ACME_JIRA_TOKEN"}

[[bindings]]
tenant = "acme"
workspace = "support"
tracker = "jira"
base_url = %q
project = "OPS"
%s
`, url, extra)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCheckReachesAJiraBinding runs `relayr check` against Jira's
// emulation with a good token and a bad one. Jira's search lags, so a
// look-up concludes "none" only from two searches search_lag apart: check
// takes one search answered as reach, and does not wait out the lag.
func TestCheckReachesAJiraBinding(t *testing.T) {
	e, js := jiraemu.NewServer(jiraemu.Options{})
	defer js.Close()
	defer e.Close()
	e.AddUser("5b10ac8d82e05b22cc7d4ef5", "relayr bot", nil)
	token := e.AddToken("bot@acme.example", "5b10ac8d82e05b22cc7d4ef5")
	e.CreateProject("OPS", "Operations", jiraemu.DefaultWorkflow())
	t.Setenv("ACME_TOKEN", "check-token-of-acme-0123456789abcdef")
	path := jiraConfig(t, js.URL, "")

	t.Setenv("ACME_JIRA_TOKEN", token)
	var out bytes.Buffer
	if code := run(context.Background(), []string{"check", "-config", path}, &out, &out); code != exitOK {
		t.Fatalf("exit %d with a good token:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "acme/support") || !strings.Contains(out.String(), "jira") || !strings.Contains(out.String(), "reachable") {
		t.Fatalf("output:\n%s", out.String())
	}
	if n := e.Requests("POST /rest/api/3/search/jql"); n != 1 {
		t.Fatalf("%d searches, want 1: check waited out the search's lag", n)
	}

	t.Setenv("ACME_JIRA_TOKEN", "ATATT3xFfGF0-not-the-token")
	out.Reset()
	if code := run(context.Background(), []string{"check", "-config", path}, &out, &out); code != exitFail {
		t.Fatalf("exit %d with a bad token:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "FAILED") || !strings.Contains(out.String(), "unauthorized") {
		t.Fatalf("output:\n%s", out.String())
	}
	if v := e.Violations(); len(v) > 0 {
		t.Fatalf("exchanges outside Atlassian's description:\n%s", strings.Join(v, "\n"))
	}
}

// gitlabConfig is tenant acme bound to project on the GitLab at url, with
// extra lines in the binding.
func gitlabConfig(t *testing.T, url, project, extra string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "relayr.toml")
	cfg := fmt.Sprintf(`[[tenants]]
name = "acme"
token = {env = "ACME_TOKEN"}
[tenants.trackers.gitlab]
key = {env = "ACME_GITLAB_TOKEN"}

[[bindings]]
tenant = "acme"
workspace = "support"
tracker = "gitlab"
base_url = %q
project = %q
%s
`, url, project, extra)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCheckReachesAGitLabBinding runs `relayr check` against GitLab's
// emulation with a good token, a bad one, and a project the token cannot
// see. GitLab's lists may read a replica, so a look-up concludes "none"
// only from two reads list_lag apart: check takes one read of the bot's
// issues answered as reach, and does not wait out the lag.
func TestCheckReachesAGitLabBinding(t *testing.T) {
	e, gs := gitlabemu.NewServer(gitlabemu.GitLabCom())
	defer gs.Close()
	defer e.Close()
	token := e.AddToken("relayr-bot")
	e.CreateProject("acme/ops", "relayr-bot")
	e.CreateProject("someone/private", "someone")
	t.Setenv("ACME_TOKEN", "check-token-of-acme-0123456789abcdef")
	path := gitlabConfig(t, gs.URL, "acme/ops", "")

	t.Setenv("ACME_GITLAB_TOKEN", token)
	var out bytes.Buffer
	if code := run(context.Background(), []string{"check", "-config", path}, &out, &out); code != exitOK {
		t.Fatalf("exit %d with a good token:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "acme/support") || !strings.Contains(out.String(), "gitlab") || !strings.Contains(out.String(), "reachable") {
		t.Fatalf("output:\n%s", out.String())
	}
	if n := e.Requests("GET /api/v4/projects/{id}/issues"); n != 1 {
		t.Fatalf("%d reads of the issues, want 1: check waited out the lists' lag", n)
	}

	t.Setenv("ACME_GITLAB_TOKEN", "glpat-not-the-token-0123456789")
	out.Reset()
	if code := run(context.Background(), []string{"check", "-config", path}, &out, &out); code != exitFail {
		t.Fatalf("exit %d with a bad token:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "FAILED") || !strings.Contains(out.String(), "unauthorized") {
		t.Fatalf("output:\n%s", out.String())
	}

	t.Setenv("ACME_GITLAB_TOKEN", token)
	out.Reset()
	if code := run(context.Background(), []string{"check", "-config", gitlabConfig(t, gs.URL, "someone/private", "")}, &out, &out); code != exitFail {
		t.Fatalf("exit %d with a project the token cannot see:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "FAILED") || !strings.Contains(out.String(), "someone/private") || !strings.Contains(out.String(), "not found") {
		t.Fatalf("output:\n%s", out.String())
	}
}

// linearConfig is tenant acme bound to team on the Linear at url (its
// GraphQL endpoint), with extra lines in the binding.
func linearConfig(t *testing.T, url, team, extra string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "relayr.toml")
	cfg := fmt.Sprintf(`[[tenants]]
name = "acme"
token = {env = "ACME_TOKEN"}
[tenants.trackers.linear]
key = {env = "ACME_LINEAR_KEY"}

[[bindings]]
tenant = "acme"
workspace = "support"
tracker = "linear"
base_url = %q
team = %q
%s
`, url, team, extra)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCheckReachesALinearBinding runs `relayr check` against Linear's
// emulation with a good key, a bad one, and a team the workspace does not
// have. Linear's look-up reads current: one issue(id) read of the id a
// key never filed derives, answered "Entity not found", is reach.
func TestCheckReachesALinearBinding(t *testing.T) {
	e, ls := linearemu.NewServer(linearemu.Options{})
	defer ls.Close()
	defer e.Close()
	key := e.AddKey(e.AddUser("relayr bot", false))
	e.AddTeam("ENG", "Engineering")
	t.Setenv("ACME_TOKEN", "check-token-of-acme-0123456789abcdef")
	path := linearConfig(t, ls.URL+"/graphql", "ENG", "")

	t.Setenv("ACME_LINEAR_KEY", key)
	var out bytes.Buffer
	if code := run(context.Background(), []string{"check", "-config", path}, &out, &out); code != exitOK {
		t.Fatalf("exit %d with a good key:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "acme/support") || !strings.Contains(out.String(), "linear") || !strings.Contains(out.String(), "reachable") {
		t.Fatalf("output:\n%s", out.String())
	}
	if n := e.Requests("query issue"); n != 1 {
		t.Fatalf("%d reads of an issue, want the one of the key never filed", n)
	}
	if n := e.Requests("query issues") + e.Requests("mutation issueCreate"); n != 0 {
		t.Fatalf("%d lists or creates: check reads the one id", n)
	}

	t.Setenv("ACME_LINEAR_KEY", "lin_api_not-the-key-0123456789abcdef")
	out.Reset()
	if code := run(context.Background(), []string{"check", "-config", path}, &out, &out); code != exitFail {
		t.Fatalf("exit %d with a bad key:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "FAILED") || !strings.Contains(out.String(), "unauthorized") {
		t.Fatalf("output:\n%s", out.String())
	}

	t.Setenv("ACME_LINEAR_KEY", key)
	out.Reset()
	if code := run(context.Background(), []string{"check", "-config", linearConfig(t, ls.URL+"/graphql", "OPS", "")}, &out, &out); code != exitFail {
		t.Fatalf("exit %d with a team the workspace does not have:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "FAILED") || !strings.Contains(out.String(), "OPS") || !strings.Contains(out.String(), "not found") {
		t.Fatalf("output:\n%s", out.String())
	}
}
