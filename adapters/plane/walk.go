package plane

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
)

// Plane has no "changed since" filter and pages by offset (§3.3, §3.9): an
// item updated while a walk pages moves to one end of the order, an item
// deleted or archived leaves a hole, and every item after it shifts by one.
// A walk that reads page after page would then read an item twice (harmless)
// or skip one (not harmless: a change missed, or a live item taken for
// removed by the sweep).
//
// So each page after the first overlaps the previous one. Plane's offset is
// page × this request's per_page, so the walk picks per_page and page such
// that the page starts a few items before the last one read and reaches past
// it (window). If the first item of a page is one the walk hasn't read,
// items shifted back further than the overlap: the walk steps back until it
// reads a page that starts on familiar ground.

// row is one listed object, with the time it is ordered by.
type row struct {
	id  string
	at  time.Time
	raw json.RawMessage
}

func itemRow(r json.RawMessage) (row, error) {
	w, err := decodeItem(r)
	if err != nil {
		return row{}, err
	}
	at, _ := parseTime(*w.UpdatedAt)
	return row{id: w.ID, at: at, raw: r}, nil
}

func commentRow(r json.RawMessage) (row, error) {
	w, err := decodeComment(r)
	if err != nil {
		return row{}, err
	}
	at, _ := parseTime(*w.CreatedAt)
	return row{id: w.ID, at: at, raw: r}, nil
}

// maxBackoffs bounds the steps back of one walk: past it, the project is
// changing faster than it can be read, and the walk fails as Unavailable.
const maxBackoffs = 64

// overlap is how many items each page re-reads of the one before.
func overlap(size int) int { return min(max(size/10, 1), 20) }

// window picks the page that starts before end (the offset just past the
// last item read), at least overlap items before it where it can, and
// reaches past it, reading as few items twice as it can. checked is false
// when no page can overlap (tiny page sizes): the page then starts at end.
func window(end, size int) (page, perPage int, checked bool) {
	v := overlap(size)
	best, found := 0, false
	for q := size; q >= 1; q-- {
		for _, p := range []int{(end - 1) / q, (end - v) / q} {
			if p < 0 {
				continue
			}
			off := p * q
			if off > end-1 || off+q <= end {
				continue
			}
			again := end - off
			score := (off + q - end) - again
			if again < v {
				score -= size
			}
			if !found || score > best {
				best, page, perPage, found = score, p, q, true
			}
		}
	}
	if !found {
		return end / size, size, false
	}
	return page, perPage, true
}

// itemFields are the work item's fields the adapter reads (wireItem).
// Plane's list, retrieve and external-id lookup honour ?fields=
// (api/views/base.py:L156-159, api/serializers/base.py:L28-70): asking for
// these leaves out description_binary, the web editor's document, which
// can make a page of edited items pass the response cap, and the
// assignees, which cost a query per item (api/serializers/issue.py:L290-320).
const itemFields = "id,name,description_html,state,labels,sequence_id,updated_at,updated_by,archived_at,external_id,external_source,project"

// minPageSize is the smallest page a walk shrinks to.
const minPageSize = 50

// shrinks reports a page that failed for its size: over the response cap,
// or not started within the phase timeout. The walk reads it again at half
// the size, and the driver keeps the smaller size.
func (t *Driver) shrinks(err error, size int) (int, bool) {
	if size <= minPageSize || !tooLarge(err) {
		return size, false
	}
	size = max(size/2, minPageSize)
	t.size.Store(int64(size))
	return size, true
}

// pageSize is the per_page walks start from: Config.PageSize, or what an
// earlier walk shrank it to.
func (t *Driver) pageSize() int { return int(t.size.Load()) }

// fetch reads one page of a list ordered by orderBy ("" for the endpoint's
// own order), with the fields named ("" for all).
func (t *Driver) fetch(ctx context.Context, path, orderBy, fields string, page, perPage int, rowOf func(json.RawMessage) (row, error)) ([]row, bool, error) {
	q := pageQuery(perPage, page)
	if orderBy != "" {
		q.Set("order_by", orderBy)
	}
	if fields != "" {
		q.Set("fields", fields)
	}
	a, err := t.get(ctx, path, q)
	if err != nil {
		return nil, false, err
	}
	env, err := decodeEnvelope(a.Body)
	if err != nil {
		return nil, false, err
	}
	rows := make([]row, 0, len(env.Results))
	for _, r := range env.Results {
		x, err := rowOf(r)
		if err != nil {
			return nil, false, err
		}
		rows = append(rows, x)
	}
	return rows, env.NextPageResults, nil
}

