package vikunja_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/adapters/vikunja"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/memnet"
	"github.com/relayr-go/relayr/fixtures/vikunjaemu"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// The request counts of Vikunja's calls, asserted with the emulation's counter.
func TestRequestCounts(t *testing.T) {
	t.Run("FilingWithKnownLabelsCostsTheCreateAndOneRequestPerLabel", func(t *testing.T) {
		em := newEmulated(t, vikunjaemu.Options{})
		labels := []string{"relayr", "urgent"}
		if _, err := em.tr.Create(ctx(t), "warm", tracker.Draft{Title: "warm the label cache", Labels: labels}); err != nil {
			t.Fatal(err)
		}
		em.e.ResetCounts()
		it, err := em.tr.Create(ctx(t), "k1", tracker.Draft{Title: "filed", Labels: labels})
		if err != nil {
			t.Fatal(err)
		}
		// One add per label: the bulk endpoint would be one request for all,
		// but it doesn't bump updated, which reading back relies on.
		want := map[string]int{"PUT /api/v1/projects/{id}/tasks": 1, "PUT /api/v1/tasks/{id}/labels": 2}
		if got := em.e.RequestCounts(); !sameCounts(got, want) {
			t.Fatalf("requests %v, want %v", got, want)
		}
		if len(it.Labels) != 2 || it.Ref.Name != "LAT-2" || it.Ref.Number != 2 {
			t.Fatalf("item %+v", it)
		}
	})
	t.Run("UnknownLabelsAreLookedUpOnceAndCreatedWhenMissing", func(t *testing.T) {
		em := newEmulated(t, vikunjaemu.Options{})
		if _, err := em.tr.Create(ctx(t), "k1", tracker.Draft{Title: "a", Labels: []string{"new"}}); err != nil {
			t.Fatal(err)
		}
		want := map[string]int{"GET /api/v1/labels": 1, "PUT /api/v1/labels": 1, "PUT /api/v1/projects/{id}/tasks": 1, "PUT /api/v1/tasks/{id}/labels": 1}
		if got := em.e.RequestCounts(); !sameCounts(got, want) {
			t.Fatalf("requests %v, want %v", got, want)
		}
	})
	t.Run("ARetakenClaimsLookupIsOneRequest", func(t *testing.T) {
		em := newEmulated(t, vikunjaemu.Options{})
		made, err := em.tr.Create(ctx(t), "k1", tracker.Draft{Title: "a"})
		if err != nil {
			t.Fatal(err)
		}
		em.e.ResetCounts()
		got, err := em.tr.Find(ctx(t), "k1")
		if err != nil || got.Ref.ID != made.Ref.ID {
			t.Fatalf("Find: %+v %v", got, err)
		}
		if got := writeCounts(em.e.RequestCounts()); len(got) != 1 || got["GET /api/v1/projects/{id}/tasks"] != 1 {
			t.Fatalf("Find made requests %v, want one search", got)
		}
	})
	t.Run("ARetriedFilingOfARecordedKeyCostsOneRead", func(t *testing.T) {
		em := newEmulated(t, vikunjaemu.Options{})
		made, err := em.tr.Create(ctx(t), "k1", tracker.Draft{Title: "a"})
		if err != nil {
			t.Fatal(err)
		}
		em.e.ResetCounts()
		if _, err := em.tr.Item(ctx(t), made.Ref.ID); err != nil {
			t.Fatal(err)
		}
		if got := em.e.RequestCounts(); !sameCounts(got, map[string]int{"GET /api/v1/tasks/{id}": 1}) {
			t.Fatalf("requests %v", got)
		}
	})
	t.Run("AnUpdateOfTitleAndStateIsOneMergePatch", func(t *testing.T) {
		em := newEmulated(t, vikunjaemu.Options{})
		made, err := em.tr.Create(ctx(t), "k1", tracker.Draft{Title: "a", Description: "keep"})
		if err != nil {
			t.Fatal(err)
		}
		em.e.ResetCounts()
		title, state := "b", tracker.Done
		it, err := em.tr.Update(ctx(t), made.Ref.ID, tracker.Patch{Title: &title, State: &state})
		if err != nil {
			t.Fatal(err)
		}
		if got := em.e.RequestCounts(); !sameCounts(got, map[string]int{"PATCH /api/v2/tasks/{id}": 1}) {
			t.Fatalf("requests %v", got)
		}
		if it.Title != "b" || it.State != tracker.Done || it.Description != "keep" || it.Ref.Key != "k1" {
			t.Fatalf("item %+v", it)
		}
	})
}

