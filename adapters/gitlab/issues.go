package gitlab

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// Create implements tracker.Driver: one POST of the title, the marked
// description (never blank: GitLab would fill a blank one from the
// project's default template, app/services/issues/create_service.rb) and
// the labels, the state's label among them (GitLab makes the ones the
// project lacks, §3). GitLab creates every issue opened
// (issuable_base_service.rb drops state_event), so a done or cancelled
// draft is closed by a PUT after it; a failure there is ErrUnavailable,
// the issue landed. Labels or a key GitLab didn't keep make the filing
// ErrUnavailable too (it landed), never a silent drop.
func (d *Driver) Create(ctx context.Context, key string, dr tracker.Draft) (tracker.Item, error) {
	state := dr.State
	if state == "" {
		state = tracker.Todo
	}
	if err := d.checkLabels(dr.Labels); err != nil {
		return tracker.Item{}, err
	}
	labels := slices.Clone(dr.Labels)
	if l := d.cfg.Labels.of(state); l != "" && !closed(state) {
		labels = append(labels, l)
	}
	body := map[string]any{"title": dr.Title, "description": d.marker.Mark(escapeQuick(dr.Description), key), "issue_type": "issue"}
	if len(labels) > 0 {
		body["labels"] = strings.Join(labels, ",")
	}
	a, err := d.do(ctx, issueCreate, trackerhttp.Request{Method: http.MethodPost, Path: d.issuesPath(""), Body: body})
	if err != nil {
		return tracker.Item{}, err
	}
	var w wireIssue
	if err := decode(a.Body, &w); err != nil || !w.valid() {
		return tracker.Item{}, trackerhttp.Garbled("gitlab", "created issue", cmpErr(err))
	}
	d.readFresh(w)
	d.wrote(w)
	name := "issue #" + strconv.FormatInt(w.IID, 10)
	if closed(state) {
		edit := map[string]any{"state_event": "close"}
		if l := d.cfg.Labels.of(state); l != "" {
			edit["add_labels"] = l
		}
		if w, err = d.put(ctx, strconv.FormatInt(w.IID, 10), edit); err != nil {
			return tracker.Item{}, trackerhttp.Landed("gitlab", name, "closing it", err)
		}
	}
	it := d.item(w)
	if it.Ref.Key != key {
		return tracker.Item{}, trackerhttp.Landed("gitlab", name, "GitLab did not keep its key in the description", errors.New("marker not kept"))
	}
	if missing := tracker.MissingLabels(dr.Labels, it.Labels); len(missing) > 0 {
		return tracker.Item{}, trackerhttp.Landed("gitlab", name, "GitLab dropped its labels "+fmt.Sprint(missing), errors.New("labels not kept"))
	}
	return it, nil
}

func cmpErr(err error) error {
	if err == nil {
		return errGarbled
	}
	return err
}

// checkLabels refuses labels GitLab's lists cannot carry and the state
// labels, which are set through the state.
func (d *Driver) checkLabels(labels []string) error {
	for _, l := range labels {
		if err := checkLabel(l); err != nil {
			return fmt.Errorf("gitlab: %w: %w", err, tracker.ErrRefused)
		}
		if d.cfg.Labels.isState(l) {
			return fmt.Errorf("gitlab: label %s holds a state here: set the state instead: %w", tracker.Quote(l), tracker.ErrRefused)
		}
	}
	return nil
}

// Item implements tracker.Driver: one read, and for a moved issue the
// reads that follow it (moved.go).
func (d *Driver) Item(ctx context.Context, id string) (tracker.Item, error) {
	w, err := d.issue(ctx, id)
	if err != nil {
		return tracker.Item{}, err
	}
	return d.resolved(ctx, w)
}

func (d *Driver) issue(ctx context.Context, iid string) (wireIssue, error) {
	var w wireIssue
	_, err := d.read(ctx, trackerhttp.Request{Method: http.MethodGet, Path: d.issuesPath(iid)}, "issue", &w, func() bool { return w.valid() })
	if err != nil {
		return wireIssue{}, err
	}
	if w.IssueType != "" && w.IssueType != "issue" {
		// A task, incident or test case shares the iids (§7): no item.
		return wireIssue{}, fmt.Errorf("gitlab: #%s is a %s, not an issue: %w", iid, w.IssueType, tracker.ErrNotFound)
	}
	d.readFresh(w)
	return w, nil
}

