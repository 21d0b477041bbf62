package jira

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// Find implements tracker.Driver: the issues the account reported in the
// project, newest first, with relayr's property (lookup). Jira's search
// lags behind writes, so "none" is concluded only from two reads at least
// Config.SearchLag apart (ADR-1011): the first read that finds nothing
// waits out the rest of the lag where the caller's deadline allows, and
// answers rate-limited for that long where it doesn't.
func (d *Driver) Find(ctx context.Context, key string) (tracker.Item, error) {
	found, err := d.lookup(ctx, []string{key}, time.Time{})
	if err != nil {
		return tracker.Item{}, err
	}
	if it, ok := found[key]; ok {
		return it, nil
	}
	return tracker.Item{}, fmt.Errorf("jira: no issue holds key %s: %w", tracker.Quote(key), tracker.ErrNotFound)
}

// FindKeys implements tracker.KeysFinder: one search of the issues the
// account reported since since (to the minute, in its time zone), every
// key answered from it, with Find's rule for keys it doesn't find. The
// read is complete unless the caller's deadline cuts the lag's wait.
func (d *Driver) FindKeys(ctx context.Context, keys []string, since time.Time) (map[string]tracker.Item, bool, error) {
	found, err := d.lookup(ctx, keys, since)
	if err != nil {
		if errors.Is(err, errLagging) && found != nil {
			return found, false, nil
		}
		return nil, false, err
	}
	return found, true, nil
}

// lookup answers the items filed under keys since since (zero: ever),
// after two searches at least the search's lag apart for any key the first
// didn't find, unless each was already missing from one that long ago.
// A lag the caller's deadline doesn't leave room for answers what was
// found with a rate-limited error.
func (d *Driver) lookup(ctx context.Context, keys []string, since time.Time) (map[string]tracker.Item, error) {
	found, err := d.search(ctx, keys, since)
	if err != nil {
		return nil, err
	}
	missing := slices.DeleteFunc(slices.Clone(keys), func(k string) bool { _, ok := found[k]; return ok })
	if len(missing) == 0 {
		return found, nil
	}
	now := d.cfg.Now()
	wait := d.c.misses.Wait(d.source, missing, now, d.cfg.SearchLag)
	if wait <= 0 {
		d.c.misses.Forget(d.source, missing)
		return found, nil
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
		return found, tracker.NotSent(fmt.Errorf("jira: %w: asked again in %s: %w", errLagging, wait.Round(time.Millisecond), tracker.RateLimited(wait)))
	}
	if err := d.cfg.Sleep(ctx, wait); err != nil {
		return found, tracker.NotSent(fmt.Errorf("jira: %w: %w", errLagging, err))
	}
	again, err := d.search(ctx, missing, since)
	if err != nil {
		return nil, err
	}
	maps.Copy(found, again)
	d.c.misses.Forget(d.source, missing)
	return found, nil
}

// search reads the project's issues the account reported (since since,
// newest first) with relayr's property, and answers those of keys, each
// the oldest under its key, read again by id (bulkfetch) so that what is
// answered is current, not the search's index.
func (d *Driver) search(ctx context.Context, keys []string, since time.Time) (map[string]tracker.Item, error) {
	want := map[string]bool{}
	for _, k := range keys {
		want[k] = true
	}
	jql := fmt.Sprintf("project = %s AND reporter = currentUser()", quoteJQL(d.project))
	if !since.IsZero() {
		jql += " AND created >= " + d.minute(since)
	}
	jql += " ORDER BY created DESC, id DESC"
	ids := map[string]string{} // key → id of the oldest issue under it
	token := ""
	for {
		pg, err := d.searchPage(ctx, jql, token, []string{"created"}, nil, false)
		if err != nil {
			return nil, err
		}
		for _, w := range pg.Issues {
			if k := d.propertyKey(w); want[k] {
				ids[k] = w.ID // newest first: the last seen is the first filed
			}
		}
		if pg.NextPageToken == "" || pg.IsLast {
			break
		}
		token = pg.NextPageToken
	}
	items, err := d.fetch(ctx, slices.Collect(maps.Values(ids)))
	if err != nil {
		return nil, err
	}
	found := map[string]tracker.Item{}
	for k, id := range ids {
		if it, ok := items[id]; ok {
			found[k] = it
		}
	}
	return found, nil
}

// FetchItems implements tracker.ItemsFetcher: the issues of ids by id,
// current, a hundred a request (bulkfetch); an id Jira doesn't answer is
// deleted, hidden from the account, or moved out of the project: the
// sweep's check of the issues its listing no longer shows.
func (d *Driver) FetchItems(ctx context.Context, ids []string) (map[string]tracker.Item, error) {
	return d.fetch(ctx, slices.Clone(ids))
}

// fetch reads issues by id, current, 100 a request
// (paths./rest/api/3/issue/bulkfetch.post); an id Jira doesn't answer
// (deleted, or hidden from the account) is left out, as one moved out of
// the project.
func (d *Driver) fetch(ctx context.Context, ids []string) (map[string]tracker.Item, error) {
	out := map[string]tracker.Item{}
	slices.SortFunc(ids, func(a, b string) int {
		if tracker.LessID(a, b) {
			return -1
		}
		return 1
	})
	for chunk := range slices.Chunk(ids, MaxBulkFetch) {
		var pg struct {
			Issues []wireIssue `json:"issues"`
		}
		body := map[string]any{"issueIdsOrKeys": chunk, "fields": issueFields, "properties": []string{PropertyKey}, "expand": []string{"changelog"}}
		req := trackerhttp.Request{Method: http.MethodPost, Path: "rest/api/3/issue/bulkfetch", Body: body}
		if _, err := d.read(ctx, req, "", "issues", &pg, nil); err != nil {
			return nil, err
		}
		for _, w := range pg.Issues {
			if !w.valid() {
				return nil, trackerhttp.Garbled("jira", "issues", errGarbled)
			}
			if w.Fields.Project.Key == d.project {
				out[w.ID] = d.item(w)
			}
		}
	}
	return out, nil
}

// wrote notes that relayr wrote the issue: the reads within the search's
// lag ask Jira for it by id (reconcileIssues).
func (c *Connector) wrote(id string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes[id] = now
}

// recent answers the issues relayr wrote within the lag, newest first, at
// most MaxReconcile.
func (c *Connector) recent(now time.Time) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []string
	for id, t := range c.writes {
		if now.Sub(t) > c.cfg.SearchLag {
			delete(c.writes, id)
			continue
		}
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return c.writes[b].Compare(c.writes[a]) })
	return ids[:min(len(ids), MaxReconcile)]
}
