package plane_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/adapters/plane"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/memnet"
	"github.com/relayr-go/relayr/fixtures/planeemu"
)

var ctx = context.Background()

// must fails the test on err: must(f())(t).
func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// TestRequestCounts holds Plane's requests to their budget: once states and
// labels are cached, filing costs one request, a duplicate one more (the
// lookup), Find and Item one each.
func TestRequestCounts(t *testing.T) {
	e := newEmulated(t, planeemu.Options{RateLimit: -1}, plane.Config{})
	must(e.tr.Create(ctx, "warm", tracker.Draft{Title: "warm", State: tracker.Started, Labels: []string{"a", "b"}}))(t)
	counted := func(name string, want int, f func()) {
		t.Helper()
		e.emu.ResetCounts()
		f()
		if got := e.emu.Total(); got != want {
			t.Errorf("%s cost %d requests, want %d", name, got, want)
		}
	}
	var filed tracker.Item
	counted("CreateOfANewKey", 1, func() {
		filed = must(e.tr.Create(ctx, "k1", tracker.Draft{Title: "one", State: tracker.Done, Labels: []string{"b", "a"}}))(t)
	})
	if e.emu.Count("POST", "work-items") != 1 {
		t.Errorf("the one request was not the create")
	}
	counted("CreateOfAFiledKeyThenItsLookup", 2, func() {
		_, err := e.tr.Create(ctx, "k1", tracker.Draft{Title: "again", State: tracker.Done})
		var exists *tracker.ExistsError
		if !errors.As(err, &exists) || exists.ID != filed.Ref.ID {
			t.Fatalf("second create: %v, want ExistsError naming %s", err, filed.Ref.ID)
		}
		got := must(e.tr.Find(ctx, "k1"))(t)
		if got.Ref.ID != filed.Ref.ID || got.Title != "one" {
			t.Fatalf("lookup answered %+v", got)
		}
	})
	counted("Find", 1, func() { must(e.tr.Find(ctx, "k1"))(t) })
	counted("Item", 1, func() { must(e.tr.Item(ctx, filed.Ref.ID))(t) })
	counted("UpdateOfSeveralFields", 1, func() {
		title, s, labels := "renamed", tracker.Cancelled, []string{"a"}
		must(e.tr.Update(ctx, filed.Ref.ID, tracker.Patch{Title: &title, State: &s, Labels: &labels}))(t)
	})
	counted("AMissingLabelIsReadAgainThenMade", 3, func() {
		must(e.tr.Create(ctx, "k2", tracker.Draft{Title: "two", Labels: []string{"new"}}))(t)
	})
	// A second tracker of the connector shares its catalog.
	other := must(e.conn.Connect(ctx, tracker.Credentials{Token: e.emu.Bot.Key}, tracker.Source{Tenant: "acme", Workspace: "other"}))(t)
	counted("CreateThroughAnotherWorkspaceOfTheConnector", 1, func() {
		must(other.Create(ctx, "k1", tracker.Draft{Title: "other", State: tracker.Todo, Labels: []string{"new"}}))(t)
	})
}