func sameCounts(got, want map[string]int) bool {
	got = writeCounts(got)
	for k, v := range got {
		if v != want[k] {
			return false
		}
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// writeCounts are the counts without the ask of whether the server takes
// writes at once, which a server's first write sends beside it, once an
// hour (TestTheServerSaysWhetherItTakesWritesAtOnce).
func writeCounts(counts map[string]int) map[string]int {
	delete(counts, "GET /api/v1/info")
	return counts
}

func TestFindChecksTheMarkerExactly(t *testing.T) {
	em := newEmulated(t, vikunjaemu.Options{})
	p := em.e.Person()
	// A person's task quoting the marker of k1 in another workspace, and one
	// whose description holds it only as a substring of k10's.
	if _, err := p.CreateTask(em.project, "other workspace", "lattice-key: lattice:t1/w2/k1"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.CreateTask(em.project, "ten", "lattice-key: lattice:t1/w1/k10"); err != nil {
		t.Fatal(err)
	}
	if _, err := em.tr.Find(ctx(t), "k1"); !errors.Is(err, tracker.ErrNotFound) {
		t.Fatalf("Find(k1): %v", err)
	}
	// The web editor's HTML and a marker typed twice still read as the key.
	id, _ := p.CreateTask(em.project, "html", "<p>hello</p><p>lattice-key: lattice:t1/w1/k1</p><p>lattice-key: lattice:t1/w1/k1</p>")
	got, err := em.tr.Find(ctx(t), "k1")
	if err != nil || got.Ref.ID != strconv.FormatInt(id, 10) || got.Ref.Key != "k1" {
		t.Fatalf("Find(k1): %+v %v", got, err)
	}
	if _, err := em.tr.Find(ctx(t), "k_"); !errors.Is(err, tracker.ErrNotFound) {
		t.Fatalf("Find(k_) matched a wildcard: %v", err)
	}
}

func TestANamespaceOtherThanTheDefaultIsKeptApart(t *testing.T) {
	em := newEmulated(t, vikunjaemu.Options{})
	if _, err := em.tr.Create(ctx(t), "k1", tracker.Draft{Title: "default namespace"}); err != nil {
		t.Fatal(err)
	}
	other, _ := vikunja.New(vikunja.Params{BaseURL: strings.TrimSuffix(em.tr.Link(tracker.ItemRef{}), "/tasks/"),
		Token: em.e.Token, Project: em.project, Source: tracker.Source{Namespace: "relayr", Tenant: "t1", Workspace: "w1"}})
	if _, err := other.Find(ctx(t), "k1"); !errors.Is(err, tracker.ErrNotFound) {
		t.Fatalf("another namespace found the item: %v", err)
	}
}

func TestItemsPagesThroughManyChangesInOneSecond(t *testing.T) {
	em := newEmulated(t, vikunjaemu.Options{RateLimit: -1})
	since := em.clock.Now()
	want := map[string]bool{}
	for i := range 130 {
		if i == 70 {
			em.clock.Advance(time.Second)
		}
		it, err := em.tr.Create(ctx(t), "k"+strconv.Itoa(i), tracker.Draft{Title: "t"})
		if err != nil {
			t.Fatal(err)
		}
		want[it.Ref.ID] = true
	}
	seen := map[string]int{}
	q := tracker.Query{Since: since}
	pages := 0
	for {
		p, err := em.tr.Items(ctx(t), q)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, it := range p.Items {
			seen[it.Ref.ID]++
		}
		if p.Next == "" {
			break
		}
		q.Page = p.Next
		if pages > 20 {
			t.Fatal("Items never ended")
		}
	}
	for id := range want {
		if seen[id] != 1 {
			t.Errorf("item %s answered %d times", id, seen[id])
		}
	}
	if _, err := em.tr.Items(ctx(t), tracker.Query{Page: "garbage"}); !errors.Is(err, tracker.ErrInvalid) {
		t.Fatalf("a garbage page token: %v", err)
	}
}

func TestItemsReadsTheSecondOfSinceAgain(t *testing.T) {
	em := newEmulated(t, vikunjaemu.Options{})
	em.clock.Advance(500 * time.Millisecond)
	a, err := em.tr.Create(ctx(t), "a", tracker.Draft{Title: "a"})
	if err != nil {
		t.Fatal(err)
	}
	// Since falls inside a's second: a changed at or after it as far as one
	// second's precision can tell, so it is answered.
	p, err := em.tr.Items(ctx(t), tracker.Query{Since: em.clock.Now()})
	if err != nil || len(p.Items) != 1 || p.Items[0].Ref.ID != a.Ref.ID {
		t.Fatalf("Items: %+v %v", p, err)
	}
	if n := em.e.Requests("GET /api/v1/projects/{id}/tasks"); n != 1 {
		t.Fatalf("%d list requests", n)
	}
}

func TestCommentBumpLagDoesNotHideComments(t *testing.T) {
	em := newEmulated(t, vikunjaemu.Options{CommentBumpDelay: 1500 * time.Millisecond})
	made, err := em.tr.Create(ctx(t), "a", tracker.Draft{Title: "a"})
	if err != nil {
		t.Fatal(err)
	}
	em.clock.Advance(5 * time.Second)
	if _, err := em.tr.Comment(ctx(t), made.Ref.ID, "c1", "hello"); err != nil {
		t.Fatal(err)
	}
	if it, _ := em.tr.Item(ctx(t), made.Ref.ID); !it.UpdatedAt.Equal(made.UpdatedAt) {
		t.Fatalf("updated moved before the listener ran: %s", it.UpdatedAt)
	}
	em.clock.Advance(2 * time.Second)
	it, _ := em.tr.Item(ctx(t), made.Ref.ID)
	if !it.UpdatedAt.After(made.UpdatedAt) {
		t.Fatalf("a comment never moved updated: %s", it.UpdatedAt)
	}
	cs, err := em.tr.Comments(ctx(t), made.Ref.ID, time.Time{})
	if err != nil || len(cs) != 1 || cs[0].Key != "c1" || cs[0].Body != "hello" || cs[0].Author != "adapter" {
		t.Fatalf("comments %+v %v", cs, err)
	}
}

func TestCommentsPagesPastFifty(t *testing.T) {
	em := newEmulated(t, vikunjaemu.Options{RateLimit: -1})
	made, _ := em.tr.Create(ctx(t), "a", tracker.Draft{Title: "a"})
	n, _ := strconv.ParseInt(made.Ref.ID, 10, 64)
	for i := range 120 {
		if _, err := em.e.Person().Comment(n, "c"+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	em.e.ResetCounts()
	cs, err := em.tr.Comments(ctx(t), made.Ref.ID, time.Time{})
	if err != nil || len(cs) != 120 || cs[0].Body != "c0" || cs[119].Body != "c119" {
		t.Fatalf("%d comments, %v", len(cs), err)
	}
	if got := em.e.Requests("GET /api/v1/tasks/{id}/comments"); got != 3 {
		t.Fatalf("%d pages read", got)
	}
}

func TestFailuresAreTyped(t *testing.T) {
	cases := []struct {
		name  string
		fault vikunjaemu.Fault
		is    error
	}{
		{"ServerError", vikunjaemu.Fault{Status: 502}, tracker.ErrUnavailable},
		{"Dropped", vikunjaemu.Fault{Kind: vikunjaemu.Drop}, tracker.ErrUnavailable},
		{"Garbage200", vikunjaemu.Fault{Status: 200, Body: []byte("<html>maintenance</html>")}, tracker.ErrUnavailable},
		{"TaskWithoutAnID", vikunjaemu.Fault{Status: 200, Body: []byte(`{"title":null,"id":null}`)}, tracker.ErrUnavailable},
		{"Teapot", vikunjaemu.Fault{Status: 418, Body: []byte(`{}`)}, tracker.ErrRefused},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			em := newEmulated(t, vikunjaemu.Options{})
			em.e.Fail(1, c.fault)
			_, err := em.tr.Item(ctx(t), "1")
			if !errors.Is(err, c.is) {
				t.Fatalf("err %v, want %v", err, c.is)
			}
		})
	}
	t.Run("ArchivedProjectIsRefused", func(t *testing.T) {
		em := newEmulated(t, vikunjaemu.Options{})
		made, _ := em.tr.Create(ctx(t), "a", tracker.Draft{Title: "a"})
		_ = em.e.Person().Archive(em.project, true)
		title := "b"
		if _, err := em.tr.Update(ctx(t), made.Ref.ID, tracker.Patch{Title: &title}); !errors.Is(err, tracker.ErrRefused) {
			t.Fatalf("update in an archived project: %v", err)
		}
		if _, err := em.tr.Create(ctx(t), "b", tracker.Draft{Title: "b"}); !errors.Is(err, tracker.ErrRefused) || !tracker.CertainlyNotTaken(err) {
			t.Fatalf("create in an archived project: %v", err)
		}
		if _, err := em.tr.Item(ctx(t), made.Ref.ID); err != nil {
			t.Fatalf("an archived project's item doesn't read: %v", err)
		}
	})
	t.Run("BadTokenIsUnauthorized", func(t *testing.T) {
		em := newEmulated(t, vikunjaemu.Options{})
		ro := em.e.AddToken(em.e.UserID, map[string][]string{"tasks": {"read_one"}}, time.Time{})
		base := strings.TrimSuffix(em.tr.Link(tracker.ItemRef{}), "/tasks/")
		tr, _ := vikunja.New(vikunja.Params{BaseURL: base, Token: ro, Project: em.project, Source: source})
		if _, err := tr.Create(ctx(t), "a", tracker.Draft{Title: "a"}); !errors.Is(err, tracker.ErrUnauthorized) {
			t.Fatalf("create without the permission: %v", err)
		}
	})
	t.Run("RateLimitedWaitsUntilTheReset", func(t *testing.T) {
		em := newEmulated(t, vikunjaemu.Options{RateLimit: 2})
		em.clock.Advance(20 * time.Second)
		_, _ = em.tr.Item(ctx(t), "1")
		_, _ = em.tr.Item(ctx(t), "1")
		em.clock.Advance(15 * time.Second)
		_, err := em.tr.Item(ctx(t), "1")
		var rl *tracker.RateLimitedError
		if !errors.As(err, &rl) || rl.RetryAfter != 45*time.Second {
			t.Fatalf("err %v, want a wait of 45s", err)
		}
	})
	t.Run("ALargeBodyReadsAndAnOversizedOneIsUnavailable", func(t *testing.T) {
		em := newEmulated(t, vikunjaemu.Options{}, vikunja.WithMaxBody(3<<20))
		big := strings.Repeat("x", 2<<20)
		made, err := em.tr.Create(ctx(t), "big", tracker.Draft{Title: "big", Description: big})
		if err != nil {
			t.Fatal(err)
		}
		if it, err := em.tr.Item(ctx(t), made.Ref.ID); err != nil || it.Description != big {
			t.Fatalf("a 2 MB description: %v", err)
		}
		em.e.Fail(1, vikunjaemu.Fault{Status: 200, Body: []byte(`"` + strings.Repeat("y", 4<<20) + `"`)})
		if _, err := em.tr.Item(ctx(t), made.Ref.ID); !errors.Is(err, tracker.ErrUnavailable) {
			t.Fatalf("a 4 MB answer: %v", err)
		}
	})
	t.Run("AMissingTaskIsNotFound", func(t *testing.T) {
		em := newEmulated(t, vikunjaemu.Options{})
		for _, id := range []string{"999", "abc", "-1", ""} {
			if _, err := em.tr.Item(ctx(t), id); !errors.Is(err, tracker.ErrNotFound) {
				t.Fatalf("Item(%q): %v", id, err)
			}
		}
	})
}

// Each phase of a request has its own timeout, on virtual time.
func TestTimeouts(t *testing.T) {
	t.Run("AHangWaitingForHeadersEndsAfterTheTimeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := vikunjaemu.New(vikunjaemu.Options{})
			s := memnet.NewServer(e)
			defer s.Close()
			defer e.Close()
			pid := e.CreateProject("Lattice", "LAT")
			tr, _ := vikunja.New(vikunja.Params{BaseURL: s.URL, Token: e.Token, Project: pid, Source: source},
				vikunja.WithTransport(s.Transport()))
			e.Fail(1, vikunjaemu.Fault{Kind: vikunjaemu.Hang})
			start := time.Now()
			_, err := tr.Find(context.Background(), "k1")
			if !errors.Is(err, tracker.ErrUnavailable) || tracker.CertainlyNotTaken(err) {
				t.Fatalf("err %v", err)
			}
			if d := time.Since(start); d != vikunja.DefaultTimeout {
				t.Fatalf("gave up after %s", d)
			}
		})
	})
	t.Run("ABodyThatStallsEndsAfterTheTimeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			release := make(chan struct{})
			s := memnet.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(200)
				_, _ = w.Write([]byte(`{"id":1,`))
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
				case <-release:
				}
			}))
			defer s.Close()
			defer close(release)
			tr, _ := vikunja.New(vikunja.Params{BaseURL: s.URL, Token: "tk", Project: 1, Source: source},
				vikunja.WithTransport(s.Transport()), vikunja.WithTimeout(3*time.Second))
			start := time.Now()
			if _, err := tr.Item(context.Background(), "1"); !errors.Is(err, tracker.ErrUnavailable) {
				t.Fatalf("err %v", err)
			}
			if d := time.Since(start); d != 3*time.Second {
				t.Fatalf("gave up after %s", d)
			}
		})
	})
	t.Run("ACustomRoundTripperIsTimedToo", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := vikunjaemu.New(vikunjaemu.Options{})
			s := memnet.NewServer(e)
			defer s.Close()
			defer e.Close()
			e.Fail(1, vikunjaemu.Fault{Kind: vikunjaemu.Hang})
			rt := roundTripper{s.Transport()}
			tr, _ := vikunja.New(vikunja.Params{BaseURL: s.URL, Token: e.Token, Project: 1, Source: source}, vikunja.WithTransport(rt))
			start := time.Now()
			if _, err := tr.Item(context.Background(), "1"); !errors.Is(err, tracker.ErrUnavailable) {
				t.Fatalf("err %v", err)
			}
			if d := time.Since(start); d != vikunja.DefaultTimeout {
				t.Fatalf("gave up after %s", d)
			}
		})
	})
	t.Run("ARefusedConnectionIsUnavailable", func(t *testing.T) {
		s := memnet.NewServer(http.NotFoundHandler())
		s.Close()
		tr, _ := vikunja.New(vikunja.Params{BaseURL: s.URL, Token: "tk", Project: 1, Source: source}, vikunja.WithTransport(s.Transport()))
		if _, err := tr.Item(ctx(t), "1"); !errors.Is(err, tracker.ErrUnavailable) {
			t.Fatalf("err %v", err)
		}
	})
}

