package jira

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// randomText is text of paragraphs, line ends, blank runs, spaces and
// characters ADF carries as they are.
func randomText(r *rand.Rand) string {
	pieces := []string{"a", "b c", " ", "\n", "\n\n", "\n\n\n", "ü", "<b>", "*x*", "`y`", "\t", "日本", "-- ", "lattice-key: no"}
	var b strings.Builder
	for range r.IntN(12) {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

func TestTextGoesAsADFAndReadsBackTheSame(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		text := randomText(r)
		raw, err := json.Marshal(document(text))
		if err != nil {
			t.Fatal(err)
		}
		doc, ok := parseDocument(raw)
		if !ok {
			t.Fatalf("%q: the document sent does not read back: %s", text, raw)
		}
		if got := plainText(doc); got != text {
			t.Fatalf("%q went as %s and read back as %q", text, raw, got)
		}
		for _, n := range doc.Content {
			for _, c := range n.Content {
				if c.Type == "text" && (c.Text == "" || strings.Contains(c.Text, "\n")) {
					t.Fatalf("%q: a text node ADF refuses: %s", text, raw)
				}
			}
		}
	}
}

func TestTheMarkerParagraphComesOffAndOnlyOurs(t *testing.T) {
	m := tracker.HiddenMarker{Source: tracker.Source{Tenant: "t", Workspace: "w"}}
	for _, key := range []string{"ci/build-1", "a b", "x -->", "ü%2F", "lattice-key: y"} {
		doc := withMarker(document("Body\n\nmore"), m.Tag(key))
		raw, _ := json.Marshal(doc)
		back, _ := parseDocument(raw)
		tag, rest := cutMarker(back)
		got, ok := m.Untag(tag)
		if !ok || got != key || plainText(rest) != "Body\n\nmore" {
			t.Fatalf("key %q: tag %q → %q %v, rest %q", key, tag, got, ok, plainText(rest))
		}
		other := tracker.HiddenMarker{Source: tracker.Source{Tenant: "t", Workspace: "other"}}
		if _, ok := other.Untag(tag); ok {
			t.Fatalf("another workspace's marker read as its own: %q", tag)
		}
	}
	if tag, _ := cutMarker(document("no marker here")); tag != "" {
		t.Fatalf("a document without a marker answered tag %q", tag)
	}
}

func TestAPersonsDocumentReadsAsTheTextShown(t *testing.T) {
	raw := `{"type":"doc","version":1,"content":[
	 {"type":"heading","attrs":{"level":2},"content":[{"type":"text","text":"Title"}]},
	 {"type":"paragraph","attrs":{"localId":"abc"},"content":[{"type":"text","text":"Hi "},{"type":"text","text":"there","marks":[{"type":"strong"}]},{"type":"mention","attrs":{"id":"1","text":"@Ana"}},{"type":"emoji","attrs":{"shortName":":smile:"}}]},
	 {"type":"bulletList","content":[{"type":"listItem","content":[{"type":"paragraph","content":[{"type":"text","text":"one"}]}]},{"type":"listItem","content":[{"type":"paragraph","content":[{"type":"text","text":"two"}]}]}]},
	 {"type":"codeBlock","content":[{"type":"text","text":"x := 1"}]},
	 {"type":"mediaSingle","content":[{"type":"media","attrs":{"id":"m"}}]}]}`
	doc, ok := parseDocument(json.RawMessage(raw))
	if !ok {
		t.Fatal("a person's document did not read")
	}
	want := "Title\n\nHi there@Ana:smile:\n\n- one\n- two\n\nx := 1\n\n"
	if got := plainText(doc); got != want {
		t.Fatalf("read as %q, want %q", got, want)
	}
	for raw, want := range map[string]bool{`{"type":1}`: false, `[`: false, `{"type":"paragraph"}`: false, `"plain"`: true, `null`: true, ``: true} {
		if _, ok := parseDocument(json.RawMessage(raw)); ok != want {
			t.Errorf("%q read %v, want %v", raw, ok, want)
		}
	}
}

// TestMinuteLiteralsNeverNameATimeAfterTheCursor: JQL reads a literal to
// the minute in the account's zone; relayr's literal is read at or before
// the time it stands for, in zones far from UTC and across DST changes,
// and never more than an hour and a minute before it.
func TestMinuteLiteralsNeverNameATimeAfterTheCursor(t *testing.T) {
	zones := []string{"UTC", "Pacific/Kiritimati", "Pacific/Pago_Pago", "America/New_York", "Australia/Lord_Howe", "Asia/Kathmandu", "Europe/Berlin"}
	starts := []time.Time{
		time.Date(2026, 11, 1, 4, 0, 0, 0, time.UTC),  // New York turns back at 06:00 UTC
		time.Date(2026, 3, 8, 5, 0, 0, 0, time.UTC),   // New York springs forward at 07:00 UTC
		time.Date(2026, 4, 4, 14, 0, 0, 0, time.UTC),  // Lord Howe turns back half an hour
		time.Date(2026, 10, 25, 0, 0, 0, 0, time.UTC), // Berlin turns back at 01:00 UTC
	}
	for _, z := range zones {
		loc, err := time.LoadLocation(z)
		if err != nil {
			t.Fatal(err)
		}
		d := &Driver{zone: loc}
		for _, start := range starts {
			for m := 0; m < 6*60; m += 7 {
				at := start.Add(time.Duration(m)*time.Minute + 13*time.Second + 457*time.Millisecond)
				lit := d.minute(at)
				wall := strings.Trim(lit, `"`)
				first, err := time.ParseInLocation(jqlLayout, wall, loc)
				if err != nil {
					t.Fatalf("%s %v: %s does not parse: %v", z, at, lit, err)
				}
				last := lastReading(wall, loc)
				if last.After(at) || first.After(at) {
					t.Fatalf("%s: %v as %s, read as late as %v: after it", z, at, lit, last)
				}
				if at.Sub(first) > 61*time.Minute+time.Second {
					t.Fatalf("%s: %v as %s, read as %v: more than an hour before", z, at, lit, first)
				}
			}
		}
	}
}

func TestOneIssuesWritesArePacedWithinJirasWindows(t *testing.T) {
	now := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	var slept time.Duration
	p := newPacer(func() time.Time { return now }, func(_ context.Context, d time.Duration) error { now = now.Add(d); slept += d; return nil })
	ctx := context.Background()
	var sent []time.Time
	for range 150 {
		if err := p.enter(ctx, "PUT /rest/api/3/issue/{issueIdOrKey}", "10001", true); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, now)
	}
	for i := range sent {
		for _, w := range issueWindows {
			n := 0
			for j := i; j >= 0 && sent[j].After(sent[i].Add(-w.span)); j-- {
				n++
			}
			if n > w.limit {
				t.Fatalf("write %d: %d writes within %s, Jira takes %d", i, n, w.span, w.limit)
			}
		}
	}
	if slept < 30*time.Second {
		t.Fatalf("150 writes to one issue waited %s, want the 30 s window's pace", slept)
	}
	// Another issue is not held up by the first one's burst.
	before := slept
	if err := p.enter(ctx, "PUT /rest/api/3/issue/{issueIdOrKey}", "10002", true); err != nil || slept != before {
		t.Fatalf("another issue waited %s: %v", slept-before, err)
	}
	// A wait past the caller's deadline is answered rate-limited, unsent.
	for range 20 {
		if err := p.enter(ctx, "PUT /rest/api/3/issue/{issueIdOrKey}", "10003", true); err != nil {
			t.Fatal(err)
		}
	}
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	err := p.enter(short, "PUT /rest/api/3/issue/{issueIdOrKey}", "10003", true)
	var rl *tracker.RateLimitedError
	if !errors.As(err, &rl) || !tracker.CertainlyNotTaken(err) || rl.RetryAfter <= time.Second {
		t.Fatalf("a wait past the deadline: %v, want rate-limited and unsent", err)
	}
}

