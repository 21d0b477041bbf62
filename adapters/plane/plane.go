// Package plane is relayr's driver for Plane's public REST API (/api/v1/),
// under the portable tracker.Tracker, on core's trackerhttp.
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
// against Plane's offset pages shifting under the walk. No answer, however
// malformed, makes it panic.
//
// The driver maps Plane's wire and its quirks and nothing else: the
// portable tracker checks every input against the Capabilities declared
// here and honours the context, and trackerhttp times each phase of a
// request (10 s by default), caps answers and maps statuses onto the
// port's errors.
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

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// Kind is the integration's key without its prefix (tracker:plane).
const Kind = "plane"

// Defaults of Config.
const (
	// DefaultTimeout bounds each phase of a request (ADR-0033).
	DefaultTimeout = trackerhttp.DefaultTimeout
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
	// Client sends the requests; default one on http.DefaultTransport. Its
	// Timeout, if any, still applies; redirects are never followed (a
	// redirected write loses its body).
	Client *http.Client
	// Timeout bounds each phase of a request; default DefaultTimeout.
	Timeout time.Duration
	// MaxResponseBytes bounds an answer; default DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// PageSize is the per_page of list requests, 1 to 1000; default 1000.
	PageSize int
}

// Connector makes a Tracker (over a Driver) per workspace for one Plane
// project, sharing the project's states and labels among them.
type Connector struct {
	cfg Config
	cat *catalog
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
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if cfg.PageSize <= 0 || cfg.PageSize > DefaultPageSize {
		cfg.PageSize = DefaultPageSize
	}
	c := &Connector{cfg: cfg, cat: &catalog{}, ident: strings.ToUpper(cfg.Identifier)}
	c.size.Store(int64(cfg.PageSize))
	return c, nil
}

// Kind implements tracker.Connector.
func (c *Connector) Kind() string { return Kind }

// Connect implements tracker.Connector: the portable tracker over the
// Driver ConnectDriver makes.
func (c *Connector) Connect(ctx context.Context, creds tracker.Credentials, source tracker.Source) (*tracker.Tracker, error) {
	d, err := c.ConnectDriver(ctx, creds, source)
	if err != nil {
		return nil, err
	}
	return tracker.New(d), nil
}