type roundTripper struct{ rt http.RoundTripper }

func (r roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	return r.rt.RoundTrip(req)
}

func TestNewRefusesBadParams(t *testing.T) {
	for _, p := range []vikunja.Params{
		{BaseURL: "ftp://x", Token: "t", Project: 1},
		{BaseURL: "http://x", Token: "", Project: 1},
		{BaseURL: "http://x", Token: "t", Project: 0},
		{BaseURL: "::", Token: "t", Project: 1},
	} {
		if _, err := vikunja.New(p); !errors.Is(err, tracker.ErrInvalid) {
			t.Errorf("New(%+v): %v", p, err)
		}
	}
	c := vikunja.Connector{BaseURL: "http://x", Project: 2}
	tr, err := c.Connect(context.Background(), tracker.Credentials{Token: "t"}, source)
	if err != nil || tr.Project() != "2" || c.Kind() != "vikunja" {
		t.Fatalf("Connect: %v", err)
	}
}

func TestNudge(t *testing.T) {
	tr, _ := vikunja.New(vikunja.Params{BaseURL: "http://x", Token: "t", Project: 2, Source: source})
	sign := func(body string) http.Header {
		h := http.Header{}
		h.Set(vikunja.SignatureHeader, vikunjaemu.Sign("k", []byte(body)))
		return h
	}
	cases := []struct {
		name, body string
		want       string
		deleted    []string
		is         error
	}{
		{"ProjectNamed", `{"event_name":"task.updated","data":{"project":{"id":2},"task":{"id":5,"project_id":2}}}`, "2", nil, nil},
		{"OnlyTheTaskNamesIt", `{"data":{"task":{"project_id":7}}}`, "7", nil, nil},
		{"ADeletionNamesItsTask", `{"event_name":"task.deleted","data":{"project":{"id":2},"task":{"id":5,"project_id":2}}}`, "2", []string{"5"}, nil},
		{"ADeletionOfAnotherProjectsTaskNamesNone", `{"event_name":"task.deleted","data":{"project":{"id":2},"task":{"id":5,"project_id":3}}}`, "2", nil, nil},
		{"ADeletionWithoutATaskIdNamesNone", `{"event_name":"task.deleted","data":{"project":{"id":2},"task":{"project_id":2}}}`, "2", nil, nil},
		{"AnUpdateNamesNoDeletion", `{"event_name":"task.updated","data":{"project":{"id":2},"task":{"id":5}}}`, "2", nil, nil},
		{"NoProject", `{"data":{}}`, "", nil, tracker.ErrRefused},
		{"NotJSON", `<html>`, "", nil, tracker.ErrRefused},
	}
	for _, c := range cases {
		got, err := tr.Nudge("k", sign(c.body), []byte(c.body))
		if got.Project != c.want || !slices.Equal(got.Deleted, c.deleted) || (c.is == nil && err != nil) || (c.is != nil && !errors.Is(err, c.is)) {
			t.Errorf("%s: %+v %v", c.name, got, err)
		}
	}
	deletion := `{"event_name":"task.deleted","data":{"project":{"id":2},"task":{"id":5,"project_id":2}}}`
	if got, err := tr.Nudge("k", sign(deletion), []byte(deletion+" ")); !errors.Is(err, tracker.ErrUnauthorized) || got.Deleted != nil {
		t.Errorf("a tampered deletion: %+v %v", got, err)
	}
	if _, err := tr.Nudge("", sign("{}"), []byte("{}")); !errors.Is(err, tracker.ErrUnauthorized) {
		t.Errorf("no secret: %v", err)
	}
	h := http.Header{}
	h.Set(vikunja.SignatureHeader, "zz")
	if _, err := tr.Nudge("k", h, []byte("{}")); !errors.Is(err, tracker.ErrUnauthorized) {
		t.Errorf("a signature that isn't hex: %v", err)
	}
}

