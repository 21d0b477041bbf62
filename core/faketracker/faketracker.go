// Package faketracker is an in-memory Tracker for tests: safe for concurrent
// use, with faults on demand (fail the next calls of a method, hang until the
// caller gives up, create an item and then fail as a process would that died
// before recording), a count of every call by method, and two flavours: like
// Vikunja (Find is a text search, Holds folds the five states into todo and
// done, time to the second) or like Plane (Find is an external-id lookup that
// also finds archived items, Create answers "exists" with the existing id).
package faketracker

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/tracker"
)

// Flavour is the tracker the fake behaves like.
type Flavour int

// The two flavours.
const (
	// LikePlane: Find is an external-id lookup (archived items found),
	// Create answers *tracker.ExistsError for a key already filed, every
	// state is held, times keep their nanoseconds.
	LikePlane Flavour = iota
	// LikeVikunja: Find is a text search of the marker (archived items not
	// found), Create files whatever it is asked to, Holds folds backlog and
	// started into todo and cancelled into done, times are to the second.
	LikeVikunja
)

// Methods of the port, as Calls and the fault injectors name them.
const (
	MethodFind     = "Find"
	MethodCreate   = "Create"
	MethodItem     = "Item"
	MethodUpdate   = "Update"
	MethodComment  = "Comment"
	MethodItems    = "Items"
	MethodComments = "Comments"
	// MethodProjectComments is a read of the whole project's comments
	// (tracker.ProjectCommenter), made only by a fake WithProjectComments.
	MethodProjectComments = "ProjectComments"
)

// SignatureHeader carries the fake's webhook signature: lowercase hex of
// HMAC-SHA256 over the raw body.
const SignatureHeader = "X-Fake-Signature"

// PageSize is how many items one Items page holds.
const PageSize = 50

type item struct {
	tracker.Item
	key      string
	deleted  bool
	comments []tracker.Comment
}

type fault struct {
	n     int
	err   error // nil with hang
	hang  bool
	crash bool // Create only: make the item, then fail
}

// Tracker is the fake. Its zero value is not usable; call New.
type Tracker struct {
	flavour Flavour
	project string
	ident   string
	clock   clock.Clock

	mu       sync.Mutex
	items    map[string]*item
	order    []string // ids in creation order
	next     int
	comments int
	calls    map[string]int
	faults   map[string][]*fault
	created  int // items created, duplicates included
	chaos    *chaos
	stale    []tracker.Item // answered once by the next Items
	onCall   []func()
	sanitize bool // hold descriptions as a sanitizer rewrites them
	// allComments: the fake lists the project's comments in one read
	// (WithProjectComments).
	allComments bool
	// quiet: a comment leaves an item's updated_at as it is within this
	// long of its last change (WithQuietTouch).
	quiet time.Duration
	// delivered is the status a webhook delivery is answered with
	// (Capabilities.DeliveredStatus); 0 for the default.
	delivered int
}

var (
	_ tracker.Driver              = (*Tracker)(nil)
	_ tracker.DescriptionComparer = (*Tracker)(nil)
	_ tracker.ProjectCommenter    = (*Tracker)(nil)
)

// Capabilities implements tracker.Driver: the Plane flavour enforces keys
// and holds every state; the Vikunja flavour folds the states into todo
// and done, keeps time to the second and reports deletions by webhook.
func (t *Tracker) Capabilities() tracker.Capabilities {
	c := tracker.Capabilities{Name: "fake", MaxPage: PageSize, TimePrecision: time.Nanosecond, ProjectComments: t.allComments, QuietTouch: t.quiet, DeliveredStatus: t.delivered}
	if t.flavour == LikePlane {
		c.KeysEnforced = true
		return c
	}
	c.TimePrecision, c.NudgesDeletions = time.Second, true
	c.States = map[tracker.State]tracker.State{
		tracker.Backlog: tracker.Todo, tracker.Started: tracker.Todo, tracker.Cancelled: tracker.Done,
	}
	return c
}

