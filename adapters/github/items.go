package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// GitHub lists the issues changed since a time, least recently updated
// first (sort=updated&direction=asc&since=; since is "at or after", to the
// second, docs/trackers/github.md §7), paged by number. A walk by page
// number would skip an issue whenever one it had read was updated under
// it: that one jumps to the end and every later one shifts back a place.
// So each page is a fresh read from the last time the one before reached
// (since is inclusive, so that second is read again, which the follower
// takes as it is): an issue can only move later, so it is read later or by
// the next poll, never skipped. Only a page whose every issue shares one
// second goes on by page number within that second.
//
// The first read of a poll is conditional: an idle poll asks the same
// question as the one before (the follower's since moves only with its
// cursor) and is answered 304, which costs nothing of the hour.

// walk is where a walk stands: the time it reads from (Unix seconds, 0
// for the whole repository) and the page within it.
type walk struct{ since, page int64 }

func (w walk) String() string { return fmt.Sprintf("%d:%d", w.since, w.page) }

var errBadPage = errors.New("not a page token of this tracker")

func parseWalk(s string) (walk, error) {
	a, b, ok := strings.Cut(s, ":")
	since, err1 := strconv.ParseInt(a, 10, 64)
	page, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || since < 0 || page < 1 {
		return walk{}, errBadPage
	}
	return walk{since: since, page: page}, nil
}

// Items implements tracker.Driver: one page of the walk, pull requests
// left out.
func (d *Driver) Items(ctx context.Context, q tracker.Query) (tracker.Page, error) {
	w := walk{page: 1}
	if q.Page != "" {
		var err error
		if w, err = parseWalk(q.Page); err != nil {
			return tracker.Page{}, fmt.Errorf("github: page %s: %w: %w", tracker.Quote(q.Page), err, tracker.ErrRefused)
		}
	} else if !q.Since.IsZero() {
		w.since = q.Since.Unix()
	}
	query := url.Values{"state": {"all"}, "sort": {"updated"}, "direction": {"asc"}, "per_page": {strconv.Itoa(PerPage)}, "page": {strconv.FormatInt(w.page, 10)}}
	if w.since > 0 {
		query.Set("since", time.Unix(w.since, 0).UTC().Format(time.RFC3339))
	}
	a, err := d.do(ctx, trackerhttp.Request{Method: http.MethodGet, Path: d.repoPath("issues"), Query: query, Conditional: q.Page == ""})
	if err != nil {
		return tracker.Page{}, err
	}
	ws, err := decodeIssues(a.Body)
	if err != nil {
		return tracker.Page{}, trackerhttp.Garbled("github", "issue list", err)
	}
	p := tracker.Page{Items: make([]tracker.Item, 0, len(ws))}
	for _, w := range ws {
		if !w.pull() {
			p.Items = append(p.Items, d.listed(w))
		}
	}
	if len(ws) < PerPage || nextLink(a.Header) == "" {
		return p, nil
	}
	last := ws[len(ws)-1].UpdatedAt.Unix()
	if last > w.since {
		p.Next = walk{since: last, page: 1}.String()
	} else {
		p.Next = walk{since: w.since, page: w.page + 1}.String()
	}
	return p, nil
}

// nextLink answers the Link header's rel="next" URL, "" on the last page
// (docs using-pagination-in-the-rest-api).
func nextLink(h http.Header) string { return relLink(h, "next") }

// relLink answers the Link header's URL of relation rel, "" when it has
// none.
func relLink(h http.Header, rel string) string {
	for _, v := range h.Values("Link") {
		for _, part := range strings.Split(v, ",") {
			target, params, ok := strings.Cut(strings.TrimSpace(part), ";")
			if !ok || !strings.Contains(strings.ReplaceAll(params, " ", ""), `rel="`+rel+`"`) {
				continue
			}
			return strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(target), "<"), ">")
		}
	}
	return ""
}

// pages answers how many pages a list has, from the first page's Link
// rel="last" (1 when there is none: the first page is the last).
func pages(h http.Header) int {
	last := relLink(h, "last")
	if last == "" {
		return 1
	}
	u, err := url.Parse(last)
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(u.Query().Get("page"))
	if err != nil || n < 1 {
		return 0
	}
	return n
}
