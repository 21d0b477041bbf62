package gitlab

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// Who acted (docs/trackers/gitlab.md §10). GitLab's issue names no last
// updater: its author, and closed_by, say who made it and who closed it,
// which name the last updater where its updated_at is its creation or its
// closing (item). A state change is a resource state event, a label change
// a resource label event, each with its user and a created_at that is the
// issue's updated_at of the same save (doc api/resource_state_events.md,
// doc api/resource_label_events.md; the events take the issuable's
// system_note_timestamp, app/models/concerns/issuable.rb, set from its
// updated_at by IssuableBaseService, app/services/issuable_base_service.rb).
// So for a changed issue whose last change neither its creation nor its
// closing explains, the event whose time is the issue's updated_at names
// who changed it.
//
// Each list is a request, and most changes a poll reads are no state or
// label change (a comment, a title or a description): an issue's events
// are read only where its labels (label events) or its opened/closed
// state (state events) differ from the version last answered in this
// process (Connector.seen), or where none was, after a restart. A change
// whose events don't say (a title, a comment, a label edit GitLab's
// throttled touch left updated_at under, §0.5) names no one. Events of
// relayr's own writes name the token's user; the follower names no actor
// where relayr's write is among the changes read (ADR-0036).

// seenIssue is an issue's version as last answered: its state, labels,
// update time and last updater.
type seenIssue struct {
	state   string
	labels  []string
	updated time.Time
	actor   string
}

// maxSeen bounds Connector.seen; past it, it starts over.
const maxSeen = 50_000

// answered notes the version of an issue the driver answered, made by
// actor, and answers the version noted before (ok false where none was).
func (d *Driver) answered(w wireIssue, actor string) (prev seenIssue, ok bool) {
	k := freshKey{w.ProjectID, w.IID}
	c := d.c
	c.mu.Lock()
	defer c.mu.Unlock()
	prev, ok = c.seen[k]
	if len(c.seen) >= maxSeen {
		clear(c.seen)
	}
	c.seen[k] = seenIssue{state: w.State, labels: slices.Sorted(slices.Values(w.Labels)), updated: w.UpdatedAt, actor: actor}
	return prev, ok
}

// wrote notes the version of an issue relayr's write answered: the
// token's user made it.
func (d *Driver) wrote(w wireIssue) { d.answered(w, d.user.Username) }

// actor answers who made the last change of the issue w, at path (its
// issue route), where known (its creation or closing) doesn't: the user
// of the label or state event at its updated_at, read only where its
// labels or its state differ from the version last answered. A version
// answered before is answered with the same actor, read no more.
func (d *Driver) actor(ctx context.Context, path string, w wireIssue, known string) (string, error) {
	labels := slices.Sorted(slices.Values(w.Labels))
	c := d.c
	c.mu.Lock()
	prev, ok := c.seen[freshKey{w.ProjectID, w.IID}]
	c.mu.Unlock()
	same := ok && prev.state == w.State && slices.Equal(prev.labels, labels)
	var who string
	var err error
	switch {
	case known != "":
		who = known
	case same && prev.updated.Equal(w.UpdatedAt):
		who = prev.actor
	default:
		if !ok || !slices.Equal(prev.labels, labels) {
			who, err = d.eventUser(ctx, path+"/resource_label_events", w.UpdatedAt)
		}
		if err == nil && who == "" && (!ok || prev.state != w.State) {
			who, err = d.eventUser(ctx, path+"/resource_state_events", w.UpdatedAt)
		}
	}
	if err != nil {
		return "", err
	}
	d.answered(w, who)
	return who, nil
}

// wireEvent is the part of a resource event the driver reads.
type wireEvent struct {
	ID        int64       `json:"id"`
	User      *wireAuthor `json:"user"`
	CreatedAt time.Time   `json:"created_at"`
}

// eventUser reads an issue's events (oldest first, offset pages: the
// first page, and the last where there are more) and answers the user of
// the newest at at, to the millisecond GitLab renders.
func (d *Driver) eventUser(ctx context.Context, path string, at time.Time) (string, error) {
	q := url.Values{"per_page": {strconv.Itoa(PageLimit)}}
	var evs []wireEvent
	a, err := d.read(ctx, trackerhttp.Request{Method: http.MethodGet, Path: path, Query: q}, "event list", &evs, nil)
	if err != nil {
		return "", gone(err)
	}
	if n, err := strconv.Atoi(a.Header.Get("X-Total-Pages")); err == nil && n > 1 {
		q.Set("page", strconv.Itoa(n))
		evs = nil
		if _, err := d.read(ctx, trackerhttp.Request{Method: http.MethodGet, Path: path, Query: q}, "event list", &evs, nil); err != nil {
			return "", gone(err)
		}
	}
	at = at.UTC().Truncate(time.Millisecond)
	for _, ev := range slices.Backward(evs) {
		if ev.User != nil && ev.User.Username != "" && ev.CreatedAt.UTC().Truncate(time.Millisecond).Equal(at) {
			return ev.User.Username, nil
		}
	}
	return "", nil
}

// gone answers no error for an issue deleted since the list showed it
// (GitLab deletes for good, §8): its change names no one, and the sweep
// finds it gone.
func gone(err error) error {
	if errors.Is(err, tracker.ErrNotFound) {
		return nil
	}
	return err
}
