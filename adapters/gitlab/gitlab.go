// Package gitlab is relayr's tracker driver for GitLab's REST API v4
// (GitLab.com and self-managed), on core/tracker/trackerhttp. A GitLab
// project, by its numeric id or its path ("group/sub/project"), is a
// binding's project; an item is an issue, its id the issue's iid, the
// number every project route takes (GitLab's global id reads only for
// admins, docs/trackers/gitlab.md §0.2), with the global id kept beside it
// to tell a recycled number from the issue relayr filed.
//
// GitLab takes no idempotency key (§0.1), so an issue relayr files carries
// a marker on the last line of its description, a hidden HTML comment that
// GitLab keeps as sent (tracker.HiddenMarker, ADR-0033). Find reads the
// issues the token's user filed (author_username, created_after,
// state=all, issue_type=issue), newest first, and matches the marker
// exactly: never the search, which drops tokens of 50 characters and more
// and is limited to a few requests a minute (§4). A line starting with "/"
// is a quick action GitLab would execute and strip (§0.9): every line of
// a description or comment relayr sends that starts with "/" or with an
// escaping backslash is escaped with a backslash, which Markdown renders
// as nothing, and unescaped when read (quick.go).
//
// GitLab holds opened and closed; the other states are labels, scoped
// "status::…" by default and configurable (states.go), each change one
// PUT of state_event, add_labels and remove_labels, which GitLab applies
// together; the labels a person adds are left alone.
//
// Items reads the issues changed since a time, oldest change first
// (updated_after, order_by=updated_at, sort=asc, keyset pagination where
// GitLab has it), each page a fresh read from the last issue answered, so
// an issue changed under a walk shifts nothing out of a page and the
// offset cap of 50,000 is never reached (items.go). GitLab moves an
// issue's updated_at for a comment or a label-only edit only when its last
// change is over a minute old (ThrottledTouch, §0.5): the driver declares
// it (Capabilities.QuietTouch), and the followers read again, for its
// comments and labels, an item until a read comes well over a minute after
// its last change. Comments are read per issue, system notes left out.
// Deletions are hard and send no webhook (§0.6): the sweep finds them, a
// hundred iids a request (FetchItems). A moved issue (the original left
// closed, moved_to_id set, §8) is followed: found where it went by the
// move's system note on the original, it is answered there under the
// original's id and key, never as a deletion and a new issue; Update and
// Comment write there, and Items reads each followed issue again, one GET
// each, for the changes the project's list no longer shows (moved.go). A
// new place the token cannot read is the item gone. For a changed issue
// whose last change is neither its creation nor its closing, its label or
// state events name who made it, read only where its labels or state
// differ from the version last answered (actors.go).
//
// GitLab.com's limits are kept unsent (limits.go): 2,000 requests a minute
// a user, 200 issue creations and 60 notes a minute, whose 429 carries no
// Retry-After; the RateLimit-* headers are read where sent. Webhooks carry
// the hook's secret token as is (X-Gitlab-Token, compared in constant
// time; no signature over the body) and an Idempotency-Key that a retry
// and a resend keep (webhook.go).
package gitlab

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// Kind is the integration's key without its prefix (tracker:gitlab).
const Kind = "gitlab"

// GitLab's bounds (docs/trackers/gitlab.md §3, §6, §7).
const (
	// PageLimit is the most issues a page answers (per_page, clamped at 100).
	PageLimit = 100
	// MaxDescription is the longest description GitLab keeps, in characters.
	MaxDescription = 1_048_576
	// MaxNote is the longest note body, in characters.
	MaxNote = 1_000_000
	// MaxIIDs is how many iids[] one list request carries: a long URI
	// answers 414 (§7).
	MaxIIDs = 100
	// QuietTouch is how long after an issue's last change a comment or a
	// label-only edit leaves its updated_at as it is (ThrottledTouch's
	// TOUCH_INTERVAL, app/models/concerns/throttled_touch.rb; §0.5).
	QuietTouch = time.Minute
	// DefaultListLag bounds how long GitLab's lists may take to show a
	// write: they may read a database replica (§10); a look-up concludes
	// "never filed" only from two reads this far apart.
	DefaultListLag = 5 * time.Second
	// HookHeader carries a webhook's secret token (§9).
	HookHeader = "X-Gitlab-Token"
)

