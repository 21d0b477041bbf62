package gitlab

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// findPages is how many pages of the user's issues FindKeys reads before
// it answers incomplete (each key then looked up on its own).
const findPages = 5

// errLagging: a look-up found nothing once and must read again, the list's
// lag later, before it concludes "never filed".
var errLagging = errors.New("no issue found yet, and GitLab's lists may show one late")

// errMorePages: FindKeys stopped short.
var errMorePages = errors.New("more pages")

// Find implements tracker.Driver: the issues the token's user filed in the
// project, newest first (author_username, state=all, issue_type=issue,
// order_by=created_at), matched by their marker exactly; the oldest under
// the key answers. Never the search: it drops tokens of 50 characters and
// more, and GitLab limits it to a few requests a minute (§4). GitLab's
// lists may read a replica (§10), so "none" is concluded only from two
// reads at least Config.ListLag apart, as on Jira (ADR-1011): the first
// that finds nothing waits out the rest where the caller's deadline
// allows, and answers rate-limited for that long where it doesn't.
func (d *Driver) Find(ctx context.Context, key string) (tracker.Item, error) {
	found, err := d.lookup(ctx, []string{key}, time.Time{}, 0)
	if err != nil {
		return tracker.Item{}, err
	}
	if it, ok := found[key]; ok {
		return it, nil
	}
	return tracker.Item{}, fmt.Errorf("gitlab: no issue holds key %s: %w", tracker.Quote(key), tracker.ErrNotFound)
}

// FindKeys implements tracker.KeysFinder: the user's issues created since
// since (created_after), newest first, every key answered from the same
// pages, with Find's rule for the keys it doesn't find. It reads at most a
// few pages; beyond them, or where the caller's deadline cuts the lag's
// wait, it answers incomplete.
func (d *Driver) FindKeys(ctx context.Context, keys []string, since time.Time) (map[string]tracker.Item, bool, error) {
	found, err := d.lookup(ctx, keys, since, findPages)
	if err != nil {
		if (errors.Is(err, errLagging) || errors.Is(err, errMorePages)) && found != nil {
			return found, false, nil
		}
		return nil, false, err
	}
	return found, true, nil
}

// lookup answers the items filed under keys since since (zero: ever),
// after two reads at least the list's lag apart for any key the first
// didn't find, unless each was already missing from one that long ago.
func (d *Driver) lookup(ctx context.Context, keys []string, since time.Time, pages int) (map[string]tracker.Item, error) {
	found, err := d.mine(ctx, keys, since, pages)
	if err != nil {
		return found, err
	}
	missing := slices.DeleteFunc(slices.Clone(keys), func(k string) bool { _, ok := found[k]; return ok })
	if len(missing) == 0 {
		return found, nil
	}
	wait := d.c.misses.Wait(d.source, missing, d.cfg.Now(), d.cfg.ListLag)
	if wait <= 0 {
		d.c.misses.Forget(d.source, missing)
		return found, nil
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
		return found, tracker.NotSent(fmt.Errorf("gitlab: %w: asked again in %s: %w", errLagging, wait.Round(time.Millisecond), tracker.RateLimited(wait)))
	}
	if err := d.cfg.Sleep(ctx, wait); err != nil {
		return found, tracker.NotSent(fmt.Errorf("gitlab: %w: %w", errLagging, err))
	}
	again, err := d.mine(ctx, missing, since, pages)
	maps.Copy(found, again)
	if err != nil {
		return found, err
	}
	d.c.misses.Forget(d.source, missing)
	return found, nil
}

// mine reads the issues the token's user filed (since since), newest
// first, and answers those marked with one of keys, each the oldest under
// its key. pages bounds the pages read (0: every page); reading more
// answers errMorePages with what was found.
func (d *Driver) mine(ctx context.Context, keys []string, since time.Time, pages int) (map[string]tracker.Item, error) {
	want := map[string]bool{}
	for _, k := range keys {
		want[k] = true
	}
	q := url.Values{"author_username": {d.user.Username}, "state": {"all"}, "issue_type": {"issue"},
		"order_by": {"created_at"}, "sort": {"desc"}, "per_page": {strconv.Itoa(PageLimit)}, "pagination": {"keyset"}}
	if !since.IsZero() {
		q.Set("created_after", stamp(since))
	}
	req := trackerhttp.Request{Method: http.MethodGet, Path: d.issuesPath(""), Query: q}
	found := map[string]tracker.Item{}
	for page := 1; ; page++ {
		ws, a, err := d.list(ctx, req)
		if err != nil {
			return found, err
		}
		for _, w := range ws {
			if it := d.item(w); want[it.Ref.Key] {
				found[it.Ref.Key] = it // newest first: the last seen is the first filed
			}
		}
		next := nextPage(a.Header)
		if next == "" || len(ws) == 0 {
			return found, nil
		}
		if pages > 0 && page >= pages {
			return found, errMorePages
		}
		req = trackerhttp.Request{Method: http.MethodGet, URL: next}
	}
}

// list reads one page of the project's issue list; issues of other types
// (tasks, incidents, test cases) are left out.
func (d *Driver) list(ctx context.Context, req trackerhttp.Request) ([]wireIssue, trackerhttp.Answer, error) {
	a, err := d.do(ctx, anyRequest, req)
	if err != nil {
		return nil, a, err
	}
	var ws []wireIssue
	if err := decode(a.Body, &ws); err != nil {
		return nil, a, trackerhttp.Garbled("gitlab", "issue list", err)
	}
	out := ws[:0]
	for _, w := range ws {
		if !w.valid() {
			return nil, a, trackerhttp.Garbled("gitlab", "issue list", errGarbled)
		}
		if w.IssueType == "" || w.IssueType == "issue" {
			out = append(out, w)
		}
	}
	return out, a, nil
}

// FetchItems implements tracker.ItemsFetcher: the issues of ids, current,
// a hundred a request (iids[], state=all, §8): the sweep's check of the
// issues its listing no longer shows. The list may read a replica behind
// (§10), so an id it doesn't answer is read on its own, from the primary,
// and left out only where that read finds it gone (deleted, or hidden
// from the token's user).
func (d *Driver) FetchItems(ctx context.Context, ids []string) (map[string]tracker.Item, error) {
	out := map[string]tracker.Item{}
	for chunk := range slices.Chunk(ids, MaxIIDs) {
		q := url.Values{"state": {"all"}, "issue_type": {"issue"}, "per_page": {strconv.Itoa(PageLimit)}, "iids[]": chunk}
		ws, _, err := d.list(ctx, trackerhttp.Request{Method: http.MethodGet, Path: d.issuesPath(""), Query: q})
		if err != nil {
			return nil, err
		}
		for _, w := range ws {
			// A moved issue is answered where it went, and left out
			// where that is gone (moved.go).
			it, err := d.resolved(ctx, w)
			switch {
			case errors.Is(err, tracker.ErrNotFound):
				out[strconv.FormatInt(w.IID, 10)] = tracker.Item{}
				continue
			case err != nil:
				return nil, err
			}
			out[it.Ref.ID] = it
		}
	}
	for _, id := range ids {
		if it, ok := out[id]; ok {
			if it.Ref.ID == "" {
				delete(out, id) // moved where the token cannot read it
			}
			continue
		}
		it, err := d.Item(ctx, id)
		switch {
		case err == nil:
			out[id] = it
		case !errors.Is(err, tracker.ErrNotFound):
			return nil, err
		}
	}
	return out, nil
}

// stamp is a time as GitLab's filters take it: ISO 8601, in UTC, to the
// microsecond (GitLab stores microseconds and compares them, §7).
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }
