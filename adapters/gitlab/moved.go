package gitlab

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// A moved issue is followed (docs/trackers/gitlab.md §8). GitLab's move
// makes a new issue in the other project (new id and iid, the title,
// description, labels and notes copied) and closes the original with
// moved_to_id set. The key keeps its item: the driver answers the issue
// where it went under the original's iid and key, its state, labels and
// changes those of the new issue (the original's closing is no change of
// the item), its Ref.Name and Ref.Link the new place's. A new place the
// token cannot read (404, 403) is the item gone, as a deletion.
//
// moved_to_id is a global id, which only an admin reads (GET /issues/:id,
// §0.2). The original's system note written by the move names where it
// went, "moved to <reference>" (SystemNotes::IssuablesService, its note of
// a moved issuable, app/services/system_notes/issuables_service.rb), the
// reference as seen from the original's project (Issue#to_reference: the
// full path across namespaces, the project's path alone within one); it is
// read from the original's activity (activity_filter=only_activity), then
// the issue at GET /projects/<path>/issues/<iid>, whose id must be the
// moved_to_id. A chain of moves is walked, at most maxHops.
//
// Where an original went is kept in memory (Connector.moves), learnt by
// any read of the original (Item, Update, the poll's Items, the sweep's
// FetchItems), so that Comment and Comments reach the new place, and so
// that Items reads again each followed issue, one GET each per poll: its
// changes are not in the original project's list. A comment on an issue
// this process has not read yet reads it first (learnMove), so that a
// comment after a restart lands where the issue went, not on the closed
// original.

// maxHops bounds the moves one chain is followed through.
const maxHops = 5

// hop is one place an issue was moved to.
type hop struct {
	path    string    // the project's path_with_namespace
	iid     int64     // the issue's iid there
	id      int64     // its global id: the moved_to_id that led here
	movedAt time.Time // when the issue was moved here (the note's time)
}

// issuePath is the route of the issue at h.
func (h hop) issuePath() string {
	return "projects/" + url.PathEscape(h.path) + "/issues/" + strconv.FormatInt(h.iid, 10)
}

// movedNote is the body of the move's note on the original.
var movedNote = regexp.MustCompile(`^moved to ((?:[A-Za-z0-9_.][A-Za-z0-9_.\-]*/)*[A-Za-z0-9_.][A-Za-z0-9_.\-]*)?#([1-9][0-9]*)$`)

// errMovedAway: the issue was moved where the token cannot read it.
var errMovedAway = errors.New("moved to a place the token cannot read")

// move is where an original went, and the key it was filed under.
type move struct {
	key  string
	hops []hop
}

// moves answers where the issue iid of the driver's project went, as last
// learnt.
func (d *Driver) moves(iid int64) []hop {
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	return d.c.moves[freshKey{d.project, iid}].hops
}

// rememberMove keeps where iid went (no hops: forgets it).
func (d *Driver) rememberMove(iid int64, key string, hops []hop) {
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	if len(hops) == 0 {
		delete(d.c.moves, freshKey{d.project, iid})
		return
	}
	d.c.moves[freshKey{d.project, iid}] = move{key: key, hops: hops}
}

// followed answers the originals of the driver's project known moved, by
// iid.
func (d *Driver) followed() map[int64]move {
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	out := map[int64]move{}
	for k, m := range d.c.moves {
		if k.project == d.project {
			out[k.iid] = m
		}
	}
	return out
}

// issueAt reads the issue iid of the project at path (URL-escaped whole,
// §1). A 404 or 403 is errMovedAway, ErrNotFound.
func (d *Driver) issueAt(ctx context.Context, path string, iid int64) (wireIssue, error) {
	var w wireIssue
	a, err := d.read(ctx, trackerhttp.Request{Method: http.MethodGet, Path: "projects/" + url.PathEscape(path) + "/issues/" + strconv.FormatInt(iid, 10)},
		"moved issue", &w, func() bool { return w.valid() })
	if err != nil {
		if a.Status == http.StatusNotFound || a.Status == http.StatusForbidden {
			return wireIssue{}, fmt.Errorf("gitlab: %s#%d: %w: %w", path, iid, errMovedAway, tracker.ErrNotFound)
		}
		return wireIssue{}, err
	}
	return w, nil
}