func TestWritesAndReads(t *testing.T) {
	t.Run("TheSourceAndKeyAreTheExternalPair", func(t *testing.T) {
		e := newEmulated(t, planeemu.Options{RateLimit: -1}, plane.Config{})
		it := must(e.tr.Create(ctx, "dead-letter/rule", tracker.Draft{Title: "x"}))(t)
		if e.d.Source() != "lattice:acme/ops" || it.Ref.Key != "dead-letter/rule" {
			t.Fatalf("source %q key %q", e.d.Source(), it.Ref.Key)
		}
		ns := newEmulated(t, planeemu.Options{RateLimit: -1}, plane.Config{Namespace: "relayr"})
		if ns.d.Source() != "relayr:acme/ops" {
			t.Fatalf("namespaced source %q", ns.d.Source())
		}
	})
	t.Run("AnArchivedItemIsFoundAndStillBlocksItsKey", func(t *testing.T) {
		e := newEmulated(t, planeemu.Options{RateLimit: -1}, plane.Config{})
		it := must(e.tr.Create(ctx, "k", tracker.Draft{Title: "x", State: tracker.Done}))(t)
		if err := e.emu.Archive(it.Ref.ID); err != nil {
			t.Fatal(err)
		}
		got := must(e.tr.Find(ctx, "k"))(t)
		if !got.Archived || got.Ref.ID != it.Ref.ID {
			t.Fatalf("found %+v", got)
		}
		if _, err := e.tr.Item(ctx, it.Ref.ID); !errors.Is(err, tracker.ErrNotFound) {
			t.Fatalf("Item of an archived item: %v", err)
		}
		var exists *tracker.ExistsError
		if _, err := e.tr.Create(ctx, "k", tracker.Draft{Title: "x"}); !errors.As(err, &exists) || exists.ID != it.Ref.ID {
			t.Fatalf("create over an archived key: %v", err)
		}
	})
	t.Run("ADeletedItemsKeyFilesAgainUnderANewNumber", func(t *testing.T) {
		e := newEmulated(t, planeemu.Options{RateLimit: -1}, plane.Config{})
		it := must(e.tr.Create(ctx, "k", tracker.Draft{Title: "x"}))(t)
		if err := e.emu.Delete(it.Ref.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := e.tr.Find(ctx, "k"); !errors.Is(err, tracker.ErrNotFound) {
			t.Fatalf("Find of a deleted key: %v", err)
		}
		again := must(e.tr.Create(ctx, "k", tracker.Draft{Title: "x"}))(t)
		if again.Ref.Number != 2 || again.Ref.Name != "OPS-2" {
			t.Fatalf("refiled as %+v", again.Ref)
		}
	})
	t.Run("LinkAndName", func(t *testing.T) {
		e := newEmulated(t, planeemu.Options{RateLimit: -1}, plane.Config{WebURL: "https://app.plane.so/"})
		it := must(e.tr.Create(ctx, "k", tracker.Draft{Title: "x"}))(t)
		if it.Ref.Name != "OPS-1" || it.Ref.Link != "https://app.plane.so/relayr/browse/OPS-1/" {
			t.Fatalf("ref %+v", it.Ref)
		}
		if l := e.tr.Link(tracker.ItemRef{Number: 12}); l != "https://app.plane.so/relayr/browse/OPS-12/" {
			t.Fatalf("link %q", l)
		}
	})
	t.Run("DescriptionsReadBackAsPlaneStoresThemAndCompareAsTheSame", func(t *testing.T) {
		e := newEmulated(t, planeemu.Options{RateLimit: -1}, plane.Config{})
		for i, d := range planeemu.DescriptionCorpus {
			stored, err := planeemu.NormalizeHTML(sendDescriptionOf(d))
			if err != nil {
				// "" and blanks are sent as "<p></p>"; nothing else in
				// the corpus is refused but markup with no element.
				if _, err := e.tr.Create(ctx, "bad"+strconv.Itoa(i), tracker.Draft{Title: "x", Description: d}); !errors.Is(err, tracker.ErrRefused) {
					t.Errorf("description %q: Plane refuses it, the adapter answered %v", d, err)
				}
				continue
			}
			it := must(e.tr.Create(ctx, "d"+strconv.Itoa(i), tracker.Draft{Title: "x", Description: d}))(t)
			want := stored
			if want == "<p></p>" {
				want = ""
			}
			if it.Description != want {
				t.Errorf("description %q: the create answered %q, Plane stores %q", d, it.Description, want)
			}
			if !e.tr.SameDescription(d, it.Description) && !tokenizerDiffers[d] {
				t.Errorf("description %q: stored as %q, which SameDescription tells apart", d, it.Description)
			}
			empty := ""
			up := must(e.tr.Update(ctx, it.Ref.ID, tracker.Patch{Description: &empty}))(t)
			if up.Description != "" {
				t.Errorf("an emptied description reads %q", up.Description)
			}
		}
	})
	t.Run("UpdateSendsOnlyTheNamedFields", func(t *testing.T) {
		e := newEmulated(t, planeemu.Options{RateLimit: -1}, plane.Config{})
		it := must(e.tr.Create(ctx, "k", tracker.Draft{Title: "x", Description: "keep", Labels: []string{"l"}}))(t)
		before := len(e.emu.Deliveries())
		s := tracker.Started
		got := must(e.tr.Update(ctx, it.Ref.ID, tracker.Patch{State: &s}))(t)
		if got.State != tracker.Started || got.Description != "<p>keep</p>" || !slices.Equal(got.Labels, []string{"l"}) {
			t.Fatalf("updated %+v", got)
		}
		if n := len(e.emu.Deliveries()) - before; n != 1 {
			t.Fatalf("%d update webhooks, want one for the one field sent", n)
		}
	})
	t.Run("CommentsCarryTheirKeyAndARetriedCommentIsTheFirst", func(t *testing.T) {
		e := newEmulated(t, planeemu.Options{RateLimit: -1}, plane.Config{})
		it := must(e.tr.Create(ctx, "k", tracker.Draft{Title: "x"}))(t)
		c := must(e.tr.Comment(ctx, it.Ref.ID, "ck", "<p>hi</p>"))(t)
		again := must(e.tr.Comment(ctx, it.Ref.ID, "ck", "<p>hi</p>"))(t)
		if again.ID != c.ID || again.Key != "ck" {
			t.Fatalf("retried comment %+v, first %+v", again, c)
		}
		other := must(e.tr.Create(ctx, "k2", tracker.Draft{Title: "y"}))(t)
		var exists *tracker.ExistsError
		if _, err := e.tr.Comment(ctx, other.Ref.ID, "ck", "x"); !errors.As(err, &exists) || exists.ID != c.ID {
			t.Fatalf("the key on another item: %v", err)
		}
		if _, err := e.tr.Comment(ctx, "00000000-0000-4000-8000-000000000000", "ck2", "x"); !errors.Is(err, tracker.ErrNotFound) {
			t.Fatalf("comment on no item: %v", err)
		}
	})
	t.Run("ALabelDeletedSinceCachedIsReadAgain", func(t *testing.T) {
		e := newEmulated(t, planeemu.Options{RateLimit: -1}, plane.Config{})
		first := must(e.tr.Create(ctx, "a", tracker.Draft{Title: "x", Labels: []string{"gone"}}))(t)
		// A person deletes the label; relayr's cache still holds its id,
		// Plane answers 400, and the adapter reads the labels again.
		if err := e.emu.DeleteLabel("gone"); err != nil {
			t.Fatal(err)
		}
		e.emu.ResetCounts()
		it := must(e.tr.Create(ctx, "b", tracker.Draft{Title: "y", Labels: []string{"gone"}}))(t)
		if !slices.Equal(it.Labels, []string{"gone"}) || !slices.Equal(first.Labels, []string{"gone"}) {
			t.Fatalf("labels %v", it.Labels)
		}
		if n := e.emu.Count("POST", "work-items"); n != 2 {
			t.Fatalf("%d creates, want the refused one and its retry", n)
		}
	})
}

// trigger runs fn before the n-th list request ordered by order_by reaches
// the emulation: a change made while a walk pages.
type trigger struct {
	h    http.Handler
	mu   sync.Mutex
	seen int
	n    int
	fn   func()
}

func (tr *trigger) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/work-items/") && r.URL.Query().Get("order_by") != "" {
		tr.mu.Lock()
		tr.seen++
		fire := tr.seen == tr.n
		tr.mu.Unlock()
		if fire {
			tr.fn()
		}
	}
	tr.h.ServeHTTP(w, r)
}

