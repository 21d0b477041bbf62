// Package vikunja is relayr's driver of the portable tracker.Tracker for
// Vikunja's REST API (v2.5.0), on core's trackerhttp.
//
// An item relayr files carries a marker on the last line of its
// description, "lattice-key: lattice:<tenant>/<workspace>/<key>" (ADR-0033;
// the namespace is tracker.Source.Namespace). Find searches for it with s=,
// a substring match in which _ and % are wildcards, and keeps only tasks
// whose marker names the key exactly. Comments relayr posts carry the same
// marker, so Comments reads their key back. Markers are taken out of
// descriptions and comment bodies read back, so what was filed reads back
// as filed.
//
// Vikunja's v1 update replaces a task whole (an omitted field is blanked,
// an omitted done re-opens it), so Update uses v2's merge-patch, which
// writes only the fields it names: one request instead of a read and a
// write, and no window in which a person's edit between the read and the
// write would be overwritten with what was read. Labels go through the
// single add and remove endpoints, which bump the task's updated, so a
// follower reading changes since a cursor sees them; the bulk endpoint
// would save requests and lose that bump.
//
// Vikunja keeps time to the second, so Items asks for updated > since − 1 s
// and pages by keyset, dropping what an earlier page answered. What every
// tracker shares is not here: tracker.Tracker checks every input against
// the driver's Capabilities and honours the context, and trackerhttp times
// each phase of a request (10 s unless WithTimeout says otherwise), caps
// answers and maps statuses onto the port's typed errors, with Vikunja's
// own meaning of a 403 (classify). The driver keeps Vikunja's wire, its
// quirks, and its write gate.
package vikunja

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// Kind is the integration's key without its prefix (tracker:vikunja).
const Kind = "vikunja"

// DefaultTimeout bounds each phase of a request (ADR-0033).
const DefaultTimeout = trackerhttp.DefaultTimeout

// DefaultMaxBody is the largest answer the adapter reads.
const DefaultMaxBody = trackerhttp.DefaultMaxResponse

// DefaultRateWait is how long a 429 without a usable X-Ratelimit-Reset asks
// relayr to wait: Vikunja's default rate-limit period.
const DefaultRateWait = time.Minute

// markupRewrites are the characters a key may not hold on Vikunja: its
// marker sits in a description the web editor keeps as HTML, where they
// come back as entities or cut the line (Capabilities.Rewrites).
const markupRewrites = "<>&"

// PerPage is the page size the adapter asks for: Vikunja's cap.
const PerPage = 50

// SignatureHeader carries a webhook delivery's signature.
const SignatureHeader = "X-Vikunja-Signature"

// Params name what a Tracker talks to.
type Params struct {
	// BaseURL is the server's address, without /api/v1
	// ("https://vikunja.example.com").
	BaseURL string
	// Token is an API token with the permissions the fact sheet lists.
	Token string
	// Project is the id of the project items are filed into.
	Project int64
	// Source is the workspace items are filed for.
	Source tracker.Source
}

// Option tunes a Tracker.
type Option func(*config)

type config struct {
	transport http.RoundTripper
	timeout   time.Duration
	now       func() time.Time
	maxBody   int64
	writes    int
	gates     *WriteGates
	settle    time.Duration
	hold      time.Duration
}

// WithTransport sends requests through rt (http.DefaultTransport by
// default), as it is: trackerhttp times each phase on any RoundTripper,
// and the Trackers made on one transport share its connections.
func WithTransport(rt http.RoundTripper) Option { return func(c *config) { c.transport = rt } }

// WithTimeout sets the timeout of each phase of a request (DefaultTimeout).
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// DefaultWriteSettle is how long after a write given up mid-request the
// server is taken to be done with it: its slot of the write gate is held
// that long after its connection was closed (as core/writes waits as long
// before it looks up a filing in doubt).
const DefaultWriteSettle = 2 * time.Second

// WithWriteSettle sets how long a write given up mid-request keeps its
// slot of the server's write gate after its connection was closed
// (DefaultWriteSettle).
func WithWriteSettle(d time.Duration) Option { return func(c *config) { c.settle = d } }