// ConnectDriver makes the Driver filing for source with the tenant's key.
// It makes one request, to read the project's identifier, unless Config
// named it or an earlier Connect read it.
func (c *Connector) ConnectDriver(ctx context.Context, creds tracker.Credentials, source tracker.Source) (*Driver, error) {
	source, err := tracker.Connecting(Kind, creds, source, c.cfg.Namespace)
	if err != nil {
		return nil, err
	}
	hc, err := trackerhttp.New(trackerhttp.Config{
		Name: Kind, BaseURL: c.cfg.BaseURL + "/api/v1/", AuthHeader: "X-Api-Key", AuthValue: creds.Token,
		Client: c.cfg.Client, Timeout: c.cfg.Timeout, MaxResponse: c.cfg.MaxResponseBytes,
		RateWait: rateWindow, Classify: classify,
	})
	if err != nil {
		return nil, err
	}
	t := &Driver{cfg: c.cfg, http: hc, cat: c.cat, size: &c.size, source: externalID(source.String())}
	c.mu.Lock()
	ident := c.ident
	c.mu.Unlock()
	if ident == "" {
		a, err := t.get(ctx, t.projectPath(""), nil)
		if errors.Is(err, tracker.ErrNotFound) {
			// An unknown project reads as 404, where everything else
			// of it is a 403 (api/views/project.py:L373-380).
			return nil, fmt.Errorf("plane: no project %s in workspace %s: %w", c.cfg.Project, c.cfg.Workspace, err)
		}
		if err != nil {
			return nil, err
		}
		var p struct {
			Identifier string `json:"identifier"`
		}
		if err := json.Unmarshal(a.Body, &p); err != nil || p.Identifier == "" {
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

// Driver is one workspace's view of a Plane project, the tracker.Driver
// under the portable tracker Connect answers. It is safe for concurrent
// use.
type Driver struct {
	cfg    Config
	http   *trackerhttp.Client
	cat    *catalog
	size   *atomic.Int64
	source string
	ident  string
}

var (
	_ tracker.Driver              = (*Driver)(nil)
	_ tracker.DescriptionComparer = (*Driver)(nil)
)

// uuidRe is the shape of Plane's ids (Django's <uuid:…> converter).
var uuidRe = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// Capabilities implements tracker.Driver: what Plane does, in one place.
func (t *Driver) Capabilities() tracker.Capabilities {
	return tracker.Capabilities{
		Name: Kind,
		// Plane answers a second work item with the same external_id and
		// external_source with 409 and the existing id, archived items
		// included (api/views/issue.py:L441-463), so a create is itself
		// the lookup (ADR-0033's departures).
		KeysEnforced: true,
		// An item's key is its external_id, a CharField of 255
		// characters: a longer one would be refused for good, and a
		// digest read back would not find its claim in the ledger while
		// the filing is unrecorded. DRF trims it, which the port's rule
		// on a key's spaces covers; Plane's JSON keeps every other
		// character as sent.
		MaxKeyChars: maxExternalID,
		// Plane's five state groups hold every state of the port
		// (db/models/state.py:L14-20).
		States: nil,
		// Plane sends no webhook when a work item is deleted (ADR-0036):
		// the sweep finds its deletions.
		NudgesDeletions: false,
		// Plane's API sends no ETag or Last-Modified and answers no 304.
		ConditionalReads: false,
		MaxPage:          t.cfg.PageSize,
		// Plane keeps microseconds (§10).
		TimePrecision: time.Microsecond,
		ValidID:       uuidRe.MatchString,
	}
}

func (t *Driver) projectPath(rest string) string {
	return "workspaces/" + url.PathEscape(t.cfg.Workspace) + "/projects/" + t.cfg.Project + "/" + rest
}

// Project implements tracker.Driver: the project's id, as Nudge names it.
func (t *Driver) Project() string { return t.cfg.Project }

// Source is the external_source this driver files under.
func (t *Driver) Source() string { return t.source }

// Link implements tracker.Driver: <web>/<workspace>/browse/<IDENT>-<seq>/
// (packages/utils/src/work-item/base.ts:L315-337).
func (t *Driver) Link(ref tracker.ItemRef) string {
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

// Find implements tracker.Driver with the external-id lookup, which answers
// a bare object and finds archived items (api/views/issue.py:L312-325).
func (t *Driver) Find(ctx context.Context, key string) (tracker.Item, error) {
	q := url.Values{"external_id": {key}, "external_source": {t.source}, "fields": {itemFields}}
	a, err := t.get(ctx, t.projectPath("work-items/"), q)
	if a.Status == http.StatusInternalServerError {
		// Two items under one key make the lookup a 500
		// (MultipleObjectsReturned); it stays a 500 however often asked.
		return tracker.Item{}, fmt.Errorf("plane: the lookup of key %s failed (two items under one key?): %w", tracker.Quote(key), err)
	}
	if err != nil {
		return tracker.Item{}, err
	}
	return t.item(ctx, a.Body)
}

// Create implements tracker.Driver. A 409 is Plane's duplicate check
// (api/views/issue.py:L441-463) and names the existing item, archived ones
// included: it answers *tracker.ExistsError with that id, for the write path
// to read.
func (t *Driver) Create(ctx context.Context, key string, d tracker.Draft) (tracker.Item, error) {
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
		a, err := t.send(ctx, http.MethodPost, t.projectPath("work-items/"), body)
		switch {
		case a.Status == http.StatusConflict:
			var c struct {
				ID string `json:"id"`
			}
			_ = json.Unmarshal(a.Body, &c)
			return tracker.Item{}, &tracker.ExistsError{ID: c.ID}
		case attempt == 0 && staleIDs(a):
			continue
		case err != nil:
			return tracker.Item{}, err
		}
		return t.landedItem(ctx, a.Body)
	}
}

// staleIDs reports a 400 over a state or label id: one deleted since it was
// cached. The write is tried once more with the catalog read again.
func staleIDs(a trackerhttp.Answer) bool {
	if a.Status != http.StatusBadRequest {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(a.Body, &m) != nil {
		return false
	}
	_, state := m["state"]
	_, labels := m["labels"]
	return state || labels
}

// Item implements tracker.Driver. Plane answers 404 for an archived item
// as for a deleted one (§3.4).
func (t *Driver) Item(ctx context.Context, id string) (tracker.Item, error) {
	a, err := t.get(ctx, t.projectPath("work-items/"+id+"/"), url.Values{"fields": {itemFields}})
	if err != nil {
		return tracker.Item{}, err
	}
	return t.item(ctx, a.Body)
}

// Update implements tracker.Driver as one PATCH of the fields the patch
// names; labels replace the whole set (§3.6).
func (t *Driver) Update(ctx context.Context, id string, p tracker.Patch) (tracker.Item, error) {
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
		a, err := t.send(ctx, http.MethodPatch, t.projectPath("work-items/"+id+"/"), body)
		if attempt == 0 && staleIDs(a) {
			continue
		}
		if err != nil {
			return tracker.Item{}, err
		}
		return t.landedItem(ctx, a.Body)
	}
}

// landedItem reads the answer of a write that landed. Reading it may ask
// Plane for the project's states; a failure then is trackerhttp.Landed's,
// ErrUnavailable and nothing more: a cause that matches ErrRateLimited or
// ErrNotFound says the write certainly wasn't taken, and relayr would
// release the claim of an item that exists (and publish it as a person's)
// or put back the values recorded for an edit that landed.
func (t *Driver) landedItem(ctx context.Context, b []byte) (tracker.Item, error) {
	it, err := t.item(ctx, b)
	if err != nil {
		return tracker.Item{}, trackerhttp.Landed(Kind, "the write", "reading its answer", err)
	}
	return it, nil
}

// item maps a work item object onto the port's Item.
func (t *Driver) item(ctx context.Context, b []byte) (tracker.Item, error) {
	w, err := decodeItem(b)
	if err != nil {
		return tracker.Item{}, err
	}
	return t.toItem(ctx, w)
}

func (t *Driver) toItem(ctx context.Context, w wireItem) (tracker.Item, error) {
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

// Comment implements tracker.Driver: the key is the comment's external_id
// under this driver's source. Plane's 409 is project-wide and checked before
// anything else (§6); it answers the comment already posted under the key.
func (t *Driver) Comment(ctx context.Context, id, key, body string) (tracker.Comment, error) {
	// Plane makes a comment on a deleted item, whose row stays until the
	// hard delete (api/views/issue.py:L1446-1448): the item is read
	// first, and one that is gone (deleted, or archived, where Plane's web
	// app takes no comment either) is NotFound.
	if _, err := t.get(ctx, t.projectPath("work-items/"+id+"/"), url.Values{"fields": {"id"}}); err != nil {
		if errors.Is(err, tracker.ErrNotFound) {
			return tracker.Comment{}, fmt.Errorf("plane: work item %s is deleted or archived: %w", id, tracker.ErrNotFound)
		}
		return tracker.Comment{}, err
	}
	req := map[string]any{"comment_html": markedBody(key, body), "external_id": externalID(key), "external_source": t.source}
	path := t.projectPath("work-items/" + id + "/comments/")
	a, err := t.send(ctx, http.MethodPost, path, req)
	if a.Status == http.StatusConflict {
		var c struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(a.Body, &c)
		if !uuidRe.MatchString(c.ID) {
			return tracker.Comment{}, &tracker.ExistsError{ID: c.ID}
		}
		if a, err = t.get(ctx, path+c.ID+"/", nil); a.Status == http.StatusNotFound {
			// Posted under the key on another item of the project.
			return tracker.Comment{}, &tracker.ExistsError{ID: c.ID}
		}
	}
	if a.Status == http.StatusBadRequest && strings.Contains(string(a.Body), "The payload is not valid") {
		// Plane doesn't check the item first; the foreign key fails (§6).
		return tracker.Comment{}, fmt.Errorf("plane: comment on %s: %s: %w", id, trackerhttp.Detail(a.Body), tracker.ErrNotFound)
	}
	if err != nil {
		return tracker.Comment{}, err
	}
	w, err := decodeComment(a.Body)
	if err != nil {
		return tracker.Comment{}, err
	}
	return t.toComment(w, id), nil
}

func (t *Driver) toComment(w wireComment, itemID string) tracker.Comment {
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

// Comments implements tracker.Driver. Plane lists comments newest first
// whatever order_by says (§6), so the walk stops at the first page reaching
// past since; the answer is oldest first.
func (t *Driver) Comments(ctx context.Context, id string, since time.Time) ([]tracker.Comment, error) {
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
	tracker.SortComments(out)
	return out, nil
}

// catalog caches a project's states and labels by name and id. It is
// shared by every Driver of a Connector and read again on a miss.
type catalog struct {
	mu     sync.Mutex
	states []wireState
	loaded bool
	labels map[string]string // name → id
	names  map[string]string // id → name
	// statesRead is how many times the states were read; loading lets one
	// read go at a time, so the callers that miss together (a burst of
	// filings, each answered a state id) read them once.
	statesRead int
	loading    sync.Mutex
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
func (t *Driver) list(ctx context.Context, path string) ([]json.RawMessage, error) {
	var out []json.RawMessage
	for page := 0; ; page++ {
		a, err := t.get(ctx, path, pageQuery(t.cfg.PageSize, page))
		if err != nil {
			return nil, err
		}
		env, err := decodeEnvelope(a.Body)
		if err != nil {
			return nil, err
		}
		out = append(out, env.Results...)
		if !env.NextPageResults || len(env.Results) == 0 {
			return out, nil
		}
	}
}

func (t *Driver) loadStates(ctx context.Context) error {
	t.cat.mu.Lock()
	before := t.cat.statesRead
	t.cat.mu.Unlock()
	t.cat.loading.Lock()
	defer t.cat.loading.Unlock()
	t.cat.mu.Lock()
	readSince := t.cat.statesRead != before
	t.cat.mu.Unlock()
	if readSince {
		return nil // read by a caller that missed with this one
	}
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
	t.cat.statesRead++
	t.cat.mu.Unlock()
	return nil
}

func (t *Driver) loadLabels(ctx context.Context) error {
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

func (t *Driver) stateID(ctx context.Context, s tracker.State, refresh bool) (string, error) {
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

func (t *Driver) groupOf(ctx context.Context, id string) (string, error) {
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
func (t *Driver) labelIDs(ctx context.Context, names []string, refresh bool) ([]string, error) {
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

func (t *Driver) createLabel(ctx context.Context, name string) (string, error) {
	a, err := t.send(ctx, http.MethodPost, t.projectPath("labels/"), map[string]any{"name": name})
	if err != nil && a.Status != http.StatusConflict {
		return "", err
	}
	var l wireLabel
	if err := json.Unmarshal(a.Body, &l); err != nil || l.ID == "" {
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
func (t *Driver) labelNames(ctx context.Context, ids []string) ([]string, error) {
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
