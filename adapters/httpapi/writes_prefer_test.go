package httpapi_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/httpapi"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
)

// deadlines is a write path that notes how long each call's caller said it
// waits (its context's deadline), and answers at once.
type deadlines struct {
	mu   sync.Mutex
	left []time.Duration // 0: no deadline
}

func (d *deadlines) note(ctx context.Context) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var left time.Duration
	if dl, ok := ctx.Deadline(); ok {
		left = time.Until(dl)
	}
	d.left = append(d.left, left)
}

func (d *deadlines) EnsureItem(ctx context.Context, p writes.EnsureParams) (writes.Result, error) {
	d.note(ctx)
	return writes.Result{Item: tracker.Item{Ref: tracker.ItemRef{ID: "1", Key: p.Key}}, How: writes.Existing}, nil
}

func (d *deadlines) Update(ctx context.Context, p writes.UpdateParams) (tracker.Item, error) {
	d.note(ctx)
	return tracker.Item{Ref: tracker.ItemRef{ID: "1", Key: p.Key}}, nil
}

func (d *deadlines) Comment(ctx context.Context, p writes.CommentParams) (writes.CommentResult, error) {
	d.note(ctx)
	return writes.CommentResult{Comment: tracker.Comment{ID: "c1", Key: p.Key}, How: writes.Existing}, nil
}

// A client that says how long it waits (Prefer: wait=N, RFC 7240) has its
// write answered before then: the write path is handed that deadline, and
// the answer says the preference applied. A Prefer relayr cannot read is
// ignored, as preferences are.
func TestAWriteHonoursPreferWait(t *testing.T) {
	d := &deadlines{}
	e := newEnv(t, func(c *httpapi.Config) { c.Writes = d })
	routes := []struct {
		path string
		body any
	}{
		{ws + "/items/ensure", httpapi.EnsureRequest{Key: "k", Title: "t"}},
		{ws + "/items/update", map[string]any{"key": "k", "title": "t2"}},
		{ws + "/comments", map[string]any{"item_key": "k", "key": "c", "body": "b"}},
	}
	for _, rt := range routes {
		for _, tc := range []struct {
			prefer  string
			applied string
		}{
			{"wait=7", "wait=7"},
			{"respond-async, wait=12", "wait=12"},
			{`wait="9"`, "wait=9"},
			{"wait=abc", ""},
			{"wait=0", ""},
			{"handling=lenient", ""},
			{"", ""},
		} {
			var header []string
			if tc.prefer != "" {
				header = []string{"Prefer", tc.prefer}
			}
			r := e.do(http.MethodPost, rt.path, tokenA, rt.body, header...)
			if r.status/100 != 2 {
				t.Fatalf("%s with Prefer %q: %d %s", rt.path, tc.prefer, r.status, r.body)
			}
			if got := r.header.Get("Preference-Applied"); got != tc.applied {
				t.Errorf("%s with Prefer %q: Preference-Applied %q, want %q", rt.path, tc.prefer, got, tc.applied)
			}
			d.mu.Lock()
			left := d.left[len(d.left)-1]
			d.mu.Unlock()
			var want time.Duration
			if tc.applied != "" {
				want, _ = time.ParseDuration(tc.applied[len("wait="):] + "s")
			}
			if (want == 0) != (left == 0) || left > want || left < want-5*time.Second {
				t.Errorf("%s with Prefer %q: the write path was handed %v to answer in, want about %v", rt.path, tc.prefer, left, want)
			}
		}
	}
}
