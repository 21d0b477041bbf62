package gitea

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// Gitea's issue list is ordered by creation, newest first, and filtered by
// since and before on updated_at, both inclusive and to the second
// (models/issues/issue_search.go:L127-L128, L270-L275); it pages by offset,
// 50 at most (docs/trackers/gitea.md §7). An offset walk of a window would
// skip an item whenever another left the window under it (an edit moves an
// item's updated_at past before; a delete removes it): every later item
// shifts up by one, past the offset already read. So Items reads windows
// of time small enough to come whole in one page, one SQL read each: a
// window answered with more than a page is halved until it isn't. An item
// can only move later in time, so one read past a window's end can never
// hide in a window already read: it is in a later window, or past the
// walk's end and read by the next poll (its updated_at is then past the
// cursor). Each window's items are ordered by (updated_at, id) here.
//
// The walk ends a minute past relayr's now, so that an item Gitea's clock
// stamped ahead of relayr's is read. A second it reads may still gain
// items after it was read (the current one, or one stamped so): those are
// read by the next poll, which starts two minutes before the follower's
// cursor (ADR-0036), and so before them. A walk from the beginning (the
// seeding read, the sweep) starts at the oldest issue's creation: no issue
// was updated before it.

// maxWindowItems bounds the items one second can hold in one page of
// Items: more than this changed in one second is read in no page.
const maxWindowItems = 1000

// clockSkew is how far ahead of relayr's clock Gitea's may stamp an item
// and still be read by the walk that follows.
const clockSkew = time.Minute

// walk is where a walk stands: the window [from, to] still to read, in
// Unix seconds, and the width of the last window read whole.
type walk struct {
	from, to, width int64
}

func (w walk) String() string { return fmt.Sprintf("%d:%d:%d", w.from, w.to, w.width) }

var errBadPage = errors.New("not a page token of this tracker")

func parseWalk(s string) (walk, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return walk{}, errBadPage
	}
	var n [3]int64
	for i, p := range parts {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil || v < 0 {
			return walk{}, errBadPage
		}
		n[i] = v
	}
	w := walk{from: n[0], to: n[1], width: n[2]}
	if w.from > w.to || w.width < 1 {
		return walk{}, errBadPage
	}
	return w, nil
}

// Items implements tracker.Driver: the next window of the walk, whole and
// ordered. Pull requests are left out (type=issues).
func (d *Driver) Items(ctx context.Context, q tracker.Query) (tracker.Page, error) {
	var w walk
	if q.Page != "" {
		var err error
		if w, err = parseWalk(q.Page); err != nil {
			return tracker.Page{}, fmt.Errorf("gitea: page %s: %w: %w", tracker.Quote(q.Page), err, tracker.ErrRefused)
		}
	} else {
		w.to = d.cfg.Now().Add(clockSkew).Unix()
		if q.Since.IsZero() {
			first, whole, err := d.start(ctx, w.to)
			if err != nil || whole != nil {
				return tracker.Page{Items: whole}, err
			}
			w.from = first
		} else {
			w.from = q.Since.Unix()
		}
		if w.from > w.to {
			return tracker.Page{}, nil
		}
		w.width = w.to - w.from + 1
	}
	items, end, err := d.window(ctx, w)
	if err != nil {
		return tracker.Page{}, err
	}
	p := tracker.Page{Items: items}
	if end < w.to {
		p.Next = walk{from: end + 1, to: w.to, width: min(2*(end-w.from+1), w.to-end)}.String()
	}
	return p, nil
}

// start begins a walk of the whole repository: a repository of at most a
// page answers whole at once (ordered); a larger one answers when its
// oldest issue was made, where the walk starts.
func (d *Driver) start(ctx context.Context, to int64) (int64, []tracker.Item, error) {
	q := d.windowQuery(0, to)
	ws, total, err := d.windowPage(ctx, q, 1)
	if err != nil {
		return 0, nil, err
	}
	if total <= int64(len(ws)) && len(ws) < PageLimit {
		if len(ws) == 0 {
			return 0, []tracker.Item{}, nil
		}
		return 0, d.ordered(ws), nil
	}
	last := max((total+PageLimit-1)/PageLimit, 1)
	old, _, err := d.windowPage(ctx, q, last)
	if err != nil {
		return 0, nil, err
	}
	oldest := to
	for _, w := range append(old, ws...) {
		if c := w.CreatedAt.Unix(); c > 0 && c < oldest {
			oldest = c
		}
	}
	return oldest, nil, nil
}