func TestItemsWhilePagesShift(t *testing.T) {
	setup := func(t *testing.T) (*planeemu.Server, *trigger, *tracker.Tracker, []tracker.Item, time.Time) {
		emu := planeemu.New(planeemu.Options{RateLimit: -1})
		trig := &trigger{h: emu}
		srv := httptest.NewServer(trig)
		t.Cleanup(srv.Close)
		conn := must(plane.NewConnector(plane.Config{BaseURL: srv.URL, Workspace: emu.Workspace, Project: emu.Project, Identifier: "OPS", PageSize: 5}))(t)
		tr := must(conn.Connect(ctx, tracker.Credentials{Token: emu.Bot.Key}, tracker.Source{Tenant: "t", Workspace: "w"}))(t)
		start := emu.Now()
		var items []tracker.Item
		for i := range 14 {
			items = append(items, must(tr.Create(ctx, "k"+string(rune('a'+i)), tracker.Draft{Title: "item"}))(t))
			emu.Advance(time.Second)
		}
		return emu, trig, tr, items, start
	}
	walk := func(t *testing.T, tr *tracker.Tracker, since time.Time) []tracker.Item {
		var out []tracker.Item
		q := tracker.Query{Since: since}
		for range 100 {
			p := must(tr.Items(ctx, q))(t)
			out = append(out, p.Items...)
			if p.Next == "" {
				return out
			}
			q.Page = p.Next
		}
		t.Fatal("no last page")
		return nil
	}
	check := func(t *testing.T, emu *planeemu.Server, items, got []tracker.Item, renamed string) {
		t.Helper()
		last := map[string]tracker.Item{}
		for i, it := range got {
			if i > 0 && tracker.Of(it).Before(tracker.Of(got[i-1])) {
				t.Fatalf("out of order at %d", i)
			}
			last[it.Ref.ID] = it
		}
		for _, it := range items {
			_, _, deleted, _ := emu.ItemState(it.Ref.ID)
			if _, ok := last[it.Ref.ID]; !ok && !deleted {
				t.Errorf("item %s (%s) was missed", it.Ref.Name, it.Ref.ID)
			}
		}
		if renamed != "" && last[renamed].Title != "renamed" {
			t.Errorf("the item renamed mid-walk reads %q", last[renamed].Title)
		}
	}
	for _, c := range []struct {
		name   string
		sweep  bool
		act    func(emu *planeemu.Server, items []tracker.Item) error
		rename int
		at     int // the list request the change comes before; default the second
	}{
		// Newest first: pages hold items 14..10, 9..5, 4..1. Deleting 14
		// before the third page shifts every later item back one, so a
		// plain walk would skip item 4, and reading the first page again
		// would not find it.
		{"SinceAnItemReadIsDeleted", false, func(emu *planeemu.Server, items []tracker.Item) error { return emu.Delete(items[13].Ref.ID) }, -1, 3},
		// Renaming item 3, not yet read, moves it to the front, behind the walk.
		{"SinceAnItemNotYetReadIsUpdated", false, func(emu *planeemu.Server, items []tracker.Item) error { return emu.Retitle(items[2].Ref.ID, "renamed") }, 2, 2},
		{"SinceAnItemReadIsUpdated", false, func(emu *planeemu.Server, items []tracker.Item) error {
			return emu.Retitle(items[12].Ref.ID, "renamed")
		}, 12, 2},
		// Oldest first: page 0 holds items 1..5.
		{"SweepAnItemReadIsDeleted", true, func(emu *planeemu.Server, items []tracker.Item) error { return emu.Delete(items[1].Ref.ID) }, -1, 2},
		{"SweepAnItemReadIsUpdated", true, func(emu *planeemu.Server, items []tracker.Item) error { return emu.Retitle(items[1].Ref.ID, "renamed") }, 1, 2},
		{"SweepSeveralItemsReadAreDeleted", true, func(emu *planeemu.Server, items []tracker.Item) error {
			for _, i := range []int{0, 1, 2} {
				if err := emu.Delete(items[i].Ref.ID); err != nil {
					return err
				}
			}
			return nil
		}, -1, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			emu, trig, tr, items, start := setup(t)
			trig.n = max(c.at, 2)
			trig.fn = func() {
				if err := c.act(emu, items); err != nil {
					t.Error(err)
				}
			}
			since := time.Time{}
			if !c.sweep {
				since = start
			}
			got := walk(t, tr, since)
			if trig.seen < trig.n {
				t.Fatalf("the walk read %d pages; the change never happened mid-walk", trig.seen)
			}
			renamed := ""
			if c.rename >= 0 {
				renamed = items[c.rename].Ref.ID
			}
			check(t, emu, items, got, renamed)
		})
	}
	t.Run("SinceStopsPastTheCursor", func(t *testing.T) {
		emu, _, tr, items, _ := setup(t)
		emu.ResetCounts()
		got := walk(t, tr, items[12].UpdatedAt.Add(-time.Millisecond))
		if len(got) != 2 || got[0].Ref.ID != items[12].Ref.ID || got[1].Ref.ID != items[13].Ref.ID {
			t.Fatalf("got %d items", len(got))
		}
		if n := emu.Total(); n != 1 {
			t.Fatalf("%d requests for a change that fits the first page", n)
		}
	})
	t.Run("ABadPageTokenIsInvalid", func(t *testing.T) {
		_, _, tr, _, _ := setup(t)
		if _, err := tr.Items(ctx, tracker.Query{Page: "!!"}); !errors.Is(err, tracker.ErrInvalid) {
			t.Fatalf("err %v", err)
		}
	})
}

