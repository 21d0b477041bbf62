// Package linear is relayr's tracker driver for Linear's GraphQL API
// (https://api.linear.app/graphql), on core/tracker/trackerhttp. A Linear
// team is a binding's project; an item is an issue, its id the issue's
// UUID, which survives a move between teams (docs/trackers/linear.md §10).
// Linear is SaaS only: the driver holds to Linear's published GraphQL
// schema, which fixtures/linearemu loads, and every query the driver sends
// is checked against it in its tests.
//
// Linear is the one tracker here that lets a client choose an item's id
// (IssueCreateInput.id, "UUID v4 format", §0.1): the id of the issue
// relayr files under a key is derived from the workspace's source and the
// key, shaped as a v4 UUID, so a create retried after a lost answer cannot
// make a second issue, and the create is the look-up: after any failed or
// unknown create, issue(id) decides (found: the item, filed before;
// "Entity not found": not made). The key itself is kept where Linear keeps
// it unique per issue and does not rewrite it, an attachment whose URL
// names it (AttachmentCreateInput.url, §4), made in the create's own
// request; a comment carries its key on a last line of plain text, in an
// alphabet Linear's Markdown leaves alone (§6).
//
// Linear stores descriptions and comments as ProseMirror and renders them
// back as Markdown (§0.7): the driver is a tracker.DescriptionComparer that
// takes two descriptions as the same where they differ only by what that
// round trip does. States are per team and typed (§0.8): the five states
// are read off a state's type and set to the team's first state of the
// type. Labels go by id, team or workspace, made where missing.
//
// Items reads the team's issues changed since a time (updatedAt gte,
// newest first, the only order Linear has), walked down to the end and
// sorted ascending, archived ones included; trashed issues read as deleted.
// Whether a comment moves its issue's updatedAt is not documented (§6), so
// the driver moves it itself: an item's UpdatedAt is the later of the
// issue's and its newest comment's, and a read since a time also reads the
// team's comments since then, in one request (items.go). Limits are
// Linear's two, requests and complexity points an hour, read from every
// answer's headers (limits.go).
package linear

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// Kind is the integration's key without its prefix (tracker:linear).
const Kind = "linear"

// Linear's bounds and relayr's defaults.
const (
	// DefaultURL is Linear's GraphQL endpoint (sdk client.ts).
	DefaultURL = "https://api.linear.app/graphql"
	// DefaultKeyURL is the base of the attachment URL naming an issue's
	// key: a host that resolves nowhere (.invalid, RFC 2606), since the
	// URL is an identifier, not a page.
	DefaultKeyURL = "https://relayr.invalid/key/"
	// PageSize is the issues a page of a list asks for: within the
	// 10,000 points one query may cost (§2) with the selection's labels.
	PageSize = 50
	// MaxTitle is the longest title Linear keeps, in characters (§3).
	MaxTitle = 255
	// SignatureHeader carries a delivery's signature: hex HMAC-SHA256 of
	// the raw body (sdk webhooks/client.ts).
	SignatureHeader = "Linear-Signature"
	// TimestampWindow is how far a delivery's webhookTimestamp may be from
	// now (sdk webhooks/client.ts: "more than one minute delta").
	TimestampWindow = time.Minute
)

