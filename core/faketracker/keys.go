package faketracker

import (
	"context"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
)

// MethodFindKeys is a look-up of several keys in one read
// (tracker.KeysFinder), made only through a KeysFinding fake.
const MethodFindKeys = "FindKeys"

// KeysFinding is the fake as a tracker that finds several keys' items in
// one read (tracker.KeysFinder), as Vikunja's search of its markers does.
type KeysFinding struct{ *Tracker }

var _ tracker.KeysFinder = KeysFinding{}

// FindKeys implements tracker.KeysFinder: one call, every key found as
// Find finds it, made at or after since; complete.
func (k KeysFinding) FindKeys(ctx context.Context, keys []string, since time.Time) (map[string]tracker.Item, bool, error) {
	t := k.Tracker
	if _, err := t.enter(ctx, MethodFindKeys); err != nil {
		return nil, false, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]tracker.Item{}
	for _, key := range keys {
		if it := t.find(key); it != nil && !it.CreatedAt.Before(since) {
			out[key] = t.copyOf(it)
		}
	}
	return out, true, nil
}
