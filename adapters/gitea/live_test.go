package gitea_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/gitea"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/livehook"
)

// live is a Gitea built from its source and run on 127.0.0.1, named by
// RELAYR_GITEA_URL, RELAYR_GITEA_TOKEN and RELAYR_GITEA_REPO (owner/name).
// Without them the live runs skip; under RELAYR_REQUIRE_LIVE=1 they fail.
type live struct {
	base, token, repo string
	person            livePerson
	hooks             *liveHooks
}

func liveGitea(t *testing.T) live {
	t.Helper()
	env := livehook.Env(t, "Gitea", "RELAYR_GITEA_URL", "RELAYR_GITEA_TOKEN", "RELAYR_GITEA_REPO")
	base, token, repo := env[0], env[1], env[2]
	p := livePerson{base: base, token: token, repo: repo}
	return live{base: base, token: token, repo: repo, person: p, hooks: newLiveHooks(t, p)}
}

// driver connects a driver to the live repository.
func (l live) connect(t *testing.T) *tracker.Tracker {
	t.Helper()
	c, err := gitea.NewConnector(gitea.Config{BaseURL: l.base, Repo: l.repo})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := c.Connect(t.Context(), tracker.Credentials{Token: l.token}, source)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func (l live) driver(t *testing.T) tracker.Driver {
	t.Helper()
	c, err := gitea.NewConnector(gitea.Config{BaseURL: l.base, Repo: l.repo})
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Driver(t.Context(), tracker.Credentials{Token: l.token}, source)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// webhook changes the item as a person and answers the server's delivery.
func (l live) webhook(t *testing.T, id, secret string) (http.Header, []byte) {
	l.hooks.register(t, secret)
	if err := l.person.Retitle(t.Context(), id, "Changed for a delivery"); err != nil {
		t.Fatal(err)
	}
	return l.hooks.await(t, "edited", id)
}

// deletion deletes the item as a person and answers the server's delivery.
func (l live) deletion(t *testing.T, id, secret string) (http.Header, []byte) {
	l.hooks.register(t, secret)
	if err := l.person.Delete(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	return l.hooks.await(t, "deleted", id)
}

// liveHooks registers repository webhooks on the live server (one per
// secret, "active": true, which Gitea does not default to), pointed at a
// loopback receiver, and deletes them when the run ends.
type liveHooks struct {
	rx     *livehook.Receiver
	person livePerson
	owner  *testing.T

	mu         sync.Mutex
	registered map[string]bool
}

func newLiveHooks(t *testing.T, p livePerson) *liveHooks {
	return &liveHooks{rx: livehook.New(t), person: p, owner: t, registered: map[string]bool{}}
}

func (h *liveHooks) register(t *testing.T, secret string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.registered[secret] {
		return
	}
	body := fmt.Sprintf(`{"type":"gitea","config":{"url":%q,"content_type":"json","secret":%q},"events":["issues"],"active":true}`, h.rx.URL, secret)
	out, err := h.person.call(t.Context(), http.MethodPost, "/hooks", body)
	if err != nil {
		t.Fatalf("registering a webhook: %v", err)
	}
	var hook struct {
		ID int64 `json:"id"`
	}
	if err := json.Unmarshal(out, &hook); err != nil || hook.ID <= 0 {
		t.Fatalf("registering a webhook answered %s (%v)", out, err)
	}
	h.registered[secret] = true
	h.owner.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := h.person.call(ctx, http.MethodDelete, "/hooks/"+strconv.FormatInt(hook.ID, 10), ""); err != nil {
			h.owner.Errorf("deleting the test's webhook: %v", err)
		}
	})
}

// await answers the first issues delivery of action about the issue.
func (h *liveHooks) await(t *testing.T, action, issue string) (http.Header, []byte) {
	d := h.rx.Await(t, "issues/"+action+" about #"+issue, "A Gitea delivers to a loopback address only with "+
		"`[webhook] ALLOWED_HOST_LIST = loopback` in its app.ini.", func(d livehook.Delivery) bool {
		var p struct {
			Action string `json:"action"`
			Issue  struct {
				Number int64 `json:"number"`
			} `json:"issue"`
		}
		return json.Unmarshal(d.Body, &p) == nil && p.Action == action && strconv.FormatInt(p.Issue.Number, 10) == issue
	})
	return d.Header, d.Body
}

// livePerson acts through the live server's API, as a person in the web
// UI would.
type livePerson struct{ base, token, repo string }

func (p livePerson) call(ctx context.Context, method, path, body string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, p.base+"/api/v1/repos/"+p.repo+path, bytes.NewBufferString(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "token "+p.token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return b, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return b, nil
}

func (p livePerson) Retitle(ctx context.Context, id, title string) error {
	_, err := p.call(ctx, http.MethodPatch, "/issues/"+id, fmt.Sprintf(`{"title":%q}`, title))
	return err
}

func (p livePerson) Comment(ctx context.Context, id, body string) error {
	_, err := p.call(ctx, http.MethodPost, "/issues/"+id+"/comments", fmt.Sprintf(`{"body":%q}`, body))
	return err
}

func (p livePerson) Delete(ctx context.Context, id string) error {
	_, err := p.call(ctx, http.MethodDelete, "/issues/"+id, "")
	return err
}
