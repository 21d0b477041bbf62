package tracker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"
	"unicode/utf8"
)

// Tracker is the portable tracker: one workspace's view of one tracker
// project, the port every part of the domain (writes, follow, the
// connections) sees, over one Driver (Plane, Vikunja, the fake). It owns
// what every tracker shares, so each rule has one home: it checks every
// input once, against the port's rules and the driver's Capabilities; it
// honours the context, ending a call whose context is done with an error
// that wraps ctx.Err() and ErrUnavailable (nothing is known of what the
// tracker did); and it answers every failure as one of the port's typed
// errors. A driver only maps the wire. Tracker is safe for concurrent use.
type Tracker struct {
	d    Driver
	caps Capabilities
	same DescriptionComparer // nil: descriptions are held as set
	all  ProjectCommenter    // nil: comments are read item by item
	keys KeysFinder          // nil: each key is found on its own
	many ItemsFetcher        // nil: items are read by id one at a time
}

// New answers the portable tracker over d.
func New(d Driver) *Tracker {
	t := &Tracker{d: d, caps: d.Capabilities()}
	if t.caps.Name == "" {
		t.caps.Name = "tracker"
	}
	t.same, _ = d.(DescriptionComparer)
	t.keys, _ = d.(KeysFinder)
	t.many, _ = d.(ItemsFetcher)
	if t.caps.ProjectComments {
		t.all, _ = d.(ProjectCommenter)
	}
	return t
}

// Capabilities answers what the tracker does and does not do.
func (t *Tracker) Capabilities() Capabilities { return t.caps }

// Project names the project this tracker files into, as Nudge names it.
func (t *Tracker) Project() string { return t.d.Project() }

// Link is where a person opens the item. It makes no request.
func (t *Tracker) Link(ref ItemRef) string { return t.d.Link(ref) }

// Holds is the state an item set to s reads back as.
func (t *Tracker) Holds(s State) State { return t.caps.Holds(s) }

// SameDescription compares a description relayr set with one read back,
// as the tracker holds them: equal, or the same once the tracker's
// rewriting is taken into account (DescriptionComparer).
func (t *Tracker) SameDescription(set, held string) bool {
	if set == held {
		return true
	}
	return t.same != nil && t.same.SameDescription(set, held)
}

// RewritesDescriptions reports whether the tracker rewrites descriptions,
// so that a description read back is compared by SameDescription rather
// than by equality.
func (t *Tracker) RewritesDescriptions() bool { return t.same != nil }

// Find returns the item filed under key, archived ones included, or an
// error matching ErrNotFound when there is none (a deleted item included).
func (t *Tracker) Find(ctx context.Context, key string) (Item, error) {
	if err := t.key(key); err != nil {
		return Item{}, err
	}
	if err := t.live(ctx); err != nil {
		return Item{}, err
	}
	it, err := t.d.Find(ctx, key)
	return t.item(ctx, it, err)
}

// FindsKeys reports whether the tracker finds several keys' items in one
// read (FindKeys).
func (t *Tracker) FindsKeys() bool { return t.keys != nil }

// FetchesItems reports whether the tracker reads several items by id in
// one request (ItemsFetcher).
func (t *Tracker) FetchesItems() bool { return t.many != nil }

// FetchItems answers those of ids the tracker holds, read by id in as few
// requests as it allows; an id not answered is not found. A tracker that
// reads items one at a time answers none and false: read each with Item.
func (t *Tracker) FetchItems(ctx context.Context, ids []string) (map[string]Item, bool, error) {
	if t.many == nil {
		return nil, false, nil
	}
	valid := make([]string, 0, len(ids))
	for _, id := range ids {
		if t.id(id) == nil {
			valid = append(valid, id) // an id of no shape the tracker makes is not found
		}
	}
	if len(valid) == 0 {
		return map[string]Item{}, true, nil
	}
	if err := t.live(ctx); err != nil {
		return nil, false, err
	}
	found, err := t.many.FetchItems(ctx, valid)
	if err != nil {
		return nil, false, t.fail(ctx, err)
	}
	for id, it := range found {
		if it.Ref.ID != id || !slices.Contains(valid, id) {
			return nil, false, t.garbled("an item of an id not asked for")
		}
	}
	return found, true, nil
}

// FindKeys answers the items filed under keys since since, in one read
// where the tracker allows it (KeysFinder): with complete true, a key not
// answered has none; false, the keys not answered are to be found one by
// one (Find), as they are on a tracker that finds only one at a time.
func (t *Tracker) FindKeys(ctx context.Context, keys []string, since time.Time) (found map[string]Item, complete bool, err error) {
	for _, k := range keys {
		if err := t.key(k); err != nil {
			return nil, false, err
		}
	}
	if t.keys == nil || len(keys) == 0 {
		return map[string]Item{}, false, nil
	}
	if err := t.live(ctx); err != nil {
		return nil, false, err
	}
	found, complete, err = t.keys.FindKeys(ctx, keys, since)
	if err != nil {
		return nil, false, t.fail(ctx, err)
	}
	for k, it := range found {
		if it.Ref.ID == "" || !slices.Contains(keys, k) {
			return nil, false, t.garbled("an item without an id, or of a key not asked for")
		}
	}
	return found, complete, nil
}

