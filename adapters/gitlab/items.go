package gitlab

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// GitLab lists a project's issues changed since a time oldest change
// first: updated_after (inclusive, compared to the microsecond GitLab
// stores) with order_by=updated_at&sort=asc (doc/api/issues.md; §7). Its
// times are rendered to the millisecond, so issues GitLab orders by their
// microseconds may share a rendered time in another order than their
// iids. An offset walk would skip an issue whenever one before it moved
// on under the walk, and stops at an offset of 50,000 (§2); so each page
// is a fresh read from where the last one ended: a page answers the
// issues of every millisecond it holds whole (all but its last, unless it
// is the last page), ordered by (updated_at, iid), and the next page reads
// from its last millisecond again. An issue changed under the walk is read
// again, later, as it now is. A page of issues that all share one
// millisecond (a bulk edit or an import) is read whole through its pages,
// keyset where GitLab has it (18.3 and later) and offset otherwise, up to
// maxInstant issues.

// maxInstant bounds the issues one millisecond holds in one page of Items.
const maxInstant = 1000

var errBadPage = errors.New("not a page token of this tracker")

// Items implements tracker.Driver. A page token is the millisecond the
// next read starts at, in Unix microseconds.
func (d *Driver) Items(ctx context.Context, q tracker.Query) (tracker.Page, error) {
	from := q.Since
	if q.Page != "" {
		us, err := strconv.ParseInt(q.Page, 10, 64)
		if err != nil || us < 0 {
			return tracker.Page{}, fmt.Errorf("gitlab: page %s: %w: %w", tracker.Quote(q.Page), errBadPage, tracker.ErrRefused)
		}
		from = time.UnixMicro(us).UTC()
	}
	ws, a, err := d.list(ctx, d.changedSince(from, time.Time{}))
	if err != nil {
		return tracker.Page{}, err
	}
	if len(ws) == 0 || nextPage(a.Header) == "" && len(ws) < PageLimit {
		// The last page: with it, the issues moved out of the project
		// and followed, read again one GET each, whose changes the
		// project's list doesn't show (moved.go).
		its, err := d.ordered(ctx, ws)
		if err != nil {
			return tracker.Page{}, err
		}
		seen := map[string]bool{}
		for _, it := range its {
			seen[it.Ref.ID] = true
		}
		more, err := d.followedChanges(ctx, q.Since, seen)
		if err != nil {
			return tracker.Page{}, err
		}
		if len(more) > 0 {
			its = append(its, more...)
			sortItems(its)
		}
		return tracker.Page{Items: its}, nil
	}
	// A full page: its last millisecond may go on in the next one.
	last := ws[len(ws)-1].UpdatedAt.UTC().Truncate(time.Millisecond)
	for _, w := range ws {
		last = later(last, w.UpdatedAt.UTC().Truncate(time.Millisecond))
	}
	whole := slices.DeleteFunc(slices.Clone(ws), func(w wireIssue) bool { return !w.UpdatedAt.Before(last) })
	if len(whole) > 0 {
		its, err := d.ordered(ctx, whole)
		if err != nil {
			return tracker.Page{}, err
		}
		return tracker.Page{Items: its, Next: strconv.FormatInt(last.UnixMicro(), 10)}, nil
	}
	// Every issue of the page changed in one millisecond.
	all, err := d.instant(ctx, last)
	if err != nil {
		return tracker.Page{}, err
	}
	return tracker.Page{Items: all, Next: strconv.FormatInt(last.Add(time.Millisecond).UnixMicro(), 10)}, nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// changedSince is the list of the issues changed at or after from (every
// issue for a zero from), oldest change first, up to before where set.
func (d *Driver) changedSince(from, before time.Time) trackerhttp.Request {
	q := url.Values{"state": {"all"}, "issue_type": {"issue"}, "order_by": {"updated_at"}, "sort": {"asc"},
		"per_page": {strconv.Itoa(PageLimit)}, "pagination": {"keyset"}}
	if !from.IsZero() {
		q.Set("updated_after", stamp(from))
	}
	if !before.IsZero() {
		q.Set("updated_before", stamp(before))
	}
	return trackerhttp.Request{Method: http.MethodGet, Path: d.issuesPath(""), Query: q}
}

// instant reads every issue changed in the millisecond at, through its
// pages. Offset pages (a GitLab before 18.3 ignores pagination=keyset,
// and answers X-Page) are safe only if nothing left the millisecond under
// the walk: the pages must hold as many issues as the first one's
// X-Total, or the millisecond is read again.
func (d *Driver) instant(ctx context.Context, at time.Time) ([]tracker.Item, error) {
	first := d.changedSince(at, at.Add(time.Millisecond-time.Microsecond))
	for range 3 {
		seen := map[int64]wireIssue{}
		req, total := first, -1
		for {
			ws, a, err := d.list(ctx, req)
			if err != nil {
				return nil, err
			}
			if n, err := strconv.Atoi(a.Header.Get("X-Total")); err == nil && total < 0 {
				total = n
			}
			for _, w := range ws {
				seen[w.ID] = w
			}
			if len(seen) > maxInstant {
				return nil, fmt.Errorf("gitlab: over %d issues changed in the millisecond %s, more than a read holds: %w", maxInstant, at.Format(time.RFC3339Nano), tracker.ErrUnavailable)
			}
			next := nextPage(a.Header)
			if next == "" || len(ws) == 0 {
				break
			}
			req = trackerhttp.Request{Method: http.MethodGet, URL: next}
		}
		if total < 0 || len(seen) >= total {
			out := make([]wireIssue, 0, len(seen))
			for _, w := range seen {
				out = append(out, w)
			}
			return d.ordered(ctx, out)
		}
	}
	return nil, fmt.Errorf("gitlab: the millisecond %s changed under every read of it: %w", at.Format(time.RFC3339Nano), tracker.ErrUnavailable)
}

// A list may read a replica behind the primary (§10), and on GitLab two
// versions of an issue may share an updated_at: a comment or a label-only
// edit within a minute of its last change leaves it (§0.5). A list could
// so answer an issue's labels as they were before a change relayr already
// read from the primary, with nothing to tell it older, and the follower
// would publish the labels going back. So the issues the driver read from
// the primary (by iid, or as a write's answer) within the list's lag are
// answered as read there, where the list shows them no later.

type freshKey struct {
	project, iid int64
}

type freshRead struct {
	w  wireIssue
	at time.Time // when it was read
}

// readFresh notes an issue read from the primary.
func (d *Driver) readFresh(w wireIssue) {
	now := d.cfg.Now()
	c := d.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.fresh) > 10000 {
		for k, r := range c.fresh {
			if now.Sub(r.at) >= d.cfg.ListLag {
				delete(c.fresh, k)
			}
		}
	}
	c.fresh[freshKey{d.project, w.IID}] = freshRead{w: w, at: now}
}

