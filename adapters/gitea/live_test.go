package gitea_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/gitea"
	"github.com/relayr-go/relayr/core/tracker"
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
	base, token, repo := os.Getenv("RELAYR_GITEA_URL"), os.Getenv("RELAYR_GITEA_TOKEN"), os.Getenv("RELAYR_GITEA_REPO")
	if base == "" || token == "" || repo == "" {
		msg := "no live Gitea: set RELAYR_GITEA_URL, RELAYR_GITEA_TOKEN and RELAYR_GITEA_REPO (owner/name) to run the suites against one"
		if os.Getenv("RELAYR_REQUIRE_LIVE") == "1" {
			t.Fatal(msg + " (RELAYR_REQUIRE_LIVE=1)")
		}
		t.Skip(msg)
	}
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

// liveHooks receives the server's webhook deliveries on a loopback
// listener, through repository webhooks it registers (one per secret,
// "active": true, which Gitea does not default to) and deletes when the
// run ends. A Gitea delivers to 127.0.0.1 only with
// `[webhook] ALLOWED_HOST_LIST = loopback`.
type liveHooks struct {
	srv    *httptest.Server
	person livePerson
	owner  *testing.T

	mu         sync.Mutex
	registered map[string]bool
	got        []liveDelivery
	arrived    chan struct{}
}

type liveDelivery struct {
	header http.Header
	body   []byte
	action string
	issue  string
}

// liveDeliveryWait is how long a delivery may take: Gitea queues it and
// tries it once, with a 5 s timeout.
const liveDeliveryWait = 30 * time.Second

func newLiveHooks(t *testing.T, p livePerson) *liveHooks {
	h := &liveHooks{person: p, owner: t, registered: map[string]bool{}, arrived: make(chan struct{}, 1)}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		var d struct {
			Action string `json:"action"`
			Issue  struct {
				Number int64 `json:"number"`
			} `json:"issue"`
		}
		_ = json.Unmarshal(body, &d)
		h.mu.Lock()
		h.got = append(h.got, liveDelivery{header: r.Header.Clone(), body: body, action: d.Action, issue: strconv.FormatInt(d.Issue.Number, 10)})
		h.mu.Unlock()
		select {
		case h.arrived <- struct{}{}:
		default:
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *liveHooks) register(t *testing.T, secret string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.registered[secret] {
		return
	}
	body := fmt.Sprintf(`{"type":"gitea","config":{"url":%q,"content_type":"json","secret":%q},"events":["issues"],"active":true}`, h.srv.URL+"/hook", secret)
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

func (h *liveHooks) await(t *testing.T, action, issue string) (http.Header, []byte) {
	deadline := time.After(liveDeliveryWait)
	for {
		h.mu.Lock()
		for _, d := range h.got {
			if d.action == action && d.issue == issue {
				h.mu.Unlock()
				return d.header, d.body
			}
		}
		n := len(h.got)
		h.mu.Unlock()
		select {
		case <-h.arrived:
		case <-deadline:
			t.Fatalf("no issues/%s delivery about #%s reached %s within %s (%d others did). A Gitea delivers to a "+
				"loopback address only with `[webhook] ALLOWED_HOST_LIST = loopback` in its app.ini.", action, issue, h.srv.URL, liveDeliveryWait, n)
		}
	}
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