// movedTo reads where the issue w of the project at path was moved: its
// newest "moved to" system note, its reference resolved from path.
func (d *Driver) movedTo(ctx context.Context, path string, w wireIssue) (hop, error) {
	q := url.Values{"activity_filter": {"only_activity"}, "sort": {"desc"}, "order_by": {"created_at"}, "per_page": {strconv.Itoa(PageLimit)}}
	req := trackerhttp.Request{Method: http.MethodGet, Path: "projects/" + url.PathEscape(path) + "/issues/" + strconv.FormatInt(w.IID, 10) + "/notes", Query: q}
	for range findPages {
		a, err := d.do(ctx, anyRequest, req)
		if err != nil {
			return hop{}, err
		}
		var ns []wireNote
		if err := decode(a.Body, &ns); err != nil {
			return hop{}, trackerhttp.Garbled("gitlab", "note list", err)
		}
		for _, n := range ns {
			m := movedNote.FindStringSubmatch(strings.TrimSpace(n.Body))
			if !n.System || m == nil {
				continue
			}
			iid, err := strconv.ParseInt(m[2], 10, 64)
			if err != nil {
				continue
			}
			return hop{path: resolveRef(path, m[1]), iid: iid, id: *w.MovedToID, movedAt: n.CreatedAt.UTC()}, nil
		}
		next := nextPage(a.Header)
		if next == "" || len(ns) == 0 {
			break
		}
		req = trackerhttp.Request{Method: http.MethodGet, URL: next}
	}
	return hop{}, fmt.Errorf("gitlab: %s#%d was moved (moved_to_id %d) and no note says where: %w", path, w.IID, *w.MovedToID, tracker.ErrNotFound)
}

// resolveRef is the project a reference's project part names, seen from
// the project at from (Project#to_reference_base, app/models/project.rb):
// nothing is from itself, a path without "/" a project of from's
// namespace, any other the full path.
func resolveRef(from, part string) string {
	switch {
	case part == "":
		return from
	case strings.Contains(part, "/"):
		return part
	}
	if i := strings.LastIndexByte(from, '/'); i >= 0 {
		return from[:i+1] + part
	}
	return part
}

// follow answers the issue orig went to through its moves, and the hops,
// or orig itself, not moved. What it learns is kept for orig's iid. A
// place the token cannot read is ErrNotFound: the item is gone.
func (d *Driver) follow(ctx context.Context, orig wireIssue) (wireIssue, []hop, error) {
	if orig.MovedToID == nil {
		return orig, nil, nil
	}
	known := d.moves(orig.IID)
	var hops []hop
	cur, path := orig, d.path
	for cur.MovedToID != nil {
		if len(hops) == maxHops {
			return wireIssue{}, nil, fmt.Errorf("gitlab: #%d was moved over %d times: %w", orig.IID, maxHops, tracker.ErrUnavailable)
		}
		var h hop
		if n := len(hops); n < len(known) && known[n].id == *cur.MovedToID {
			h = known[n]
		} else {
			known = nil
			var err error
			if h, err = d.movedTo(ctx, path, cur); err != nil {
				return wireIssue{}, nil, d.lost(orig.IID, err)
			}
		}
		next, err := d.issueAt(ctx, h.path, h.iid)
		if err != nil {
			return wireIssue{}, nil, d.lost(orig.IID, err)
		}
		if next.ID != h.id {
			if known != nil {
				known = nil // learnt before, and no longer so: read the note
				continue
			}
			return wireIssue{}, nil, d.lost(orig.IID, fmt.Errorf("gitlab: #%d was moved to id %d, and %s#%d is id %d: %w", orig.IID, h.id, h.path, h.iid, next.ID, tracker.ErrNotFound))
		}
		hops = append(hops, h)
		cur, path = next, h.path
	}
	d.rememberMove(orig.IID, d.keyOf(orig), hops)
	return cur, hops, nil
}

// lost forgets where iid went when the item is gone.
func (d *Driver) lost(iid int64, err error) error {
	if errors.Is(err, tracker.ErrNotFound) {
		d.rememberMove(iid, "", nil)
	}
	return err
}

