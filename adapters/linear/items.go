package linear

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/relayr-go/relayr/core/tracker"
)

// Linear lists issues by updatedAt newest first and has no other
// direction (PaginationOrderBy; §0.5), so a read since a time walks the
// team's issues changed at or after it (updatedAt gte, inclusive) down to
// the end and answers them in one page, sorted by (UpdatedAt, ID), as
// Plane's walk down to its cursor does; archived issues come along
// (includeArchived) and trashed ones are left out (read as deleted).
//
// Whether a comment moves its issue's updatedAt is not documented (§6).
// The driver moves it itself: an item's UpdatedAt is the later of the
// issue's and its newest comment's, and a read since a time also reads the
// team's comments created since then, in one request, and reads the issues
// they are on by id where the walk did not list them. A comment so moves
// its item whatever Linear does, and the followers read a poll's comments
// in one read (ProjectComments).
//
// The read of the whole team (a zero since: the seeding read, the sweep)
// pages by creation, newest first, PageSize a page, each page sorted.

var errBadPage = errors.New("not a page token of this tracker")

// firstPage is the first page of a read since a time.
const firstPage = 10

// Items implements tracker.Driver.
func (d *Driver) Items(ctx context.Context, q tracker.Query) (tracker.Page, error) {
	if q.Since.IsZero() {
		return d.all(ctx, q.Page)
	}
	if q.Page != "" {
		return tracker.Page{}, fmt.Errorf("linear: page %s: %w: %w", tracker.Quote(q.Page), errBadPage, tracker.ErrRefused)
	}
	var probe struct {
		Issues   connection[struct{ ID string }] `json:"issues"`
		Comments connection[struct{ ID string }] `json:"comments"`
	}
	if _, err := d.do(ctx, poll, qProbe, map[string]any{"team": d.team.ID, "since": stamp(q.Since)}, &probe); err != nil {
		return tracker.Page{}, err
	}
	if len(probe.Issues.Nodes) == 0 && len(probe.Comments.Nodes) == 0 {
		// Nothing changed: a poll's whole cost, one request of a few
		// points (a page of issues costs thousands, §2).
		return tracker.Page{Items: []tracker.Item{}}, nil
	}
	seen := map[string]*wireIssue{}
	// A poll mostly finds a few changes: its first page is small, for a
	// query's cost multiplies by its first (§2); the rest are whole.
	vars := map[string]any{"team": d.team.ID, "since": stamp(q.Since), "first": firstPage}
	for {
		var page struct {
			Issues connection[*wireIssue] `json:"issues"`
		}
		if _, err := d.do(ctx, poll, qChanged, vars, &page); err != nil {
			return tracker.Page{}, err
		}
		for _, w := range page.Issues.Nodes {
			if !w.valid() {
				return tracker.Page{}, d.garbled()
			}
			seen[w.ID] = w
		}
		if !page.Issues.PageInfo.HasNextPage || page.Issues.PageInfo.EndCursor == "" {
			break
		}
		vars["after"], vars["first"] = page.Issues.PageInfo.EndCursor, PageSize
	}
	cs, _, err := d.teamComments(ctx, q.Since, 0)
	if err != nil {
		return tracker.Page{}, err
	}
	var more []string
	for _, c := range cs {
		if _, ok := seen[c.Issue.ID]; !ok && !slices.Contains(more, c.Issue.ID) {
			more = append(more, c.Issue.ID)
		}
	}
	if len(more) > 0 {
		ws, err := d.byIDs(ctx, more)
		if err != nil {
			return tracker.Page{}, err
		}
		for _, w := range ws {
			seen[w.ID] = w
		}
	}
	out := make([]tracker.Item, 0, len(seen))
	for _, w := range seen {
		if w.trashed() || w.Team.ID != d.team.ID {
			continue
		}
		if it := d.item(w); !it.UpdatedAt.Before(q.Since) {
			out = append(out, it)
		}
	}
	sortItems(out)
	return tracker.Page{Items: out}, nil
}

// all reads one page of the whole team, by creation, newest first.
func (d *Driver) all(ctx context.Context, token string) (tracker.Page, error) {
	vars := map[string]any{"team": d.team.ID}
	if token != "" {
		after, ok := strings.CutPrefix(token, "a:")
		if !ok || after == "" {
			return tracker.Page{}, fmt.Errorf("linear: page %s: %w: %w", tracker.Quote(token), errBadPage, tracker.ErrRefused)
		}
		vars["after"] = after
	}
	var page struct {
		Issues connection[*wireIssue] `json:"issues"`
	}
	if _, err := d.do(ctx, poll, qAll, vars, &page); err != nil {
		return tracker.Page{}, err
	}
	out := make([]tracker.Item, 0, len(page.Issues.Nodes))
	for _, w := range page.Issues.Nodes {
		if !w.valid() {
			return tracker.Page{}, d.garbled()
		}
		if !w.trashed() {
			out = append(out, d.item(w))
		}
	}
	sortItems(out)
	p := tracker.Page{Items: out}
	if page.Issues.PageInfo.HasNextPage && page.Issues.PageInfo.EndCursor != "" {
		p.Next = "a:" + page.Issues.PageInfo.EndCursor
	}
	return p, nil
}

func (d *Driver) garbled() error {
	return fmt.Errorf("linear: the tracker answered an unreadable issue list: %w", tracker.ErrUnavailable)
}

// sortItems orders items by (UpdatedAt, ID).
func sortItems(out []tracker.Item) {
	slices.SortFunc(out, func(a, b tracker.Item) int {
		if tracker.Of(a).Before(tracker.Of(b)) {
			return -1
		}
		if tracker.Of(b).Before(tracker.Of(a)) {
			return 1
		}
		return 0
	})
}
