package gitlab_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/gitlab"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/drivertest"
	"github.com/relayr-go/relayr/core/tracker/trackertest"
	"github.com/relayr-go/relayr/fixtures/livehook"
)

// live is a real GitLab, named by RELAYR_GITLAB_URL, RELAYR_GITLAB_TOKEN
// (a token with the api scope of a project's owner: the suites delete
// what they file) and RELAYR_GITLAB_PROJECT (a scratch project's id or
// path). Without them the live runs skip; under RELAYR_REQUIRE_LIVE=1
// they fail. GitLab.com cannot reach a listener here, so the webhook
// cases are left to the emulation.
type live struct {
	base, token, project string
}

func liveGitLab(t *testing.T) live {
	t.Helper()
	env := livehook.Env(t, "GitLab", "RELAYR_GITLAB_URL", "RELAYR_GITLAB_TOKEN", "RELAYR_GITLAB_PROJECT")
	return live{base: strings.TrimRight(env[0], "/"), token: env[1], project: env[2]}
}

func (l live) driver(t *testing.T) *gitlab.Driver {
	t.Helper()
	c, err := gitlab.NewConnector(gitlab.Config{BaseURL: l.base, Project: l.project})
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Driver(t.Context(), tracker.Credentials{Token: l.token}, source)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// livePerson acts through the REST API with the same token, as a person
// would in the web UI.
type livePerson struct{ live }

func (p livePerson) call(ctx context.Context, method, path string, form url.Values) error {
	req, err := http.NewRequestWithContext(ctx, method, p.base+"/api/v4/projects/"+url.PathEscape(p.project)+path, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("PRIVATE-TOKEN", p.token)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
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

func (p livePerson) Retitle(ctx context.Context, id, title string) error {
	return p.call(ctx, http.MethodPut, "/issues/"+id, url.Values{"title": {title}})
}

func (p livePerson) Comment(ctx context.Context, id, body string) error {
	return p.call(ctx, http.MethodPost, "/issues/"+id+"/notes", url.Values{"body": {body}})
}

func (p livePerson) Delete(ctx context.Context, id string) error {
	return p.call(ctx, http.MethodDelete, "/issues/"+id, nil)
}

func TestLiveContract(t *testing.T) {
	l := liveGitLab(t)
	trackertest.Run(t, func(t *testing.T) trackertest.Harness {
		return trackertest.Harness{Tracker: tracker.New(l.driver(t)), Person: livePerson{l}, Wait: time.Sleep}
	})
}

func TestLiveDriver(t *testing.T) {
	l := liveGitLab(t)
	drivertest.Run(t, func(t *testing.T) drivertest.Harness {
		return drivertest.Harness{Driver: l.driver(t), Person: livePerson{l}, Wait: time.Sleep}
	})
}
