// Package github is relayr's tracker driver for GitHub Issues' REST API,
// github.com's and GitHub Enterprise Server's (a base URL ending in
// /api/v3), on core/tracker/trackerhttp. A repository ("owner/name") is a
// binding's project; an item is an issue, its id the number.
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
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
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
	cfg         Config
	owner, name string

	mu     sync.Mutex
	logins map[string]string  // token → the login it files as
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
	owner, name, err := tracker.ParseRepo(cfg.Repo)
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
	return &Connector{cfg: cfg, owner: owner, name: name, logins: map[string]string{}, limits: map[string]*limits{}}, nil
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
	d, err := c.Driver(ctx, creds, source)
	if err != nil {
		return nil, err
	}
	return tracker.New(d), nil
}

// Driver makes the driver beneath Connect's tracker, for the driver
// conformance suite (core/tracker/drivertest) and for callers composing
// their own portable tracker.
func (c *Connector) Driver(ctx context.Context, creds tracker.Credentials, source tracker.Source) (*Driver, error) {
	if source.Tenant == "" || source.Workspace == "" {
		return nil, &tracker.InvalidError{Field: "source", Reason: "names no tenant or workspace"}
	}
	if source.Namespace == "" {
		source.Namespace = c.cfg.Namespace
	}
	if creds.Token == "" {
		return nil, fmt.Errorf("github: no token: %w", tracker.ErrUnauthorized)
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
	d := &Driver{cl: cl, cfg: c.cfg, owner: c.owner, name: c.name, marker: tracker.HiddenMarker{Source: source}}
	var repo struct {
		FullName    string `json:"full_name"`
		Permissions struct {
			Push  bool `json:"push"`
			Admin bool `json:"admin"`
		} `json:"permissions"`
	}
	if err := d.get(ctx, d.repoPath(""), &repo); err != nil {
		return nil, fmt.Errorf("github: repository %s: %w", c.cfg.Repo, err)
	}
	d.push = repo.Permissions.Push || repo.Permissions.Admin
	if o, n, ok := strings.Cut(repo.FullName, "/"); ok && strings.EqualFold(repo.FullName, c.cfg.Repo) {
		d.owner, d.name = o, n
	}
	login := c.cfg.Login
	if login == "" {
		c.mu.Lock()
		login = c.logins[creds.Token]
		c.mu.Unlock()
	}
	if login == "" {
		var u struct {
			Login string `json:"login"`
		}
		if err := d.get(ctx, "user", &u); err != nil {
			return nil, fmt.Errorf("github: reading the token's account (an installation token cannot: name its bot in the binding's login): %w", err)
		}
		if u.Login == "" {
			return nil, trackerhttp.Garbled("github", "user", nil)
		}
		login = u.Login
		c.mu.Lock()
		c.logins[creds.Token] = login
		c.mu.Unlock()
	}
	d.login = login
	return d, nil
}

// Driver is one workspace's view of one GitHub repository: a
// tracker.Driver, made by Connector. It is safe for concurrent use.
type Driver struct {
	cl          *trackerhttp.Client
	cfg         Config
	owner, name string
	marker      tracker.HiddenMarker // the key in a body (ADR-0033)
	login       string               // the account the token files as: Find's creator
	push        bool                 // the token may set labels
}

var _ tracker.Driver = (*Driver)(nil)

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
		MaxPage:          PerPage,
		TimePrecision:    time.Second,
		ValidID:          validID,
	}
}

func validID(id string) bool {
	n, err := strconv.ParseInt(id, 10, 64)
	return err == nil && n > 0 && strconv.FormatInt(n, 10) == id
}

// Project implements tracker.Driver: "owner/name", as Nudge names it.
func (d *Driver) Project() string { return d.owner + "/" + d.name }

// Link implements tracker.Driver: the page.
func (d *Driver) Link(ref tracker.ItemRef) string {
	return d.cfg.WebURL + "/" + url.PathEscape(d.owner) + "/" + url.PathEscape(d.name) + "/issues/" + strconv.FormatInt(ref.Number, 10)
}

func (d *Driver) repoPath(rest string) string {
	p := "repos/" + url.PathEscape(d.owner) + "/" + url.PathEscape(d.name)
	if rest != "" {
		p += "/" + rest
	}
	return p
}

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

// get reads path into v.
func (d *Driver) get(ctx context.Context, path string, v any) error {
	a, err := d.do(ctx, trackerhttp.Request{Method: http.MethodGet, Path: path})
	if err != nil {
		return err
	}
	if err := json.Unmarshal(a.Body, v); err != nil {
		return trackerhttp.Garbled("github", path, err)
	}
	return nil
}
