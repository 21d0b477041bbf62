package vikunja

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// Labels are resolved by title to ids, cached per driver: a title not yet
// known is looked up among the labels the token sees, and created when
// missing. They are added and removed one at a time (the single endpoints
// bump the task's updated; the bulk one doesn't).

// errStaleLabel: a label id the cache holds names no label now (404, code
// 8002): a person deleted it since it was resolved.
var errStaleLabel = errors.New("vikunja: the label no longer exists")

// addLabel adds the label titled title, resolved to label, and answers the
// id it added and when (the task's updated moved then). A label already on
// the task is no error. A label a person deleted since it was resolved is
// forgotten and resolved again, once: its 404 is the label's, never the
// task's (which would read as the task deleted).
func (t *driver) addLabel(ctx context.Context, task int64, title string, label int64) (int64, time.Time, error) {
	at, err := t.putLabel(ctx, task, label)
	if !errors.Is(err, errStaleLabel) {
		return label, at, err
	}
	t.forgetLabel(title, label)
	ids, err := t.labelIDs(ctx, []string{title})
	if err != nil {
		return label, time.Time{}, err
	}
	at, err = t.putLabel(ctx, task, ids[0])
	if errors.Is(err, errStaleLabel) {
		err = fmt.Errorf("vikunja: label %s was deleted as it was added, twice: %w", tracker.Quote(title), tracker.ErrUnavailable)
	}
	return ids[0], at, err
}

// forgetLabel drops title's cached id, if it is still id.
func (t *driver) forgetLabel(title string, id int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.labels[title] == id {
		delete(t.labels, title)
	}
}

// putLabel adds one label by id and answers when.
func (t *driver) putLabel(ctx context.Context, task, label int64) (time.Time, error) {
	a, err := t.do(ctx, http.MethodPut, "/api/v1/tasks/"+strconv.FormatInt(task, 10)+"/labels", nil,
		map[string]int64{"label_id": label})
	if err != nil {
		switch {
		case a.Status == http.StatusBadRequest && bytes.Contains(a.Body, []byte("8001")):
			return time.Time{}, nil
		case a.Status == http.StatusNotFound && bytes.Contains(a.Body, []byte("8002")):
			return time.Time{}, errStaleLabel
		}
		return time.Time{}, err
	}
	var r struct {
		Created time.Time `json:"created"`
	}
	_ = json.Unmarshal(a.Body, &r)
	return r.Created.UTC().Truncate(time.Second), nil
}

// labelIDs resolves label titles to ids: from the cache, else from the
// server's labels, else by creating them.
func (t *driver) labelIDs(ctx context.Context, titles []string) ([]int64, error) {
	out := make([]int64, 0, len(titles))
	var missing []string
	t.mu.Lock()
	for _, title := range titles {
		if id, ok := t.labels[title]; ok {
			out = append(out, id)
		} else {
			missing = append(missing, title)
		}
	}
	t.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	t.lmu.Lock()
	defer t.lmu.Unlock()
	if err := t.loadLabels(ctx); err != nil {
		return nil, err
	}
	out = out[:0]
	for _, title := range titles {
		t.mu.Lock()
		id, ok := t.labels[title]
		t.mu.Unlock()
		if !ok {
			a, err := t.do(ctx, http.MethodPut, "/api/v1/labels", nil, map[string]string{"title": title})
			if err != nil {
				return nil, err
			}
			var l wireLabel
			if err := json.Unmarshal(a.Body, &l); err != nil || l.ID <= 0 {
				return nil, trackerhttp.Garbled(Kind, "created label", err)
			}
			id = l.ID
			t.mu.Lock()
			t.labels[title] = id
			t.mu.Unlock()
		}
		out = append(out, id)
	}
	return out, nil
}

// loadLabels reads every label the token can see into the cache.
func (t *driver) loadLabels(ctx context.Context) error {
	for page := 1; ; page++ {
		a, err := t.do(ctx, http.MethodGet, "/api/v1/labels", pageQuery(page), nil)
		if err != nil {
			return err
		}
		var ls []wireLabel
		if err := json.Unmarshal(a.Body, &ls); err != nil {
			return trackerhttp.Garbled(Kind, "label list", err)
		}
		t.mu.Lock()
		for _, l := range ls {
			if _, ok := t.labels[l.Title]; !ok && l.ID > 0 && l.Title != "" {
				t.labels[l.Title] = l.ID
			}
		}
		t.mu.Unlock()
		if lastPage(a, page, len(ls)) {
			return nil
		}
	}
}

// setLabels makes the task's labels exactly want, one add or removal at a
// time, and reports whether anything changed.
func (t *driver) setLabels(ctx context.Context, w *wireTask, want []string) (bool, error) {
	ids, err := t.labelIDs(ctx, want)
	if err != nil {
		return false, err
	}
	have := map[int64]bool{}
	for _, l := range w.Labels {
		have[l.ID] = true
	}
	changed := false
	for i, id := range ids {
		if !have[id] {
			added, _, err := t.addLabel(ctx, w.ID, want[i], id)
			if err != nil {
				return changed, err
			}
			ids[i] = added
			changed = true
		}
	}
	for _, l := range w.Labels {
		if !slices.Contains(ids, l.ID) {
			_, err := t.do(ctx, http.MethodDelete, fmt.Sprintf("/api/v1/tasks/%d/labels/%d", w.ID, l.ID), nil, nil)
			if err != nil && !errors.Is(err, tracker.ErrNotFound) {
				return changed, err
			}
			changed = true
		}
	}
	return changed, nil
}
