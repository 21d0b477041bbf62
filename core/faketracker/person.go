package faketracker

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/relayr-go/relayr/core/tracker"
)

// PersonCreate files an item as a person would: no key, UpdatedBy
// "person", and no call counted, since relayr made no request. The
// followers' tests use it for the items people file themselves.
func (t *Tracker) PersonCreate(d tracker.Draft) (tracker.Item, error) {
	if err := tracker.ValidateDraft(d); err != nil {
		return tracker.Item{}, fmt.Errorf("%w: %w", tracker.ErrRefused, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next++
	id := fmt.Sprintf("it-%06d", t.next)
	state := d.State
	if state == "" {
		state = tracker.Backlog
	}
	it := &item{Item: tracker.Item{
		Ref:         tracker.ItemRef{ID: id, Number: int64(t.next), Name: t.ident + "-" + strconv.Itoa(t.next)},
		Title:       d.Title,
		Description: d.Description,
		State:       t.Holds(state),
		Labels:      slices.Clone(d.Labels),
		UpdatedAt:   t.now(),
		UpdatedBy:   "person",
	}}
	it.CreatedAt = it.UpdatedAt
	it.Ref.Link = t.Link(it.Ref)
	t.items[id] = it
	t.order = append(t.order, id)
	return t.copyOf(it), nil
}

// Snapshot answers an item as the tracker holds it, deleted and archived
// ones included, without counting a call: what a test compares the
// followers' events with.
func (t *Tracker) Snapshot(id string) (it tracker.Item, deleted bool, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	x, ok := t.items[id]
	if !ok {
		return tracker.Item{}, false, false
	}
	return t.copyOf(x), x.deleted, true
}

// PersonComments answers every comment on an item, relayr's included,
// without counting a call.
func (t *Tracker) PersonComments(id string) []tracker.Comment {
	t.mu.Lock()
	defer t.mu.Unlock()
	x, ok := t.items[id]
	if !ok {
		return nil
	}
	return slices.Clone(x.comments)
}

// AnswerStaleOnce makes the next Items page also answer it, an item as it
// was before a later change: what an offset page read while the item moved
// can answer late.
func (t *Tracker) AnswerStaleOnce(it tracker.Item) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stale = append(t.stale, it)
}