// Create files a new item under key. A tracker that enforces keys
// (Capabilities.KeysEnforced) answers a duplicate with an *ExistsError
// naming the existing item.
func (t *Tracker) Create(ctx context.Context, key string, d Draft) (Item, error) {
	if err := t.key(key); err != nil {
		return Item{}, err
	}
	if err := ValidateDraft(d); err != nil {
		return Item{}, err
	}
	if err := t.live(ctx); err != nil {
		return Item{}, err
	}
	it, err := t.d.Create(ctx, key, d)
	return t.item(ctx, it, err)
}

// Item reads one item by the tracker's id: ErrNotFound when it is gone.
// An archived item may read as ErrNotFound (Plane) or as Archived.
func (t *Tracker) Item(ctx context.Context, id string) (Item, error) {
	if err := t.live(ctx); err != nil {
		return Item{}, err
	}
	if err := t.id(id); err != nil {
		return Item{}, err
	}
	it, err := t.d.Item(ctx, id)
	return t.item(ctx, it, err)
}

// Update changes only the fields the patch names and never blanks
// another. An empty patch reads the item.
func (t *Tracker) Update(ctx context.Context, id string, p Patch) (Item, error) {
	if err := ValidatePatch(p); err != nil {
		return Item{}, err
	}
	if p.Empty() {
		return t.Item(ctx, id)
	}
	if err := t.live(ctx); err != nil {
		return Item{}, err
	}
	if err := t.id(id); err != nil {
		return Item{}, err
	}
	it, err := t.d.Update(ctx, id, p)
	return t.item(ctx, it, err)
}

// Comment posts body on the item, marked with key so Comments reads the
// key back.
func (t *Tracker) Comment(ctx context.Context, id, key, body string) (Comment, error) {
	// A comment's key is read back, but not held to MaxKeyChars: a driver
	// keeps a long one as it can (Plane under its digest).
	if err := ValidateKeyKept(key, t.caps.Rewrites); err != nil {
		return Comment{}, err
	}
	if err := ValidateText("body", body); err != nil {
		return Comment{}, err
	}
	if err := t.live(ctx); err != nil {
		return Comment{}, err
	}
	if err := t.id(id); err != nil {
		return Comment{}, err
	}
	c, err := t.d.Comment(ctx, id, key, body)
	if err == nil && c.ID == "" {
		err = t.garbled("a comment without an id")
	}
	if err != nil {
		return Comment{}, t.fail(ctx, err)
	}
	return c, nil
}

// Items lists the items changed at or after q.Since, ordered by
// (UpdatedAt, ID). A tracker may return items from before Since (its
// time precision, its lookback); none changed at or after it is missed.
func (t *Tracker) Items(ctx context.Context, q Query) (Page, error) {
	if err := t.live(ctx); err != nil {
		return Page{}, err
	}
	p, err := t.d.Items(ctx, q)
	if err == nil {
		for _, it := range p.Items {
			if it.Ref.ID == "" {
				err = t.garbled("an item without an id")
				break
			}
		}
	}
	if err != nil {
		return Page{}, t.fail(ctx, err)
	}
	return p, nil
}

// Comments lists the item's comments created at or after since, oldest
// first, with the key of those relayr posted.
func (t *Tracker) Comments(ctx context.Context, id string, since time.Time) ([]Comment, error) {
	if err := t.live(ctx); err != nil {
		return nil, err
	}
	if err := t.id(id); err != nil {
		return nil, err
	}
	cs, err := t.d.Comments(ctx, id, since)
	if err != nil {
		return nil, t.fail(ctx, err)
	}
	return cs, nil
}

// ListsProjectComments reports whether the tracker reads a whole
// project's comments since a time in one read (ProjectComments): its
// driver is a ProjectCommenter and its Capabilities say so.
func (t *Tracker) ListsProjectComments() bool { return t.all != nil }