// WithClock sets the clock a 429's wait is measured on (time.Now).
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithMaxBody sets the largest answer read (DefaultMaxBody); a larger one
// is ErrUnavailable.
func WithMaxBody(n int64) Option { return func(c *config) { c.maxBody = n } }

// WithConcurrentWrites lets the process send the server up to n write
// requests at once: more than one only for a Vikunja on PostgreSQL or
// MySQL, which don't lock as SQLite does. Unset (n < 1), the server says:
// unserialized when its /api/v1/info answers concurrent_writes true, else
// DefaultConcurrentWrites, one. Every Tracker of one server must say the
// same; New refuses another n.
func WithConcurrentWrites(n int) Option { return func(c *config) { c.writes = n } }

// WithWriteHold sets how long a write without an answer holds its
// server's slot before the next write may go (its own request goes on):
// d > 0 that long; 0, the default, learned from the server's recent writes
// (DefaultWriteHold before any); d < 0 until it is answered, always. A
// server that answers 500 to a write sent beside one let go early holds
// every write until answered for a while (it locks as SQLite does). Every
// Tracker of one server must say the same.
func WithWriteHold(d time.Duration) Option { return func(c *config) { c.hold = d } }

// WithWriteGates keeps the Trackers' write gates in g instead of the
// process's (tests that run servers apart, each on its own virtual time).
func WithWriteGates(g *WriteGates) Option { return func(c *config) { c.gates = g } }

// driver is the Vikunja driver: one workspace's view of one project, under
// the portable tracker.Tracker, which calls it only with inputs checked
// against its Capabilities and with a live context.
type driver struct {
	base    string
	project int64
	source  tracker.Source
	caps    tracker.Capabilities
	// http sends every request; its Gate is the server's write gate, so
	// the process never sends the server more writes at once than it takes.
	http *trackerhttp.Client

	mu     sync.Mutex
	labels map[string]int64 // title → id
	keys   map[int64]string // task id → key, as last read
	lmu    sync.Mutex       // serialises label resolution, so a title is created once
}

var (
	_ tracker.Driver     = (*driver)(nil)
	_ tracker.KeysFinder = (*driver)(nil)
)

// New makes the portable Tracker over a Vikunja driver. It makes no
// request.
func New(p Params, opts ...Option) (*tracker.Tracker, error) {
	drv, err := newDriver(p, opts...)
	if err != nil {
		return nil, err
	}
	return tracker.New(drv), nil
}

// NewDriver makes the driver beneath New's tracker, for the driver
// conformance suite (core/tracker/drivertest) and for callers composing
// their own portable tracker. It makes no request.
func NewDriver(p Params, opts ...Option) (tracker.Driver, error) { return newDriver(p, opts...) }

func newDriver(p Params, opts ...Option) (*driver, error) {
	if p.Token == "" {
		return nil, &tracker.InvalidError{Field: "token", Reason: "is empty"}
	}
	if p.Project <= 0 {
		return nil, &tracker.InvalidError{Field: "project", Reason: "is not a project id"}
	}
	if p.Source.Namespace == "" {
		p.Source.Namespace = tracker.DefaultNamespace
	}
	cfg := config{}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.settle <= 0 {
		cfg.settle = DefaultWriteSettle
	}
	cfg.writes = max(cfg.writes, 0) // 0: the server says
	if cfg.gates == nil {
		cfg.gates = processGates
	}
	base := strings.TrimRight(p.BaseURL, "/")
	var hc *http.Client
	if cfg.transport != nil {
		// trackerhttp keeps a copy of the client; the connections are the
		// transport's, so every Tracker on it shares them.
		hc = &http.Client{Transport: cfg.transport}
	}
	slots := &writeSlots{settle: cfg.settle, now: time.Now}
	c, err := trackerhttp.New(trackerhttp.Config{Name: Kind, BaseURL: base, AuthValue: "Bearer " + p.Token,
		Client: hc, Timeout: cfg.timeout, MaxResponse: cfg.maxBody, RateWait: DefaultRateWait,
		Classify: classify, Gate: slots, Now: cfg.now})
	if err != nil {
		return nil, err
	}
	if slots.gate, err = cfg.gates.gate(p.BaseURL, cfg.writes, cfg.hold); err != nil {
		return nil, err
	}
	slots.ask = func(ctx context.Context) (bool, error) { return concurrentWrites(ctx, c) }
	t := &driver{base: base, project: p.Project, source: p.Source, http: c,
		labels: map[string]int64{}, keys: map[int64]string{}}
	t.caps = t.Capabilities()
	return t, nil
}

