// Package gitea is relayr's tracker driver for Gitea's REST API (/api/v1,
// v1.25.4), on core/tracker/trackerhttp. A repository ("owner/name") is a
// binding's project; an item is an issue, its id the issue's number.
//
// Gitea takes no idempotency key and has no field for one, so an issue
// relayr files carries a marker on the last line of its body, a hidden
// HTML comment that Gitea stores verbatim (tracker.HiddenMarker,
// ADR-0033). Find
// reads the plain issue list by the token's user, newest first, which
// reads the database; a search with q= goes through the issue indexer,
// which lags a new issue, and would have a retaken claim file it twice
// (docs/trackers/gitea.md §4).
//
// Gitea's list cannot be sorted by update time: it is newest-created
// first, filtered by inclusive whole-second since and before on
// updated_at, 50 a page at most, paged by offset. Items therefore reads
// windows of time small enough to come whole in one page, halving a window
// that doesn't, and orders each itself: an offset walk would skip an item
// whenever another left the window under it (items.go). Pull requests
// share the list and the numbering and are left out (type=issues).
//
// Labels go by id: names are resolved against the repository's labels,
// and the missing ones are made; a token that may not write the
// repository's issues would have its labels dropped silently, so such a
// draft is refused before anything is filed. An edit sends only what
// differs from the issue as it stands, since a PATCH of an unchanged body
// still rewrites it, moves updated_at and fires a webhook. Gitea holds
// open and closed: backlog, todo and started read back as todo, done and
// cancelled as done. Deletion is hard (404 after); the issues/deleted
// webhook, signed X-Gitea-Signature, is the only prompt signal of one, and
// the follower confirms it with a read. There is no rate limit and no
// conditional request on issues.
package gitea

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

// Kind is the integration's key without its prefix (tracker:gitea).
const Kind = "gitea"

// PageLimit is the most items Gitea answers a page (MAX_RESPONSE_ITEMS,
// modules/setting/api.go:L14-L30); a larger limit is cut to it silently.
const PageLimit = 50

// SignatureHeader carries a webhook delivery's signature: hex
// HMAC-SHA256 of the raw body, no prefix (services/webhook/deliver.go).
const SignatureHeader = "X-Gitea-Signature"

// Config says where a Gitea repository is and how to reach it.
type Config struct {
	// BaseURL is the server, e.g. "https://gitea.example.com"; the API is
	// under BaseURL + "/api/v1/".
	BaseURL string
	// WebURL is the web app's base for links (Gitea's ROOT_URL); default
	// BaseURL.
	WebURL string
	// Repo is the repository, "owner/name".
	Repo string
	// Namespace is the Source namespace used when a Source names none;
	// default tracker.DefaultNamespace.
	Namespace string
	// Client sends the requests (a client on http.DefaultTransport by
	// default); redirects are never followed.
	Client *http.Client
	// Timeout bounds each phase of a request; default
	// trackerhttp.DefaultTimeout (10 s).
	Timeout time.Duration
	// MaxResponse bounds an answer; default 16 MiB (a page of 50 issues
	// with long bodies).
	MaxResponse int64
	// Now is the clock a poll's window ends by; default time.Now.
	Now func() time.Time
}

// Connector makes a Tracker per workspace for one Gitea repository.
type Connector struct {
	cfg  Config
	repo forge.Repo

	logins forge.Logins // the user each token acts as
}

var _ tracker.Connector = (*Connector)(nil)

// NewConnector checks cfg and fills in its defaults. It makes no request.
func NewConnector(cfg Config) (*Connector, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &tracker.InvalidError{Field: "gitea base URL", Reason: tracker.Quote(cfg.BaseURL) + " is not an http(s) URL"}
	}
	repo, err := forge.ParseRepo(cfg.Repo)
	if err != nil {
		return nil, err
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.WebURL == "" {
		cfg.WebURL = cfg.BaseURL
	}
	cfg.WebURL = strings.TrimRight(cfg.WebURL, "/")
	if cfg.Namespace == "" {
		cfg.Namespace = tracker.DefaultNamespace
	}
	if cfg.MaxResponse <= 0 {
		cfg.MaxResponse = 16 << 20
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Connector{cfg: cfg, repo: repo}, nil
}

// Kind implements tracker.Connector.
func (c *Connector) Kind() string { return Kind }

// Connect makes the portable tracker filing into the repository for source
// with the tenant's token. It reads the repository (its existence and the
// token's permissions) and, once per token, the user the token acts as:
// two requests.
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
	cl, err := trackerhttp.New(trackerhttp.Config{
		Name: "gitea", BaseURL: c.cfg.BaseURL + "/api/v1/", AuthValue: "token " + creds.Token,
		Client: c.cfg.Client, Timeout: c.cfg.Timeout, MaxResponse: c.cfg.MaxResponse,
	})
	if err != nil {
		return nil, err
	}
	d := &Driver{cl: cl, cfg: c.cfg, repo: c.repo, marker: tracker.HiddenMarker{Source: source}, labels: map[string]int64{}, names: map[int64]string{}}
	repo, push, err := c.repo.Read(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("gitea: repository %s: %w", c.cfg.Repo, err)
	}
	d.repo, d.writer = repo, push
	login, err := c.logins.Of(ctx, cl, creds.Token)
	if err != nil {
		return nil, err
	}
	d.login = login
	return d, nil
}

// Driver is one workspace's view of one Gitea repository: a
// tracker.Driver, made by Connector. It is safe for concurrent use.
type Driver struct {
	cl     *trackerhttp.Client
	cfg    Config
	repo   forge.Repo
	marker tracker.HiddenMarker // the key in a body (ADR-0033)
	login  string               // the user the token acts as: Find's created_by
	writer bool                 // the token may write the repository's issues (labels)

	mu     sync.Mutex
	labels map[string]int64 // name → id
	names  map[int64]string // id → name
	lmu    sync.Mutex       // serialises label resolution, so a name is made once
}

var (
	_ tracker.Driver           = (*Driver)(nil)
	_ tracker.ProjectCommenter = (*Driver)(nil)
)

// Capabilities implements tracker.Driver.
func (d *Driver) Capabilities() tracker.Capabilities {
	return tracker.Capabilities{
		Name: "gitea",
		// The marker escapes the key, so every character is kept.
		Rewrites: "",
		// Open and closed (routers/api/v1/repo/issue.go:L1052-L1066).
		States: map[tracker.State]tracker.State{
			tracker.Backlog: tracker.Todo, tracker.Started: tracker.Todo, tracker.Cancelled: tracker.Done,
		},
		NudgesDeletions: true, // issues/deleted (services/webhook/notifier.go:L297-L333)
		// The repository's comment list (issue_comment.go:L234-L341).
		ProjectComments: true,
		MaxPage:         maxWindowItems,
		TimePrecision:   time.Second, // Unix seconds (models/issues/issue.go:L105-L106)
		ValidID:         tracker.PositiveID,
	}
}

// Project implements tracker.Driver: "owner/name", as Nudge names it.
func (d *Driver) Project() string { return d.repo.String() }

// Link implements tracker.Driver: the issue's page, <web>/<owner>/<name>/issues/<n>.
func (d *Driver) Link(ref tracker.ItemRef) string {
	return d.repo.IssueLink(d.cfg.WebURL, ref.Number)
}

func (d *Driver) repoPath(rest string) string { return d.repo.Path(rest) }

// states are Gitea's two, by the state an item is set to.
func stateOf(s tracker.State) string {
	if s == tracker.Done || s == tracker.Cancelled {
		return "closed"
	}
	return "open"
}