func TestA429HoldsWhatItsReasonNames(t *testing.T) {
	now := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	p := newPacer(func() time.Time { return now }, nil)
	answer := func(reason string) trackerhttp.Answer {
		return trackerhttp.Answer{Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"5"}, "Ratelimit-Reason": {reason}}}
	}
	p.heard("PUT /rest/api/3/issue/{issueIdOrKey}", "1", answer(reasonPerIssue))
	if w := p.reserve("PUT /rest/api/3/issue/{issueIdOrKey}", "1", true); w != 5*time.Second {
		t.Fatalf("the issue held %s, want 5s", w)
	}
	if w := p.reserve("PUT /rest/api/3/issue/{issueIdOrKey}", "2", true); w != 0 {
		t.Fatalf("another issue held %s", w)
	}
	p.heard("POST /rest/api/3/search/jql", "", answer(reasonBurst))
	if w := p.reserve("POST /rest/api/3/search/jql", "", false); w != 5*time.Second {
		t.Fatalf("the endpoint held %s", w)
	}
	if w := p.reserve("GET /rest/api/3/issue/{issueIdOrKey}", "3", false); w != 0 {
		t.Fatalf("another endpoint held %s", w)
	}
	p.heard("GET /rest/api/3/myself", "", answer("jira-quota-tenant-based"))
	if w := p.reserve("GET /rest/api/3/issue/{issueIdOrKey}", "3", false); w != 5*time.Second {
		t.Fatalf("a quota held %s of everything, want 5s", w)
	}
	now = now.Add(5 * time.Second)
	if w := p.reserve("GET /rest/api/3/issue/{issueIdOrKey}", "3", false); w != 0 {
		t.Fatalf("held %s after the Retry-After", w)
	}
}