// fake answers every request with one status, header and body.
func fake(t *testing.T, status int, header map[string]string, body string) *tracker.Tracker {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return tracker_(t, srv.URL, nil, 0, 1<<20)
}

func tracker_(t *testing.T, url string, client *http.Client, timeout time.Duration, limit int64) *tracker.Tracker {
	t.Helper()
	conn := must(plane.NewConnector(plane.Config{
		BaseURL: url, Workspace: "w", Project: "11111111-1111-4111-8111-111111111111", Identifier: "OPS",
		Client: client, Timeout: timeout, MaxResponseBytes: limit,
	}))(t)
	return must(conn.Connect(ctx, tracker.Credentials{Token: "plane_api_x"}, tracker.Source{Tenant: "t", Workspace: "w"}))(t)
}

const someID = "22222222-2222-4222-8222-222222222222"

func TestBadInput(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		body   string
		want   error
		check  func(t *testing.T, it tracker.Item)
	}{
		{"NullFields", 200, `{"id":"` + someID + `","name":null,"description_html":null,"state":null,"labels":null,"sequence_id":null,"updated_at":"2026-05-01T10:00:00.5+05:30","updated_by":null,"archived_at":null,"external_id":null,"external_source":null}`, nil,
			func(t *testing.T, it tracker.Item) {
				if it.Title != "" || it.State != "" || it.Ref.Key != "" || it.Labels == nil || !it.UpdatedAt.Equal(time.Date(2026, 5, 1, 4, 30, 0, 5e8, time.UTC)) {
					t.Fatalf("item %+v", it)
				}
			}},
		{"MissingFieldsButTheEssentials", 200, `{"id":"` + someID + `","updated_at":"2026-05-01T10:00:00Z"}`, nil, nil},
		{"ATimestampWithoutMicroseconds", 200, `{"id":"` + someID + `","updated_at":"2026-05-01T10:00:00-07:00","archived_at":"2026-05-02"}`, nil,
			func(t *testing.T, it tracker.Item) {
				if !it.Archived || it.UpdatedAt.Hour() != 17 {
					t.Fatalf("item %+v", it)
				}
			}},
		{"NoUpdatedAt", 200, `{"id":"` + someID + `"}`, tracker.ErrUnavailable, nil},
		{"AnUnreadableTimestamp", 200, `{"id":"` + someID + `","updated_at":"yesterday"}`, tracker.ErrUnavailable, nil},
		{"WrongTypes", 200, `{"id":"` + someID + `","updated_at":"2026-05-01T10:00:00Z","name":7}`, tracker.ErrUnavailable, nil},
		{"AnArrayFor200", 200, `[1,2]`, tracker.ErrUnavailable, nil},
		{"Garbage200", 200, "<html>welcome</html>", tracker.ErrUnavailable, nil},
		{"Empty200", 200, "", tracker.ErrUnavailable, nil},
		{"HTML500", 500, "<html><body>Internal Server Error</body></html>", tracker.ErrUnavailable, nil},
		{"TwoMegabytes", 200, `{"id":"` + someID + `","name":"` + strings.Repeat("x", 2<<20) + `"}`, tracker.ErrUnavailable, nil},
		{"NotFound", 404, `{"error": "The requested resource does not exist."}`, tracker.ErrNotFound, nil},
		{"BadKey", 403, `{"detail": "Given API token is not valid"}`, tracker.ErrUnauthorized, nil},
		{"NoKey", 401, `{"detail": "Authentication credentials were not provided."}`, tracker.ErrUnauthorized, nil},
		{"Refused", 400, `{"name": ["This field is required."]}`, tracker.ErrRefused, nil},
		{"Redirected", 301, ``, tracker.ErrRefused, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := fake(t, c.status, nil, c.body)
			it, err := tr.Item(ctx, someID)
			if c.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if c.check != nil {
					c.check(t, it)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("err %v, want %v", err, c.want)
			}
		})
	}
	t.Run("RateLimited", func(t *testing.T) {
		tr := fake(t, 429, map[string]string{"Retry-After": "17"}, `{"error_code": 5900, "error_message": "RATE_LIMIT_EXCEEDED"}`)
		_, err := tr.Item(ctx, someID)
		var rl *tracker.RateLimitedError
		if !errors.As(err, &rl) || rl.RetryAfter != 17*time.Second || !tracker.CertainlyNotTaken(err) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("RetryAfterAsSecondsOrADate", func(t *testing.T) {
		// Plane's window is a minute: a 429 that names no wait that can
		// be read, or one past trackerhttp.MaxRateWait, waits a minute.
		for in, want := range map[string]time.Duration{
			"":                              time.Minute,
			"0":                             0,
			"30":                            30 * time.Second,
			"-4":                            0,
			"soon":                          time.Minute,
			"99999999":                      time.Minute,
			"Wed, 21 Oct 2015 07:28:00 GMT": 0,
		} {
			tr := fake(t, 429, map[string]string{"Retry-After": in}, `{"error_code": 5900}`)
			_, err := tr.Item(ctx, someID)
			var rl *tracker.RateLimitedError
			if !errors.As(err, &rl) || rl.RetryAfter != want {
				t.Errorf("Retry-After %q: %v, want a wait of %s", in, err, want)
			}
		}
	})
	t.Run("TheEmulationsRateLimit", func(t *testing.T) {
		e := newEmulated(t, planeemu.Options{RateLimit: 2}, plane.Config{Identifier: "OPS"})
		for range 2 {
			if _, err := e.tr.Find(ctx, "x"); !errors.Is(err, tracker.ErrNotFound) {
				t.Fatal(err)
			}
		}
		e.emu.Advance(45 * time.Second)
		_, err := e.tr.Find(ctx, "x")
		var rl *tracker.RateLimitedError
		if !errors.As(err, &rl) || rl.RetryAfter != 15*time.Second {
			t.Fatalf("third lookup in a minute: %v", err)
		}
	})
	t.Run("GarbledPagesAndLookups", func(t *testing.T) {
		for _, body := range []string{`{"results": null}`, `{"results": [{"id": 1}]}`, `{}`, `nope`} {
			tr := fake(t, 200, nil, body)
			if _, err := tr.Items(ctx, tracker.Query{}); !errors.Is(err, tracker.ErrUnavailable) {
				t.Errorf("Items over %s: %v", body, err)
			}
			if _, err := tr.Items(ctx, tracker.Query{Since: time.Now()}); !errors.Is(err, tracker.ErrUnavailable) {
				t.Errorf("Items since over %s: %v", body, err)
			}
			if _, err := tr.Comments(ctx, someID, time.Time{}); !errors.Is(err, tracker.ErrUnavailable) {
				t.Errorf("Comments over %s: %v", body, err)
			}
		}
	})
}

// TestTimeouts runs on virtual time: memnet serves the emulation over
// in-memory pipes inside a synctest bubble, so a 10 s phase passes at once.
func TestTimeouts(t *testing.T) {
	bubble := func(t *testing.T, timeout time.Duration, h http.Handler, f func(tr *tracker.Tracker)) {
		synctest.Test(t, func(t *testing.T) {
			srv := memnet.NewServer(h)
			defer srv.Close()
			f(tracker_(t, srv.URL, srv.Client(), timeout, 0))
		})
	}
	t.Run("AHangingAnswerIsUnavailableAfterTenSeconds", func(t *testing.T) {
		emu := planeemu.New(planeemu.Options{})
		emu.HangNext(1)
		bubble(t, 0, emu, func(tr *tracker.Tracker) {
			start := time.Now()
			_, err := tr.Item(ctx, someID)
			if !errors.Is(err, tracker.ErrUnavailable) || errors.Is(err, context.Canceled) {
				t.Fatalf("err %v", err)
			}
			if d := time.Since(start); d != plane.DefaultTimeout {
				t.Fatalf("gave up after %s", d)
			}
		})
	})
	t.Run("TheTimeoutIsConfigurable", func(t *testing.T) {
		emu := planeemu.New(planeemu.Options{})
		emu.HangNext(1)
		bubble(t, 3*time.Second, emu, func(tr *tracker.Tracker) {
			start := time.Now()
			if _, err := tr.Find(ctx, "k"); !errors.Is(err, tracker.ErrUnavailable) {
				t.Fatalf("err %v", err)
			}
			if d := time.Since(start); d != 3*time.Second {
				t.Fatalf("gave up after %s", d)
			}
		})
	})
	t.Run("EachPhaseHasItsOwnTimeout", func(t *testing.T) {
		// Nine seconds to the headers and nine more to the body: each phase
		// is inside its bound though the whole is not.
		slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(9 * time.Second)
			w.WriteHeader(200)
			_, _ = w.Write([]byte(`{"id":"` + someID + `",`))
			w.(http.Flusher).Flush()
			time.Sleep(9 * time.Second)
			_, _ = w.Write([]byte(`"updated_at":"2026-05-01T10:00:00Z"}`))
		})
		bubble(t, 0, slow, func(tr *tracker.Tracker) {
			start := time.Now()
			if _, err := tr.Item(ctx, someID); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d != 18*time.Second {
				t.Fatalf("took %s", d)
			}
		})
	})
	t.Run("ABodyThatStallsIsUnavailable", func(t *testing.T) {
		stall := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(200)
			_, _ = w.Write([]byte(`{"id":`))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		})
		bubble(t, 0, stall, func(tr *tracker.Tracker) {
			if _, err := tr.Item(ctx, someID); !errors.Is(err, tracker.ErrUnavailable) {
				t.Fatalf("err %v", err)
			}
		})
	})
	t.Run("ADroppedConnectionIsUnavailable", func(t *testing.T) {
		emu := planeemu.New(planeemu.Options{})
		emu.DropNext(1)
		bubble(t, 0, emu, func(tr *tracker.Tracker) {
			if _, err := tr.Find(ctx, "k"); !errors.Is(err, tracker.ErrUnavailable) {
				t.Fatalf("err %v", err)
			}
		})
	})
	t.Run("ARefusedConnectionIsUnavailable", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := memnet.NewServer(http.NotFoundHandler())
			tr := tracker_(t, srv.URL, srv.Client(), 0, 0)
			srv.Close()
			if _, err := tr.Find(ctx, "k"); !errors.Is(err, tracker.ErrUnavailable) {
				t.Fatalf("err %v", err)
			}
		})
	})
	t.Run("A5xxFromTheEmulationIsUnavailable", func(t *testing.T) {
		emu := planeemu.New(planeemu.Options{})
		emu.FailNext(1, 502, "<html>Bad Gateway</html>")
		bubble(t, 0, emu, func(tr *tracker.Tracker) {
			if _, err := tr.Find(ctx, "k"); !errors.Is(err, tracker.ErrUnavailable) {
				t.Fatalf("err %v", err)
			}
		})
	})
}