// put sends one PUT of an issue of the driver's project and answers it as
// GitLab read it back.
func (d *Driver) put(ctx context.Context, iid string, edit map[string]any) (wireIssue, error) {
	return d.putAt(ctx, d.issuesPath(iid), edit)
}

// putAt sends one PUT of the issue at path.
func (d *Driver) putAt(ctx context.Context, path string, edit map[string]any) (wireIssue, error) {
	a, err := d.do(ctx, anyRequest, trackerhttp.Request{Method: http.MethodPut, Path: path, Body: edit})
	if err != nil {
		return wireIssue{}, err
	}
	var w wireIssue
	if err := decode(a.Body, &w); err != nil || !w.valid() {
		return wireIssue{}, trackerhttp.Garbled("gitlab", "edited issue", cmpErr(err))
	}
	if w.ProjectID == 0 || w.ProjectID == d.project {
		d.readFresh(w)
	}
	d.wrote(w)
	return w, nil
}

// Update implements tracker.Driver: the issue read, then one PUT of what
// differs, which GitLab applies together (§5): the title, the description
// (its marker kept), state_event, and add_labels and remove_labels for
// the labels and the state's label, so that labels a person added
// meanwhile are left alone. A patch that changes nothing sends nothing but
// the read. A moved issue is written where it went (moved.go).
func (d *Driver) Update(ctx context.Context, id string, p tracker.Patch) (tracker.Item, error) {
	if p.Labels != nil {
		if err := d.checkLabels(*p.Labels); err != nil {
			return tracker.Item{}, err
		}
	}
	orig, err := d.issue(ctx, id)
	if err != nil {
		return tracker.Item{}, err
	}
	cur, hops, err := d.follow(ctx, orig)
	if err != nil {
		return tracker.Item{}, err
	}
	it, path := d.item(cur), d.issuesPath(id)
	if len(hops) > 0 {
		it, path = d.movedItem(orig, cur, hops), hops[len(hops)-1].issuePath()
	}
	edit := map[string]any{}
	if p.Title != nil && *p.Title != it.Title {
		edit["title"] = *p.Title
	}
	if p.Description != nil && *p.Description != it.Description {
		edit["description"] = d.marker.Mark(escapeQuick(*p.Description), it.Ref.Key)
		if it.Ref.Key == "" {
			edit["description"] = escapeQuick(*p.Description)
			// Another workspace's marker stays where it was: its
			// binding's key.
			if line, _ := foreignMarker(text(cur)); line != "" {
				edit["description"] = escapeQuick(*p.Description) + "\n\n" + line
			}
		}
	}
	var add, remove []string
	if p.Labels != nil {
		for _, l := range *p.Labels {
			if !slices.Contains(it.Labels, l) && !slices.Contains(add, l) {
				add = append(add, l)
			}
		}
		for _, l := range it.Labels {
			if !slices.Contains(*p.Labels, l) {
				remove = append(remove, l)
			}
		}
	}
	if p.State != nil && *p.State != it.State {
		s := *p.State
		switch {
		case closed(s) && cur.State != "closed":
			edit["state_event"] = "close"
		case !closed(s) && cur.State == "closed":
			edit["state_event"] = "reopen"
		}
		want := d.cfg.Labels.of(s)
		for _, l := range cur.Labels {
			if d.cfg.Labels.isState(l) && l != want {
				remove = append(remove, l)
			}
		}
		if want != "" && !slices.Contains(cur.Labels, want) {
			add = append(add, want)
		}
	}
	if len(add) > 0 {
		edit["add_labels"] = strings.Join(add, ",")
	}
	if len(remove) > 0 {
		edit["remove_labels"] = strings.Join(remove, ",")
	}
	if len(edit) == 0 {
		return it, nil
	}
	w, err := d.putAt(ctx, path, edit)
	if err != nil {
		return tracker.Item{}, err
	}
	if len(hops) > 0 {
		return d.placed(orig.IID, it.Ref.Key, w, hops[len(hops)-1]), nil
	}
	return d.item(w), nil
}

// text is an issue's description, "" where null.
func text(w wireIssue) string {
	if w.Description == nil {
		return ""
	}
	return *w.Description
}