// OnRequest calls fn at each request the fake stands for (each call of a
// method of the port), for a test that times them.
func (t *Tracker) OnRequest(fn func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.onCall = append(t.onCall, fn)
}

// Option sets up a fake.
type Option func(*Tracker)

// WithClock makes the fake stamp updated_at from c (the system clock by
// default).
func WithClock(c clock.Clock) Option { return func(t *Tracker) { t.clock = c } }

// WithProjectComments makes the fake list the whole project's comments
// since a time in one read, PageSize a request, as Gitea's and GitHub's
// repository-wide comment lists do (tracker.ProjectCommenter), and say so
// in its Capabilities. Without it the followers read comments item by
// item.
func WithProjectComments() Option { return func(t *Tracker) { t.allComments = true } }

// WithQuietTouch makes a comment leave its item's updated_at as it is
// when the item changed less than d ago, as GitLab's throttled touch does
// (a minute), and says so in the fake's Capabilities (QuietTouch).
func WithQuietTouch(d time.Duration) Option { return func(t *Tracker) { t.quiet = d } }

// WithDeliveredStatus makes the fake ask for its webhook deliveries to be
// answered with status, as Linear counts only a 200 as delivered
// (Capabilities.DeliveredStatus).
func WithDeliveredStatus(status int) Option { return func(t *Tracker) { t.delivered = status } }

// WithProject names the fake's project (default "proj") and identifier
// (default "FAKE").
func WithProject(project, identifier string) Option {
	return func(t *Tracker) { t.project, t.ident = project, identifier }
}

// New returns an empty fake of the given flavour.
func New(f Flavour, opts ...Option) *Tracker {
	t := &Tracker{
		flavour: f, project: "proj", ident: "FAKE", clock: clock.System{},
		items: map[string]*item{}, calls: map[string]int{}, faults: map[string][]*fault{},
	}
	for _, o := range opts {
		o(t)
	}
	return t
}

// FailNext makes the next n calls of method fail with err.
func (t *Tracker) FailNext(method string, n int, err error) {
	t.addFault(method, &fault{n: n, err: err})
}

// HangNext makes the next n calls of method hang until their context ends.
func (t *Tracker) HangNext(method string, n int) {
	t.addFault(method, &fault{n: n, hang: true})
}

// CrashAfterCreate makes the next n Creates file the item and then fail with
// ErrUnavailable, as a process would that died before recording.
func (t *Tracker) CrashAfterCreate(n int) {
	t.addFault(MethodCreate, &fault{n: n, crash: true})
}

// CrashAfterUpdate makes the next n Updates change the item and then fail
// with ErrUnavailable: the edit landed, its answer never came.
func (t *Tracker) CrashAfterUpdate(n int) {
	t.addFault(MethodUpdate, &fault{n: n, crash: true})
}

func (t *Tracker) addFault(method string, f *fault) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.faults[method] = append(t.faults[method], f)
}

// Calls answers how many times method was called.
func (t *Tracker) Calls(method string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.calls[method]
}

// TotalCalls answers how many calls the fake took, every method together.
func (t *Tracker) TotalCalls() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, c := range t.calls {
		n += c
	}
	return n
}

// ResetCalls zeroes the call counts.
func (t *Tracker) ResetCalls() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.calls = map[string]int{}
}

// enter counts a call and applies its pending fault. It answers whether the
// call is a create or an update that must crash after it landed.
func (t *Tracker) enter(ctx context.Context, method string) (crash bool, err error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("%w: %w", tracker.ErrUnavailable, err)
	}
	// Each call stands for one request, which the caller's budget admits
	// and meters as it would a real tracker's.
	if err := tracker.Admit(ctx); err != nil {
		return false, err
	}
	tracker.Sent(ctx)
	t.mu.Lock()
	hooks := t.onCall
	t.mu.Unlock()
	for _, fn := range hooks {
		fn()
	}
	t.mu.Lock()
	t.calls[method]++
	var f *fault
	if q := t.faults[method]; len(q) > 0 {
		f = q[0]
		f.n--
		if f.n <= 0 {
			t.faults[method] = q[1:]
		}
	}
	t.mu.Unlock()
	if f == nil {
		f = t.chaos.roll(method)
	}
	switch {
	case f == nil:
		return false, nil
	case f.hang:
		<-ctx.Done()
		return false, fmt.Errorf("%w: %w", tracker.ErrUnavailable, ctx.Err())
	case f.crash:
		return true, nil
	default:
		return false, f.err
	}
}

