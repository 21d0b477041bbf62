package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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

// jiraSite answers what `relayr check` reads of a Jira Cloud site for
// project OPS (/myself, the project, its statuses, the search), to the
// account bot@acme.example's API token only, and counts the searches.
type jiraSite struct {
	token    string
	searches atomic.Int64
}

func (j *jiraSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("Authorization") != "Basic "+base64.StdEncoding.EncodeToString([]byte("bot@acme.example:"+j.token)) {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = fmt.Fprint(w, `{"errorMessages":["You are not authenticated. Authentication required to perform this operation."],"errors":{}}`)
		return
	}
	switch r.Method + " " + r.URL.Path {
	case "GET /rest/api/3/myself":
		_, _ = fmt.Fprint(w, `{"accountId":"5b10ac8d82e05b22cc7d4ef5","timeZone":"Europe/Berlin"}`)
	case "GET /rest/api/3/project/OPS":
		_, _ = fmt.Fprint(w, `{"id":"10000","key":"OPS","name":"Operations"}`)
	case "GET /rest/api/3/project/OPS/statuses":
		_, _ = fmt.Fprint(w, `[{"id":"10001","name":"Task","statuses":[`+
			`{"id":"1","name":"To Do","statusCategory":{"key":"new"}},`+
			`{"id":"3","name":"In Progress","statusCategory":{"key":"indeterminate"}},`+
			`{"id":"10002","name":"Done","statusCategory":{"key":"done"}}]}]`)
	case "POST /rest/api/3/search/jql":
		j.searches.Add(1)
		_, _ = fmt.Fprint(w, `{"issues":[],"isLast":true}`)
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = fmt.Fprint(w, `{"errorMessages":["no such route here"],"errors":{}}`)
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

// TestCheckReachesAJiraBinding runs `relayr check` against a Jira site
// with a good token and a bad one. Jira's search lags, so a look-up
// concludes "none" only from two searches search_lag apart: check takes
// one search answered as reach, and waits out only a lag that fits.
func TestCheckReachesAJiraBinding(t *testing.T) {
	site := &jiraSite{token: "ATATT3xFfGF0-jira-api-token"}
	js := httptest.NewServer(site)
	defer js.Close()
	t.Setenv("ACME_TOKEN", "check-token-of-acme-0123456789abcdef")
	path := jiraConfig(t, js.URL, "")

	t.Setenv("ACME_JIRA_TOKEN", site.token)
	var out bytes.Buffer
	began := time.Now()
	if code := run(context.Background(), []string{"check", "-config", path}, &out, &out); code != exitOK {
		t.Fatalf("exit %d with a good token:\n%s", code, out.String())
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Fatalf("check took %s: it waited out the search's 30 s lag", took)
	}
	if !strings.Contains(out.String(), "acme/support") || !strings.Contains(out.String(), "jira") || !strings.Contains(out.String(), "reachable") {
		t.Fatalf("output:\n%s", out.String())
	}
	if n := site.searches.Load(); n != 1 {
		t.Fatalf("%d searches, want 1", n)
	}

	// A lag that fits is waited out: the look-up's second search.
	site.searches.Store(0)
	out.Reset()
	if code := run(context.Background(), []string{"check", "-config", jiraConfig(t, js.URL, `search_lag = "100ms"`)}, &out, &out); code != exitOK {
		t.Fatalf("exit %d with search_lag = 100ms:\n%s", code, out.String())
	}
	if n := site.searches.Load(); n != 2 {
		t.Fatalf("%d searches with search_lag = 100ms, want 2", n)
	}

	t.Setenv("ACME_JIRA_TOKEN", "ATATT3xFfGF0-not-the-token")
	out.Reset()
	if code := run(context.Background(), []string{"check", "-config", path}, &out, &out); code != exitFail {
		t.Fatalf("exit %d with a bad token:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "FAILED") || !strings.Contains(out.String(), "unauthorized") {
		t.Fatalf("output:\n%s", out.String())
	}
}