// current answers the issue as last read from the primary within the
// list's lag, where the list's version is no later.
func (d *Driver) current(w wireIssue) wireIssue {
	now := d.cfg.Now()
	c := d.c
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.fresh[freshKey{d.project, w.IID}]
	switch {
	case !ok:
		return w
	case now.Sub(r.at) >= d.cfg.ListLag:
		delete(c.fresh, freshKey{d.project, w.IID})
		return w
	case r.w.ID == w.ID && !w.UpdatedAt.After(r.w.UpdatedAt):
		return r.w
	}
	return w
}

// ordered maps changed issues onto items ordered by (updated_at, iid): a
// moved one answered where it went (moved.go), one gone from there left
// out (the sweep finds it gone), and each named its last updater where
// GitLab's events say (actors.go).
func (d *Driver) ordered(ctx context.Context, ws []wireIssue) ([]tracker.Item, error) {
	out := make([]tracker.Item, 0, len(ws))
	for _, w := range ws {
		w = d.current(w)
		cur, hops, err := d.follow(ctx, w)
		switch {
		case errors.Is(err, tracker.ErrNotFound):
			continue
		case err != nil:
			return nil, err
		}
		it, path := d.item(cur), d.issuesPath(strconv.FormatInt(cur.IID, 10))
		if len(hops) > 0 {
			it, path = d.movedItem(w, cur, hops), hops[len(hops)-1].issuePath()
		}
		if it.UpdatedBy, err = d.actor(ctx, path, cur, it.UpdatedBy); err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	sortItems(out)
	return out, nil
}

// sortItems orders items by (updated_at, id).
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