func (t *Tracker) now() time.Time {
	n := t.clock.Now().UTC()
	if t.flavour == LikeVikunja {
		n = n.Truncate(time.Second)
	}
	return n
}

// Project implements tracker.Driver.
func (t *Tracker) Project() string { return t.project }

// Holds is the state an item set to s reads back as (Capabilities.States).
func (t *Tracker) Holds(s tracker.State) tracker.State { return t.Capabilities().Holds(s) }

// Link implements tracker.Driver.
func (t *Tracker) Link(ref tracker.ItemRef) string {
	return "https://fake.example/" + t.project + "/" + ref.Name
}

func (t *Tracker) find(key string) *item {
	for _, id := range t.order {
		it := t.items[id]
		if it.deleted || it.key != key {
			continue
		}
		if t.flavour == LikeVikunja && it.Archived {
			continue
		}
		return it
	}
	return nil
}

// Find implements tracker.Driver.
func (t *Tracker) Find(ctx context.Context, key string) (tracker.Item, error) {
	if _, err := t.enter(ctx, MethodFind); err != nil {
		return tracker.Item{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if it := t.find(key); it != nil {
		return t.copyOf(it), nil
	}
	return tracker.Item{}, fmt.Errorf("%w: no item under key %q", tracker.ErrNotFound, key)
}

// Create implements tracker.Driver.
func (t *Tracker) Create(ctx context.Context, key string, d tracker.Draft) (tracker.Item, error) {
	crash, err := t.enter(ctx, MethodCreate)
	if err != nil {
		return tracker.Item{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.flavour == LikePlane {
		if it := t.find(key); it != nil {
			return tracker.Item{}, &tracker.ExistsError{ID: it.Ref.ID}
		}
	}
	t.next++
	t.created++
	id := fmt.Sprintf("it-%06d", t.next)
	state := d.State
	if state == "" {
		state = tracker.Backlog
	}
	it := &item{key: key, Item: tracker.Item{
		Ref:         tracker.ItemRef{ID: id, Number: int64(t.next), Name: t.ident + "-" + strconv.Itoa(t.next), Key: key},
		Title:       d.Title,
		Description: t.held(d.Description),
		State:       t.Holds(state),
		Labels:      slices.Clone(d.Labels),
		UpdatedAt:   t.now(),
	}}
	it.CreatedAt = it.UpdatedAt
	if t.flavour == LikeVikunja {
		it.Labels = nil // Vikunja labels a task after it makes it
	}
	it.Ref.Link = t.Link(it.Ref)
	t.items[id] = it
	t.order = append(t.order, id)
	if crash {
		return tracker.Item{}, fmt.Errorf("%w: connection dropped after the create", tracker.ErrUnavailable)
	}
	out := t.copyOf(it)
	if t.flavour == LikeVikunja && len(d.Labels) > 0 {
		// The adapter adds labels after the create.
		t.items[id].Labels = slices.Clone(d.Labels)
		out.Labels = slices.Clone(d.Labels)
	}
	return out, nil
}

func (t *Tracker) live(id string) (*item, error) {
	it, ok := t.items[id]
	if !ok || it.deleted {
		return nil, fmt.Errorf("%w: item %s", tracker.ErrNotFound, id)
	}
	return it, nil
}

// Item implements tracker.Driver.
func (t *Tracker) Item(ctx context.Context, id string) (tracker.Item, error) {
	if _, err := t.enter(ctx, MethodItem); err != nil {
		return tracker.Item{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	it, err := t.live(id)
	if err != nil {
		return tracker.Item{}, err
	}
	if it.Archived && t.flavour == LikePlane {
		return tracker.Item{}, fmt.Errorf("%w: item %s is archived", tracker.ErrNotFound, id)
	}
	return t.copyOf(it), nil
}

// Update implements tracker.Driver.
func (t *Tracker) Update(ctx context.Context, id string, p tracker.Patch) (tracker.Item, error) {
	crash, err := t.enter(ctx, MethodUpdate)
	if err != nil {
		return tracker.Item{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	it, err := t.live(id)
	if err != nil {
		return tracker.Item{}, err
	}
	t.apply(it, p, "relayr")
	if crash {
		return tracker.Item{}, fmt.Errorf("%w: connection dropped after the update", tracker.ErrUnavailable)
	}
	return t.copyOf(it), nil
}

func (t *Tracker) apply(it *item, p tracker.Patch, by string) {
	if p.Title != nil {
		it.Title = *p.Title
	}
	if p.Description != nil {
		it.Description = t.held(*p.Description)
	}
	if p.State != nil {
		it.State = t.Holds(*p.State)
	}
	if p.Labels != nil {
		it.Labels = slices.Clone(*p.Labels)
	}
	it.UpdatedBy = by
	it.UpdatedAt = t.now()
}

// Comment implements tracker.Driver.
func (t *Tracker) Comment(ctx context.Context, id, key, body string) (tracker.Comment, error) {
	if _, err := t.enter(ctx, MethodComment); err != nil {
		return tracker.Comment{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	it, err := t.live(id)
	if err != nil {
		return tracker.Comment{}, err
	}
	return t.addComment(it, key, body, "relayr"), nil
}

func (t *Tracker) addComment(it *item, key, body, author string) tracker.Comment {
	t.comments++
	c := tracker.Comment{
		ID: fmt.Sprintf("c-%06d", t.comments), ItemID: it.Ref.ID, Body: body,
		Author: author, Key: key, CreatedAt: t.now(),
	}
	it.comments = append(it.comments, c)
	if t.quiet <= 0 || c.CreatedAt.Sub(it.UpdatedAt) >= t.quiet {
		it.UpdatedAt = c.CreatedAt
	}
	return c
}

// Items implements tracker.Driver: the live, unarchived items updated at or
// after q.Since, ordered by (UpdatedAt, ID), PageSize a page.
func (t *Tracker) Items(ctx context.Context, q tracker.Query) (tracker.Page, error) {
	if _, err := t.enter(ctx, MethodItems); err != nil {
		return tracker.Page{}, err
	}
	offset := 0
	if q.Page != "" {
		n, err := strconv.Atoi(q.Page)
		if err != nil || n < 0 {
			return tracker.Page{}, fmt.Errorf("%w: bad page token %q", tracker.ErrRefused, q.Page)
		}
		offset = n
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var all []tracker.Item
	for _, id := range t.order {
		it := t.items[id]
		if it.deleted || it.Archived || it.UpdatedAt.Before(q.Since) {
			continue
		}
		all = append(all, t.copyOf(it))
	}
	sort.Slice(all, func(i, j int) bool { return tracker.Of(all[i]).Before(tracker.Of(all[j])) })
	if offset > len(all) {
		offset = len(all)
	}
	end := min(offset+PageSize, len(all))
	p := tracker.Page{Items: append(all[offset:end:end], t.stale...)}
	t.stale = nil
	if end < len(all) {
		p.Next = strconv.Itoa(end)
	}
	return p, nil
}

// Comments implements tracker.Driver.
func (t *Tracker) Comments(ctx context.Context, id string, since time.Time) ([]tracker.Comment, error) {
	if _, err := t.enter(ctx, MethodComments); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	it, err := t.live(id)
	if err != nil {
		return nil, err
	}
	var out []tracker.Comment
	for _, c := range it.comments {
		if !c.CreatedAt.Before(since) {
			out = append(out, c)
		}
	}
	return out, nil
}

// ProjectComments implements tracker.ProjectCommenter (for a fake
// WithProjectComments; a fake without answers incomplete): the comments of the project's live items created at
// or after since, oldest first, one call a PageSize of them; complete false
// when they take more than reads calls (one call spent).
func (t *Tracker) ProjectComments(ctx context.Context, since time.Time, reads int) ([]tracker.Comment, bool, error) {
	if !t.allComments {
		return nil, false, nil
	}
	if _, err := t.enter(ctx, MethodProjectComments); err != nil {
		return nil, false, err
	}
	t.mu.Lock()
	var out []tracker.Comment
	for _, id := range t.order {
		it := t.items[id]
		if it.deleted {
			continue
		}
		for _, c := range it.comments {
			if !c.CreatedAt.Before(since) {
				out = append(out, c)
			}
		}
	}
	t.mu.Unlock()
	pages := max(1, (len(out)+PageSize-1)/PageSize)
	if pages > reads {
		return nil, false, nil
	}
	for range pages - 1 { // the further pages, each a request
		if err := tracker.Admit(ctx); err != nil {
			return nil, false, err
		}
		tracker.Sent(ctx)
		t.mu.Lock()
		t.calls[MethodProjectComments]++
		t.mu.Unlock()
	}
	tracker.SortComments(out)
	return out, true, nil
}

// Nudge implements tracker.Driver: the body is {"project": "<name>"}, or
// {"project": "<name>", "deleted": "<id>"} for a deletion, signed in
// SignatureHeader.
func (t *Tracker) Nudge(secret string, header http.Header, body []byte) (tracker.Nudged, error) {
	if !hmac.Equal([]byte(header.Get(SignatureHeader)), []byte(Sign(secret, body))) {
		return tracker.Nudged{}, fmt.Errorf("%w: bad signature", tracker.ErrUnauthorized)
	}
	var b struct {
		Project string `json:"project"`
		Deleted string `json:"deleted"`
		// Event names the event, as GitLab's Idempotency-Key does: a
		// delivery of the same event is a replay, whatever its body.
		Event string `json:"event"`
	}
	if err := json.Unmarshal(body, &b); err != nil || b.Project == "" {
		return tracker.Nudged{}, fmt.Errorf("%w: a delivery that names no project", tracker.ErrRefused)
	}
	n := tracker.Nudged{Project: b.Project, Delivery: b.Event}
	if b.Deleted != "" {
		n.Deleted = []string{b.Deleted}
	}
	return n, nil
}

// Sign signs a webhook body as the fake's deliveries are signed.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Delivery is a webhook delivery about the fake's project, signed with secret.
func (t *Tracker) Delivery(secret string) (http.Header, []byte) {
	return signed(secret, map[string]string{"project": t.project})
}

// DeletionDelivery is the delivery reporting the item id deleted from
// project, signed with secret. It deletes nothing: a test sends it about an
// item that still exists, or of another project, to see that nothing is
// believed without a read.
func DeletionDelivery(secret, project, id string) (http.Header, []byte) {
	return signed(secret, map[string]string{"project": project, "deleted": id})
}

func signed(secret string, v map[string]string) (http.Header, []byte) {
	body, _ := json.Marshal(v)
	h := http.Header{}
	h.Set(SignatureHeader, Sign(secret, body))
	return h, body
}

func (t *Tracker) copyOf(it *item) tracker.Item {
	c := it.Item
	c.Labels = slices.Clone(it.Labels)
	return c
}

// The person's side: what people do in the tracker, outside relayr.

// Retitle changes an item's title as a person would.
func (t *Tracker) Retitle(_ context.Context, id, title string) error {
	return t.Edit(id, tracker.Patch{Title: &title})
}

// SetState changes an item's state as a person would.
func (t *Tracker) SetState(id string, s tracker.State) error {
	return t.Edit(id, tracker.Patch{State: &s})
}

// Edit applies a patch as a person would (UpdatedBy "person").
func (t *Tracker) Edit(id string, p tracker.Patch) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	it, err := t.live(id)
	if err != nil {
		return err
	}
	t.apply(it, p, "person")
	return nil
}

// WriteKey writes a key on an item as a person would: Vikunja's marker
// line typed into a description, or copied with another item's. The item
// reads back with the key, and the lookup by key finds the first item
// made that carries it.
func (t *Tracker) WriteKey(id, key string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	it, err := t.live(id)
	if err != nil {
		return err
	}
	it.key, it.Ref.Key = key, key
	t.apply(it, tracker.Patch{}, "person")
	return nil
}

// PersonComment posts a comment as a person would, with no key.
func (t *Tracker) PersonComment(_ context.Context, id, body string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	it, err := t.live(id)
	if err != nil {
		return err
	}
	t.addComment(it, "", body, "person")
	return nil
}

// Delete deletes an item as a person would; it is gone from every read.
func (t *Tracker) Delete(_ context.Context, id string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	it, err := t.live(id)
	if err != nil {
		return err
	}
	it.deleted = true
	return nil
}

// Archive archives an item: no longer listed, still found by the Plane
// flavour's lookup.
func (t *Tracker) Archive(id string) error { return t.archive(id, true) }

// Unarchive brings an archived item back as a person would: listed
// again, its updated_at moved (Plane's unarchive saves the item).
func (t *Tracker) Unarchive(id string) error { return t.archive(id, false) }

// archive sets an item's Archived; bringing it back moves its updated_at.
func (t *Tracker) archive(id string, archived bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	it, err := t.live(id)
	if err != nil {
		return err
	}
	it.Archived = archived
	if !archived {
		it.UpdatedBy = "person"
		it.UpdatedAt = t.now()
	}
	return nil
}

// Person is the fake's person, for the contract suite.
func (t *Tracker) Person() Person { return Person{t} }

// Person acts in the fake as a person would.
type Person struct{ t *Tracker }

// Retitle changes a title.
func (p Person) Retitle(ctx context.Context, id, title string) error {
	return p.t.Retitle(ctx, id, title)
}

// Comment posts a person's comment.
func (p Person) Comment(ctx context.Context, id, body string) error {
	return p.t.PersonComment(ctx, id, body)
}

// Delete deletes an item.
func (p Person) Delete(ctx context.Context, id string) error { return p.t.Delete(ctx, id) }

// Filed answers, per key, how many live items carry it (duplicates show as
// more than one), and how many creates landed in all.
func (t *Tracker) Filed() (perKey map[string]int, created int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	perKey = map[string]int{}
	for _, it := range t.items {
		if !it.deleted {
			perKey[it.key]++
		}
	}
	return perKey, t.created
}

// ItemsByKey answers the live items filed under key.
func (t *Tracker) ItemsByKey(key string) []tracker.Item {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []tracker.Item
	for _, id := range t.order {
		if it := t.items[id]; !it.deleted && it.key == key {
			out = append(out, t.copyOf(it))
		}
	}
	return out
}

// Connector connects every workspace to one fake.
type Connector struct {
	Fake *Tracker
	// KindName is Kind's answer ("fake" by default).
	KindName string
	// Reads is how many requests a connection makes before the tracker
	// answers (Plane reads the project and its states): each Connect
	// counts them with the caller's budget, as a real one's would be.
	Reads int
	// Connects counts Connect calls.
	mu       sync.Mutex
	connects int
	onRead   []func()
}

// OnRead calls fn at each of a connection's Reads, for a test that times
// them.
func (c *Connector) OnRead(fn func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onRead = append(c.onRead, fn)
}

var _ tracker.Connector = (*Connector)(nil)

// Kind implements tracker.Connector.
func (c *Connector) Kind() string {
	if c.KindName == "" {
		return "fake"
	}
	return c.KindName
}

// Connect implements tracker.Connector.
func (c *Connector) Connect(ctx context.Context, _ tracker.Credentials, _ tracker.Source) (*tracker.Tracker, error) {
	c.mu.Lock()
	hooks := c.onRead
	c.mu.Unlock()
	for range c.Reads {
		tracker.Sent(ctx)
		for _, fn := range hooks {
			fn()
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.connects++
	return tracker.New(c.Fake), nil
}

// Connects answers how many times Connect was called.
func (c *Connector) Connects() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.connects
}
