package faketracker

import (
	"context"

	"github.com/relayr-go/relayr/core/tracker"
)

// MethodFetchItems is a read of several items by id in one request
// (tracker.ItemsFetcher), made only through an ItemsFetching fake.
const MethodFetchItems = "FetchItems"

// ItemsFetching is the fake as a tracker that reads several items by id in
// one request (tracker.ItemsFetcher), as Jira's bulkfetch does.
type ItemsFetching struct{ *Tracker }

var _ tracker.ItemsFetcher = ItemsFetching{}

// FetchItems implements tracker.ItemsFetcher: one call, every id read as
// Item reads it, those Item would answer not found left out.
func (f ItemsFetching) FetchItems(ctx context.Context, ids []string) (map[string]tracker.Item, error) {
	t := f.Tracker
	if _, err := t.enter(ctx, MethodFetchItems); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]tracker.Item{}
	for _, id := range ids {
		it, err := t.live(id)
		if err != nil || (it.Archived && t.flavour == LikePlane) {
			continue
		}
		out[id] = t.copyOf(it)
	}
	return out, nil
}
