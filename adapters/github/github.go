// Package github is relayr's tracker driver for GitHub Issues' REST API,
// github.com's and GitHub Enterprise Server's (a base URL ending in
// /api/v3), on core/tracker/trackerhttp. A repository ("owner/name") is a
// binding's project; an item is an issue, its id the issue's number.
//
// GitHub takes no idempotency key, and its search lags a new issue, so a
// check by search before filing files twice. An issue relayr files carries
// its key in a hidden HTML comment on the body's last line
// (tracker.HiddenMarker, ADR-0033), and Find reads the list of the issues
// the token's account created, newest first, which is consistent with the
// create (docs/trackers/github.md §4). Pull requests are issues to this
// API, in every list and in the numbering: items with a pull_request are
// left out.
//
// Items reads the issues changed since a time, least recently updated
// first (sort=updated&direction=asc&since=), a page of 100 at a time, each
// page a fresh read from the last time read (since is inclusive and to the
// second), so that an issue moving under the walk is read later, never
// skipped; the first read of a poll is conditional (If-None-Match), and an
// idle poll answered 304 costs nothing of the hourly limit (trackerhttp
// gives it back to relayr's budget). Labels go by name and GitHub makes the
// missing ones; a token without push access would have them dropped
// silently, so such a draft is refused before anything is filed. Closing
// has a reason: done is closed as completed, cancelled as not_planned, so
// both are held; backlog, todo and started read back as todo. An edit sends
// only what differs. A transferred issue answers 301 and is followed: it
// stays the same item. A deleted one answers 410 (no REST delete exists;
// the issues/deleted webhook, signed X-Hub-Signature-256, says so
// promptly).
//
// GitHub's limits are kept by the driver where the tracker states them:
// after an answer that says the hour's requests are spent
// (x-ratelimit-remaining: 0), requests are answered rate-limited until
// x-ratelimit-reset without being sent, and content-creating requests (a
// new issue, a new comment) are held to GitHub's 80 a minute and 500 an
// hour per token (limits.go).
package github

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/forge"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// Kind is the integration's key without its prefix (tracker:github).
const Kind = "github"

// Defaults of Config.
const (
	// DefaultBaseURL is github.com's API.
	DefaultBaseURL = "https://api.github.com"
	// DefaultAPIVersion is the X-GitHub-Api-Version sent.
	DefaultAPIVersion = "2022-11-28"
	// PerPage is the most items a list answers a page (per_page's cap,
	// components.parameters.per-page).
	PerPage = 100
	// MaxBody is the most characters an issue's or a comment's body holds
	// (GitHub answers a longer one 422, docs/trackers/github.md §0.10).
	MaxBody = 65536
)

// SignatureHeader carries a webhook delivery's signature:
// "sha256=" and the hex HMAC-SHA256 of the raw body.
const SignatureHeader = "X-Hub-Signature-256"

// Config says where a GitHub repository is and how to reach it.
type Config struct {
	// BaseURL is the API: DefaultBaseURL, or an Enterprise Server's
	// "https://<host>/api/v3".
	BaseURL string
	// WebURL is the web app's base for links; default https://github.com
	// for github.com's API, the host of an Enterprise Server's.
	WebURL string
	// Repo is the repository, "owner/name".
	Repo string
	// Login is the account the token files as. Unset, Connect reads it
	// (GET /user); a GitHub App's installation token cannot, and names its
	// app's bot here ("<app-slug>[bot]").
	Login string
	// Namespace is the Source namespace used when a Source names none.
	Namespace string
	// APIVersion is sent as X-GitHub-Api-Version; default DefaultAPIVersion.
	APIVersion string
	// Client sends the requests (http.DefaultTransport by default).
	Client *http.Client
	// Timeout bounds each phase of a request; default 10 s.
	Timeout time.Duration
	// Now is the clock the tracker's resets are read against; default
	// time.Now.
	Now func() time.Time
}

// Connector makes a Tracker per workspace for one GitHub repository.
type Connector struct {
	cfg  Config
	repo forge.Repo

	logins forge.Logins // the account each token files as

	mu     sync.Mutex
	limits map[string]*limits // token → what GitHub said of its limits
}

var _ tracker.Connector = (*Connector)(nil)