// Capabilities implements tracker.Driver: what Vikunja does and does not
// do, in one place.
//
//   - Keys are relayr's alone (KeysEnforced false): Vikunja files a second
//     task under a marker as readily as the first, so a retaken claim
//     looks its key up before it files (ADR-0033).
//   - A key holding one of "<>&" would read back rewritten from the web
//     editor's HTML (Rewrites).
//   - The done flag holds two states (ADR-0036): backlog and started read
//     back as todo, cancelled as done.
//   - task.deleted deliveries report deletions (NudgesDeletions); a
//     deleted task reads as 404, since Vikunja keeps no archived tasks.
//   - No read is conditional, a page holds PerPage tasks, time is kept to
//     the second, and an id is a positive decimal.
func (t *driver) Capabilities() tracker.Capabilities {
	return tracker.Capabilities{
		Name:         Kind,
		KeysEnforced: false,
		Rewrites:     markupRewrites,
		States: map[tracker.State]tracker.State{
			tracker.Backlog:   tracker.Todo,
			tracker.Started:   tracker.Todo,
			tracker.Cancelled: tracker.Done,
		},
		NudgesDeletions:  true,
		ConditionalReads: false,
		MaxPage:          PerPage,
		TimePrecision:    time.Second,
		ValidID:          validID,
	}
}

// done reports whether a task set to s is done: Vikunja's one flag.
func (t *driver) done(s tracker.State) bool { return t.caps.Holds(s) == tracker.Done }

// Connector makes Trackers for one Vikunja server and project.
type Connector struct {
	BaseURL string
	Project int64
	Options []Option
}

var _ tracker.Connector = Connector{}

// Kind implements tracker.Connector.
func (Connector) Kind() string { return Kind }

// Connect implements tracker.Connector; it makes no request.
func (c Connector) Connect(_ context.Context, creds tracker.Credentials, source tracker.Source) (*tracker.Tracker, error) {
	return New(Params{BaseURL: c.BaseURL, Token: creds.Token, Project: c.Project, Source: source}, c.Options...)
}

// --- requests ---

// do makes one request through trackerhttp, which answers a non-2xx with
// the answer and its typed error. A write waits for a slot of the
// server's gate (writeSlots); reads go at once.
func (t *driver) do(ctx context.Context, method, path string, query url.Values, body any) (trackerhttp.Answer, error) {
	return t.http.Do(ctx, trackerhttp.Request{Method: method, Path: path, Query: query, Body: body})
}

// classify is trackerhttp's Classify override: what Vikunja means by an
// answer where the default mapping (def) would say otherwise, and the
// code Vikunja names its errors by, kept in the message.
//
//   - 403 is ErrUnauthorized, always (another user's object; a token
//     without the route's permission answers 401). Vikunja answers a
//     spent limit with 429 alone, and sends X-RateLimit-Remaining with
//     every answer, 0 on the last of a window's, so the default's reading
//     of a 403 with it as a limit would take a refused key for a wait.
//   - Every other status maps as trackerhttp.Classify says: 401
//     unauthorized, 404 not found (a deleted task answers 4002), 429 a
//     wait until X-Ratelimit-Reset (Vikunja sends no Retry-After), 412
//     (an archived project) and every other 3xx and 4xx refused, 5xx
//     unavailable.
//
// v1 answers {"code","message"}, v2 problem+json {"detail","code"}; the
// code (4002, 3008, 8001 …) names the cause where the text is generic.
func classify(a trackerhttp.Answer, def error) error {
	if def == nil {
		return nil
	}
	if a.Status == http.StatusForbidden {
		def = fmt.Errorf("%d %s: %w", a.Status, trackerhttp.Detail(a.Body), tracker.ErrUnauthorized)
	}
	var e struct {
		Code int `json:"code"`
	}
	if json.Unmarshal(a.Body, &e) == nil && e.Code != 0 {
		return fmt.Errorf("code %d: %w", e.Code, def)
	}
	return def
}

