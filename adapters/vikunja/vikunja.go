// Package vikunja is relayr's Tracker for Vikunja's REST API (v2.5.0), on
// plain net/http.
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
// and pages by keyset, dropping what an earlier page answered. Every
// failure is one of the port's typed errors (see classify); each phase of
// a request (dial, TLS, response headers, body) has its own timeout, 10 s
// unless WithTimeout says otherwise, and answers are read up to a size
// limit.
package vikunja

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
)

// Kind is the integration's key without its prefix (tracker:vikunja).
const Kind = "vikunja"

// DefaultTimeout bounds each phase of a request (ADR-0033).
const DefaultTimeout = 10 * time.Second

// DefaultMaxBody is the largest answer the adapter reads.
const DefaultMaxBody = 4 << 20

// markupRewrites are the characters a key may not hold on Vikunja: its
// marker sits in a description the web editor keeps as HTML, where they
// come back as entities or cut the line (tracker.ValidateKeyKept).
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
}

// WithTransport sends requests through rt (a fresh *http.Transport by
// default). An *http.Transport is cloned and given the phase timeouts.
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
// requests at once (DefaultConcurrentWrites, one, when n < 1): more only
// for a Vikunja on PostgreSQL or MySQL, which don't lock as SQLite does.
// Every Tracker of one server must say the same; New refuses another n.
func WithConcurrentWrites(n int) Option { return func(c *config) { c.writes = n } }

// WithWriteGates keeps the Trackers' write gates in g instead of the
// process's (tests that run servers apart, each on its own virtual time).
func WithWriteGates(g *WriteGates) Option { return func(c *config) { c.gates = g } }

// Tracker is the Vikunja adapter: one workspace's view of one project.
type Tracker struct {
	base    string
	token   string
	project int64
	source  tracker.Source
	cfg     config
	client  *http.Client
	// writes is the server's gate: every write request takes a slot, so
	// the process never sends it more writes at once than it takes.
	writes *writeGate
	// headerTimer is set when the transport isn't an *http.Transport, whose
	// own ResponseHeaderTimeout can't be set: the adapter times the wait
	// for headers itself.
	headerTimer bool

	mu     sync.Mutex
	labels map[string]int64 // title → id
	keys   map[int64]string // task id → key, as last read
	lmu    sync.Mutex       // serialises label resolution, so a title is created once
}

var _ tracker.Tracker = (*Tracker)(nil)

// New makes a Tracker. It makes no request.
func New(p Params, opts ...Option) (*Tracker, error) {
	u, err := url.Parse(p.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &tracker.InvalidError{Field: "base URL", Reason: fmt.Sprintf("%q is not an http(s) address", p.BaseURL)}
	}
	if p.Token == "" {
		return nil, &tracker.InvalidError{Field: "token", Reason: "is empty"}
	}
	if p.Project <= 0 {
		return nil, &tracker.InvalidError{Field: "project", Reason: "is not a project id"}
	}
	if p.Source.Namespace == "" {
		p.Source.Namespace = tracker.DefaultNamespace
	}
	cfg := config{timeout: DefaultTimeout, now: time.Now, maxBody: DefaultMaxBody}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.timeout <= 0 {
		cfg.timeout = DefaultTimeout
	}
	if cfg.settle <= 0 {
		cfg.settle = DefaultWriteSettle
	}
	if cfg.transport == nil {
		cfg.transport = http.DefaultTransport
	}
	if cfg.writes < 1 {
		cfg.writes = DefaultConcurrentWrites
	}
	if cfg.gates == nil {
		cfg.gates = processGates
	}
	gate, err := cfg.gates.gate(p.BaseURL, cfg.writes)
	if err != nil {
		return nil, err
	}
	t := &Tracker{writes: gate,
		base: strings.TrimRight(p.BaseURL, "/"), token: p.Token, project: p.Project, source: p.Source, cfg: cfg,
		labels: map[string]int64{}, keys: map[int64]string{},
	}
	rt, timed := withPhaseTimeouts(cfg.transport, cfg.timeout)
	t.client = &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	t.headerTimer = !timed
	return t, nil
}

// timedKey names a phase-timed clone: the transport it was made from and
// the timeout.
type timedKey struct {
	tr *http.Transport
	d  time.Duration
}

