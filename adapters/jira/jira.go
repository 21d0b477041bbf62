// Package jira is relayr's tracker driver for Jira Cloud's platform REST
// API v3, on core/tracker/trackerhttp. A Jira project (by its key) is a
// binding's project; an item is an issue, its id the issue's numeric id,
// which never changes, where its key (OPS-12) changes when the issue moves
// (docs/trackers/jira.md §0.1). It holds to Atlassian's published OpenAPI
// description of the API, cited by JSON pointer
// (paths./rest/api/3/issue.post); Jira Cloud cannot run here, and
// fixtures/jiraemu emulates it from the same description.
//
// Jira takes no idempotency key, and its search lags behind writes, so a
// search cannot prove an issue was never filed (§0.2, §0.3). An issue
// relayr files carries its key twice, both set in the create request
// itself: in an issue entity property (PropertyKey), which a person's
// edit of the description cannot take off, and in a paragraph a person
// sees, the description's last ("lattice-key: <source>/<key>", ADR-0033).
// Find reads the issues the account reported, newest first, with their
// property, and concludes that none was filed only from two reads at
// least the search's lag apart (Config.SearchLag, ADR-1011): a look-up of
// a key never filed waits out the lag once.
//
// Descriptions and comments are Atlassian Document Format documents: text
// goes as paragraphs and hard breaks and reads back as the same text; a
// person's richer document reads as the text a person sees (adf.go). The
// driver is a tracker.DescriptionComparer for what Jira makes of a
// document.
//
// States go through the project's workflow: the five states are read off
// the status's category (new, indeterminate, done), its name and the
// resolution (done against cancelled), configurable by status name; a
// state change takes a transition valid now (GET …/transitions), and a
// workflow that cannot reach the state in one transition is refused, not
// retried (states.go).
//
// Items reads the project's issues changed since a time with the JQL
// search (search/jql, nextPageToken, ORDER BY updated ASC, id ASC), from a
// lookback that covers JQL's minute precision in the account's own time
// zone (read from /myself) and the search's lag; the ids relayr wrote
// within the lag are passed in reconcileIssues, which Jira reads current.
// Each issue's changelog names who changed it last (Item.UpdatedBy).
// Deletions come from jira:issue_deleted deliveries (X-Hub-Signature) and
// the sweep, which reads the issues its listing no longer shows by id, a
// hundred a request (bulkfetch, which leaves out the ids that are gone).
//
// Jira's per-issue write windows (20 writes in 2 s, 100 in 30 s) are kept
// by the driver, so a rule editing one issue in a burst is paced, never
// answered 429; a 429's Retry-After is honoured for what its
// RateLimit-Reason names (limits.go).
package jira

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // the account's zone is read by name (/myself), wherever relayr runs

	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// Kind is the integration's key without its prefix (tracker:jira).
const Kind = "jira"

// Defaults and Jira's own bounds.
const (
	// DefaultIssueType is the issue type relayr files.
	DefaultIssueType = "Task"
	// DefaultSearchLag bounds how long a write takes to show in Jira's
	// search: "Recent updates might not be immediately visible"
	// (paths./rest/api/3/search/jql.get); Atlassian states no bound, so
	// relayr takes 30 s unless configured (docs/trackers/jira.md §0.2).
	DefaultSearchLag = 30 * time.Second
	// PropertyKey is the issue entity property relayr's key is kept in,
	// set in the create request (components.schemas.IssueUpdateDetails
	// properties).
	PropertyKey = "lattice-key"
	// MaxSummary is the longest summary Jira keeps, in characters
	// ("Summary can't exceed 255 characters.", §3).
	MaxSummary = 255
	// MaxBody is the longest description Jira keeps, in characters
	// (32,767, §3); relayr counts the text it sends, marker included.
	MaxBody = 32767
	// MaxLabel is the longest label (§0.6).
	MaxLabel = 255
	// PageSize is the issues a search page asks for.
	PageSize = 100
	// MaxReconcile is the most ids reconcileIssues takes
	// (paths./rest/api/3/search/jql.post).
	MaxReconcile = 50
	// MaxBulkFetch is the most ids one bulkfetch takes
	// (paths./rest/api/3/issue/bulkfetch.post).
	MaxBulkFetch = 100
)

// SignatureHeader carries an admin webhook's signature: "sha256=" and the
// hex HMAC-SHA256 of the raw body (§9).
const SignatureHeader = "X-Hub-Signature"

// DefaultCancelledResolutions are the resolutions a done issue reads as
// cancelled by: Jira's own "Won't Do", "Won't Fix", "Duplicate", "Cannot
// Reproduce", and the names teams give them.
var DefaultCancelledResolutions = []string{"Won't Do", "Won't Fix", "Duplicate", "Cannot Reproduce", "Cancelled", "Canceled", "Declined", "Rejected"}