func (t *driver) getTask(ctx context.Context, id int64) (wireTask, error) {
	a, err := t.do(ctx, http.MethodGet, "/api/v1/tasks/"+strconv.FormatInt(id, 10), nil, nil)
	if err != nil {
		return wireTask{}, err
	}
	w, err := decodeTask(a.Body)
	if err != nil {
		return wireTask{}, trackerhttp.Garbled(Kind, "task", err)
	}
	return w, nil
}

func (t *driver) listTasks(ctx context.Context, q url.Values) ([]wireTask, trackerhttp.Answer, error) {
	q.Set("per_page", strconv.Itoa(PerPage))
	a, err := t.do(ctx, http.MethodGet, "/api/v1/projects/"+strconv.FormatInt(t.project, 10)+"/tasks", q, nil)
	if err != nil {
		return nil, a, err
	}
	ws, err := decodeTasks(a.Body)
	if err != nil {
		return nil, a, trackerhttp.Garbled(Kind, "task list", err)
	}
	return ws, a, nil
}

// lastPage reports whether a list answer was its last page: by the
// x-pagination-total-pages Vikunja sends with every list, since a server
// whose service.maxitemsperpage is under PerPage answers short pages
// before its last; by a short page only when the header is missing.
func lastPage(a trackerhttp.Answer, page, got int) bool {
	if got == 0 {
		return true
	}
	if total, err := strconv.Atoi(a.Header.Get("x-pagination-total-pages")); err == nil {
		return page >= total
	}
	return got < PerPage
}

// pageQuery asks for one page of a list, PerPage long.
func pageQuery(page int) url.Values {
	return url.Values{"page": {strconv.Itoa(page)}, "per_page": {strconv.Itoa(PerPage)}}
}

// validID reports whether id is a task id: a positive decimal.
func validID(id string) bool {
	_, err := parseID(id)
	return err == nil
}

// parseID reads a task id: a positive decimal (Capabilities.ValidID).
func parseID(id string) (int64, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("vikunja: %s is not a task id: %w", tracker.Quote(id), tracker.ErrNotFound)
	}
	return n, nil
}

// --- items ---

// item turns a task into the port's item, remembering its key.
func (t *driver) item(w wireTask) tracker.Item {
	key, _ := KeyOf(w.Description, t.source)
	desc := w.Description
	if key != "" {
		desc = stripMarker(desc, t.source, key)
		t.mu.Lock()
		t.keys[w.ID] = key
		t.mu.Unlock()
	}
	ref := tracker.ItemRef{ID: strconv.FormatInt(w.ID, 10), Number: w.Index, Name: w.Identifier, Key: key}
	if ref.Name == "" {
		ref.Name = "#" + strconv.FormatInt(w.Index, 10)
	}
	ref.Link = t.Link(ref)
	state := tracker.Todo
	if w.Done {
		state = tracker.Done
	}
	var labels []string
	for _, l := range w.Labels {
		labels = append(labels, l.Title)
	}
	return tracker.Item{Ref: ref, Title: w.Title, Description: desc, State: state, Labels: labels,
		UpdatedAt: w.Updated.UTC().Truncate(time.Second)}
}

// Find implements tracker.Driver: a search for the marker, then an exact
// check of it, since the search also matches k10 for k1 and reads _ and %
// as wildcards. Of several tasks marked with the key, the oldest answers.
func (t *driver) Find(ctx context.Context, key string) (tracker.Item, error) {
	q := url.Values{"s": {Marker(t.source, key)}, "sort_by": {"id"}, "order_by": {"asc"}}
	for page := 1; ; page++ {
		q.Set("page", strconv.Itoa(page))
		ws, a, err := t.listTasks(ctx, q)
		if err != nil {
			return tracker.Item{}, err
		}
		for _, w := range ws {
			if k, ok := KeyOf(w.Description, t.source); ok && k == key {
				return t.item(w), nil
			}
		}
		if lastPage(a, page, len(ws)) {
			return tracker.Item{}, fmt.Errorf("vikunja: no task is marked with key %s: %w", tracker.Quote(key), tracker.ErrNotFound)
		}
	}
}