// timed keeps one phase-timed clone per transport and timeout, so the
// Trackers made on one transport (every binding of a server, each
// Connect) share its connections instead of each cloning a pool of its
// own.
var timed sync.Map // timedKey → *http.Transport

// withPhaseTimeouts gives an *http.Transport a timeout on dialling, on the
// TLS handshake and on the wait for response headers: one clone per
// transport and timeout, shared.
func withPhaseTimeouts(rt http.RoundTripper, d time.Duration) (http.RoundTripper, bool) {
	tr, ok := rt.(*http.Transport)
	if !ok {
		return rt, false
	}
	k := timedKey{tr, d}
	if c, ok := timed.Load(k); ok {
		return c.(*http.Transport), true
	}
	c, _ := timed.LoadOrStore(k, phaseTimed(tr, d))
	return c.(*http.Transport), true
}

func phaseTimed(tr *http.Transport, d time.Duration) *http.Transport {
	tr = tr.Clone()
	dial := tr.DialContext
	if dial == nil {
		dial = (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext
	}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		return dial(ctx, network, addr)
	}
	tr.TLSHandshakeTimeout = d
	tr.ResponseHeaderTimeout = d
	return tr
}

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
func (c Connector) Connect(ctx context.Context, creds tracker.Credentials, source tracker.Source) (tracker.Tracker, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	return New(Params{BaseURL: c.BaseURL, Token: creds.Token, Project: c.Project, Source: source}, c.Options...)
}

// --- requests ---

type answer struct {
	status int
	header http.Header
	body   []byte
}

// do makes one request and reads its answer; a non-2xx answer is a typed
// error (classify). A write waits for a slot of the server's gate and holds
// it until its answer is read: relayr never makes Vikunja on SQLite lock
// itself. Reads go at once.
func (t *Tracker) do(ctx context.Context, method, path string, query url.Values, body any, contentType string) (answer, error) {
	answered := false
	if err := ctxErr(ctx); err != nil {
		return answer{}, err
	}
	if method != http.MethodGet {
		if err := t.writes.enter(ctx); err != nil {
			return answer{}, err
		}
		// The slot is the server's until the server is done with the
		// write: at once when its answer was read, else (the request
		// given up mid-flight, or its answer cut) Settle after its
		// connection was closed, since Vikunja goes on with a request
		// whose client left, and a write sent meanwhile would meet it
		// (vikunja.md §11).
		var reached atomic.Bool
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { reached.Store(true) }})
		defer func() {
			if answered || !reached.Load() {
				t.writes.leave()
				return
			}
			time.AfterFunc(t.cfg.settle, t.writes.leave)
		}()
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return answer{}, &tracker.InvalidError{Field: "request", Reason: err.Error()}
		}
		rd = bytes.NewReader(b)
	}
	u := t.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, method, u, rd)
	if err != nil {
		return answer{}, &tracker.InvalidError{Field: "request", Reason: err.Error()}
	}
	req.Header.Set("Authorization", "Bearer "+t.token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	var timer *time.Timer
	if t.headerTimer {
		timer = time.AfterFunc(t.cfg.timeout, cancel)
	}
	resp, err := t.client.Do(req)
	if timer != nil && !timer.Stop() && err == nil {
		err = fmt.Errorf("no response headers within %s", t.cfg.timeout)
	}
	if err != nil {
		if resp != nil {
			_ = resp.Body.Close()
		}
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return answer{}, classify(0, nil, nil, err, t.cfg.now())
	}
	defer func() { _ = resp.Body.Close() }()
	// The body has a phase of its own.
	bodyTimer := time.AfterFunc(t.cfg.timeout, cancel)
	b, err := io.ReadAll(io.LimitReader(resp.Body, t.cfg.maxBody+1))
	expired := !bodyTimer.Stop()
	switch {
	case err != nil && ctx.Err() != nil:
		return answer{}, classify(0, nil, nil, ctx.Err(), t.cfg.now())
	case err != nil && expired:
		return answer{}, classify(0, nil, nil, fmt.Errorf("reading the answer took over %s: %w", t.cfg.timeout, err), t.cfg.now())
	case err != nil:
		return answer{}, classify(0, nil, nil, fmt.Errorf("reading the answer: %w", err), t.cfg.now())
	case int64(len(b)) > t.cfg.maxBody:
		return answer{}, classify(0, nil, nil, fmt.Errorf("%w (%d bytes)", errTooLarge, t.cfg.maxBody), t.cfg.now())
	}
	answered = true
	a := answer{status: resp.StatusCode, header: resp.Header, body: b}
	if err := classify(resp.StatusCode, resp.Header, b, nil, t.cfg.now()); err != nil {
		return a, fmt.Errorf("%s %s: %w", method, path, err)
	}
	return a, nil
}

