// Package tracker is relayr's port onto a task tracker (ADR-0033), in relayr's
// own vocabulary: items filed by key, patched, commented on, and read back.
//
// A Tracker is made per workspace by a Connector from the tenant's
// credentials and the workspace's Source. Every failure an adapter reports is
// one of the typed errors of this package (RateLimited, Unavailable, NotFound,
// Refused, Unauthorized, Exists), matched with errors.Is and errors.As, so the
// domain decides retries and releases without knowing which tracker it talks to.
package tracker

import (
	"context"
	"fmt"
	"net/http/httptrace"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// State is one of the five states of an item. Trackers hold fewer of them;
// Holds says what a state reads back as.
type State string

// The five states (ADR-0033's port).
const (
	Backlog   State = "backlog"
	Todo      State = "todo"
	Started   State = "started"
	Done      State = "done"
	Cancelled State = "cancelled"
)

// States lists the five states in their natural order.
var States = []State{Backlog, Todo, Started, Done, Cancelled}

// Valid reports whether s is one of the five states.
func (s State) Valid() bool {
	for _, v := range States {
		if s == v {
			return true
		}
	}
	return false
}

// Source names the lattice workspace an adapter files for:
// "lattice:<tenant>/<workspace>" with the seeds' namespace. It is Plane's
// external_source and the prefix of Vikunja's marker.
type Source struct {
	Namespace string // "lattice" unless configured otherwise
	Tenant    string
	Workspace string
}

// DefaultNamespace is the namespace the seeds file under, kept as the default
// so items filed by the original are still found.
const DefaultNamespace = "lattice"

// String renders the source as "<namespace>:<tenant>/<workspace>".
func (s Source) String() string {
	ns := s.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	return ns + ":" + s.Tenant + "/" + s.Workspace
}

// ItemRef is what relayr knows of an item without reading it: the tracker's
// id, its number in the project, what people call it (OPS-12), its link, and
// the key relayr filed it under ("" for an item a person filed).
type ItemRef struct {
	ID     string `json:"id"`
	Number int64  `json:"number"`
	Name   string `json:"name"`
	Link   string `json:"link"`
	Key    string `json:"key,omitempty"`
}

// Item is an item as the tracker holds it. Fields are in the port's
// vocabulary: State is already folded as the tracker holds it (see Holds).
type Item struct {
	Ref         ItemRef   `json:"ref"`
	Title       string    `json:"title"`
	Description string    `json:"description"`
	State       State     `json:"state"`
	Labels      []string  `json:"labels"`
	UpdatedAt   time.Time `json:"updated_at"`
	// CreatedAt is when the item was made, as the tracker says (zero when
	// its driver doesn't say): none of its comments is older, so a read of
	// the project's comments since it holds them all.
	CreatedAt time.Time `json:"created_at,omitzero"`
	// UpdatedBy names the item's last updater as the tracker reports it
	// ("" when the tracker doesn't say).
	UpdatedBy string `json:"updated_by,omitempty"`
	// Archived is true for an item the tracker keeps but no longer lists.
	Archived bool `json:"archived,omitempty"`
	// Comments, when a tracker answers them with the item in Items
	// (Vikunja's list expands them), are all of the item's comments, as
	// Comments would answer them from the beginning: the followers read
	// them here instead of asking once per item. Nil when the tracker did
	// not answer them, or answered only some. Never kept in a snapshot.
	Comments []Comment `json:"-"`
}

// Fields are the names of the item fields relayr writes and reads back; they
// name recorded values in the ledger and changes in tracker events.
const (
	FieldTitle       = "title"
	FieldDescription = "description"
	FieldState       = "state"
	FieldLabels      = "labels"
)

// Draft is what a run asks to file.
type Draft struct {
	Title       string   `json:"title"`
	Description string   `json:"description,omitempty"`
	State       State    `json:"state,omitempty"` // "" leaves the project's default
	Labels      []string `json:"labels,omitempty"`
}

// Patch changes the fields it names; a nil field is left as it is.
type Patch struct {
	Title       *string   `json:"title,omitempty"`
	Description *string   `json:"description,omitempty"`
	State       *State    `json:"state,omitempty"`
	Labels      *[]string `json:"labels,omitempty"`
}

// Empty reports whether the patch names no field.
func (p Patch) Empty() bool {
	return p.Title == nil && p.Description == nil && p.State == nil && p.Labels == nil
}

// Comment is a comment on an item. Key is the key relayr posted it under, as
// the adapter reads it back, "" for a person's comment.
type Comment struct {
	ID        string    `json:"id"`
	ItemID    string    `json:"item_id"`
	Body      string    `json:"body"`
	Author    string    `json:"author,omitempty"`
	Key       string    `json:"key,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// Cursor is a position in a project's changes: items ordered by
// (UpdatedAt, ID).
type Cursor struct {
	UpdatedAt time.Time `json:"updated_at"`
	ID        string    `json:"id"`
}

// Before reports whether c sorts strictly before d. Ids that are both
// decimal numbers (Vikunja's) compare as numbers, so "9" sorts before "10";
// others (Plane's UUIDs) compare as text.
func (c Cursor) Before(d Cursor) bool {
	if !c.UpdatedAt.Equal(d.UpdatedAt) {
		return c.UpdatedAt.Before(d.UpdatedAt)
	}
	return LessID(c.ID, d.ID)
}

// LessID orders item ids: decimal numbers by value, anything else as text.
func LessID(a, b string) bool {
	if decimal(a) && decimal(b) {
		a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
		if len(a) != len(b) {
			return len(a) < len(b)
		}
	}
	return a < b
}

func decimal(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// Of is the cursor an item sits at.
func Of(it Item) Cursor { return Cursor{UpdatedAt: it.UpdatedAt, ID: it.Ref.ID} }

// Query asks for the items changed at or after Since, ordered by
// (UpdatedAt, ID). A zero Since asks for every item of the project (the
// seeding read and the daily sweep). Page continues an earlier answer.
type Query struct {
	Since time.Time
	Page  string
}

// Page is one page of Items' answer. Next is "" on the last page.
type Page struct {
	Items []Item
	Next  string
}

// Nudged is what a verified webhook delivery says: the project it names,
// and the items it reports deleted. A delivery only nudges (ADR-0036:
// "Webhooks only nudge"): the follower reads the tracker before it
// publishes anything, a deletion included.
type Nudged struct {
	Project string
	// Deleted lists the ids of the project's items the delivery reports
	// deleted (Vikunja's task.deleted), for the follower to check at once
	// instead of at the next sweep. An adapter names an item here only where
	// Item answering ErrNotFound for it means deleted, not archived; a
	// tracker that sends no deletions (Plane) names none.
	Deleted []string
	// Delivery is the id the tracker gives the event the delivery is of,
	// kept by its retries and resends (GitLab's Idempotency-Key); "" where
	// it sends none. A delivery whose id was taken before is a replay.
	Delivery string
}

// Credentials is what a tenant's tracker needs: its key (T4) and the secret
// webhook deliveries are signed with.
type Credentials struct {
	Token         string
	WebhookSecret string
}

// String hides the secrets so credentials never reach a log.
func (c Credentials) String() string { return "tracker.Credentials{…}" }

// CredentialStore answers a tenant's credentials for a tracker kind. The
// domain asks it at most every five minutes and at once after Unauthorized.
type CredentialStore interface {
	Credentials(ctx context.Context, tenant, kind string) (Credentials, error)
}

// StaticCredentials is a CredentialStore answering from a map keyed by
// "<tenant>/<kind>".
type StaticCredentials map[string]Credentials

// Credentials implements CredentialStore.
func (s StaticCredentials) Credentials(_ context.Context, tenant, kind string) (Credentials, error) {
	c, ok := s[tenant+"/"+kind]
	if !ok {
		return Credentials{}, fmt.Errorf("%w: no credentials for tenant %q on %s", ErrUnauthorized, tenant, kind)
	}
	return c, nil
}

// Connector makes one Tracker per workspace from the tenant's credentials and
// the workspace's source (ADR-0033's connect). Kind is the integration's key
// without its prefix ("plane", "vikunja").
type Connector interface {
	Kind() string
	Connect(ctx context.Context, creds Credentials, source Source) (*Tracker, error)
}

// ValidateKey checks a key before anything touches the ledger or a tracker:
// not empty, at most MaxKeyBytes of UTF-8, no NUL or control characters.
func ValidateKey(key string) error { return ValidateName("key", key) }

// ValidateKeyKept checks a key a tracker files under and reads back:
// ValidateKey's rules, no space at either end (a tracker that trims it
// reads back another key), and none of the characters in rewritten (those
// its markup rewrites). A key read back as another is never found again,
// and a retaken claim files its item twice. Adapters check it where a key
// goes to the tracker (Create, Find, Comment), so that a key filed before
// is still answered from the ledger.
func ValidateKeyKept(key, rewritten string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if strings.TrimSpace(key) != key {
		return &InvalidError{Field: "key", Reason: "begins or ends with a space, which the tracker trims"}
	}
	if rewritten != "" && strings.ContainsAny(key, rewritten) {
		return &InvalidError{Field: "key", Reason: fmt.Sprintf("holds one of %q, which the tracker's markup rewrites", rewritten)}
	}
	return nil
}

// ValidateName checks a key-like name (a key, a tenant, a workspace) the way
// ValidateKey does, naming field in the error.
func ValidateName(field, v string) error {
	switch {
	case v == "":
		return &InvalidError{Field: field, Reason: "is empty"}
	case len(v) > MaxKeyBytes:
		return &InvalidError{Field: field, Reason: fmt.Sprintf("is %d bytes, over %d", len(v), MaxKeyBytes)}
	case !utf8.ValidString(v):
		return &InvalidError{Field: field, Reason: "is not UTF-8"}
	}
	if r, ok := controlRune(v, false); ok {
		return &InvalidError{Field: field, Reason: fmt.Sprintf("holds the control character %q", r)}
	}
	return nil
}

// ValidateDraft checks a draft: a title that isn't blank and holds no
// control character, a description of UTF-8 without NUL, a valid state,
// and labels a tracker can keep. Text is checked as sent: a value that is
// not UTF-8 is refused, never rewritten.
func ValidateDraft(d Draft) error {
	if err := ValidateTitle(d.Title); err != nil {
		return err
	}
	if err := ValidateText("description", d.Description); err != nil {
		return err
	}
	if d.State != "" && !d.State.Valid() {
		return invalidState(d.State)
	}
	return validateLabels(d.Labels)
}

func invalidState(s State) error {
	return &InvalidError{Field: "state", Reason: Quote(string(s)) + " is not one of backlog, todo, started, done, cancelled"}
}

// ValidateTitle checks a title: not blank, UTF-8, and no control
// character (a title is one line, as a key is).
func ValidateTitle(title string) error {
	if strings.TrimSpace(title) == "" {
		return &InvalidError{Field: "title", Reason: "is empty"}
	}
	if !utf8.ValidString(title) {
		return &InvalidError{Field: "title", Reason: "is not UTF-8"}
	}
	if r, ok := controlRune(title, false); ok {
		return &InvalidError{Field: "title", Reason: fmt.Sprintf("holds the control character %q", r)}
	}
	return nil
}

// ValidateText checks free text (a description, a comment's body): UTF-8,
// and no control character but tab, line feed and carriage return.
func ValidateText(field, v string) error {
	if !utf8.ValidString(v) {
		return &InvalidError{Field: field, Reason: "is not UTF-8"}
	}
	if r, ok := controlRune(v, true); ok {
		return &InvalidError{Field: field, Reason: fmt.Sprintf("holds the control character %q", r)}
	}
	return nil
}

// controlRune answers the first control character of v (C0, DEL, C1),
// leaving tab, line feed and carriage return to text when lines is set.
func controlRune(v string, lines bool) (rune, bool) {
	for _, r := range v {
		if lines && (r == '\t' || r == '\n' || r == '\r') {
			continue
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return r, true
		}
	}
	return 0, false
}

// MaxLabels is the most labels a draft or a patch names. Each label is a
// request on some trackers (Vikunja adds them one by one): a filing of
// 20,000 labels held a server's only write slot past the write bound and
// could never succeed. GitHub takes 100 on an issue; 50 is room for any
// rule's.
const MaxLabels = 50

// SameLabels reports whether a and b name the same labels, in any order: a
// label set is what trackers keep (drivers send a patch's labels only when
// they differ from the item's).
func SameLabels(a, b []string) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(slices.Compact(x), slices.Compact(y))
}

// MissingLabels answers the labels of want that got does not hold: what a
// tracker dropped of those relayr sent (drivers answer a filing that lost
// some as landed but unavailable, never as a silent drop).
func MissingLabels(want, got []string) []string {
	var out []string
	for _, n := range want {
		if !slices.Contains(got, n) {
			out = append(out, n)
		}
	}
	return out
}

// validateLabels checks each label is a name a tracker can keep, once, and
// at most MaxLabels of them, before a claim is taken for a write the
// tracker would refuse.
func validateLabels(labels []string) error {
	if len(labels) > MaxLabels {
		return &InvalidError{Field: "labels", Reason: fmt.Sprintf("names %d labels, over %d", len(labels), MaxLabels)}
	}
	for i, l := range labels {
		if strings.TrimSpace(l) == "" {
			return &InvalidError{Field: "labels", Reason: "holds a blank label"}
		}
		if err := ValidateName("labels", l); err != nil {
			return err
		}
		if slices.Contains(labels[:i], l) {
			return &InvalidError{Field: "labels", Reason: "names " + Quote(l) + " twice"}
		}
	}
	return nil
}

// ValidatePatch checks a patch as ValidateDraft checks a draft, each field
// it names.
func ValidatePatch(p Patch) error {
	if p.Title != nil {
		if err := ValidateTitle(*p.Title); err != nil {
			return err
		}
	}
	if p.Description != nil {
		if err := ValidateText("description", *p.Description); err != nil {
			return err
		}
	}
	if p.State != nil && !p.State.Valid() {
		return invalidState(*p.State)
	}
	if p.Labels != nil {
		return validateLabels(*p.Labels)
	}
	return nil
}

// MaxKeyBytes is the longest key relayr files under: the one limit of a
// key in relayr, which the ledger's MaxKey refers to.
const MaxKeyBytes = 1024

// freeKey finds in a context what Free calls.
type freeKey struct{}

// WithFree answers a context whose Free calls free: a meter of requests
// (relayr's budget) gives back one request it counted.
func WithFree(ctx context.Context, free func()) context.Context {
	return context.WithValue(ctx, freeKey{}, free)
}

// Free tells whoever meters ctx's requests that the last one sent cost
// nothing of the tracker's limit: a conditional GET answered 304 Not
// Modified, which GitHub does not count. trackerhttp calls it.
func Free(ctx context.Context) {
	if f, ok := ctx.Value(freeKey{}).(func()); ok {
		f()
	}
}

// partyKey finds in a context the party a request is made for.
type partyKey struct{}

// ForParty answers ctx marked as made for party (a tenant, as the
// connections mark every call of a binding's), so that what a tracker
// shares between parties (a server's write slot) is shared fairly.
func ForParty(ctx context.Context, party string) context.Context {
	return context.WithValue(ctx, partyKey{}, party)
}

// PartyOf answers the party ctx was marked for, "" when none.
func PartyOf(ctx context.Context) string {
	p, _ := ctx.Value(partyKey{}).(string)
	return p
}

// admitKey finds in a context what Admit and Report call.
type admitKey struct{}

type admission struct {
	admit  func() error
	report func(remaining int, reset time.Time)
}

// WithAdmit answers a context whose Admit calls admit and whose Report
// calls report: a meter of requests (relayr's budget) that holds them to
// a tracker's own windows.
func WithAdmit(ctx context.Context, admit func() error, report func(remaining int, reset time.Time)) context.Context {
	return context.WithValue(ctx, admitKey{}, admission{admit: admit, report: report})
}

// Admit asks whoever meters ctx's requests whether one more may be sent
// now: nil, or an error that matches ErrRateLimited and ErrNotSent
// (a tracker's window is spent, or a write would leave the followers'
// polls too little of it). trackerhttp asks before every request.
func Admit(ctx context.Context) error {
	if a, ok := ctx.Value(admitKey{}).(admission); ok && a.admit != nil {
		return a.admit()
	}
	return nil
}

// Report tells whoever meters ctx's requests what the tracker said of its
// limit in an answer (x-ratelimit-remaining and -reset): the truth, since
// other clients may spend the same key. trackerhttp reports every answer
// that says.
func Report(ctx context.Context, remaining int, reset time.Time) {
	if a, ok := ctx.Value(admitKey{}).(admission); ok && a.report != nil {
		a.report(remaining, reset)
	}
}

// Sent tells whoever meters ctx's requests that one tracker request was
// sent. relayr's budget meters a tracker's requests through ctx's
// httptrace.ClientTrace (its WroteRequest hook), which net/http calls for
// every request an adapter writes, so adapters on net/http never call Sent.
// A Tracker that sends no HTTP of its own (the fake, an in-process tracker)
// calls it once for each request it stands for, so budgets and request
// counts see it as they would a real one.
func Sent(ctx context.Context) {
	if t := httptrace.ContextClientTrace(ctx); t != nil && t.WroteRequest != nil {
		t.WroteRequest(httptrace.WroteRequestInfo{})
	}
}

// Connecting checks what a Connector is asked to connect, once for every
// adapter: a source naming its tenant and workspace (its namespace
// defaulted to namespace, or DefaultNamespace), and credentials holding a
// token (ErrUnauthorized, naming kind, otherwise). It answers the source
// to file under.
func Connecting(kind string, creds Credentials, source Source, namespace string) (Source, error) {
	if source.Tenant == "" || source.Workspace == "" {
		return Source{}, &InvalidError{Field: "source", Reason: "names no tenant or workspace"}
	}
	if source.Namespace == "" {
		source.Namespace = namespace
	}
	if source.Namespace == "" {
		source.Namespace = DefaultNamespace
	}
	if creds.Token == "" {
		return Source{}, fmt.Errorf("%s: no key for the tracker: %w", kind, ErrUnauthorized)
	}
	return source, nil
}

// SortComments orders comments as Comments answers them: oldest first,
// and by id (LessID) within one time.
func SortComments(cs []Comment) {
	slices.SortStableFunc(cs, func(a, b Comment) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		switch {
		case LessID(a.ID, b.ID):
			return -1
		case LessID(b.ID, a.ID):
			return 1
		}
		return 0
	})
}