// findKeysPages bounds the pages FindKeys reads before it says it stopped
// short.
const findKeysPages = 4

// FindKeys implements tracker.KeysFinder: one search of the workspace's
// markers, newest task first, down to the tasks made before since, each
// key's oldest task answering (as Find's). The search matches every marker
// of the workspace (its tenant and workspace end the marker's prefix),
// and each is checked exactly; past findKeysPages pages it stops short,
// complete false.
func (t *driver) FindKeys(ctx context.Context, keys []string, since time.Time) (map[string]tracker.Item, bool, error) {
	q := url.Values{"s": {Marker(t.source, "")}, "sort_by": {"id"}, "order_by": {"desc"}}
	found := map[string]tracker.Item{}
	for page := 1; page <= findKeysPages; page++ {
		q.Set("page", strconv.Itoa(page))
		ws, a, err := t.listTasks(ctx, q)
		if err != nil {
			return nil, false, err
		}
		for _, w := range ws {
			if !w.Created.IsZero() && w.Created.Before(since) {
				return found, true, nil
			}
			if k, ok := KeyOf(w.Description, t.source); ok && slices.Contains(keys, k) {
				found[k] = t.item(w) // newest first: an older one of the key answers last
			}
		}
		if len(found) == len(keys) {
			// Every key found: an older task of one (a key filed twice,
			// by hand) would answer it as Find does, but a filing in doubt
			// whose key another task held was found by its own.
			return found, true, nil
		}
		if lastPage(a, page, len(ws)) {
			return found, true, nil
		}
	}
	return found, false, nil
}

// Create implements tracker.Driver: labels are resolved first (a label
// not yet known is looked up, and created when missing), then the task is
// filed, then each label is added to it, since Vikunja ignores labels in
// a create. A failure after the task landed is ErrUnavailable, never an
// error saying the write certainly wasn't taken.
func (t *driver) Create(ctx context.Context, key string, d tracker.Draft) (tracker.Item, error) {
	ids, err := t.labelIDs(ctx, d.Labels)
	if err != nil {
		return tracker.Item{}, err
	}
	body := map[string]any{"title": d.Title, "description": withMarker(d.Description, t.source, key)}
	if d.State != "" && t.done(d.State) {
		body["done"] = true
	}
	a, err := t.do(ctx, http.MethodPut, "/api/v1/projects/"+strconv.FormatInt(t.project, 10)+"/tasks", nil, body)
	if err != nil {
		return tracker.Item{}, err
	}
	w, err := decodeTask(a.Body)
	if err != nil {
		return tracker.Item{}, trackerhttp.Garbled(Kind, "created task", err)
	}
	it := t.item(w)
	for i, lid := range ids {
		_, at, err := t.addLabel(ctx, w.ID, d.Labels[i], lid)
		if err != nil {
			return tracker.Item{}, trackerhttp.Landed(Kind, fmt.Sprintf("filed task %d", w.ID), "labelling it", err)
		}
		it.Labels = append(it.Labels, d.Labels[i])
		if at.After(it.UpdatedAt) {
			it.UpdatedAt = at
		}
	}
	return it, nil
}

// Item implements tracker.Driver: one read.
func (t *driver) Item(ctx context.Context, id string) (tracker.Item, error) {
	n, err := parseID(id)
	if err != nil {
		return tracker.Item{}, err
	}
	w, err := t.getTask(ctx, n)
	if err != nil {
		return tracker.Item{}, err
	}
	if w.ProjectID != 0 && w.ProjectID != t.project {
		return tracker.Item{}, fmt.Errorf("vikunja: task %d is in project %d, not %d: %w", n, w.ProjectID, t.project, tracker.ErrNotFound)
	}
	return t.item(w), nil
}