// movedItem is the item of the original orig answered where it went: the
// original's iid and key, the new issue's values, the new place's name
// and page.
func (d *Driver) movedItem(orig, cur wireIssue, hops []hop) tracker.Item {
	return d.placed(orig.IID, d.keyOf(orig), cur, hops[len(hops)-1])
}

// placed is the item of the original iid, filed under key, answered as
// the issue cur at its last place.
func (d *Driver) placed(iid int64, key string, cur wireIssue, last hop) tracker.Item {
	it := d.item(cur)
	it.Ref = tracker.ItemRef{ID: strconv.FormatInt(iid, 10), Number: iid, Key: key, Name: last.path + "#" + strconv.FormatInt(last.iid, 10), Link: cur.WebURL}
	if it.Ref.Link == "" {
		it.Ref.Link = d.cfg.BaseURL + "/" + last.path + "/-/issues/" + strconv.FormatInt(last.iid, 10)
	}
	return it
}

// resolved answers the issue iid as the item: where it went if moved.
func (d *Driver) resolved(ctx context.Context, w wireIssue) (tracker.Item, error) {
	cur, hops, err := d.follow(ctx, w)
	if err != nil {
		return tracker.Item{}, err
	}
	if len(hops) == 0 {
		return d.item(w), nil
	}
	return d.movedItem(w, cur, hops), nil
}

// learnMove reads the issue id, once in the process, where nothing read
// it before: whether it was moved, and where, is then known (an issue
// read before was followed by that read). One GET an issue a process.
func (d *Driver) learnMove(ctx context.Context, id string) error {
	iid, err := strconv.ParseInt(id, 10, 64)
	if err != nil || len(d.moves(iid)) > 0 {
		return nil
	}
	d.c.mu.Lock()
	_, read := d.c.seen[freshKey{d.project, iid}]
	d.c.mu.Unlock()
	if read {
		return nil
	}
	_, err = d.Item(ctx, id)
	return err
}

// issuePath is the path of the issue id answers to: where it was moved
// as last learnt, else the driver's project's.
func (d *Driver) issuePath(id string) string {
	if n, err := strconv.ParseInt(id, 10, 64); err == nil {
		if hops := d.moves(n); len(hops) > 0 {
			return hops[len(hops)-1].issuePath()
		}
	}
	return d.issuesPath(id)
}

// followedChanges reads again each issue known moved out of the driver's
// project but not among seen (one GET each, and the walk on where it was
// moved again), and answers those changed at or after since: a person's
// change to a moved issue is not in the project's list. One that went
// where the token cannot read is left out, and forgotten; the sweep
// finds it gone.
func (d *Driver) followedChanges(ctx context.Context, since time.Time, seen map[string]bool) ([]tracker.Item, error) {
	var out []tracker.Item
	for iid, m := range d.followed() {
		id := strconv.FormatInt(iid, 10)
		if seen[id] {
			continue
		}
		last := m.hops[len(m.hops)-1]
		cur, err := d.issueAt(ctx, last.path, last.iid)
		if err == nil && cur.ID != last.id {
			err = fmt.Errorf("gitlab: %s#%d is no longer the issue #%d went to: %w", last.path, last.iid, iid, tracker.ErrNotFound)
		}
		if err == nil && cur.MovedToID != nil {
			// Moved again: walk on from the original.
			var orig wireIssue
			if orig, err = d.issue(ctx, id); err == nil {
				var it tracker.Item
				if it, err = d.resolved(ctx, orig); err == nil && !it.UpdatedAt.Before(since) {
					out = append(out, it)
				}
			}
			if err == nil || errors.Is(err, tracker.ErrNotFound) {
				continue
			}
		}
		switch {
		case errors.Is(err, tracker.ErrNotFound):
			d.rememberMove(iid, "", nil)
			continue
		case err != nil:
			return nil, err
		}
		if cur.UpdatedAt.Before(since) {
			continue
		}
		out = append(out, d.placed(iid, m.key, cur, last))
	}
	return out, nil
}

// keyOf is the key the original w was filed under: its marker, which the
// move leaves on it (and copies to the new issue).
func (d *Driver) keyOf(w wireIssue) string {
	text := ""
	if w.Description != nil {
		text = *w.Description
	}
	k, _ := d.marker.Unmark(text)
	return k
}