// walkNewestFirst reads a list ordered newest first until a page reaches
// past since, and answers every row read once (the newest reading of each).
// With recheck, a walk of more than one page reads the first page again at
// the end: an item changed during the walk moved there, behind the walk.
func (t *Driver) walkNewestFirst(ctx context.Context, path, orderBy, fields string, since time.Time, rowOf func(json.RawMessage) (row, error), recheck bool) ([]row, error) {
	size := t.pageSize()
	seen := map[string]row{}
	keep := func(rows []row) {
		for _, r := range rows {
			if old, ok := seen[r.id]; !ok || r.at.After(old.at) {
				seen[r.id] = r
			}
		}
	}
	end, pages, backoffs, need := 0, 0, 0, 0
	for {
		page, perPage, checked := 0, size, false
		if end > 0 {
			page, perPage, checked = window(end, size)
			if p, q, ok := reaching(end, size, need); ok && need > 0 {
				page, perPage = p, q
			}
		}
		rows, more, err := t.fetch(ctx, path, orderBy, fields, page, perPage, rowOf)
		if err != nil {
			var ok bool
			if size, ok = t.shrinks(err, size); ok {
				continue
			}
			return nil, err
		}
		off := page * perPage
		if checked && len(rows) > 0 {
			if _, ok := seen[rows[0].id]; !ok {
				if backoffs++; backoffs > maxBackoffs {
					return nil, fmt.Errorf("plane: the list shifted under every page read: %w", tracker.ErrUnavailable)
				}
				end = off
				continue
			}
		}
		keep(rows)
		pages++
		end = nextEnd(end, off, rows)
		need = needNext(need, rows)
		if !more || len(rows) == 0 || rows[len(rows)-1].at.Before(since) {
			break
		}
	}
	if recheck && pages > 1 {
		rows, _, err := t.fetch(ctx, path, orderBy, fields, 0, size, rowOf)
		if err != nil {
			return nil, err
		}
		keep(rows)
	}
	out := make([]row, 0, len(seen))
	for _, r := range seen {
		out = append(out, r)
	}
	sortRows(out)
	return out, nil
}

// reaching picks a page that starts before end and reads at least need rows
// past it, when one does.
func reaching(end, size, need int) (page, perPage int, ok bool) {
	for q := size; q > need; q-- {
		if p := (end - 1) / q; p*q+q >= end+need {
			return p, q, true
		}
	}
	return 0, 0, false
}

// runAtEnd is how many rows at the end of a page share the last one's time.
func runAtEnd(rows []row) int {
	n := 0
	for i := len(rows) - 1; i >= 0 && rows[i].at.Equal(rows[len(rows)-1].at); i-- {
		n++
	}
	return n
}

// needNext is how far past its end the next page must read: a page that
// ended inside a run of equal times (and not on its own first row) is
// followed by one reading the whole run and a row past it, longer each time
// the run outlasts the page; 0 once a page ends past its run.
func needNext(need int, rows []row) int {
	n := runAtEnd(rows)
	if n < 2 || n == len(rows) {
		return 0
	}
	return max(need+1, n+1)
}

// nextEnd is where the next page must reach past: the start of the page's
// last run of rows sharing one time, so the next page reads that run
// again whole. Plane orders by one column with no tie-breaker
// (api/views/issue.py:L394-395), so rows sharing a time may come in
// another order on the next request, and one could slip behind the page
// boundary unread. The end still moves past the previous one.
func nextEnd(prev, off int, rows []row) int {
	k := len(rows)
	for k > 1 && rows[k-2].at.Equal(rows[len(rows)-1].at) {
		k--
	}
	if k == len(rows) || k == 1 && len(rows) > 1 && rows[0].at.Equal(rows[len(rows)-1].at) {
		return off + len(rows)
	}
	return max(off+k-1, prev+1)
}

func sortRows(rows []row) {
	sort.Slice(rows, func(i, j int) bool {
		if !rows[i].at.Equal(rows[j].at) {
			return rows[i].at.Before(rows[j].at)
		}
		return rows[i].id < rows[j].id
	})
}

// Items implements tracker.Driver.
//
// With a Since, it walks order_by=-updated_at down to the first item older
// than Since (the follower has already subtracted its lookback) and answers
// every item changed at or after it in one page, ordered by (updated_at, id).
//
// With a zero Since it streams the whole project a page at a time, walking
// order_by=updated_at upwards, so the pages together are in (updated_at, id)
// order and an item changed during the walk is met again at its end. Page
// tokens carry the walk's position; no more than a page is held.
func (t *Driver) Items(ctx context.Context, q tracker.Query) (tracker.Page, error) {
	path := t.projectPath("work-items/")
	if q.Since.IsZero() {
		return t.sweep(ctx, path, q.Page)
	}
	rows, err := t.walkNewestFirst(ctx, path, "-updated_at", itemFields, q.Since, itemRow, true)
	if err != nil {
		return tracker.Page{}, err
	}
	items := make([]tracker.Item, 0, len(rows))
	for _, r := range rows {
		if r.at.Before(q.Since) {
			continue
		}
		it, err := t.item(ctx, r.raw)
		if err != nil {
			return tracker.Page{}, err
		}
		items = append(items, it)
	}
	return tracker.Page{Items: items}, nil
}