func TestLinkAndName(t *testing.T) {
	em := newEmulated(t, vikunjaemu.Options{})
	inbox, _ := vikunja.New(vikunja.Params{BaseURL: strings.TrimSuffix(em.tr.Link(tracker.ItemRef{}), "/tasks/"), Token: em.e.Token, Project: 1, Source: source})
	it, err := inbox.Create(ctx(t), "k", tracker.Draft{Title: "in the inbox"})
	if err != nil {
		t.Fatal(err)
	}
	if it.Ref.Name != "#1" || !strings.HasSuffix(it.Ref.Link, "/tasks/"+it.Ref.ID) {
		t.Fatalf("ref %+v", it.Ref)
	}
}

// A label a person deleted after the adapter resolved it is resolved again:
// the edit lands, and its 404 (code 8002) never reads as the task deleted.
func TestALabelAPersonDeletedIsResolvedAgain(t *testing.T) {
	em := newEmulated(t, vikunjaemu.Options{RateLimit: -1})
	made, err := em.tr.Create(ctx(t), "a", tracker.Draft{Title: "a", Labels: []string{"ci"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := em.e.Person().DeleteLabel("ci"); err != nil {
		t.Fatal(err)
	}
	labels := []string{"ci"}
	got, err := em.tr.Update(ctx(t), made.Ref.ID, tracker.Patch{Labels: &labels})
	if err != nil || !slices.Equal(got.Labels, labels) {
		t.Fatalf("an edit adding the deleted label again: %+v, %v; want it labelled ci", got.Labels, err)
	}
	if err := em.e.Person().DeleteLabel("ci"); err != nil {
		t.Fatal(err)
	}
	again, err := em.tr.Create(ctx(t), "b", tracker.Draft{Title: "b", Labels: []string{"ci"}})
	if err != nil || !slices.Equal(again.Labels, labels) {
		t.Fatalf("a create with the deleted label: %+v, %v", again.Labels, err)
	}
	if read, err := em.tr.Item(ctx(t), again.Ref.ID); err != nil || !slices.Equal(read.Labels, labels) {
		t.Fatalf("read back: %+v, %v", read.Labels, err)
	}
}

// A server whose service.maxitemsperpage is under the adapter's page size
// answers short pages before its last: every list still reads to its end.
func TestAServerWithSmallerPagesIsReadToTheEnd(t *testing.T) {
	em := newEmulated(t, vikunjaemu.Options{RateLimit: -1, MaxItemsPerPage: 20})
	since := em.clock.Now()
	for i := range 45 {
		if _, err := em.tr.Create(ctx(t), "k"+strconv.Itoa(i), tracker.Draft{Title: "t", Labels: []string{"l" + strconv.Itoa(i)}}); err != nil {
			t.Fatal(err)
		}
		em.clock.Advance(time.Second)
	}
	seen := 0
	q := tracker.Query{Since: since}
	for range 20 {
		p, err := em.tr.Items(ctx(t), q)
		if err != nil {
			t.Fatal(err)
		}
		seen += len(p.Items)
		if q.Page = p.Next; q.Page == "" {
			break
		}
	}
	if seen != 45 {
		t.Fatalf("Items answered %d of 45 tasks", seen)
	}
	// The lookup by key finds a task past the first page.
	if it, err := em.tr.Find(ctx(t), "k44"); err != nil || it.Ref.Key != "k44" {
		t.Fatalf("Find past the first page: %+v, %v", it.Ref, err)
	}
	// Labels past the first page are found, not made twice.
	fresh, err := vikunja.New(vikunja.Params{BaseURL: em.url, Token: em.e.Token, Project: em.project, Source: source},
		vikunja.WithTransport(em.transport), vikunja.WithClock(em.clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	before := em.e.Requests("PUT /api/v1/labels")
	if _, err := fresh.Create(ctx(t), "late", tracker.Draft{Title: "t", Labels: []string{"l44"}}); err != nil {
		t.Fatal(err)
	}
	if n := em.e.Requests("PUT /api/v1/labels") - before; n != 0 {
		t.Fatalf("%d labels made for one the server has", n)
	}
}

// A key Vikunja's markup would rewrite, or one it would trim, is refused
// before any request: it would read back as another key.
func TestAKeyVikunjaWouldRewriteIsInvalidBeforeAnyRequest(t *testing.T) {
	em := newEmulated(t, vikunjaemu.Options{RateLimit: -1})
	made, err := em.tr.Create(ctx(t), "a", tracker.Draft{Title: "a"})
	if err != nil {
		t.Fatal(err)
	}
	em.e.ResetCounts()
	for _, key := range []string{"R&D/1", "x<b>y", "k1 "} {
		if _, err := em.tr.Create(ctx(t), key, tracker.Draft{Title: "t"}); !errors.Is(err, tracker.ErrInvalid) {
			t.Fatalf("Create under %q: %v, want invalid", key, err)
		}
		if _, err := em.tr.Find(ctx(t), key); !errors.Is(err, tracker.ErrInvalid) {
			t.Fatalf("Find of %q: %v, want invalid", key, err)
		}
		if _, err := em.tr.Comment(ctx(t), made.Ref.ID, key, "b"); !errors.Is(err, tracker.ErrInvalid) {
			t.Fatalf("Comment under %q: %v, want invalid", key, err)
		}
	}
	if n := em.e.TotalRequests(); n != 0 {
		t.Fatalf("%d requests for keys Vikunja would rewrite", n)
	}
}
