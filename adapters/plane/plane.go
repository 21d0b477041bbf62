// Package plane is relayr's Tracker for Plane's public REST API (/api/v1/),
// on plain net/http.
//
// Items are filed with external_source = the workspace's Source
// ("lattice:<tenant>/<workspace>", its digest past Plane's 255 characters:
// commentkey.go) and external_id = the key (at most 255 characters), so Plane's
// duplicate check is a second guard behind relayr's claim (ADR-0033): a
// create whose key already filed an item (archived ones included) fails as a
// *tracker.ExistsError naming it, and Find is Plane's external-id lookup.
// States and labels are resolved by name to ids, cached per Connector and
// refreshed on a miss; missing labels are created. All five of the port's
// states are held (backlog, todo as unstarted, started, done as completed,
// cancelled). Items walks order_by=-updated_at down to the cursor, guarding
// against Plane's offset pages shifting under the walk. Every failure is one
// of the port's typed errors; no answer, however malformed, makes it panic.
// Each phase of a request (connect, write, wait for the answer, read it) has
// its own timeout, 10 s by default.
//
// The behaviours relied on are those of Plane v1.3.1's source, as the fact
// sheet docs/trackers/plane.md records them with their source files.
package plane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/relayr-go/relayr/core/tracker"
)

// Kind is the integration's key without its prefix (tracker:plane).
const Kind = "plane"

// Defaults of Config.
const (
	// DefaultTimeout bounds each phase of a request (ADR-0033).
	DefaultTimeout = 10 * time.Second
	// DefaultMaxResponseBytes bounds an answer read into memory: a full page
	// of 1000 items with long descriptions fits well inside it.
	DefaultMaxResponseBytes = 32 << 20
	// DefaultPageSize is Plane's largest page (utils/paginator.py:L642-652).
	DefaultPageSize = 1000
)

// Config says where a Plane project is and how to reach it.
type Config struct {
	// BaseURL is the Plane server, e.g. "https://plane.example.com"; the API
	// is under BaseURL + "/api/v1/".
	BaseURL string
	// WebURL is the web app's base for links (Plane's WEB_URL); default
	// BaseURL.
	WebURL string
	// Workspace is the workspace slug, Project the project's id.
	Workspace string
	Project   string
	// Identifier is the project's identifier ("OPS"); when empty, Connect
	// reads it from the project.
	Identifier string
	// Namespace is the Source namespace used when a Source names none;
	// default tracker.DefaultNamespace ("lattice").
	Namespace string
	// Client sends the requests; default a client on a clone of
	// http.DefaultTransport. Its Timeout, if any, still applies; redirects
	// are never followed (a redirected write loses its body).
	Client *http.Client
	// Timeout bounds each phase of a request; default DefaultTimeout.
	Timeout time.Duration
	// MaxResponseBytes bounds an answer; default DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// PageSize is the per_page of list requests, 1 to 1000; default 1000.
	PageSize int
}

// Connector makes a Tracker per workspace for one Plane project, sharing the
// project's states and labels among them.
type Connector struct {
	cfg  Config
	http *http.Client
	cat  *catalog
	// size is the page size walks start from, shrunk by a page that
	// failed for its size.
	size atomic.Int64

	mu    sync.Mutex
	ident string
}

var _ tracker.Connector = (*Connector)(nil)