func TestNudge(t *testing.T) {
	e := newEmulated(t, planeemu.Options{RateLimit: -1, WebhookSecret: "plane_wh_s"}, plane.Config{})
	it := must(e.tr.Create(ctx, "k", tracker.Draft{Title: "x"}))(t)
	must(e.tr.Comment(ctx, it.Ref.ID, "c", "hi"))(t)
	ds := e.emu.Deliveries()
	if len(ds) != 2 {
		t.Fatalf("%d deliveries", len(ds))
	}
	for _, d := range ds {
		if n, err := e.tr.Nudge("plane_wh_s", d.Header, d.Body); err != nil || n.Project != e.emu.Project || n.Deleted != nil {
			t.Fatalf("nudge %+v %v", n, err)
		}
		if _, err := e.tr.Nudge("", d.Header, d.Body); !errors.Is(err, tracker.ErrUnauthorized) {
			t.Fatalf("an empty secret verified: %v", err)
		}
	}
	project := []byte(`{"event": "project", "action": "deleted", "data": {"id": "p1"}}`)
	h := http.Header{plane.SignatureHeader: {planeemu.Sign("s", project)}}
	if n, err := e.tr.Nudge("s", h, project); err != nil || n.Project != "p1" {
		t.Fatalf("project event %+v %v", n, err)
	}
	junk := []byte(`not json`)
	h = http.Header{plane.SignatureHeader: {planeemu.Sign("s", junk)}}
	if _, err := e.tr.Nudge("s", h, junk); !errors.Is(err, tracker.ErrRefused) {
		t.Fatalf("a signed body that is no delivery: %v", err)
	}
}