// ProjectComments answers the comments of the project's items created at
// or after since (not zero), by item id, each item's oldest first, read in
// at most reads requests; ok is false when the tracker reads comments only
// item by item, or when reading them would take more than reads requests
// (one may have been spent to learn so). A follower reads a poll's comments
// with it instead of one Comments call per changed item.
func (t *Tracker) ProjectComments(ctx context.Context, since time.Time, reads int) (byItem map[string][]Comment, ok bool, err error) {
	if t.all == nil || reads < 1 {
		return nil, false, nil
	}
	if since.IsZero() {
		return nil, false, fmt.Errorf("%s: project comments since no time: %w", t.caps.Name, ErrRefused)
	}
	if err := t.live(ctx); err != nil {
		return nil, false, err
	}
	cs, complete, err := t.all.ProjectComments(ctx, since, reads)
	if err != nil {
		return nil, false, t.fail(ctx, err)
	}
	if !complete {
		return nil, false, nil
	}
	byItem = map[string][]Comment{}
	for _, c := range cs {
		if c.ID == "" || c.ItemID == "" {
			return nil, false, t.garbled("comment without an id or an item")
		}
		if !c.CreatedAt.Before(since) {
			byItem[c.ItemID] = append(byItem[c.ItemID], c)
		}
	}
	for _, cs := range byItem {
		SortComments(cs)
	}
	return byItem, true, nil
}

// Nudge verifies a webhook delivery (header and raw body) against secret
// and says which project it names and which items it reports deleted. A
// bad signature, or no secret to check it with, is ErrUnauthorized;
// nothing is read from a body whose signature doesn't verify. A verified
// body the tracker can't read is ErrRefused. A tracker that reports no
// deletions (Capabilities.NudgesDeletions false) names none.
func (t *Tracker) Nudge(secret string, header http.Header, body []byte) (Nudged, error) {
	if secret == "" {
		return Nudged{}, fmt.Errorf("%s: no webhook secret to verify the delivery with: %w", t.caps.Name, ErrUnauthorized)
	}
	n, err := t.d.Nudge(secret, header, body)
	switch {
	case err == nil && n.Project == "":
		return Nudged{}, fmt.Errorf("%s: the delivery names no project: %w", t.caps.Name, ErrRefused)
	case err == nil:
		if !t.caps.NudgesDeletions {
			n.Deleted = nil
		}
		return n, nil
	case errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrRefused):
		return Nudged{}, err
	}
	return Nudged{}, fmt.Errorf("%s: %w: %w", t.caps.Name, ErrRefused, err)
}

// key checks a key the tracker files under and reads back (ADR-0033:
// a key read back as another is never found again, and a retaken claim
// files its item twice).
func (t *Tracker) key(key string) error {
	if err := ValidateKeyKept(key, t.caps.Rewrites); err != nil {
		return err
	}
	if n := utf8.RuneCountInString(key); t.caps.MaxKeyChars > 0 && n > t.caps.MaxKeyChars {
		return &InvalidError{Field: "key", Reason: fmt.Sprintf("is %d characters; %s keeps a key in %d", n, t.caps.Name, t.caps.MaxKeyChars)}
	}
	return nil
}

// id answers ErrNotFound for an id that cannot name an item of the
// tracker: no such item, and nothing to ask.
func (t *Tracker) id(id string) error {
	if id == "" || (t.caps.ValidID != nil && !t.caps.ValidID(id)) {
		return fmt.Errorf("%s: %s is not an item id: %w", t.caps.Name, Quote(id), ErrNotFound)
	}
	return nil
}

// live ends a call whose context is done before anything is sent: the
// error matches ErrNotSent and ErrUnavailable, and wraps ctx.Err().
func (t *Tracker) live(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return NotSent(fmt.Errorf("%s: %w", t.caps.Name, err))
	}
	return nil
}

func (t *Tracker) item(ctx context.Context, it Item, err error) (Item, error) {
	if err == nil && it.Ref.ID == "" {
		err = t.garbled("an item without an id")
	}
	if err != nil {
		return Item{}, t.fail(ctx, err)
	}
	return it, nil
}

func (t *Tracker) garbled(what string) error {
	return fmt.Errorf("%s: the tracker answered %s: %w", t.caps.Name, what, ErrUnavailable)
}

// typed are the port's errors a driver's answer passes through as it is.
var typed = []error{ErrRateLimited, ErrUnavailable, ErrNotFound, ErrRefused, ErrUnauthorized, ErrExists, ErrInvalid}

// fail maps a driver's failure onto the port's typed errors: the port's
// own pass as they are; anything else, a done context included, is
// ErrUnavailable wrapping it, since nothing is known of what the tracker
// did.
func (t *Tracker) fail(ctx context.Context, err error) error {
	for _, e := range typed {
		if errors.Is(err, e) {
			return err
		}
	}
	if c := ctx.Err(); c != nil && !errors.Is(err, c) {
		return fmt.Errorf("%s: %w: %w: %w", t.caps.Name, ErrUnavailable, c, err)
	}
	return fmt.Errorf("%s: %w: %w", t.caps.Name, ErrUnavailable, err)
}

// Over answers the portable tracker over a driver just made, or the error
// that made none: a Connector's Connect, in one line over its driver's
// constructor.
func Over[D Driver](d D, err error) (*Tracker, error) {
	if err != nil {
		return nil, err
	}
	return New(d), nil
}