// Update implements tracker.Driver. Title, description and state go in
// one v2 merge-patch naming only them (v1's update would blank what it
// isn't sent); a description keeps the item's marker. Labels are set
// through single adds and removes, then the task is read again.
func (t *driver) Update(ctx context.Context, id string, p tracker.Patch) (tracker.Item, error) {
	n, err := parseID(id)
	if err != nil {
		return tracker.Item{}, err
	}
	var cur *wireTask
	read := func() (*wireTask, error) {
		if cur == nil {
			w, err := t.getTask(ctx, n)
			if err != nil {
				return nil, err
			}
			cur = &w
		}
		return cur, nil
	}
	patch := map[string]any{}
	if p.Title != nil {
		patch["title"] = *p.Title
	}
	if p.State != nil {
		patch["done"] = t.done(*p.State)
	}
	if p.Description != nil {
		t.mu.Lock()
		key, ok := t.keys[n]
		t.mu.Unlock()
		if !ok {
			w, err := read()
			if err != nil {
				return tracker.Item{}, err
			}
			key, _ = KeyOf(w.Description, t.source)
		}
		desc := *p.Description
		if key != "" {
			desc = withMarker(desc, t.source, key)
		}
		patch["description"] = desc
	}
	patched := false
	if len(patch) > 0 {
		a, err := t.http.Do(ctx, trackerhttp.Request{Method: http.MethodPatch, Path: "/api/v2/tasks/" + strconv.FormatInt(n, 10),
			Body: patch, ContentType: "application/merge-patch+json"})
		switch {
		case a.Status == http.StatusNotModified:
			// Huma's autopatch answers 304, with no body and nothing
			// written, when the merged task equals the one it read (setting
			// backlog on an open task: both are done: false). The edit
			// changed nothing, so it is done; the task is read back as it is.
			w, err := t.getTask(ctx, n)
			if err != nil {
				return tracker.Item{}, err
			}
			cur = &w
		case err != nil:
			return tracker.Item{}, err
		default:
			patched = true
			w, err := decodeTask(a.Body)
			if err != nil {
				return tracker.Item{}, trackerhttp.Garbled(Kind, "patched task", err)
			}
			cur = &w
		}
	}
	if p.Labels != nil {
		w, err := read()
		if err != nil {
			return tracker.Item{}, err
		}
		changed, err := t.setLabels(ctx, w, *p.Labels)
		if err != nil {
			if patched || changed {
				return tracker.Item{}, trackerhttp.Landed(Kind, fmt.Sprintf("task %d's edit", n), "its labels", err)
			}
			return tracker.Item{}, err
		}
		if changed {
			nw, err := t.getTask(ctx, n)
			if err != nil {
				return tracker.Item{}, trackerhttp.Landed(Kind, fmt.Sprintf("task %d's edit", n), "reading it back", err)
			}
			cur = &nw
		}
	}
	return t.item(*cur), nil
}

// --- comments ---

// Comment implements tracker.Driver: the body with the key's marker on
// its last line.
func (t *driver) Comment(ctx context.Context, id, key, body string) (tracker.Comment, error) {
	n, err := parseID(id)
	if err != nil {
		return tracker.Comment{}, err
	}
	a, err := t.do(ctx, http.MethodPut, "/api/v1/tasks/"+strconv.FormatInt(n, 10)+"/comments", nil,
		map[string]string{"comment": withMarker(body, t.source, key)})
	if err != nil {
		return tracker.Comment{}, err
	}
	var w wireComment
	if err := json.Unmarshal(a.Body, &w); err != nil || w.ID <= 0 {
		return tracker.Comment{}, trackerhttp.Garbled(Kind, "comment", err)
	}
	return t.comment(n, w), nil
}

func (t *driver) comment(task int64, w wireComment) tracker.Comment {
	c := tracker.Comment{ID: strconv.FormatInt(w.ID, 10), ItemID: strconv.FormatInt(task, 10), Body: w.Comment,
		CreatedAt: w.Created.UTC().Truncate(time.Second)}
	if w.Author != nil {
		c.Author = cmp.Or(w.Author.Username, w.Author.Name)
	}
	if k, ok := KeyOf(w.Comment, t.source); ok {
		c.Key, c.Body = k, stripMarker(w.Comment, t.source, k)
	}
	return c
}