func TestConnect(t *testing.T) {
	for _, cfg := range []plane.Config{
		{BaseURL: "ftp://x", Workspace: "w", Project: someID},
		{BaseURL: "http://x", Workspace: "", Project: someID},
		{BaseURL: "http://x", Workspace: "w", Project: "OPS"},
	} {
		if _, err := plane.NewConnector(cfg); !errors.Is(err, tracker.ErrInvalid) {
			t.Errorf("config %+v: %v", cfg, err)
		}
	}
	e := newEmulated(t, planeemu.Options{RateLimit: -1}, plane.Config{})
	if _, err := e.conn.Connect(ctx, tracker.Credentials{Token: "plane_api_bad"}, tracker.Source{Tenant: "t", Workspace: "w"}); err != nil {
		t.Fatalf("the identifier was read once and kept: %v", err)
	}
	fresh := must(plane.NewConnector(plane.Config{BaseURL: e.url, Workspace: e.emu.Workspace, Project: e.emu.Project}))(t)
	if _, err := fresh.Connect(ctx, tracker.Credentials{Token: "plane_api_bad"}, tracker.Source{Tenant: "t", Workspace: "w"}); !errors.Is(err, tracker.ErrUnauthorized) {
		t.Fatalf("a bad key: %v", err)
	}
	if _, err := fresh.Connect(ctx, tracker.Credentials{}, tracker.Source{Tenant: "t", Workspace: "w"}); !errors.Is(err, tracker.ErrUnauthorized) {
		t.Fatalf("no key: %v", err)
	}
	if _, err := fresh.Connect(ctx, tracker.Credentials{Token: "k"}, tracker.Source{}); !errors.Is(err, tracker.ErrInvalid) {
		t.Fatalf("no source: %v", err)
	}
	if fresh.Kind() != "plane" {
		t.Fatal(fresh.Kind())
	}
}