func (t *Tracker) getTask(ctx context.Context, id int64) (wireTask, error) {
	a, err := t.do(ctx, http.MethodGet, "/api/v1/tasks/"+strconv.FormatInt(id, 10), nil, nil, "")
	if err != nil {
		return wireTask{}, err
	}
	w, err := decodeTask(a.body)
	if err != nil {
		return wireTask{}, garbled("task", err)
	}
	return w, nil
}

func (t *Tracker) listTasks(ctx context.Context, q url.Values) ([]wireTask, answer, error) {
	q.Set("per_page", strconv.Itoa(PerPage))
	a, err := t.do(ctx, http.MethodGet, "/api/v1/projects/"+strconv.FormatInt(t.project, 10)+"/tasks", q, nil, "")
	if err != nil {
		return nil, a, err
	}
	ws, err := decodeTasks(a.body)
	if err != nil {
		return nil, a, garbled("task list", err)
	}
	return ws, a, nil
}

// lastPage reports whether a list answer was its last page: by the
// x-pagination-total-pages Vikunja sends with every list, since a server
// whose service.maxitemsperpage is under PerPage answers short pages
// before its last; by a short page only when the header is missing.
func lastPage(a answer, page, got int) bool {
	if got == 0 {
		return true
	}
	if total, err := strconv.Atoi(a.header.Get("x-pagination-total-pages")); err == nil {
		return page >= total
	}
	return got < PerPage
}

func parseID(id string) (int64, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%w: %q is not a Vikunja task id", tracker.ErrNotFound, id)
	}
	return n, nil
}

// --- items ---

// item turns a task into the port's item, remembering its key.
func (t *Tracker) item(w wireTask) tracker.Item {
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

// Find implements tracker.Tracker: a search for the marker, then an exact
// check of it, since the search also matches k10 for k1 and reads _ and %
// as wildcards. Of several tasks marked with the key, the oldest answers.
func (t *Tracker) Find(ctx context.Context, key string) (tracker.Item, error) {
	if err := tracker.ValidateKeyKept(key, markupRewrites); err != nil {
		return tracker.Item{}, err
	}
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
			return tracker.Item{}, fmt.Errorf("%w: no task is marked with key %q", tracker.ErrNotFound, key)
		}
	}
}

// Create implements tracker.Tracker: labels are resolved first (a label
// not yet known is looked up, and created when missing), then the task is
// filed, then each label is added to it, since Vikunja ignores labels in
// a create. A failure after the task landed is ErrUnavailable, never an
// error saying the write certainly wasn't taken.
func (t *Tracker) Create(ctx context.Context, key string, d tracker.Draft) (tracker.Item, error) {
	if err := tracker.ValidateKeyKept(key, markupRewrites); err != nil {
		return tracker.Item{}, err
	}
	if err := tracker.ValidateDraft(d); err != nil {
		return tracker.Item{}, err
	}
	if err := ctxErr(ctx); err != nil {
		return tracker.Item{}, err
	}
	ids, err := t.labelIDs(ctx, d.Labels)
	if err != nil {
		return tracker.Item{}, err
	}
	body := map[string]any{"title": d.Title, "description": withMarker(d.Description, t.source, key)}
	if d.State != "" && t.Holds(d.State) == tracker.Done {
		body["done"] = true
	}
	a, err := t.do(ctx, http.MethodPut, "/api/v1/projects/"+strconv.FormatInt(t.project, 10)+"/tasks", nil, body, "application/json")
	if err != nil {
		return tracker.Item{}, err
	}
	w, err := decodeTask(a.body)
	if err != nil {
		return tracker.Item{}, garbled("created task", err)
	}
	it := t.item(w)
	for i, lid := range ids {
		_, at, err := t.addLabel(ctx, w.ID, d.Labels[i], lid)
		if err != nil {
			return tracker.Item{}, landed(fmt.Sprintf("filed task %d", w.ID), "labelling it", err)
		}
		it.Labels = append(it.Labels, d.Labels[i])
		if at.After(it.UpdatedAt) {
			it.UpdatedAt = at
		}
	}
	return it, nil
}