// Comments implements tracker.Driver: every page, oldest first, those
// created at or after since (to the second).
func (t *driver) Comments(ctx context.Context, id string, since time.Time) ([]tracker.Comment, error) {
	n, err := parseID(id)
	if err != nil {
		return nil, err
	}
	since = since.UTC().Truncate(time.Second)
	var out []tracker.Comment
	for page := 1; ; page++ {
		q := pageQuery(page)
		q.Set("order_by", "asc")
		a, err := t.do(ctx, http.MethodGet, "/api/v1/tasks/"+strconv.FormatInt(n, 10)+"/comments", q, nil)
		if err != nil {
			return nil, err
		}
		var ws []wireComment
		if err := json.Unmarshal(a.Body, &ws); err != nil {
			return nil, trackerhttp.Garbled(Kind, "comment list", err)
		}
		for _, w := range ws {
			if w.ID <= 0 {
				return nil, trackerhttp.Garbled(Kind, "comment list", errNoID)
			}
			if c := t.comment(n, w); !c.CreatedAt.Before(since) {
				out = append(out, c)
			}
		}
		if lastPage(a, page, len(ws)) {
			break
		}
	}
	tracker.SortComments(out)
	return out, nil
}

// --- the rest of the port ---

// Nudge implements tracker.Driver: X-Vikunja-Signature must be the hex
// HMAC-SHA256 of the raw body under secret; the project is the payload's
// data.project.id, else its task's project_id. A task.deleted delivery
// names its task deleted when the task is of the project it names (a
// deleted task reads as 404 on Vikunja, which keeps no archived tasks).
func (t *driver) Nudge(secret string, header http.Header, body []byte) (tracker.Nudged, error) {
	if !trackerhttp.VerifySHA256(secret, "", header.Get(SignatureHeader), body) {
		return tracker.Nudged{}, fmt.Errorf("vikunja: the delivery's %s doesn't verify: %w", SignatureHeader, tracker.ErrUnauthorized)
	}
	var p struct {
		Event string `json:"event_name"`
		Data  struct {
			Project *struct {
				ID int64 `json:"id"`
			} `json:"project"`
			Task *struct {
				ID        int64 `json:"id"`
				ProjectID int64 `json:"project_id"`
			} `json:"task"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return tracker.Nudged{}, fmt.Errorf("vikunja: a signed delivery that isn't a Vikunja event (%s): %w", err.Error(), tracker.ErrRefused)
	}
	var project int64
	switch {
	case p.Data.Project != nil && p.Data.Project.ID > 0:
		project = p.Data.Project.ID
	case p.Data.Task != nil && p.Data.Task.ProjectID > 0:
		project = p.Data.Task.ProjectID
	default:
		return tracker.Nudged{}, fmt.Errorf("vikunja: the delivery names no project: %w", tracker.ErrRefused)
	}
	n := tracker.Nudged{Project: strconv.FormatInt(project, 10)}
	if task := p.Data.Task; p.Event == EventTaskDeleted && task != nil && task.ID > 0 && (task.ProjectID == 0 || task.ProjectID == project) {
		n.Deleted = []string{strconv.FormatInt(task.ID, 10)}
	}
	return n, nil
}

// Events of Vikunja's webhooks the adapter reads.
const (
	// EventTaskUpdated is delivered when a task changes, with the task as
	// it is then.
	EventTaskUpdated = "task.updated"
	// EventTaskDeleted is delivered when a task is deleted, with the task
	// as it was: the only prompt sign of a deletion, since a deleted task
	// simply vanishes from lists.
	EventTaskDeleted = "task.deleted"
)

// Link implements tracker.Driver: the task's page in Vikunja's web UI.
func (t *driver) Link(ref tracker.ItemRef) string { return t.base + "/tasks/" + ref.ID }

// Project implements tracker.Driver: the project's id, as Nudge names it.
func (t *driver) Project() string { return strconv.FormatInt(t.project, 10) }
