package jira_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/jira"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/drivertest"
	"github.com/relayr-go/relayr/core/tracker/trackertest"
	"github.com/relayr-go/relayr/fixtures/livehook"
)

// live is a real Jira Cloud site, named by RELAYR_JIRA_URL,
// RELAYR_JIRA_EMAIL, RELAYR_JIRA_TOKEN and RELAYR_JIRA_PROJECT (a scratch
// project: the suites file issues and delete them). Without them the live
// runs skip; under RELAYR_REQUIRE_LIVE=1 they fail. Jira Cloud cannot
// reach a listener here, so its webhook cases are left to the emulation.
type live struct {
	base, email, token, project string
	lag                         time.Duration
}

func liveJira(t *testing.T) live {
	t.Helper()
	env := livehook.Env(t, "Jira", "RELAYR_JIRA_URL", "RELAYR_JIRA_EMAIL", "RELAYR_JIRA_TOKEN", "RELAYR_JIRA_PROJECT")
	l := live{base: strings.TrimRight(env[0], "/"), email: env[1], token: env[2], project: env[3]}
	if v := os.Getenv("RELAYR_JIRA_SEARCH_LAG"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("RELAYR_JIRA_SEARCH_LAG: %v", err)
		}
		l.lag = d
	}
	return l
}

func (l live) driver(t *testing.T) *jira.Driver {
	t.Helper()
	c, err := jira.NewConnector(jira.Config{BaseURL: l.base, Project: l.project, Email: l.email, SearchLag: l.lag})
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Driver(t.Context(), tracker.Credentials{Token: l.token}, source)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// livePerson acts through the site's REST API with the same account, as
// a person would in the web UI.
type livePerson struct{ live }

func (p livePerson) call(ctx context.Context, method, path string, body any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.base+path, r)
	if err != nil {
		return err
	}
	req.SetBasicAuth(p.email, p.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return nil
}

func adf(text string) map[string]any {
	return map[string]any{"type": "doc", "version": 1, "content": []any{
		map[string]any{"type": "paragraph", "content": []any{map[string]any{"type": "text", "text": text}}},
	}}
}

func (p livePerson) Retitle(ctx context.Context, id, title string) error {
	return p.call(ctx, http.MethodPut, "/rest/api/3/issue/"+id, map[string]any{"fields": map[string]any{"summary": title}})
}

func (p livePerson) Comment(ctx context.Context, id, body string) error {
	return p.call(ctx, http.MethodPost, "/rest/api/3/issue/"+id+"/comment", map[string]any{"body": adf(body)})
}

func (p livePerson) Delete(ctx context.Context, id string) error {
	return p.call(ctx, http.MethodDelete, "/rest/api/3/issue/"+id, nil)
}

func TestLiveContract(t *testing.T) {
	l := liveJira(t)
	trackertest.Run(t, func(t *testing.T) trackertest.Harness {
		return trackertest.Harness{Tracker: tracker.New(l.driver(t)), Person: livePerson{l}, Wait: time.Sleep}
	})
}

func TestLiveDriver(t *testing.T) {
	l := liveJira(t)
	drivertest.Run(t, func(t *testing.T) drivertest.Harness {
		return drivertest.Harness{Driver: l.driver(t), Person: livePerson{l}, Wait: time.Sleep}
	})
}