// window reads the first window of w that comes whole in one page,
// halving it until it does, and answers its items ordered and where it
// ends. A window of one second is read page by page.
func (d *Driver) window(ctx context.Context, w walk) ([]tracker.Item, int64, error) {
	width := max(min(w.width, w.to-w.from+1), 1)
	for {
		end := w.from + width - 1
		ws, total, err := d.windowPage(ctx, d.windowQuery(w.from, end), 1)
		if err != nil {
			return nil, 0, err
		}
		if total <= int64(len(ws)) && len(ws) < PageLimit {
			return d.ordered(ws), end, nil
		}
		if width == 1 {
			all, err := d.second(ctx, w.from, ws, total)
			return all, end, err
		}
		width /= 2
	}
}

// second reads one second's window whole, page by page, from its first
// page. An offset walk is safe only if nothing left the second under it:
// the pages read must hold as many issues as the first page's total, or
// the second is read again.
func (d *Driver) second(ctx context.Context, at int64, first []wireIssue, total int64) ([]tracker.Item, error) {
	q := d.windowQuery(at, at)
	for attempt := 0; attempt < 3; attempt++ {
		if total > maxWindowItems {
			return nil, fmt.Errorf("gitea: %d issues changed in the second %s, over the %d a read can hold: %w", total, time.Unix(at, 0).UTC().Format(time.RFC3339), maxWindowItems, tracker.ErrUnavailable)
		}
		seen := map[int64]wireIssue{}
		for _, w := range first {
			seen[w.ID] = w
		}
		for page := int64(2); len(first) == PageLimit; page++ {
			ws, _, err := d.windowPage(ctx, q, page)
			if err != nil {
				return nil, err
			}
			for _, w := range ws {
				seen[w.ID] = w
			}
			first = ws
		}
		if int64(len(seen)) >= total {
			all := make([]wireIssue, 0, len(seen))
			for _, w := range seen {
				all = append(all, w)
			}
			return d.ordered(all), nil
		}
		var err error
		if first, total, err = d.windowPage(ctx, q, 1); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("gitea: the second %s changed under every read of it: %w", time.Unix(at, 0).UTC().Format(time.RFC3339), tracker.ErrUnavailable)
}

func (d *Driver) windowQuery(from, to int64) url.Values {
	q := url.Values{"state": {"all"}, "type": {"issues"}, "limit": {strconv.Itoa(PageLimit)},
		"before": {time.Unix(to, 0).UTC().Format(time.RFC3339)}}
	if from > 0 {
		q.Set("since", time.Unix(from, 0).UTC().Format(time.RFC3339))
	}
	return q
}

// windowPage reads one page of a window and the window's total
// (X-Total-Count; a page past the end answers none).
func (d *Driver) windowPage(ctx context.Context, q url.Values, page int64) ([]wireIssue, int64, error) {
	q.Set("page", strconv.FormatInt(page, 10))
	a, err := d.cl.Do(ctx, trackerhttp.Request{Method: http.MethodGet, Path: d.repoPath("issues"), Query: q})
	if err != nil {
		return nil, 0, err
	}
	ws, err := decodeIssues(a.Body)
	if err != nil {
		return nil, 0, trackerhttp.Garbled("gitea", "issue list", err)
	}
	total, err := strconv.ParseInt(a.Header.Get("X-Total-Count"), 10, 64)
	if err != nil || total < 0 {
		// Without the count, a full page may not be the window whole.
		total = int64(len(ws))
		if len(ws) == PageLimit {
			total++
		}
	}
	return ws, total, nil
}

// ordered maps issues onto items, pull requests left out, ordered by
// (updated_at, id).
func (d *Driver) ordered(ws []wireIssue) []tracker.Item {
	out := make([]tracker.Item, 0, len(ws))
	for _, w := range ws {
		if !w.pull() {
			out = append(out, d.item(w))
		}
	}
	sort.Slice(out, func(i, j int) bool { return tracker.Of(out[i]).Before(tracker.Of(out[j])) })
	return out
}