// Config says where a GitLab project is and how to reach it.
type Config struct {
	// BaseURL is the GitLab, "https://gitlab.com" or a self-managed
	// instance's URL (with its relative root, if any); the API is under
	// BaseURL + "/api/v4/".
	BaseURL string
	// Project is the project: its numeric id or its path
	// ("group/sub/project"). The numeric id is read at Connect and used
	// after: a path changes when the project is renamed or moved (§1).
	Project string
	// Labels names the labels the states other than opened and closed
	// are held by; DefaultLabels where empty.
	Labels StateLabels
	// Limits are the instance's limits; GitLab.com's where zero.
	Limits Limits
	// ListLag bounds how long a write takes to show in GitLab's lists;
	// DefaultListLag where zero.
	ListLag time.Duration
	// Namespace is the Source namespace used when a Source names none;
	// default tracker.DefaultNamespace.
	Namespace string
	// Client sends the requests (a client on http.DefaultTransport by
	// default); redirects are never followed.
	Client *http.Client
	// Timeout bounds each phase of a request; default
	// trackerhttp.DefaultTimeout (10 s).
	Timeout time.Duration
	// Now is the driver's clock; default time.Now.
	Now func() time.Time
	// Sleep waits d or until ctx ends (the pacing under GitLab's limits,
	// Find's second read); default a timer. Tests over an emulated clock
	// step it instead.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Connector makes a Tracker per workspace for one GitLab project.
type Connector struct {
	cfg Config

	mu     sync.Mutex
	pacers map[string]*pacer      // token's user → its limits (GitLab counts per user)
	misses tracker.Misses         // keys a look-up found missing, and when
	users  map[string]wireAuthor  // token → the user it acts as
	fresh  map[freshKey]freshRead // issues read from the primary within the list's lag
	moves  map[freshKey]move      // originals moved out of a project: where they went (moved.go)
	seen   map[freshKey]seenIssue // an issue's state and labels as last answered (actors.go)
}

var _ tracker.Connector = (*Connector)(nil)

// projectPath: a numeric id, or a path of namespaces and a name.
var projectPath = regexp.MustCompile(`^([1-9][0-9]*|[A-Za-z0-9_.][A-Za-z0-9_.\-]*(/[A-Za-z0-9_.][A-Za-z0-9_.\-]*)+)$`)

// NewConnector checks cfg and fills in its defaults. It makes no request.
func NewConnector(cfg Config) (*Connector, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, &tracker.InvalidError{Field: "gitlab base URL", Reason: tracker.Quote(cfg.BaseURL) + " is not an http(s) URL"}
	}
	cfg.BaseURL = strings.TrimSuffix(strings.TrimRight(cfg.BaseURL, "/"), "/api/v4")
	if !projectPath.MatchString(cfg.Project) {
		return nil, &tracker.InvalidError{Field: "gitlab project", Reason: tracker.Quote(cfg.Project) + ` is neither a project id nor a path ("group/project")`}
	}
	labels, err := cfg.Labels.withDefaults()
	if err != nil {
		return nil, err
	}
	cfg.Labels = labels
	if cfg.Limits, err = cfg.Limits.withDefaults(); err != nil {
		return nil, err
	}
	switch {
	case cfg.ListLag < 0:
		return nil, &tracker.InvalidError{Field: "gitlab list lag", Reason: cfg.ListLag.String() + " is negative"}
	case cfg.ListLag == 0:
		cfg.ListLag = DefaultListLag
	}
	if cfg.Namespace == "" {
		cfg.Namespace = tracker.DefaultNamespace
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = func(ctx context.Context, d time.Duration) error { return clock.Sleep(ctx, clock.System{}, d) }
	}
	return &Connector{cfg: cfg, pacers: map[string]*pacer{}, users: map[string]wireAuthor{}, fresh: map[freshKey]freshRead{},
		moves: map[freshKey]move{}, seen: map[freshKey]seenIssue{}}, nil
}

// Kind implements tracker.Connector.
func (c *Connector) Kind() string { return Kind }

// Connect makes the portable tracker filing into the project for source
// with the tenant's token. It reads the project and, once per token, the
// user the token acts as: two requests.
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
	d := &Driver{c: c, cfg: c.cfg, source: source, marker: tracker.HiddenMarker{Source: source}}
	cl, err := trackerhttp.New(trackerhttp.Config{
		Name: "gitlab", BaseURL: c.cfg.BaseURL + "/api/v4/", AuthHeader: "PRIVATE-TOKEN", AuthValue: creds.Token,
		Header: http.Header{"Accept": {"application/json"}, "User-Agent": {"relayr"}},
		Client: c.cfg.Client, Timeout: c.cfg.Timeout, MaxResponse: 32 << 20, Now: c.cfg.Now,
		Classify: func(a trackerhttp.Answer, def error) error { return classify(a, def, c.cfg.Now()) },
	})
	if err != nil {
		return nil, err
	}
	d.cl = cl
	user, err := c.user(ctx, cl, creds.Token)
	if err != nil {
		return nil, fmt.Errorf("gitlab: reading the token's user (/user): %w", err)
	}
	d.user, d.pacer = user, c.pacer(user.Username)
	if err := d.readProject(ctx); err != nil {
		return nil, fmt.Errorf("gitlab: project %s: %w", c.cfg.Project, err)
	}
	return d, nil
}