// NewConnector checks cfg and fills in its defaults. It makes no request.
func NewConnector(cfg Config) (*Connector, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &tracker.InvalidError{Field: "github base URL", Reason: tracker.Quote(cfg.BaseURL) + " is not an http(s) URL"}
	}
	repo, err := forge.ParseRepo(cfg.Repo)
	if err != nil {
		return nil, err
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.WebURL == "" {
		cfg.WebURL = webURL(u)
	}
	cfg.WebURL = strings.TrimRight(cfg.WebURL, "/")
	if cfg.Namespace == "" {
		cfg.Namespace = tracker.DefaultNamespace
	}
	if cfg.APIVersion == "" {
		cfg.APIVersion = DefaultAPIVersion
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Connector{cfg: cfg, repo: repo, limits: map[string]*limits{}}, nil
}

// webURL is the web app of an API: github.com's for api.github.com, an
// Enterprise Server's own host for its /api/v3.
func webURL(api *url.URL) string {
	if strings.EqualFold(api.Host, "api.github.com") {
		return "https://github.com"
	}
	w := *api
	w.Path = strings.TrimSuffix(strings.TrimRight(w.Path, "/"), "/api/v3")
	return strings.TrimRight(w.String(), "/")
}

// Kind implements tracker.Connector.
func (c *Connector) Kind() string { return Kind }

// Connect makes the portable tracker filing into the repository for
// source. It reads the repository (the token's push access) and, once per
// token unless Config names it, the login the token files as.
func (c *Connector) Connect(ctx context.Context, creds tracker.Credentials, source tracker.Source) (*tracker.Tracker, error) {
	return tracker.Over(c.Driver(ctx, creds, source))
}

// Driver makes the driver beneath Connect's tracker, for the driver
// conformance suite (core/tracker/drivertest) and for callers composing
// their own portable tracker.
func (c *Connector) Driver(ctx context.Context, creds tracker.Credentials, source tracker.Source) (*Driver, error) {
	source, err := tracker.Connecting(Kind, creds, source, c.cfg.Namespace)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	lim, ok := c.limits[creds.Token]
	if !ok {
		lim = newLimits(c.cfg.Now)
		c.limits[creds.Token] = lim
	}
	c.mu.Unlock()
	cl, err := trackerhttp.New(trackerhttp.Config{
		Name: "github", BaseURL: c.cfg.BaseURL + "/", AuthValue: "Bearer " + creds.Token,
		Header: http.Header{
			"Accept":               {"application/vnd.github+json"},
			"X-Github-Api-Version": {c.cfg.APIVersion},
			"User-Agent":           {"relayr"},
		},
		Client: c.cfg.Client, Timeout: c.cfg.Timeout, MaxResponse: 16 << 20, Now: c.cfg.Now,
		Classify: lim.classify, Gate: lim,
	})
	if err != nil {
		return nil, err
	}
	d := &Driver{cl: cl, cfg: c.cfg, repo: c.repo, marker: tracker.HiddenMarker{Source: source}}
	repo, push, err := c.repo.Read(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("github: repository %s: %w", c.cfg.Repo, err)
	}
	d.repo, d.push = repo, push
	login := c.cfg.Login
	if login == "" {
		if login, err = c.logins.Of(ctx, cl, creds.Token); err != nil {
			return nil, fmt.Errorf("github: reading the token's account (an installation token cannot: name its bot in the binding's login): %w", err)
		}
	}
	d.login = login
	return d, nil
}

// Driver is one workspace's view of one GitHub repository: a
// tracker.Driver, made by Connector. It is safe for concurrent use.
type Driver struct {
	cl     *trackerhttp.Client
	cfg    Config
	repo   forge.Repo
	marker tracker.HiddenMarker // the key in a body (ADR-0033)
	login  string               // the account the token files as: Find's creator
	push   bool                 // the token may set labels
}

var (
	_ tracker.Driver           = (*Driver)(nil)
	_ tracker.ProjectCommenter = (*Driver)(nil)
)

// Capabilities implements tracker.Driver.
func (d *Driver) Capabilities() tracker.Capabilities {
	return tracker.Capabilities{
		Name: "github",
		// Open, and closed as completed or not_planned
		// (paths./repos/{owner}/{repo}/issues/{issue_number}.patch).
		States: map[tracker.State]tracker.State{tracker.Backlog: tracker.Todo, tracker.Started: tracker.Todo},
		// issues/deleted and issues/transferred (x-webhooks).
		NudgesDeletions:  true,
		ConditionalReads: true, // a 304 does not count (docs rate-limits)
		// paths./repos/{owner}/{repo}/issues/comments.get
		ProjectComments: true,
		MaxPage:         PerPage,
		TimePrecision:   time.Second,
		ValidID:         tracker.PositiveID,
	}
}

// Project implements tracker.Driver: "owner/name", as Nudge names it.
func (d *Driver) Project() string { return d.repo.String() }

// Link implements tracker.Driver: the issue's page.
func (d *Driver) Link(ref tracker.ItemRef) string {
	return d.repo.IssueLink(d.cfg.WebURL, ref.Number)
}

func (d *Driver) repoPath(rest string) string { return d.repo.Path(rest) }

// do sends req; a 301 (a transferred issue, a renamed repository) is
// followed once, to its Location, with the same method and body.
func (d *Driver) do(ctx context.Context, req trackerhttp.Request) (trackerhttp.Answer, error) {
	a, err := d.cl.Do(ctx, req)
	if a.Status == http.StatusMovedPermanently {
		if loc := a.Header.Get("Location"); loc != "" {
			req.URL, req.Path, req.Query = loc, "", nil
			return d.cl.Do(ctx, req)
		}
	}
	return a, err
}