// errStaleLabel: a label id the cache holds names no label now (404, code
// 8002): a person deleted it since it was resolved.
var errStaleLabel = errors.New("vikunja: the label no longer exists")

// addLabel adds the label titled title, resolved to label, and answers the
// id it added and when (the task's updated moved then). A label already on
// the task is no error. A label a person deleted since it was resolved is
// forgotten and resolved again, once: its 404 is the label's, never the
// task's (which would read as the task deleted).
func (t *Tracker) addLabel(ctx context.Context, task int64, title string, label int64) (int64, time.Time, error) {
	at, err := t.putLabel(ctx, task, label)
	if !errors.Is(err, errStaleLabel) {
		return label, at, err
	}
	t.forgetLabel(title, label)
	ids, err := t.labelIDs(ctx, []string{title})
	if err != nil {
		return label, time.Time{}, err
	}
	at, err = t.putLabel(ctx, task, ids[0])
	if errors.Is(err, errStaleLabel) {
		err = fmt.Errorf("%w: label %q was deleted as it was added, twice", tracker.ErrUnavailable, title)
	}
	return ids[0], at, err
}

// forgetLabel drops title's cached id, if it is still id.
func (t *Tracker) forgetLabel(title string, id int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.labels[title] == id {
		delete(t.labels, title)
	}
}

// putLabel adds one label by id and answers when.
func (t *Tracker) putLabel(ctx context.Context, task, label int64) (time.Time, error) {
	a, err := t.do(ctx, http.MethodPut, "/api/v1/tasks/"+strconv.FormatInt(task, 10)+"/labels", nil,
		map[string]int64{"label_id": label}, "application/json")
	if err != nil {
		switch {
		case a.status == http.StatusBadRequest && bytes.Contains(a.body, []byte("8001")):
			return time.Time{}, nil
		case a.status == http.StatusNotFound && bytes.Contains(a.body, []byte("8002")):
			return time.Time{}, errStaleLabel
		}
		return time.Time{}, err
	}
	var r struct {
		Created time.Time `json:"created"`
	}
	_ = json.Unmarshal(a.body, &r)
	return r.Created.UTC().Truncate(time.Second), nil
}

// labelIDs resolves label titles to ids: from the cache, else from the
// server's labels, else by creating them.
func (t *Tracker) labelIDs(ctx context.Context, titles []string) ([]int64, error) {
	out := make([]int64, 0, len(titles))
	var missing []string
	t.mu.Lock()
	for _, title := range titles {
		if id, ok := t.labels[title]; ok {
			out = append(out, id)
		} else {
			missing = append(missing, title)
		}
	}
	t.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	t.lmu.Lock()
	defer t.lmu.Unlock()
	if err := t.loadLabels(ctx); err != nil {
		return nil, err
	}
	out = out[:0]
	for _, title := range titles {
		t.mu.Lock()
		id, ok := t.labels[title]
		t.mu.Unlock()
		if !ok {
			a, err := t.do(ctx, http.MethodPut, "/api/v1/labels", nil, map[string]string{"title": title}, "application/json")
			if err != nil {
				return nil, err
			}
			var l wireLabel
			if err := json.Unmarshal(a.body, &l); err != nil || l.ID <= 0 {
				return nil, garbled("created label", err)
			}
			id = l.ID
			t.mu.Lock()
			t.labels[title] = id
			t.mu.Unlock()
		}
		out = append(out, id)
	}
	return out, nil
}

// loadLabels reads every label the token can see into the cache.
func (t *Tracker) loadLabels(ctx context.Context) error {
	for page := 1; ; page++ {
		a, err := t.do(ctx, http.MethodGet, "/api/v1/labels", url.Values{"page": {strconv.Itoa(page)}, "per_page": {strconv.Itoa(PerPage)}}, nil, "")
		if err != nil {
			return err
		}
		var ls []wireLabel
		if err := json.Unmarshal(a.body, &ls); err != nil {
			return garbled("label list", err)
		}
		t.mu.Lock()
		for _, l := range ls {
			if _, ok := t.labels[l.Title]; !ok && l.ID > 0 && l.Title != "" {
				t.labels[l.Title] = l.ID
			}
		}
		t.mu.Unlock()
		if lastPage(a, page, len(ls)) {
			return nil
		}
	}
}