func TestRoutesAreTheDescriptionsPaths(t *testing.T) {
	for path, want := range map[string]string{
		"rest/api/3/issue/10001":               "rest/api/3/issue/{issueIdOrKey}",
		"rest/api/3/issue/10001/comment/10200": "rest/api/3/issue/{issueIdOrKey}/comment/{id}",
		"rest/api/3/issue/10001/transitions":   "rest/api/3/issue/{issueIdOrKey}/transitions",
		"rest/api/3/issue":                     "rest/api/3/issue",
		"rest/api/3/project/OPS":               "rest/api/3/project/OPS",
	} {
		if got := routeOf(path); got != want {
			t.Errorf("%s: %s, want %s", path, got, want)
		}
	}
}

func TestNudgeVerifiesAndNamesTheProjectAndTheDeleted(t *testing.T) {
	d := &Driver{}
	body := []byte(`{"timestamp":1,"webhookEvent":"jira:issue_deleted","issue":{"id":"10007","key":"OPS-7","fields":{"project":{"id":"1","key":"OPS"}}}}`)
	h := http.Header{SignatureHeader: {"sha256=" + trackerhttp.SignSHA256("s3cret", body)}}
	n, err := d.Nudge("s3cret", h, body)
	if err != nil || n.Project != "OPS" || len(n.Deleted) != 1 || n.Deleted[0] != "10007" {
		t.Fatalf("%+v %v", n, err)
	}
	if _, err := d.Nudge("other", h, body); !errors.Is(err, tracker.ErrUnauthorized) {
		t.Fatalf("a wrong secret: %v", err)
	}
	upd := []byte(`{"webhookEvent":"jira:issue_updated","issue":{"id":"10007","fields":{"project":{"key":"OPS"}}}}`)
	n, err = d.Nudge("s", http.Header{SignatureHeader: {"sha256=" + trackerhttp.SignSHA256("s", upd)}}, upd)
	if err != nil || n.Project != "OPS" || len(n.Deleted) != 0 {
		t.Fatalf("an update: %+v %v", n, err)
	}
	for _, bad := range [][]byte{[]byte(`[`), []byte(`{"webhookEvent":"x"}`)} {
		if _, err := d.Nudge("s", http.Header{SignatureHeader: {"sha256=" + trackerhttp.SignSHA256("s", bad)}}, bad); !errors.Is(err, tracker.ErrRefused) {
			t.Fatalf("%s: %v, want refused", bad, err)
		}
	}
}

