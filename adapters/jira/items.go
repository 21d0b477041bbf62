package jira

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// searchResults is one page of the JQL search
// (components.schemas.SearchAndReconcileResults).
type searchResults struct {
	Issues        []wireIssue `json:"issues"`
	NextPageToken string      `json:"nextPageToken"`
	IsLast        bool        `json:"isLast"`
}

// searchPage reads one page of jql (paths./rest/api/3/search/jql.post).
// The old search (startAt) answers 410 since 2025 (§0.2): relayr never
// uses it.
func (d *Driver) searchPage(ctx context.Context, jql, token string, fields, reconcile []string, changelog bool) (searchResults, error) {
	body := map[string]any{"jql": jql, "maxResults": PageSize, "fields": fields, "properties": []string{PropertyKey}}
	if token != "" {
		body["nextPageToken"] = token
	}
	if len(reconcile) > 0 {
		ids := make([]int64, 0, len(reconcile))
		for _, id := range reconcile {
			var n int64
			if _, err := fmt.Sscan(id, &n); err == nil {
				ids = append(ids, n)
			}
		}
		body["reconcileIssues"] = ids
	}
	if changelog {
		body["expand"] = "changelog"
	}
	var pg searchResults
	if _, err := d.read(ctx, trackerhttp.Request{Method: http.MethodPost, Path: "rest/api/3/search/jql", Body: body}, "", "search", &pg, nil); err != nil {
		return searchResults{}, err
	}
	for _, w := range pg.Issues {
		if !w.valid() {
			return searchResults{}, trackerhttp.Garbled("jira", "search", errGarbled)
		}
	}
	return pg, nil
}

// Items implements tracker.Driver: the project's issues updated since
// q.Since, least recently updated first (ORDER BY updated ASC, id ASC), a
// page of 100. JQL reads a time to the minute in the account's time zone
// (§0.4), and the search lags behind writes, so the read starts the
// search's lag before q.Since, at the minute's start in that zone: it may
// answer issues updated before q.Since, never miss one updated after. The
// issues relayr wrote within the lag are read current (reconcileIssues).
//
// Each page after the first is a fresh search from the last issue read
// (its minute, the issues up to it left out), as GitHub's walk is, so that
// an issue updated under the walk moves to its end and shifts no other
// out of a page; only a minute holding more than a page of issues is
// walked on with Jira's nextPageToken. A read of the whole project (a
// zero Since) goes by id, with Jira's nextPageToken.
func (d *Driver) Items(ctx context.Context, q tracker.Query) (tracker.Page, error) {
	if q.Since.IsZero() {
		pg, err := d.searchPage(ctx, "project = "+quoteJQL(d.project)+" ORDER BY id ASC", q.Page, issueFields, d.c.recent(d.cfg.Now()), true)
		if err != nil {
			return tracker.Page{}, err
		}
		return d.page(pg.Issues, !pg.IsLast, pg.NextPageToken), nil
	}
	from, last, token := q.Since.Add(-d.cfg.SearchLag), tracker.Cursor{}, ""
	if q.Page != "" {
		var ok bool
		if last, ok = parsePage(q.Page); !ok {
			return tracker.Page{}, &tracker.InvalidError{Field: "page", Reason: tracker.Quote(q.Page) + " is no page this driver gave"}
		}
		from = last.UpdatedAt
	}
	jql := "project = " + quoteJQL(d.project) + " AND updated >= " + d.minute(from) + " ORDER BY updated ASC, id ASC"
	for {
		pg, err := d.searchPage(ctx, jql, token, issueFields, d.c.recent(d.cfg.Now()), true)
		if err != nil {
			return tracker.Page{}, err
		}
		fresh := pg.Issues
		if !last.UpdatedAt.IsZero() {
			// What the pages before showed is left out.
			fresh = slices.DeleteFunc(slices.Clone(pg.Issues), func(w wireIssue) bool {
				return !last.Before(tracker.Cursor{UpdatedAt: w.Fields.Updated.Time, ID: w.ID})
			})
		}
		more := !pg.IsLast && pg.NextPageToken != ""
		if len(fresh) > 0 || !more {
			out := d.page(fresh, more, "")
			if more {
				tail := out.Items[len(out.Items)-1]
				out.Next = pageToken(tracker.Cursor{UpdatedAt: tail.UpdatedAt, ID: tail.Ref.ID})
			}
			return out, nil
		}
		// A whole page within what was shown, in one minute: walked on.
		token = pg.NextPageToken
	}
}

// page maps a search page onto the port's, ordered by (UpdatedAt, ID).
func (d *Driver) page(issues []wireIssue, more bool, next string) tracker.Page {
	out := tracker.Page{Items: make([]tracker.Item, 0, len(issues))}
	for _, w := range issues {
		out.Items = append(out.Items, d.item(w))
	}
	sortItems(out.Items)
	if more {
		out.Next = next
	}
	return out
}

// pageToken is a page of Items after the first: the last issue read,
// "<updated, Unix ms>:<id>".
func pageToken(last tracker.Cursor) string {
	return fmt.Sprintf("%d:%s", last.UpdatedAt.UnixMilli(), last.ID)
}

func parsePage(p string) (tracker.Cursor, bool) {
	ms, id, ok := strings.Cut(p, ":")
	n, err := strconv.ParseInt(ms, 10, 64)
	if !ok || err != nil || n <= 0 || !tracker.PositiveID(id) {
		return tracker.Cursor{}, false
	}
	return tracker.Cursor{UpdatedAt: time.UnixMilli(n).UTC(), ID: id}, true
}

// sortItems orders a page by (UpdatedAt, ID), as the port wants: Jira's
// ORDER BY does, but reconciled issues may join out of place.
func sortItems(items []tracker.Item) {
	slices.SortStableFunc(items, func(a, b tracker.Item) int {
		x, y := tracker.Cursor{UpdatedAt: a.UpdatedAt, ID: a.Ref.ID}, tracker.Cursor{UpdatedAt: b.UpdatedAt, ID: b.Ref.ID}
		switch {
		case x.Before(y):
			return -1
		case y.Before(x):
			return 1
		}
		return 0
	})
}

// minute is t as a JQL literal: the start of its minute in the account's
// time zone, quoted ("2026/01/31 14:05"), which Jira reads in that zone
// (§0.4). A wall time the zone repeats (the hour a DST change turns back)
// may be read as either instant, so the literal steps back until every
// reading of it is at or before t: it never names a time after t.
func (d *Driver) minute(t time.Time) string {
	local := t.In(d.zone).Truncate(time.Minute)
	for {
		lit := local.Format(jqlLayout)
		if !lastReading(lit, d.zone).After(t) {
			return `"` + lit + `"`
		}
		local = local.Add(-time.Minute)
	}
}

// jqlLayout is a JQL date-time literal's ("yyyy/MM/dd HH:mm").
const jqlLayout = "2006/01/02 15:04"

// lastReading is the latest instant a wall-clock literal names in loc:
// in a repeated hour, the second of its two readings.
func lastReading(lit string, loc *time.Location) time.Time {
	t, err := time.ParseInLocation(jqlLayout, lit, loc)
	if err != nil {
		return time.Time{}
	}
	last := t
	for _, d := range []time.Duration{-2 * time.Hour, -time.Hour, -30 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour} {
		if e := t.Add(d); e.In(loc).Format(jqlLayout) == lit && e.After(last) {
			last = e
		}
	}
	return last
}

// quoteJQL quotes a value for JQL: in double quotes, with backslash and
// quote escaped.
func quoteJQL(v string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
}