// Item implements tracker.Tracker: one read.
func (t *Tracker) Item(ctx context.Context, id string) (tracker.Item, error) {
	n, err := parseID(id)
	if err != nil {
		return tracker.Item{}, err
	}
	w, err := t.getTask(ctx, n)
	if err != nil {
		return tracker.Item{}, err
	}
	if w.ProjectID != 0 && w.ProjectID != t.project {
		return tracker.Item{}, fmt.Errorf("%w: task %d is in project %d, not %d", tracker.ErrNotFound, n, w.ProjectID, t.project)
	}
	return t.item(w), nil
}

// Update implements tracker.Tracker. Title, description and state go in
// one v2 merge-patch naming only them (v1's update would blank what it
// isn't sent); a description keeps the item's marker. Labels are set
// through single adds and removes, then the task is read again.
func (t *Tracker) Update(ctx context.Context, id string, p tracker.Patch) (tracker.Item, error) {
	n, err := parseID(id)
	if err != nil {
		return tracker.Item{}, err
	}
	if err := tracker.ValidatePatch(p); err != nil {
		return tracker.Item{}, err
	}
	if p.Empty() {
		return t.Item(ctx, id)
	}
	if err := ctxErr(ctx); err != nil {
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
		patch["done"] = t.Holds(*p.State) == tracker.Done
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
		a, err := t.do(ctx, http.MethodPatch, "/api/v2/tasks/"+strconv.FormatInt(n, 10), nil, patch, "application/merge-patch+json")
		switch {
		case a.status == http.StatusNotModified:
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
			w, err := decodeTask(a.body)
			if err != nil {
				return tracker.Item{}, garbled("patched task", err)
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
				return tracker.Item{}, landed(fmt.Sprintf("task %d's edit", n), "its labels", err)
			}
			return tracker.Item{}, err
		}
		if changed {
			nw, err := t.getTask(ctx, n)
			if err != nil {
				return tracker.Item{}, landed(fmt.Sprintf("task %d's edit", n), "reading it back", err)
			}
			cur = &nw
		}
	}
	return t.item(*cur), nil
}

// setLabels makes the task's labels exactly want, one add or removal at a
// time, and reports whether anything changed.
func (t *Tracker) setLabels(ctx context.Context, w *wireTask, want []string) (bool, error) {
	ids, err := t.labelIDs(ctx, want)
	if err != nil {
		return false, err
	}
	have := map[int64]bool{}
	for _, l := range w.Labels {
		have[l.ID] = true
	}
	changed := false
	for i, id := range ids {
		if !have[id] {
			added, _, err := t.addLabel(ctx, w.ID, want[i], id)
			if err != nil {
				return changed, err
			}
			ids[i] = added
			changed = true
		}
	}
	for _, l := range w.Labels {
		if !slices.Contains(ids, l.ID) {
			_, err := t.do(ctx, http.MethodDelete, fmt.Sprintf("/api/v1/tasks/%d/labels/%d", w.ID, l.ID), nil, nil, "")
			if err != nil && !errors.Is(err, tracker.ErrNotFound) {
				return changed, err
			}
			changed = true
		}
	}
	return changed, nil
}

// --- comments ---

// Comment implements tracker.Tracker: the body with the key's marker on
// its last line.
func (t *Tracker) Comment(ctx context.Context, id, key, body string) (tracker.Comment, error) {
	n, err := parseID(id)
	if err != nil {
		return tracker.Comment{}, err
	}
	if err := tracker.ValidateKeyKept(key, markupRewrites); err != nil {
		return tracker.Comment{}, err
	}
	a, err := t.do(ctx, http.MethodPut, "/api/v1/tasks/"+strconv.FormatInt(n, 10)+"/comments", nil,
		map[string]string{"comment": withMarker(body, t.source, key)}, "application/json")
	if err != nil {
		return tracker.Comment{}, err
	}
	var w wireComment
	if err := json.Unmarshal(a.body, &w); err != nil || w.ID <= 0 {
		return tracker.Comment{}, fmt.Errorf("%w: vikunja answered an unreadable comment (%w)", tracker.ErrUnavailable, err)
	}
	return t.comment(n, w), nil
}