// user answers the user a token acts as, read once per token.
func (c *Connector) user(ctx context.Context, cl *trackerhttp.Client, token string) (wireAuthor, error) {
	c.mu.Lock()
	u, ok := c.users[token]
	c.mu.Unlock()
	if ok {
		return u, nil
	}
	u, _, err := trackerhttp.Read(ctx, cl, trackerhttp.Request{Method: http.MethodGet, Path: "user"}, "user", func(u wireAuthor) bool { return u.ID > 0 && u.Username != "" })
	if err != nil {
		return wireAuthor{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.users[token] = u
	return u, nil
}

// Driver is one workspace's view of one GitLab project: a
// tracker.Driver, made by Connector. It is safe for concurrent use.
type Driver struct {
	c      *Connector
	cl     *trackerhttp.Client
	cfg    Config
	source tracker.Source
	marker tracker.HiddenMarker // the key in a description (ADR-0033)
	user   wireAuthor           // the user the token acts as: Find's author
	pacer  *pacer               // the user's limits

	project int64  // the project's numeric id
	path    string // its path_with_namespace, as a delivery names it
	webURL  string // its page
}

var (
	_ tracker.Driver       = (*Driver)(nil)
	_ tracker.KeysFinder   = (*Driver)(nil)
	_ tracker.ItemsFetcher = (*Driver)(nil)
)

// Capabilities implements tracker.Driver.
func (d *Driver) Capabilities() tracker.Capabilities {
	return tracker.Capabilities{
		Name: "gitlab",
		// The marker escapes the key, so every character is kept.
		Rewrites: "",
		// Every state is held, by labels beside opened and closed.
		States: nil,
		// No delete hook (§0.6): the sweep finds deletions.
		NudgesDeletions: false,
		// A 304's cost is not known to be nothing (§7).
		ConditionalReads: false,
		// No project-wide comment list (§6).
		ProjectComments: false,
		QuietTouch:      QuietTouch,
		MaxPage:         PageLimit,
		TimePrecision:   time.Millisecond, // rendered to the millisecond (§7)
		ValidID:         tracker.PositiveID,
	}
}

// Project implements tracker.Driver: the project's path, as a delivery
// names it (project.path_with_namespace).
func (d *Driver) Project() string { return d.path }

// Link implements tracker.Driver: the issue's page,
// <project>/-/issues/<iid>.
func (d *Driver) Link(ref tracker.ItemRef) string {
	return d.webURL + "/-/issues/" + ref.ID
}

// projectRef is the project as a route takes it: its numeric id once
// read, else its path, URL-encoded whole (%2F between its parts, §1).
func (d *Driver) projectRef() string {
	if d.project > 0 {
		return strconv.FormatInt(d.project, 10)
	}
	return url.PathEscape(d.cfg.Project)
}

// issuesPath is a path under the project's issues.
func (d *Driver) issuesPath(rest string) string {
	p := "projects/" + d.projectRef() + "/issues"
	if rest != "" {
		p += "/" + rest
	}
	return p
}

// readProject reads the project: its numeric id, its path and page. A
// project the token cannot see answers 404, as a missing one (§1).
func (d *Driver) readProject(ctx context.Context) error {
	var p wireProject
	_, err := d.read(ctx, trackerhttp.Request{Method: http.MethodGet, Path: "projects/" + d.projectRef()}, "project", &p, func() bool { return p.ID > 0 && p.PathWithNamespace != "" })
	if err != nil {
		return err
	}
	d.project, d.path, d.webURL = p.ID, p.PathWithNamespace, strings.TrimRight(p.WebURL, "/")
	if d.webURL == "" {
		d.webURL = d.cfg.BaseURL + "/" + p.PathWithNamespace
	}
	return nil
}

// errGarbled is an answer without the fields every answer has.
var errGarbled = errors.New("an object without the fields every answer has")