// NewConnector checks cfg and fills in its defaults.
func NewConnector(cfg Config) (*Connector, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &tracker.InvalidError{Field: "plane base URL", Reason: fmt.Sprintf("%q is not an http(s) URL", cfg.BaseURL)}
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.WebURL == "" {
		cfg.WebURL = cfg.BaseURL
	}
	cfg.WebURL = strings.TrimRight(cfg.WebURL, "/")
	if cfg.Workspace == "" || strings.ContainsAny(cfg.Workspace, "/?#") {
		return nil, &tracker.InvalidError{Field: "plane workspace", Reason: fmt.Sprintf("%q is not a workspace slug", cfg.Workspace)}
	}
	if !uuidRe.MatchString(cfg.Project) {
		return nil, &tracker.InvalidError{Field: "plane project", Reason: fmt.Sprintf("%q is not a project id", cfg.Project)}
	}
	if cfg.Namespace == "" {
		cfg.Namespace = tracker.DefaultNamespace
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if cfg.PageSize <= 0 || cfg.PageSize > DefaultPageSize {
		cfg.PageSize = DefaultPageSize
	}
	var hc http.Client
	if cfg.Client != nil {
		hc = *cfg.Client
	} else {
		hc.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c := &Connector{cfg: cfg, http: &hc, cat: &catalog{}, ident: strings.ToUpper(cfg.Identifier)}
	c.size.Store(int64(cfg.PageSize))
	return c, nil
}

// Kind implements tracker.Connector.
func (c *Connector) Kind() string { return Kind }

// Connect makes the Tracker filing for source with the tenant's key. It
// makes one request, to read the project's identifier, unless Config named
// it or an earlier Connect read it.
func (c *Connector) Connect(ctx context.Context, creds tracker.Credentials, source tracker.Source) (tracker.Tracker, error) {
	return c.connect(ctx, creds, source)
}

func (c *Connector) connect(ctx context.Context, creds tracker.Credentials, source tracker.Source) (*Tracker, error) {
	if source.Tenant == "" || source.Workspace == "" {
		return nil, &tracker.InvalidError{Field: "source", Reason: "names no tenant or workspace"}
	}
	if source.Namespace == "" {
		source.Namespace = c.cfg.Namespace
	}
	if creds.Token == "" {
		return nil, fmt.Errorf("plane: no API key: %w", tracker.ErrUnauthorized)
	}
	t := &Tracker{
		cfg: c.cfg,
		cl: &client{
			http: c.http, base: c.cfg.BaseURL + "/api/v1/", key: creds.Token,
			timeout: c.cfg.Timeout, limit: c.cfg.MaxResponseBytes,
		},
		cat:    c.cat,
		size:   &c.size,
		source: externalID(source.String()),
	}
	c.mu.Lock()
	ident := c.ident
	c.mu.Unlock()
	if ident == "" {
		a, err := t.cl.do(ctx, http.MethodGet, t.projectPath(""), nil)
		if err != nil {
			return nil, err
		}
		if err := classify(a); err != nil {
			if errors.Is(err, tracker.ErrNotFound) {
				// An unknown project reads as 404, where everything
				// else of it is a 403 (api/views/project.py:L373-380).
				return nil, fmt.Errorf("plane: no project %s in workspace %s: %w", c.cfg.Project, c.cfg.Workspace, err)
			}
			return nil, err
		}
		var p struct {
			Identifier string `json:"identifier"`
		}
		if err := json.Unmarshal(a.body, &p); err != nil || p.Identifier == "" {
			return nil, garbled("project", err)
		}
		ident = strings.ToUpper(p.Identifier)
		c.mu.Lock()
		c.ident = ident
		c.mu.Unlock()
	}
	t.ident = ident
	return t, nil
}

// Tracker is one workspace's view of a Plane project. It is safe for
// concurrent use.
type Tracker struct {
	cfg    Config
	cl     *client
	cat    *catalog
	size   *atomic.Int64
	source string
	ident  string
}

var (
	_ tracker.Tracker             = (*Tracker)(nil)
	_ tracker.DescriptionComparer = (*Tracker)(nil)
	_ tracker.KeyGuard            = (*Tracker)(nil)
)

// uuidRe is the shape of Plane's ids (Django's <uuid:…> converter).
var uuidRe = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func (t *Tracker) projectPath(rest string) string {
	return "workspaces/" + url.PathEscape(t.cfg.Workspace) + "/projects/" + t.cfg.Project + "/" + rest
}

// Project implements tracker.Tracker: the project's id, as Nudge names it.
func (t *Tracker) Project() string { return t.cfg.Project }

// Source is the external_source this tracker files under.
func (t *Tracker) Source() string { return t.source }

// Holds implements tracker.Tracker: Plane's five state groups hold every
// state of the port.
func (t *Tracker) Holds(s tracker.State) tracker.State { return s }

// GuardsKeys implements tracker.KeyGuard: Plane answers a second work item
// with the same external_id and external_source with 409 and the existing
// id, archived items included (api/views/issue.py), so a create is itself
// the lookup (ADR-0033's departures).
func (t *Tracker) GuardsKeys() bool { return true }

// Link implements tracker.Tracker: <web>/<workspace>/browse/<IDENT>-<seq>/
// (packages/utils/src/work-item/base.ts:L315-337).
func (t *Tracker) Link(ref tracker.ItemRef) string {
	name := ref.Name
	if name == "" {
		name = fmt.Sprintf("%s-%d", t.ident, ref.Number)
	}
	return t.cfg.WebURL + "/" + url.PathEscape(t.cfg.Workspace) + "/browse/" + url.PathEscape(name) + "/"
}

// groups maps the port's states onto Plane's state groups
// (db/models/state.py:L14-20).
var groups = map[tracker.State]string{
	tracker.Backlog:   "backlog",
	tracker.Todo:      "unstarted",
	tracker.Started:   "started",
	tracker.Done:      "completed",
	tracker.Cancelled: "cancelled",
}

func stateOfGroup(g string) tracker.State {
	for s, x := range groups {
		if x == g {
			return s
		}
	}
	return ""
}

// Find implements tracker.Tracker with the external-id lookup, which answers
// a bare object and finds archived items (api/views/issue.py:L312-325).
func (t *Tracker) Find(ctx context.Context, key string) (tracker.Item, error) {
	if err := validItemKey(key); err != nil {
		return tracker.Item{}, err
	}
	q := url.Values{"external_id": {key}, "external_source": {t.source}, "fields": {itemFields}}
	a, err := t.cl.do(ctx, http.MethodGet, t.projectPath("work-items/")+"?"+q.Encode(), nil)
	if err != nil {
		return tracker.Item{}, err
	}
	if err := classify(a); err != nil {
		if a.status == http.StatusInternalServerError {
			// Two items under one key make the lookup a 500
			// (MultipleObjectsReturned); it stays a 500 however often asked.
			return tracker.Item{}, fmt.Errorf("plane: the lookup of key %q failed (two items under one key?): %w", key, err)
		}
		return tracker.Item{}, err
	}
	return t.item(ctx, a.body)
}

// Create implements tracker.Tracker. A 409 is Plane's duplicate check
// (api/views/issue.py:L441-463) and names the existing item, archived ones
// included: it answers *tracker.ExistsError with that id, for the write path
// to read.
func (t *Tracker) Create(ctx context.Context, key string, d tracker.Draft) (tracker.Item, error) {
	if err := validItemKey(key); err != nil {
		return tracker.Item{}, err
	}
	if err := tracker.ValidateDraft(d); err != nil {
		return tracker.Item{}, err
	}
	if err := ctx.Err(); err != nil {
		return tracker.Item{}, fmt.Errorf("plane: %w: %w", tracker.ErrUnavailable, err)
	}
	for attempt := 0; ; attempt++ {
		body := map[string]any{
			"name":             d.Title,
			"description_html": sendDescription(d.Description),
			"external_id":      key,
			"external_source":  t.source,
		}
		if d.State != "" {
			id, err := t.stateID(ctx, d.State, attempt > 0)
			if err != nil {
				return tracker.Item{}, err
			}
			body["state"] = id
		}
		if len(d.Labels) > 0 {
			ids, err := t.labelIDs(ctx, d.Labels, attempt > 0)
			if err != nil {
				return tracker.Item{}, err
			}
			body["labels"] = ids
		}
		a, err := t.cl.do(ctx, http.MethodPost, t.projectPath("work-items/"), body)
		if err != nil {
			return tracker.Item{}, err
		}
		if a.status == http.StatusConflict {
			var c struct {
				ID string `json:"id"`
			}
			_ = json.Unmarshal(a.body, &c)
			return tracker.Item{}, &tracker.ExistsError{ID: c.ID}
		}
		if attempt == 0 && staleIDs(a) {
			continue
		}
		if err := classify(a); err != nil {
			return tracker.Item{}, err
		}
		return t.landedItem(ctx, a.body)
	}
}

// staleIDs reports a 400 over a state or label id: one deleted since it was
// cached. The write is tried once more with the catalog read again.
func staleIDs(a answer) bool {
	if a.status != http.StatusBadRequest {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(a.body, &m) != nil {
		return false
	}
	_, state := m["state"]
	_, labels := m["labels"]
	return state || labels
}

// Item implements tracker.Tracker. Plane answers 404 for an archived item
// as for a deleted one (§3.4).
func (t *Tracker) Item(ctx context.Context, id string) (tracker.Item, error) {
	if !uuidRe.MatchString(id) {
		if err := ctx.Err(); err != nil {
			return tracker.Item{}, fmt.Errorf("plane: %w: %w", tracker.ErrUnavailable, err)
		}
		return tracker.Item{}, fmt.Errorf("plane: %q is not a work item id: %w", id, tracker.ErrNotFound)
	}
	a, err := t.cl.do(ctx, http.MethodGet, t.projectPath("work-items/"+id+"/")+"?fields="+itemFields, nil)
	if err != nil {
		return tracker.Item{}, err
	}
	if err := classify(a); err != nil {
		return tracker.Item{}, err
	}
	return t.item(ctx, a.body)
}

// Update implements tracker.Tracker as one PATCH of the fields the patch
// names; labels replace the whole set (§3.6).
func (t *Tracker) Update(ctx context.Context, id string, p tracker.Patch) (tracker.Item, error) {
	if err := tracker.ValidatePatch(p); err != nil {
		return tracker.Item{}, err
	}
	if p.Empty() {
		return t.Item(ctx, id)
	}
	if !uuidRe.MatchString(id) {
		return t.Item(ctx, id)
	}
	for attempt := 0; ; attempt++ {
		body := map[string]any{}
		if p.Title != nil {
			body["name"] = *p.Title
		}
		if p.Description != nil {
			body["description_html"] = sendDescription(*p.Description)
		}
		if p.State != nil {
			sid, err := t.stateID(ctx, *p.State, attempt > 0)
			if err != nil {
				return tracker.Item{}, err
			}
			body["state"] = sid
		}
		if p.Labels != nil {
			ids, err := t.labelIDs(ctx, *p.Labels, attempt > 0)
			if err != nil {
				return tracker.Item{}, err
			}
			body["labels"] = ids
		}
		a, err := t.cl.do(ctx, http.MethodPatch, t.projectPath("work-items/"+id+"/"), body)
		if err != nil {
			return tracker.Item{}, err
		}
		if attempt == 0 && staleIDs(a) {
			continue
		}
		if err := classify(a); err != nil {
			return tracker.Item{}, err
		}
		return t.landedItem(ctx, a.body)
	}
}

// item maps a work item object onto the port's Item.
// landedItem reads the answer of a write that landed. Reading it may ask
// Plane for the project's states; a failure then is ErrUnavailable and
// nothing more, its cause kept as text only: a cause that matches
// ErrRateLimited or ErrNotFound says the write certainly wasn't taken, and
// relayr would release the claim of an item that exists (and publish it as
// a person's) or put back the values recorded for an edit that landed.
func (t *Tracker) landedItem(ctx context.Context, b []byte) (tracker.Item, error) {
	it, err := t.item(ctx, b)
	if err != nil {
		return tracker.Item{}, fmt.Errorf("plane: %w: the write landed, then reading its answer failed: %s", tracker.ErrUnavailable, err.Error())
	}
	return it, nil
}

func (t *Tracker) item(ctx context.Context, b []byte) (tracker.Item, error) {
	w, err := decodeItem(b)
	if err != nil {
		return tracker.Item{}, err
	}
	return t.toItem(ctx, w)
}

func (t *Tracker) toItem(ctx context.Context, w wireItem) (tracker.Item, error) {
	updated, _ := parseTime(*w.UpdatedAt) // checked by decodeItem
	it := tracker.Item{UpdatedAt: updated, UpdatedBy: str(w.UpdatedBy)}
	it.Ref.ID = w.ID
	if w.SequenceID != nil && *w.SequenceID >= 0 && *w.SequenceID < 1e15 {
		it.Ref.Number = int64(*w.SequenceID)
		it.Ref.Name = fmt.Sprintf("%s-%d", t.ident, it.Ref.Number)
		it.Ref.Link = t.Link(it.Ref)
	}
	if str(w.ExternalSource) == t.source {
		it.Ref.Key = str(w.ExternalID)
	}
	if w.Name != nil {
		it.Title = *w.Name
	}
	if w.DescriptionHTML != nil {
		it.Description = readDescription(*w.DescriptionHTML)
	}
	// archived_at is a date (db/models/issue.py:L159); any value archives.
	it.Archived = w.ArchivedAt != nil && strings.TrimSpace(*w.ArchivedAt) != ""
	if sid := str(w.State); sid != "" {
		g, err := t.groupOf(ctx, sid)
		if err != nil {
			return tracker.Item{}, err
		}
		it.State = stateOfGroup(g)
	}
	ids := make([]string, 0, len(w.Labels))
	for _, l := range w.Labels {
		if id := str(l); id != "" {
			ids = append(ids, id)
		}
	}
	names, err := t.labelNames(ctx, ids)
	if err != nil {
		return tracker.Item{}, err
	}
	it.Labels = names
	return it, nil
}

// Comment implements tracker.Tracker: the key is the comment's external_id
// under this tracker's source. Plane's 409 is project-wide and checked before
// anything else (§6); it answers the comment already posted under the key.
func (t *Tracker) Comment(ctx context.Context, id, key, body string) (tracker.Comment, error) {
	if key != "" {
		if err := tracker.ValidateKeyKept(key, ""); err != nil {
			return tracker.Comment{}, err
		}
	}
	if !uuidRe.MatchString(id) {
		return tracker.Comment{}, fmt.Errorf("plane: %q is not a work item id: %w", id, tracker.ErrNotFound)
	}
	// Plane makes a comment on a deleted item, whose row stays until the
	// hard delete (api/views/issue.py:L1446-1448): the item is read
	// first, and one that is gone (deleted, or archived, where Plane's web
	// app takes no comment either) is NotFound.
	live, err := t.cl.do(ctx, http.MethodGet, t.projectPath("work-items/"+id+"/")+"?fields=id", nil)
	if err != nil {
		return tracker.Comment{}, err
	}
	if err := classify(live); err != nil {
		if errors.Is(err, tracker.ErrNotFound) {
			return tracker.Comment{}, fmt.Errorf("plane: work item %s is deleted or archived: %w", id, tracker.ErrNotFound)
		}
		return tracker.Comment{}, err
	}
	req := map[string]any{"comment_html": body}
	if key != "" {
		req["external_id"] = externalID(key)
		req["external_source"] = t.source
		req["comment_html"] = markedBody(key, body)
	}
	path := t.projectPath("work-items/" + id + "/comments/")
	a, err := t.cl.do(ctx, http.MethodPost, path, req)
	if err != nil {
		return tracker.Comment{}, err
	}
	if a.status == http.StatusConflict {
		var c struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(a.body, &c)
		if !uuidRe.MatchString(c.ID) {
			return tracker.Comment{}, &tracker.ExistsError{ID: c.ID}
		}
		got, err := t.cl.do(ctx, http.MethodGet, path+c.ID+"/", nil)
		if err != nil {
			return tracker.Comment{}, err
		}
		if got.status == http.StatusNotFound {
			// Posted under the key on another item of the project.
			return tracker.Comment{}, &tracker.ExistsError{ID: c.ID}
		}
		a = got
	}
	if a.status == http.StatusBadRequest && strings.Contains(string(a.body), "The payload is not valid") {
		// Plane doesn't check the item first; the foreign key fails (§6).
		return tracker.Comment{}, fmt.Errorf("plane: comment on %s: %s: %w", id, detail(a.body), tracker.ErrNotFound)
	}
	if err := classify(a); err != nil {
		return tracker.Comment{}, err
	}
	w, err := decodeComment(a.body)
	if err != nil {
		return tracker.Comment{}, err
	}
	return t.toComment(w, id), nil
}

func (t *Tracker) toComment(w wireComment, itemID string) tracker.Comment {
	created, _ := parseTime(*w.CreatedAt) // checked by decodeComment
	c := tracker.Comment{ID: w.ID, ItemID: str(w.Issue), CreatedAt: created}
	if c.ItemID == "" {
		c.ItemID = itemID
	}
	if w.CommentHTML != nil {
		c.Body = *w.CommentHTML
	}
	if c.Author = str(w.Actor); c.Author == "" {
		c.Author = str(w.CreatedBy)
	}
	if str(w.ExternalSource) == t.source {
		c.Key, c.Body = commentKey(str(w.ExternalID), c.Body)
	}
	return c
}

// Comments implements tracker.Tracker. Plane lists comments newest first
// whatever order_by says (§6), so the walk stops at the first page reaching
// past since; the answer is oldest first.
func (t *Tracker) Comments(ctx context.Context, id string, since time.Time) ([]tracker.Comment, error) {
	if !uuidRe.MatchString(id) {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("plane: %w: %w", tracker.ErrUnavailable, err)
		}
		return nil, fmt.Errorf("plane: %q is not a work item id: %w", id, tracker.ErrNotFound)
	}
	rows, err := t.walkNewestFirst(ctx, t.projectPath("work-items/"+id+"/comments/"), "", "", since, commentRow, false)
	if err != nil {
		return nil, err
	}
	out := make([]tracker.Comment, 0, len(rows))
	for _, r := range rows {
		w, err := decodeComment(r.raw)
		if err != nil {
			return nil, err
		}
		c := t.toComment(w, id)
		if !c.CreatedAt.Before(since) {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// catalog caches a project's states and labels by name and id. It is
// shared by every Tracker of a Connector and read again on a miss.
type catalog struct {
	mu     sync.Mutex
	states []wireState
	loaded bool
	labels map[string]string // name → id
	names  map[string]string // id → name
}

type wireState struct {
	ID       string  `json:"id"`
	Name     string  `json:"name"`
	Group    string  `json:"group"`
	Default  bool    `json:"default"`
	Sequence float64 `json:"sequence"`
}

type wireLabel struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// list reads every page of a list endpoint.
func (t *Tracker) list(ctx context.Context, path string) ([]json.RawMessage, error) {
	var out []json.RawMessage
	for page := 0; ; page++ {
		a, err := t.cl.do(ctx, http.MethodGet, fmt.Sprintf("%s?per_page=%d&cursor=%d:%d:0", path, t.cfg.PageSize, t.cfg.PageSize, page), nil)
		if err != nil {
			return nil, err
		}
		if err := classify(a); err != nil {
			return nil, err
		}
		env, err := decodeEnvelope(a.body)
		if err != nil {
			return nil, err
		}
		out = append(out, env.Results...)
		if !env.NextPageResults || len(env.Results) == 0 {
			return out, nil
		}
	}
}

func (t *Tracker) loadStates(ctx context.Context) error {
	raw, err := t.list(ctx, t.projectPath("states/"))
	if err != nil {
		return err
	}
	states := make([]wireState, 0, len(raw))
	for _, r := range raw {
		var s wireState
		if err := json.Unmarshal(r, &s); err != nil || s.ID == "" {
			return garbled("state", err)
		}
		states = append(states, s)
	}
	t.cat.mu.Lock()
	t.cat.states, t.cat.loaded = states, true
	t.cat.mu.Unlock()
	return nil
}

func (t *Tracker) loadLabels(ctx context.Context) error {
	raw, err := t.list(ctx, t.projectPath("labels/"))
	if err != nil {
		return err
	}
	byName, byID := map[string]string{}, map[string]string{}
	for _, r := range raw {
		var l wireLabel
		if err := json.Unmarshal(r, &l); err != nil || l.ID == "" {
			return garbled("label", err)
		}
		byName[l.Name], byID[l.ID] = l.ID, l.Name
	}
	t.cat.mu.Lock()
	t.cat.labels, t.cat.names = byName, byID
	t.cat.mu.Unlock()
	return nil
}

// pickState chooses the state for a group: the project's default when it is
// in the group, else the group's first by sequence.
func pickState(states []wireState, group string) string {
	var best *wireState
	for i := range states {
		s := &states[i]
		if s.Group != group {
			continue
		}
		if s.Default {
			return s.ID
		}
		if best == nil || s.Sequence < best.Sequence {
			best = s
		}
	}
	if best == nil {
		return ""
	}
	return best.ID
}

func (t *Tracker) stateID(ctx context.Context, s tracker.State, refresh bool) (string, error) {
	group := groups[s]
	t.cat.mu.Lock()
	id, loaded := pickState(t.cat.states, group), t.cat.loaded
	t.cat.mu.Unlock()
	if id != "" && !refresh {
		return id, nil
	}
	if refresh || !loaded || id == "" {
		if err := t.loadStates(ctx); err != nil {
			return "", err
		}
		t.cat.mu.Lock()
		id = pickState(t.cat.states, group)
		t.cat.mu.Unlock()
	}
	if id == "" {
		return "", fmt.Errorf("plane: the project has no state in the %s group: %w", group, tracker.ErrRefused)
	}
	return id, nil
}

func (t *Tracker) groupOf(ctx context.Context, id string) (string, error) {
	find := func() (string, bool) {
		t.cat.mu.Lock()
		defer t.cat.mu.Unlock()
		for _, s := range t.cat.states {
			if s.ID == id {
				return s.Group, true
			}
		}
		return "", false
	}
	if g, ok := find(); ok {
		return g, nil
	}
	if err := t.loadStates(ctx); err != nil {
		return "", err
	}
	g, _ := find()
	return g, nil
}

// labelIDs resolves names to ids, reading the labels again on a miss and
// creating the ones still missing (a 409 on a name names the label, §5).
func (t *Tracker) labelIDs(ctx context.Context, names []string, refresh bool) ([]string, error) {
	// Plane trims a label's name (DRF's CharField), so "x " is held as
	// "x": looked up or created untrimmed, it would never be found, and
	// its create's 409 lookup fails with a 500 (api/views/issue.py:L923-935).
	trimmed := make([]string, 0, len(names))
	for _, n := range names {
		trimmed = append(trimmed, strings.TrimSpace(n))
	}
	names = uniq(trimmed)
	lookup := func() ([]string, []string) {
		t.cat.mu.Lock()
		defer t.cat.mu.Unlock()
		var ids, missing []string
		for _, n := range names {
			if id, ok := t.cat.labels[n]; ok {
				ids = append(ids, id)
			} else {
				missing = append(missing, n)
			}
		}
		return ids, missing
	}
	ids, missing := lookup()
	if len(missing) == 0 && !refresh {
		return ids, nil
	}
	if err := t.loadLabels(ctx); err != nil {
		return nil, err
	}
	if _, missing = lookup(); len(missing) > 0 {
		for _, n := range missing {
			if strings.TrimSpace(n) == "" {
				return nil, &tracker.InvalidError{Field: "labels", Reason: "holds an empty name"}
			}
			if _, err := t.createLabel(ctx, n); err != nil {
				return nil, err
			}
		}
	}
	ids, missing = lookup()
	if len(missing) > 0 {
		return nil, fmt.Errorf("plane: labels %q could not be made: %w", missing, tracker.ErrUnavailable)
	}
	return ids, nil
}

func (t *Tracker) createLabel(ctx context.Context, name string) (string, error) {
	a, err := t.cl.do(ctx, http.MethodPost, t.projectPath("labels/"), map[string]any{"name": name})
	if err != nil {
		return "", err
	}
	if a.status != http.StatusConflict {
		if err := classify(a); err != nil {
			return "", err
		}
	}
	var l wireLabel
	if err := json.Unmarshal(a.body, &l); err != nil || l.ID == "" {
		return "", garbled("label", err)
	}
	t.cat.mu.Lock()
	if t.cat.labels == nil {
		t.cat.labels, t.cat.names = map[string]string{}, map[string]string{}
	}
	t.cat.labels[name], t.cat.names[l.ID] = l.ID, name
	t.cat.mu.Unlock()
	return l.ID, nil
}

// labelNames maps ids to names, sorted; an id still unknown after the labels
// are read again is left out (a label of another project, which Plane drops
// itself).
func (t *Tracker) labelNames(ctx context.Context, ids []string) ([]string, error) {
	resolve := func() ([]string, bool) {
		t.cat.mu.Lock()
		defer t.cat.mu.Unlock()
		out := make([]string, 0, len(ids))
		complete := true
		for _, id := range ids {
			if n, ok := t.cat.names[id]; ok {
				out = append(out, n)
			} else {
				complete = false
			}
		}
		return out, complete
	}
	out, complete := resolve()
	if !complete {
		if err := t.loadLabels(ctx); err != nil {
			return nil, err
		}
		out, _ = resolve()
	}
	sort.Strings(out)
	return out, nil
}

func uniq(ss []string) []string {
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// errBadPage is a Query.Page this adapter never made.
var errBadPage = errors.New("not a page token of this tracker")

// validItemKey checks an item's key as Plane keeps it: its external_id, a
// CharField of 255 characters that DRF trims. A longer key is refused
// before anything is sent (Plane's 400 would refuse it for good); an
// item's key is its only handle in Plane, and a digest read back would not
// find its claim in the ledger while the filing is unrecorded.
func validItemKey(key string) error {
	if err := tracker.ValidateKeyKept(key, ""); err != nil {
		return err
	}
	if n := utf8.RuneCountInString(key); n > maxExternalID {
		return &tracker.InvalidError{Field: "key", Reason: fmt.Sprintf("is %d characters; Plane keeps an item's key in %d", n, maxExternalID)}
	}
	return nil
}
