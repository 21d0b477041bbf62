package figures

import (
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"

	"github.com/relayr-go/relayr/apps/relayr/internal/config"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/giteaemu"
	"github.com/relayr-go/relayr/fixtures/githubemu"
)

// The code forges' figures run in a repository of their own, filed by a
// bot, and changed by a person of the team.
const (
	forgeOwner  = "acme"
	forgeRepo   = "app"
	forgeBot    = "relayr-bot"
	forgePerson = "alice"
)

func number(id string) int64 { n, _ := strconv.ParseInt(id, 10, 64); return n }

// hooks registers each webhook target once.
type hooks struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (h *hooks) once(url string, add func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.seen == nil {
		h.seen = map[string]bool{}
	}
	if !h.seen[url] {
		h.seen[url] = true
		add()
	}
}

type gitea struct {
	e     *giteaemu.Emulator
	srv   *httptest.Server
	token string
	p     *giteaemu.Person
	hooks hooks
}

func newGitea(now func() time.Time) *gitea {
	e, srv := giteaemu.NewServer(giteaemu.Options{Now: now,
		WebhookClient: &http.Client{Transport: loopback(), Timeout: 5 * time.Second}})
	e.AddUser(forgeBot)
	g := &gitea{e: e, srv: srv, token: e.AddToken(forgeBot, true)}
	e.CreateRepo(forgeBot, forgeRepo)
	g.p = e.Person(forgeBot, forgeBot, forgeRepo) // the repository's owner may delete
	return g
}

func (g *gitea) Name() string { return "Gitea" }

func (g *gitea) Binding() config.Binding {
	return config.Binding{Tenant: tenant, Workspace: workspace, Tracker: "gitea", BaseURL: g.srv.URL, Project: forgeBot + "/" + forgeRepo}
}

func (g *gitea) Credentials() tracker.Credentials {
	return tracker.Credentials{Token: g.token, WebhookSecret: webhookSecret}
}

func (g *gitea) Requests() int  { return g.e.TotalRequests() }
func (g *gitea) ResetRequests() { g.e.ResetCounts() }

func (g *gitea) PersonCreate(title string) (string, error) {
	n, err := g.p.CreateIssue(title, "")
	return strconv.FormatInt(n, 10), err
}

func (g *gitea) PersonRetitle(id, title string) error { return g.p.Retitle(number(id), title) }

func (g *gitea) PersonComment(id, text string) error {
	_, err := g.p.Comment(number(id), text)
	return err
}

func (g *gitea) PersonDelete(id string) error { return g.p.Delete(number(id)) }

// Forward registers one repository webhook for every issue event: Gitea
// sends a deletion with the rest.
func (g *gitea) Forward(url string) {
	g.hooks.once(url, func() { _, _ = g.e.AddHook(forgeBot, forgeRepo, url, webhookSecret, "issues") })
}

func (g *gitea) ForwardDeletions(url string) { g.Forward(url) }

// Titles implements counting.
func (g *gitea) Titles() map[string]int { return g.e.Titles(forgeBot, forgeRepo) }

func (g *gitea) Close() {
	g.srv.Close()
	g.e.Close()
}

// limited is an emulation whose tracker counts what a key spent of its
// hourly limit (GitHub's, a 304 costing nothing).
type limited interface{ Spent() int }

type github struct {
	e     *githubemu.Emulator
	srv   *httptest.Server
	token string
	p     *githubemu.Person
	hooks hooks
}

func newGitHub(now func() time.Time) *github {
	// GitHub's limits are relayr's to keep, by its budget; the emulation's
	// would end a figure's long run of requests, and the limits' own tests
	// measure them. The hour is counted (Spent), never reached.
	e, srv := githubemu.NewServer(githubemu.Options{Now: now, HourlyLimit: math.MaxInt32, NoSecondaryLimits: true,
		WebhookClient: &http.Client{Transport: loopback(), Timeout: 10 * time.Second}})
	e.AddUser(forgeBot)
	h := &github{e: e, srv: srv, token: e.AddToken(forgeBot, true)}
	e.CreateRepo(forgeOwner, forgeRepo)
	h.p = e.Person(forgePerson)
	return h
}

func (h *github) Name() string { return "GitHub" }

func (h *github) Binding() config.Binding {
	return config.Binding{Tenant: tenant, Workspace: workspace, Tracker: "github", BaseURL: h.srv.URL, Project: forgeOwner + "/" + forgeRepo}
}

func (h *github) Credentials() tracker.Credentials {
	return tracker.Credentials{Token: h.token, WebhookSecret: webhookSecret}
}

func (h *github) Requests() int  { return h.e.TotalRequests() }
func (h *github) Spent() int     { return h.e.Spent(h.token) }
func (h *github) ResetRequests() { h.e.ResetCounts() }

func (h *github) PersonCreate(title string) (string, error) {
	n, err := h.p.CreateIssue(forgeOwner, forgeRepo, title, "")
	return strconv.FormatInt(n, 10), err
}

func (h *github) PersonRetitle(id, title string) error {
	return h.p.Retitle(forgeOwner, forgeRepo, number(id), title)
}

func (h *github) PersonComment(id, text string) error {
	_, err := h.p.Comment(forgeOwner, forgeRepo, number(id), text)
	return err
}

func (h *github) PersonDelete(id string) error {
	h.e.DeleteIssue(forgeOwner, forgeRepo, number(id))
	return nil
}

func (h *github) Forward(url string) {
	h.hooks.once(url, func() { _, _ = h.e.AddHook(forgeOwner, forgeRepo, url, webhookSecret, "issues", "issue_comment") })
}

func (h *github) ForwardDeletions(url string) { h.Forward(url) }

func (h *github) Close() {
	h.srv.Close()
	h.e.Close()
}