// Comment implements tracker.Driver: one note, the body with the key's
// marker on its last line, within the user's notes a minute (§2); on the
// issue where a moved one went, as last learnt (moved.go).
func (d *Driver) Comment(ctx context.Context, id, key, body string) (tracker.Comment, error) {
	if err := d.learnMove(ctx, id); err != nil {
		return tracker.Comment{}, err
	}
	a, err := d.do(ctx, noteCreate, trackerhttp.Request{Method: http.MethodPost, Path: d.issuePath(id) + "/notes", Body: map[string]string{"body": d.marker.Mark(escapeQuick(body), key)}})
	if err != nil {
		return tracker.Comment{}, err
	}
	var w wireNote
	if err := decode(a.Body, &w); err != nil || w.ID <= 0 {
		// A 202 is a note of quick actions only, which GitLab does not
		// keep (lib/api/notes.rb): relayr's never is, its marker a line.
		return tracker.Comment{}, trackerhttp.Garbled("gitlab", "note", cmpErr(err))
	}
	return d.comment(id, w), nil
}

// Comments implements tracker.Driver: the issue's notes that are
// comments (activity_filter=only_comments; system notes, a state change
// made in the web UI among them, are left out as well by their system
// flag), created at or after since. GitLab's list takes no since (§6):
// it is read newest first and stops at the first note older than since.
//
// A moved issue's comments (as last learnt, moved.go) are each place's
// own: the original's up to its move, then each new issue's made after
// the move that made it. The move copies the notes with their times and
// new ids; the copies, none newer than the move, are left out, their
// originals answered under their first ids. A place whose time ended
// before since is not read.
func (d *Driver) Comments(ctx context.Context, id string, since time.Time) ([]tracker.Comment, error) {
	var hops []hop
	if n, err := strconv.ParseInt(id, 10, 64); err == nil {
		hops = d.moves(n)
	}
	var out []tracker.Comment
	for i := 0; i <= len(hops); i++ {
		path, from, until := d.issuesPath(id), since, time.Time{}
		if i > 0 {
			h := hops[i-1]
			path = h.issuePath()
			from = later(since, h.movedAt.Add(time.Microsecond))
		}
		if i < len(hops) {
			until = hops[i].movedAt
			if until.Before(since) {
				continue
			}
		}
		cs, err := d.commentsAt(ctx, id, path, from, until)
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	tracker.SortComments(out)
	return out, nil
}

// commentsAt reads the comments of the issue at path created at or after
// since and, where until is set, not after it, as the item id's.
func (d *Driver) commentsAt(ctx context.Context, id, path string, since, until time.Time) ([]tracker.Comment, error) {
	q := url.Values{"sort": {"desc"}, "order_by": {"created_at"}, "activity_filter": {"only_comments"}, "per_page": {strconv.Itoa(PageLimit)}}
	req := trackerhttp.Request{Method: http.MethodGet, Path: path + "/notes", Query: q}
	var out []tracker.Comment
	for {
		a, err := d.do(ctx, anyRequest, req)
		if err != nil {
			return nil, err
		}
		var ws []wireNote
		if err := decode(a.Body, &ws); err != nil {
			return nil, trackerhttp.Garbled("gitlab", "note list", err)
		}
		older := false
		for _, w := range ws {
			if w.ID <= 0 {
				return nil, trackerhttp.Garbled("gitlab", "note list", errGarbled)
			}
			if w.CreatedAt.Before(since) {
				older = true
				continue
			}
			if !w.System && (until.IsZero() || !w.CreatedAt.After(until)) {
				out = append(out, d.comment(id, w))
			}
		}
		next := nextPage(a.Header)
		if older || next == "" || len(ws) == 0 {
			break
		}
		req = trackerhttp.Request{Method: http.MethodGet, URL: next}
	}
	return out, nil
}

// nextPage answers the Link header's rel="next" URL, "" on the last page
// (offset and keyset pages alike, doc/api/rest/_index.md "Pagination").
func nextPage(h http.Header) string {
	for _, v := range h.Values("Link") {
		for part := range strings.SplitSeq(v, ",") {
			u, params, ok := strings.Cut(part, ";")
			if !ok || !strings.Contains(params, `rel="next"`) {
				continue
			}
			u = strings.TrimSpace(u)
			if strings.HasPrefix(u, "<") && strings.HasSuffix(u, ">") {
				return u[1 : len(u)-1]
			}
		}
	}
	return ""
}