// sendDescriptionOf is what the adapter sends for d: "<p></p>" for an empty
// one.
func sendDescriptionOf(d string) string {
	if strings.TrimSpace(d) == "" {
		return "<p></p>"
	}
	return d
}

// tokenizerDiffers are corpus descriptions libxml2 2.9.14 (Debian's lxml
// 4.9.2, which the emulation follows) tokenizes unlike HTML5: "&amp" without
// its ';' stays text, "&#0;" is dropped and "&#xZZ;" loses "&#x", "<b</code>"
// is a <b>. libxml2 2.14.6, under the lxml 6.1.0 Plane pins, tokenizes as
// HTML5 does, and SameDescription, which parses as HTML5, then matches what
// Plane stores; against the emulation it can't. relayr records Plane's answer
// either way, so only a write whose answer never came meets this.
var tokenizerDiffers = map[string]bool{
	"a &amp b":                     true,
	"<code>a<b</code>":             true,
	"<p>&unknown; &#0; &#xZZ;</p>": true,
}

// SameDescription tells apart what a sanitizer can't have done: other text,
// another structure, another allowed attribute or link.
func TestSameDescription(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"hello", "<p>hello</p>", true},
		{"<P CLASS='x'>q</P>", `<p class="x">q</p>`, true},
		{"x<p>y</p>", "<div><p>x</p><p>y</p></div>", true},
		{"<p>a</p><!-- c -->", "<div><p>a</p></div>", true},
		{"Error: <nil>", "<p>Error: </p>", true},
		{`<a href="é x" rel="nofollow" onclick="y()">l</a>`, `<a href="%C3%A9%20x" rel="noopener noreferrer">l</a>`, true},
		{"<script>x()</script><p>a</p>", "<p>a</p>", true},
		{"", "<p></p>", true},
		{"hello", "<p>hello!</p>", false},
		{"<p>a</p><p>b</p>", "<p>ab</p>", false},
		{"<b>a</b>", "<i>a</i>", false},
		{`<p class="x">a</p>`, `<p class="y">a</p>`, false},
		{`<a href="https://x">l</a>`, `<a href="https://y">l</a>`, false},
		{"<ul><li>a</li><li>b</li></ul>", "<ul><li>a b</li></ul>", false},
	} {
		if got := plane.SameDescription(c.a, c.b); got != c.same {
			t.Errorf("SameDescription(%q, %q) = %v, want %v (%q vs %q)", c.a, c.b, got, c.same,
				plane.CanonicalDescription(c.a), plane.CanonicalDescription(c.b))
		}
	}
}