func TestStatesReadOffCategoryNameAndResolution(t *testing.T) {
	st := func(name, cat string) status {
		s := status{ID: name, Name: name}
		s.StatusCategory.Key = cat
		return s
	}
	wf := workflow{statuses: []status{st("Backlog", "new"), st("To Do", "new"), st("In Progress", "indeterminate"), st("Done", "done"), st("Won't Do", "done")}, cancelled: DefaultCancelledResolutions}
	for _, c := range []struct {
		st         status
		resolution string
		want       tracker.State
	}{
		{st("Backlog", "new"), "", tracker.Backlog},
		{st("To Do", "new"), "", tracker.Todo},
		{st("In Progress", "indeterminate"), "", tracker.Started},
		{st("Done", "done"), "Done", tracker.Done},
		{st("Done", "done"), "Duplicate", tracker.Cancelled},
		{st("Won't Do", "done"), "", tracker.Cancelled},
		{st("Odd", "undefined"), "", tracker.Todo},
	} {
		if got := wf.state(c.st, c.resolution); got != c.want {
			t.Errorf("%s/%s: %s, want %s", c.st.Name, c.resolution, got, c.want)
		}
	}
	if len(wf.holds()) != 0 {
		t.Errorf("a workflow with all five holds %v", wf.holds())
	}
	classic := workflow{statuses: []status{st("Open", "new"), st("In Progress", "indeterminate"), st("Resolved", "done"), st("Closed", "done"), st("Reopened", "new")}, cancelled: DefaultCancelledResolutions}
	h := classic.holds()
	if h[tracker.Backlog] != tracker.Todo || h[tracker.Cancelled] != tracker.Done || len(h) != 2 {
		t.Errorf("the classic workflow holds %v", h)
	}
	named := workflow{statuses: classic.statuses, names: map[tracker.State]string{tracker.Backlog: "Reopened", tracker.Cancelled: "Closed", tracker.Done: "Resolved"}, cancelled: DefaultCancelledResolutions}
	if s := named.state(st("Reopened", "new"), ""); s != tracker.Backlog {
		t.Errorf("configured Reopened reads %s", s)
	}
	if s, ok := named.target(tracker.Cancelled); !ok || s.Name != "Closed" {
		t.Errorf("configured cancelled goes to %v %v", s, ok)
	}
}

func TestAnEndpointsBurstIsPacedWithinItsBucket(t *testing.T) {
	now := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	p := newPacer(func() time.Time { return now }, func(_ context.Context, d time.Duration) error { now = now.Add(d); return nil })
	start := now
	var sent []time.Time
	for range 450 {
		if err := p.enter(context.Background(), "POST /rest/api/3/search/jql", "", false); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, now)
	}
	// A second's worth at once, then 100 a second (less the margin): no
	// second holds more than the bucket and what it refills.
	for i := range sent {
		n := 0
		for j := i; j >= 0 && sent[j].After(sent[i].Add(-time.Second)); j-- {
			n++
		}
		if n > 201 {
			t.Fatalf("request %d: %d within a second", i, n)
		}
	}
	if took := now.Sub(start); took < 3*time.Second || took > 5*time.Second {
		t.Fatalf("450 searches took %s, want about 4 s at 90 a second after a bucket of 90", took)
	}
	// Another endpoint has its own bucket.
	before := now
	for range 90 {
		if err := p.enter(context.Background(), "GET /rest/api/3/issue/{issueIdOrKey}", "1", false); err != nil {
			t.Fatal(err)
		}
	}
	if now != before {
		t.Fatalf("90 reads of issues waited %s: their bucket is their own", now.Sub(before))
	}
}