// sweepState is a zero-Since walk's position: the offset just past the last
// item read, and the last (updated_at) answered with the ids answered at it.
type sweepState struct {
	End  int      `json:"e"`
	At   int64    `json:"t,omitempty"` // Unix microseconds
	IDs  []string `json:"i,omitempty"`
	Size int      `json:"s"`
	// Need is how many rows past End the next page must read (needNext).
	Need int `json:"n,omitempty"`
}

func (s sweepState) answered(r row) bool {
	if s.At == 0 && len(s.IDs) == 0 {
		return false
	}
	at := r.at.UnixMicro()
	return at < s.At || (at == s.At && slices.Contains(s.IDs, r.id))
}

func decodePage(token string, size int) (sweepState, error) {
	if token == "" {
		return sweepState{Size: size}, nil
	}
	var s sweepState
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || json.Unmarshal(b, &s) != nil || s.End < 0 || s.Size < 1 || s.Size > DefaultPageSize {
		return s, &tracker.InvalidError{Field: "page", Reason: errBadPage.Error()}
	}
	return s, nil
}

func (s sweepState) encode() string {
	b, _ := json.Marshal(s)
	return base64.RawURLEncoding.EncodeToString(b)
}

// sweep answers the next page of a zero-Since walk.
func (t *Driver) sweep(ctx context.Context, path, token string) (tracker.Page, error) {
	st, err := decodePage(token, t.pageSize())
	if err != nil {
		return tracker.Page{}, err
	}
	for tries := 0; ; tries++ {
		if tries > maxBackoffs {
			return tracker.Page{}, fmt.Errorf("plane: the list shifted under every page read: %w", tracker.ErrUnavailable)
		}
		page, perPage, checked := 0, st.Size, false
		if st.End > 0 {
			page, perPage, checked = window(st.End, st.Size)
			if p, q, ok := reaching(st.End, st.Size, st.Need); ok && st.Need > 0 {
				page, perPage = p, q
			}
		}
		rows, more, err := t.fetch(ctx, path, "updated_at", itemFields, page, perPage, itemRow)
		if err != nil {
			var ok bool
			if st.Size, ok = t.shrinks(err, st.Size); ok {
				continue
			}
			return tracker.Page{}, err
		}
		off := page * perPage
		if checked && len(rows) > 0 && (st.At != 0 || len(st.IDs) > 0) && !st.answered(rows[0]) {
			st.End = off
			continue
		}
		var fresh []row
		for _, r := range rows {
			if !st.answered(r) && !slices.ContainsFunc(fresh, func(f row) bool { return f.id == r.id }) {
				fresh = append(fresh, r)
			}
		}
		sortRows(fresh)
		st.End = nextEnd(st.End, off, rows)
		st.Need = needNext(st.Need, rows)
		if len(fresh) > 0 {
			last := fresh[len(fresh)-1].at.UnixMicro()
			if last != st.At {
				st.At, st.IDs = last, nil
			}
			for _, r := range fresh {
				if r.at.UnixMicro() == last {
					st.IDs = append(st.IDs, r.id)
				}
			}
		}
		if len(fresh) == 0 && more && len(rows) > 0 {
			continue
		}
		if off == 0 && len(rows) == 0 {
			// A project that lists nothing may be archived, which hides
			// every item (db/models/issue.py:L100) but deletes none: a
			// sweep answering it empty would take every item for removed.
			if err := t.checkNotArchived(ctx); err != nil {
				return tracker.Page{}, err
			}
		}
		items := make([]tracker.Item, 0, len(fresh))
		for _, r := range fresh {
			it, err := t.item(ctx, r.raw)
			if err != nil {
				return tracker.Page{}, err
			}
			items = append(items, it)
		}
		next := ""
		if more && len(rows) > 0 {
			next = st.encode()
		}
		return tracker.Page{Items: items, Next: next}, nil
	}
}

// checkNotArchived reads the project, which answers even when archived, with
// archived_at set (api/views/project.py:L287-380).
func (t *Driver) checkNotArchived(ctx context.Context) error {
	a, err := t.get(ctx, t.projectPath(""), url.Values{"fields": {"id,archived_at"}})
	if err != nil {
		return err
	}
	var p struct {
		ArchivedAt *string `json:"archived_at"`
	}
	if err := json.Unmarshal(a.Body, &p); err != nil {
		return garbled("project", err)
	}
	if p.ArchivedAt != nil && *p.ArchivedAt != "" {
		return fmt.Errorf("plane: project %s is archived (since %s): its items are hidden, not removed: %w", t.cfg.Project, tracker.Quote(*p.ArchivedAt), tracker.ErrRefused)
	}
	return nil
}