// Config says where a Jira project is and how to reach it.
type Config struct {
	// BaseURL is the site, "https://<site>.atlassian.net", or the OAuth
	// and scoped-token gateway, "https://api.atlassian.com/ex/jira/<cloudId>"
	// (§1); the REST paths (/rest/api/3/…) are joined to it.
	BaseURL string
	// WebURL is where a person opens an issue (<WebURL>/browse/OPS-12):
	// the site. Default BaseURL; required with the gateway.
	WebURL string
	// Project is the project's key ("OPS").
	Project string
	// Email is the account the API token belongs to: requests carry
	// Basic base64(email:token). Empty sends the token as a bearer token
	// (OAuth 2.0).
	Email string
	// IssueType is the type of the issues relayr files; default
	// DefaultIssueType. Its workflow's statuses are the states'.
	IssueType string
	// Statuses names the status each state is set to and read from, by
	// name ("Selected for Development" for todo); a state not named goes
	// by the status's category (states.go).
	Statuses map[tracker.State]string
	// CancelledResolutions are the resolutions a done issue reads as
	// cancelled by; default DefaultCancelledResolutions.
	CancelledResolutions []string
	// SearchLag bounds how long Jira's search takes to show a write;
	// default DefaultSearchLag.
	SearchLag time.Duration
	// Namespace is the Source namespace used when a Source names none.
	Namespace string
	// Client sends the requests (http.DefaultTransport by default).
	Client *http.Client
	// Timeout bounds each phase of a request; default 10 s.
	Timeout time.Duration
	// Now is the driver's clock; default time.Now.
	Now func() time.Time
	// Sleep waits d or until ctx ends (the pacing of one issue's writes,
	// Find's second read); default a timer. Tests over an emulated clock
	// step it instead.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Connector makes a Tracker per workspace for one Jira project.
type Connector struct {
	cfg   Config
	base  *url.URL
	pacer *pacer

	mu     sync.Mutex
	misses tracker.Misses       // keys a look-up found missing, and when
	writes map[string]time.Time // issue id → when relayr last wrote it (reconcileIssues)
}

var _ tracker.Connector = (*Connector)(nil)

// NewConnector checks cfg and fills in its defaults. It makes no request.
func NewConnector(cfg Config) (*Connector, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &tracker.InvalidError{Field: "jira base URL", Reason: tracker.Quote(cfg.BaseURL) + " is not an http(s) URL"}
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.WebURL == "" {
		if strings.Contains(cfg.BaseURL, "/ex/jira/") {
			return nil, &tracker.InvalidError{Field: "jira web URL", Reason: "the gateway base URL " + tracker.Quote(cfg.BaseURL) + " is no site a person opens: name the site (https://<site>.atlassian.net)"}
		}
		cfg.WebURL = cfg.BaseURL
	}
	cfg.WebURL = strings.TrimRight(cfg.WebURL, "/")
	if !validProjectKey(cfg.Project) {
		return nil, &tracker.InvalidError{Field: "jira project", Reason: tracker.Quote(cfg.Project) + " is no project key (letters, digits and _, starting with a letter)"}
	}
	if cfg.IssueType == "" {
		cfg.IssueType = DefaultIssueType
	}
	for s, name := range cfg.Statuses {
		if !s.Valid() || strings.TrimSpace(name) == "" {
			return nil, &tracker.InvalidError{Field: "jira statuses", Reason: fmt.Sprintf("%s → %s: a state and a status name", tracker.Quote(string(s)), tracker.Quote(name))}
		}
	}
	if cfg.CancelledResolutions == nil {
		cfg.CancelledResolutions = DefaultCancelledResolutions
	}
	switch {
	case cfg.SearchLag < 0:
		return nil, &tracker.InvalidError{Field: "jira search lag", Reason: cfg.SearchLag.String() + " is negative"}
	case cfg.SearchLag == 0:
		cfg.SearchLag = DefaultSearchLag
	}
	if cfg.Namespace == "" {
		cfg.Namespace = tracker.DefaultNamespace
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	return &Connector{cfg: cfg, base: u, pacer: newPacer(cfg.Now, cfg.Sleep), writes: map[string]time.Time{}}, nil
}

// validProjectKey: Jira's default project key pattern, a letter and then
// letters, digits or underscores ([A-Z][A-Z0-9_]+; admins may widen it, so
// lower case is taken too).
func validProjectKey(k string) bool {
	if k == "" || len(k) > 255 {
		return false
	}
	for i, r := range k {
		letter := (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z')
		if !letter && (i == 0 || (r != '_' && (r < '0' || r > '9'))) {
			return false
		}
	}
	return true
}

func sleep(ctx context.Context, d time.Duration) error { return clock.Sleep(ctx, clock.System{}, d) }

// Kind implements tracker.Connector.
func (c *Connector) Kind() string { return Kind }

// Connect makes the portable tracker filing into the project for source.
// It reads the account (/myself: its id and time zone), the project, and
// the statuses of the issue type relayr files.
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
	auth := "Bearer " + creds.Token
	if c.cfg.Email != "" {
		auth = "Basic " + basic(c.cfg.Email, creds.Token)
	}
	cl, err := trackerhttp.New(trackerhttp.Config{
		Name: "jira", BaseURL: c.cfg.BaseURL + "/", AuthValue: auth,
		Header: http.Header{"Accept": {"application/json"}, "User-Agent": {"relayr"}},
		Client: c.cfg.Client, Timeout: c.cfg.Timeout, MaxResponse: 16 << 20, Now: c.cfg.Now,
		Classify: classify,
	})
	if err != nil {
		return nil, err
	}
	d := &Driver{c: c, cl: cl, cfg: c.cfg, source: source, marker: tracker.HiddenMarker{Source: source}}
	if err := d.readAccount(ctx); err != nil {
		return nil, fmt.Errorf("jira: reading the account (/myself): %w", err)
	}
	if err := d.readProject(ctx); err != nil {
		return nil, fmt.Errorf("jira: project %s: %w", c.cfg.Project, err)
	}
	return d, nil
}

// Driver is one workspace's view of one Jira project: a tracker.Driver,
// made by Connector. It is safe for concurrent use.
type Driver struct {
	c      *Connector
	cl     *trackerhttp.Client
	cfg    Config
	source tracker.Source
	marker tracker.HiddenMarker // the key's tag (ADR-0033)

	account string         // the accountId relayr acts as
	zone    *time.Location // the account's time zone: JQL's
	project string         // the project's key as Jira spells it
	wf      workflow       // the issue type's statuses
}

var (
	_ tracker.Driver              = (*Driver)(nil)
	_ tracker.KeysFinder          = (*Driver)(nil)
	_ tracker.ItemsFetcher        = (*Driver)(nil)
	_ tracker.DescriptionComparer = (*Driver)(nil)
)

// Capabilities implements tracker.Driver.
func (d *Driver) Capabilities() tracker.Capabilities {
	return tracker.Capabilities{
		Name: "jira",
		// The key is kept whole in an entity property (values of up to
		// 32,768 bytes, §3) and escaped in the visible marker.
		States: d.wf.holds(),
		// jira:issue_deleted (components.schemas.WebhookDetails.events).
		NudgesDeletions: true,
		// No 304 for issue reads or search (§2).
		ConditionalReads: false,
		// Comments are read per issue: no project-wide list (§6).
		ProjectComments: false,
		MaxPage:         PageSize,
		// Jira keeps milliseconds (§1, timestamps).
		TimePrecision: time.Millisecond,
		ValidID:       tracker.PositiveID,
	}
}

// Project implements tracker.Driver: the project's key, as a delivery
// names it (issue.fields.project.key).
func (d *Driver) Project() string { return d.project }

// Link implements tracker.Driver: the issue's page, by its key where
// known (a moved issue's old key still opens it, §8), else by id.
func (d *Driver) Link(ref tracker.ItemRef) string {
	if ref.Name != "" {
		return d.cfg.WebURL + "/browse/" + url.PathEscape(ref.Name)
	}
	return d.cfg.WebURL + "/browse/" + url.PathEscape(ref.ID)
}

// readAccount reads the account relayr acts as: its id (the author of
// relayr's own changes) and its time zone, in which Jira reads JQL's times.
func (d *Driver) readAccount(ctx context.Context) error {
	var me struct {
		AccountID string `json:"accountId"`
		TimeZone  string `json:"timeZone"`
	}
	_, err := d.read(ctx, trackerhttp.Request{Method: http.MethodGet, Path: "rest/api/3/myself"}, "", "account", &me, func() bool { return me.AccountID != "" })
	if err != nil {
		return err
	}
	d.account = me.AccountID
	d.zone = time.UTC
	if me.TimeZone != "" {
		loc, err := time.LoadLocation(me.TimeZone)
		if err != nil {
			// A zone relayr cannot read would shift every search: refused,
			// not guessed.
			return fmt.Errorf("the account's time zone %s is unknown here: %w", tracker.Quote(me.TimeZone), tracker.ErrRefused)
		}
		d.zone = loc
	}
	return nil
}

// errGarbled is an answer without the fields every answer has.
var errGarbled = errors.New("an object without the fields every answer has")