func (t *Tracker) comment(task int64, w wireComment) tracker.Comment {
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

// Comments implements tracker.Tracker: every page, oldest first, those
// created at or after since (to the second).
func (t *Tracker) Comments(ctx context.Context, id string, since time.Time) ([]tracker.Comment, error) {
	n, err := parseID(id)
	if err != nil {
		return nil, err
	}
	since = since.UTC().Truncate(time.Second)
	var out []tracker.Comment
	for page := 1; ; page++ {
		q := url.Values{"page": {strconv.Itoa(page)}, "per_page": {strconv.Itoa(PerPage)}, "order_by": {"asc"}}
		a, err := t.do(ctx, http.MethodGet, "/api/v1/tasks/"+strconv.FormatInt(n, 10)+"/comments", q, nil, "")
		if err != nil {
			return nil, err
		}
		var ws []wireComment
		if err := json.Unmarshal(a.body, &ws); err != nil {
			return nil, garbled("comment list", err)
		}
		for _, w := range ws {
			if w.ID <= 0 {
				return nil, garbled("comment list", errNoID)
			}
			if c := t.comment(n, w); !c.CreatedAt.Before(since) {
				out = append(out, c)
			}
		}
		if lastPage(a, page, len(ws)) {
			break
		}
	}
	slices.SortStableFunc(out, func(a, b tracker.Comment) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		x, _ := strconv.ParseInt(a.ID, 10, 64)
		y, _ := strconv.ParseInt(b.ID, 10, 64)
		return cmp.Compare(x, y)
	})
	return out, nil
}

// --- the rest of the port ---

// Nudge implements tracker.Tracker: X-Vikunja-Signature must be the hex
// HMAC-SHA256 of the raw body under secret; the project is the payload's
// data.project.id, else its task's project_id. A task.deleted delivery
// names its task deleted when the task is of the project it names (a
// deleted task reads as 404 on Vikunja, which keeps no archived tasks).
func (t *Tracker) Nudge(secret string, header http.Header, body []byte) (tracker.Nudged, error) {
	if secret == "" {
		return tracker.Nudged{}, fmt.Errorf("%w: no webhook secret to verify the delivery with", tracker.ErrUnauthorized)
	}
	got, err := hex.DecodeString(strings.TrimSpace(header.Get(SignatureHeader)))
	if err != nil || len(got) == 0 {
		return tracker.Nudged{}, fmt.Errorf("%w: the delivery carries no readable %s", tracker.ErrUnauthorized, SignatureHeader)
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	if !hmac.Equal(m.Sum(nil), got) {
		return tracker.Nudged{}, fmt.Errorf("%w: the delivery's signature doesn't verify", tracker.ErrUnauthorized)
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
		return tracker.Nudged{}, fmt.Errorf("%w: a signed delivery that isn't a Vikunja event: %w", tracker.ErrRefused, err)
	}
	var project int64
	switch {
	case p.Data.Project != nil && p.Data.Project.ID > 0:
		project = p.Data.Project.ID
	case p.Data.Task != nil && p.Data.Task.ProjectID > 0:
		project = p.Data.Task.ProjectID
	default:
		return tracker.Nudged{}, fmt.Errorf("%w: the delivery names no project", tracker.ErrRefused)
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

// Link implements tracker.Tracker: the task's page in Vikunja's web UI.
func (t *Tracker) Link(ref tracker.ItemRef) string { return t.base + "/tasks/" + ref.ID }

// Holds implements tracker.Tracker: Vikunja's done flag holds two states,
// so backlog, todo and started read back as todo, done and cancelled as
// done (ADR-0036).
func (t *Tracker) Holds(s tracker.State) tracker.State {
	switch s {
	case tracker.Done, tracker.Cancelled:
		return tracker.Done
	}
	return tracker.Todo
}

// Project implements tracker.Tracker: the project's id, as Nudge names it.
func (t *Tracker) Project() string { return strconv.FormatInt(t.project, 10) }
