package gitea

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// labelColor is the color a label relayr makes is given: Gitea requires
// one (modules/structs/issue_label.go).
const labelColor = "#ededed"

// know caches a label seen on an issue or in the repository's list.
func (d *Driver) know(l wireLabel) {
	if l.ID <= 0 || l.Name == "" {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.labels[l.Name]; !ok {
		d.labels[l.Name] = l.ID
	}
	d.names[l.ID] = l.Name
}

// cached answers the ids of names the cache holds, and the names it
// doesn't.
func (d *Driver) cached(names []string) (ids []int64, missing []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, n := range names {
		if id, ok := d.labels[n]; ok {
			ids = append(ids, id)
		} else {
			missing = append(missing, n)
		}
	}
	return ids, missing
}

// labelIDs resolves label names to the repository's ids: from the cache,
// else from the repository's labels, else by making them. Gitea never
// makes a label itself and skips unknown ones silently
// (routers/api/v1/repo/issue_label.go:L311-L371), so every name is
// resolved before it is sent.
func (d *Driver) labelIDs(ctx context.Context, names []string) ([]int64, error) {
	if len(names) == 0 {
		return nil, nil
	}
	ids, missing := d.cached(names)
	if len(missing) == 0 {
		return ids, nil
	}
	d.lmu.Lock()
	defer d.lmu.Unlock()
	// A caller that waited here for another's resolution finds the names
	// it made or read: the list is read once a burst, not once a caller.
	if ids, missing = d.cached(names); len(missing) == 0 {
		return ids, nil
	}
	if err := d.loadLabels(ctx); err != nil {
		return nil, err
	}
	if _, missing = d.cached(names); len(missing) > 0 {
		for _, n := range missing {
			if err := d.makeLabel(ctx, n); err != nil {
				return nil, err
			}
		}
	}
	ids, missing = d.cached(names)
	if len(missing) > 0 {
		return nil, fmt.Errorf("gitea: labels %q could not be made: %w", missing, tracker.ErrUnavailable)
	}
	return ids, nil
}

// loadLabels reads every label of the repository into the cache.
func (d *Driver) loadLabels(ctx context.Context) error {
	for page := 1; ; page++ {
		a, err := d.cl.Do(ctx, trackerhttp.Request{Method: http.MethodGet, Path: d.repoPath("labels"),
			Query: url.Values{"page": {strconv.Itoa(page)}, "limit": {strconv.Itoa(PageLimit)}}})
		if err != nil {
			return err
		}
		var ls []wireLabel
		if err := json.Unmarshal(a.Body, &ls); err != nil {
			return trackerhttp.Garbled("gitea", "label list", err)
		}
		for _, l := range ls {
			d.know(l)
		}
		if len(ls) < PageLimit {
			return nil
		}
	}
}

// makeLabel makes a label of the repository. A token that may not is
// refused by Gitea (403: ErrUnauthorized), before any issue is filed.
func (d *Driver) makeLabel(ctx context.Context, name string) error {
	a, err := d.cl.Do(ctx, trackerhttp.Request{Method: http.MethodPost, Path: d.repoPath("labels"),
		Body: map[string]string{"name": name, "color": labelColor}})
	if err != nil {
		return fmt.Errorf("gitea: making label %s: %w", tracker.Quote(name), err)
	}
	var l wireLabel
	if err := json.Unmarshal(a.Body, &l); err != nil || l.ID <= 0 {
		return trackerhttp.Garbled("gitea", "created label", err)
	}
	d.know(l)
	return nil
}