// Config says which Linear team relayr files into and how to reach it.
type Config struct {
	// URL is the GraphQL endpoint; default DefaultURL.
	URL string
	// Team is the team, by its key ("ENG") or its UUID.
	Team string
	// KeyURL is the base of the attachment URL that names an issue's key;
	// default DefaultKeyURL. Changing it loses the keys of the issues
	// filed before.
	KeyURL string
	// Namespace is the Source namespace used when a Source names none;
	// default tracker.DefaultNamespace.
	Namespace string
	// Client sends the requests (http.DefaultTransport by default).
	Client *http.Client
	// Timeout bounds each phase of a request; default 10 s.
	Timeout time.Duration
	// Now is the driver's clock; default time.Now.
	Now func() time.Time
	// Sleep waits d or until ctx ends; default a timer. Tests over an
	// emulated clock step it instead.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Connector makes a Tracker per workspace for one Linear team.
type Connector struct {
	cfg Config

	mu     sync.Mutex
	pacers map[string]*pacer // key → its two budgets (Linear counts per user)
}

var _ tracker.Connector = (*Connector)(nil)

// NewConnector checks cfg and fills in its defaults. It makes no request.
func NewConnector(cfg Config) (*Connector, error) {
	if cfg.URL == "" {
		cfg.URL = DefaultURL
	}
	if u, err := url.Parse(cfg.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &tracker.InvalidError{Field: "linear URL", Reason: tracker.Quote(cfg.URL) + " is not an http(s) URL"}
	}
	if cfg.KeyURL == "" {
		cfg.KeyURL = DefaultKeyURL
	}
	if u, err := url.Parse(cfg.KeyURL); err != nil || u.Scheme != "https" || u.Host == "" || !strings.HasSuffix(cfg.KeyURL, "/") {
		return nil, &tracker.InvalidError{Field: "linear key URL", Reason: tracker.Quote(cfg.KeyURL) + " is not an https URL ending in /"}
	}
	if !validTeam(cfg.Team) {
		return nil, &tracker.InvalidError{Field: "linear team", Reason: tracker.Quote(cfg.Team) + " is neither a team key (ENG) nor a team's UUID"}
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
	return &Connector{cfg: cfg, pacers: map[string]*pacer{}}, nil
}

// validTeam: a team's UUID, or a key of letters and digits (Linear's team
// keys, "ENG", at most a few characters).
func validTeam(t string) bool {
	if _, err := uuid.Parse(t); err == nil {
		return true
	}
	if t == "" || len(t) > 16 {
		return false
	}
	for i, r := range t {
		letter := (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z')
		if !letter && (i == 0 || r < '0' || r > '9') && r != '_' {
			return false
		}
	}
	return true
}

// Kind implements tracker.Connector.
func (c *Connector) Kind() string { return Kind }

// Connect makes the portable tracker filing into the team for source. It
// reads the viewer, the workspace and the team (its states and labels).
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
	// A personal API key goes as it is; an OAuth token as a bearer token
	// (sdk client.ts parseClientOptions).
	auth := creds.Token
	if !strings.HasPrefix(auth, "lin_api_") && !strings.HasPrefix(auth, "Bearer ") {
		auth = "Bearer " + auth
	}
	d := &Driver{c: c, cfg: c.cfg, source: source, pacer: c.pacer(creds.Token)}
	d.cl, err = trackerhttp.New(trackerhttp.Config{
		Name: "linear", BaseURL: c.cfg.URL, AuthValue: auth,
		Header: http.Header{"Accept": {"application/json"}, "User-Agent": {"relayr"}},
		Client: c.cfg.Client, Timeout: c.cfg.Timeout, MaxResponse: 32 << 20, Now: c.cfg.Now,
		Classify: func(a trackerhttp.Answer, def error) error { return classify(a, def, c.cfg.Now()) },
	})
	if err != nil {
		return nil, err
	}
	if err := d.readWorkspace(ctx); err != nil {
		return nil, fmt.Errorf("linear: team %s: %w", c.cfg.Team, err)
	}
	return d, nil
}

// pacer answers the budgets of the user a key acts as.
func (c *Connector) pacer(key string) *pacer {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.pacers[key]
	if !ok {
		p = newPacer(c.cfg.Now, c.cfg.Sleep)
		c.pacers[key] = p
	}
	return p
}

// Driver is one workspace's view of one Linear team: a tracker.Driver,
// made by Connector. It is safe for concurrent use.
type Driver struct {
	c      *Connector
	cl     *trackerhttp.Client
	cfg    Config
	source tracker.Source
	pacer  *pacer

	viewer string // the user the key acts as
	web    string // the workspace's web base, https://linear.app/<urlKey>
	team   team
	holds  map[tracker.State]tracker.State // the states the team has no type for, as held

	mu     sync.Mutex
	labels map[string]string // name → id, the team's and the workspace's
	lmu    sync.Mutex        // serialises label making, so a name is made once
}

var (
	_ tracker.Driver              = (*Driver)(nil)
	_ tracker.DescriptionComparer = (*Driver)(nil)
	_ tracker.ProjectCommenter    = (*Driver)(nil)
	_ tracker.ItemsFetcher        = (*Driver)(nil)
)

// Capabilities implements tracker.Driver.
func (d *Driver) Capabilities() tracker.Capabilities {
	return tracker.Capabilities{
		Name: "linear",
		// The id derived from the key: a second create under it fails,
		// and issue(id) finds the first.
		KeysEnforced: true,
		// The key is hashed into the id and escaped in the attachment's
		// URL: every character is kept.
		Rewrites: "",
		States:   d.holds,
		// A remove delivery names a trashed issue, which reads as deleted.
		NudgesDeletions: true,
		// POST-only GraphQL: no ETag (§10).
		ConditionalReads: false,
		// The team's comments in one read; an item's UpdatedAt moves with
		// its comments, the driver's own doing (items.go).
		ProjectComments: true,
		MaxPage:         PageSize,
		TimePrecision:   time.Millisecond,
		ValidID:         validID,
		// "responds with a non-200 HTTP status code" is a failed
		// delivery, retried after 1 min, 1 h and 6 h (docs webhooks, §9).
		DeliveredStatus: http.StatusOK,
	}
}

// validID: a lower-case UUID. issue(id:) also takes identifiers (ENG-12),
// which a stored id must never be taken for (§4).
func validID(id string) bool {
	u, err := uuid.Parse(id)
	return err == nil && u.String() == id
}

// Project implements tracker.Driver: the team's UUID, as a delivery names
// it (data.teamId).
func (d *Driver) Project() string { return d.team.ID }

// Link implements tracker.Driver: the page,
// <workspace>/issue/<identifier>.
func (d *Driver) Link(ref tracker.ItemRef) string {
	if ref.Name != "" {
		return d.web + "/issue/" + url.PathEscape(ref.Name)
	}
	return d.web
}

// errGarbled is an answer without the fields every answer has.
var errGarbled = errors.New("an object without the fields every answer has")
