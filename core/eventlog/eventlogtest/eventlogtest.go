// Package eventlogtest is the EventLog port's contract: an id is appended
// once, sequences run per workspace from 1 without gaps, reads go after a
// sequence, and the tracker: namespace is the tracker followers' alone.
//
// Run takes a factory, never a shared log: each subtest builds its own.
package eventlogtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/eventlog"
)

var t0 = time.Date(2026, 10, 17, 9, 30, 0, 0, time.UTC)

// Run runs the whole contract against logs made by newLog, one per subtest.
func Run(t *testing.T, newLog func(t *testing.T) eventlog.Log) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each case has a log of its own
			c.run(t, newLog(t))
		})
	}
}

var cases = []struct {
	name string
	run  func(t *testing.T, l eventlog.Log)
}{
	{"AppendGivesSequencesFromOnePerWorkspace", appendGivesSequences},
	{"SecondAppendOfAnIDAnswersTheFirstSequence", secondAppendIsANoOp},
	{"TenantsAndWorkspacesHaveTheirOwnLogs", ownLogs},
	{"ReadAnswersEventsAfterASequenceWithALimit", readAfter},
	{"HeadAnswersTheLastSequenceOfAWorkspace", headIsTheLast},
	{"TrackerNamespaceIsReservedToTheTrackerPublisher", reservedNamespace},
	{"InvalidEventsAreRefused", invalidEvents},
	{"QuotesUnicodeAndLargeDataRoundTrip", roundTrip},
	{"ConcurrentAppendsHaveGaplessUniqueSequences", concurrentAppends},
	{"CancelledContextFailsAndAppendsNothing", cancelledContext},
}

func event(tenant, workspace, id string) eventlog.Event {
	return eventlog.Event{
		ID: id, Tenant: tenant, Workspace: workspace, Type: "app:thing_happened",
		Correlation: "run-1", Data: json.RawMessage(`{"n":1}`), At: t0,
	}
}

func appendOK(t *testing.T, l eventlog.Log, e eventlog.Event) (int64, bool) {
	t.Helper()
	seq, appended, err := l.Append(t.Context(), eventlog.AppendParams{Publisher: "rules", Event: e})
	if err != nil {
		t.Fatalf("Append(%q): %v", e.ID, err)
	}
	return seq, appended
}

func read(t *testing.T, l eventlog.Log, tenant, workspace string, after int64, limit int) []eventlog.Event {
	t.Helper()
	es, err := l.Read(t.Context(), tenant, workspace, after, limit)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return es
}

func seqs(es []eventlog.Event) string {
	var out []string
	for _, e := range es {
		out = append(out, fmt.Sprintf("%d:%s", e.Seq, e.ID))
	}
	return strings.Join(out, ",")
}

func appendGivesSequences(t *testing.T, l eventlog.Log) {
	for i := 1; i <= 3; i++ {
		seq, appended := appendOK(t, l, event("acme", "ops", fmt.Sprintf("evt-%d", i)))
		if seq != int64(i) || !appended {
			t.Fatalf("append %d answered seq %d appended %v", i, seq, appended)
		}
	}
	if got := seqs(read(t, l, "acme", "ops", 0, 10)); got != "1:evt-1,2:evt-2,3:evt-3" {
		t.Fatalf("log %s", got)
	}
}

func secondAppendIsANoOp(t *testing.T, l eventlog.Log) {
	appendOK(t, l, event("acme", "ops", "a"))
	appendOK(t, l, event("acme", "ops", "b"))
	again := event("acme", "ops", "a")
	again.Data = json.RawMessage(`{"n":2}`)
	seq, appended := appendOK(t, l, again)
	if seq != 1 || appended {
		t.Fatalf("second append answered seq %d appended %v, want 1 and false", seq, appended)
	}
	es := read(t, l, "acme", "ops", 0, 10)
	if seqs(es) != "1:a,2:b" || string(es[0].Data) != `{"n":1}` {
		t.Fatalf("log %s with first data %s", seqs(es), es[0].Data)
	}
	seq, appended = appendOK(t, l, event("acme", "ops", "c"))
	if seq != 3 || !appended {
		t.Fatalf("append after a no-op answered seq %d, want 3 (no gap)", seq)
	}
}

func ownLogs(t *testing.T, l eventlog.Log) {
	appendOK(t, l, event("acme", "ops", "a"))
	appendOK(t, l, event("acme", "ops", "b"))
	for _, ws := range [][2]string{{"acme", "eng"}, {"globex", "ops"}} {
		seq, appended := appendOK(t, l, event(ws[0], ws[1], "a"))
		if seq != 1 || !appended {
			t.Fatalf("%v's first append answered %d %v", ws, seq, appended)
		}
		if got := seqs(read(t, l, ws[0], ws[1], 0, 10)); got != "1:a" {
			t.Fatalf("%v's log %s", ws, got)
		}
	}
	if got := read(t, l, "nobody", "ops", 0, 10); len(got) != 0 {
		t.Fatalf("an empty log read %s", seqs(got))
	}
}

func readAfter(t *testing.T, l eventlog.Log) {
	for i := 1; i <= 7; i++ {
		appendOK(t, l, event("acme", "ops", fmt.Sprintf("e%d", i)))
	}
	cases := []struct {
		after int64
		limit int
		want  string
	}{
		{0, 3, "1:e1,2:e2,3:e3"},
		{3, 3, "4:e4,5:e5,6:e6"},
		{6, 3, "7:e7"},
		{7, 3, ""},
		{2, 100, "3:e3,4:e4,5:e5,6:e6,7:e7"},
		{0, 0, ""},
		{-1, 1, "1:e1"},
		{2, math.MaxInt, "3:e3,4:e4,5:e5,6:e6,7:e7"},
	}
	for _, c := range cases {
		if got := seqs(read(t, l, "acme", "ops", c.after, c.limit)); got != c.want {
			t.Errorf("Read after %d limit %d: %s, want %s", c.after, c.limit, got, c.want)
		}
	}
	e := read(t, l, "acme", "ops", 0, 1)[0]
	want := event("acme", "ops", "e1")
	if e.Tenant != want.Tenant || e.Workspace != want.Workspace || e.Type != want.Type || e.Correlation != want.Correlation ||
		string(e.Data) != string(want.Data) || !e.At.Equal(want.At) {
		t.Fatalf("read %+v, want %+v", e, want)
	}
}

func reservedNamespace(t *testing.T, l eventlog.Log) {
	e := event("acme", "ops", "trk_0000000000000001")
	e.Type = "tracker:item_changed"
	_, _, err := l.Append(t.Context(), eventlog.AppendParams{Publisher: "rules", Event: e})
	if !errors.Is(err, eventlog.ErrReserved) {
		t.Fatalf("a rule appending tracker:item_changed: %v, want ErrReserved", err)
	}
	if got := read(t, l, "acme", "ops", 0, 10); len(got) != 0 {
		t.Fatalf("a refused append landed: %s", seqs(got))
	}
	seq, appended, err := l.Append(t.Context(), eventlog.AppendParams{Publisher: eventlog.TrackerPublisher, Event: e})
	if err != nil || seq != 1 || !appended {
		t.Fatalf("the tracker publisher's append: %d %v %v", seq, appended, err)
	}
}

func invalidEvents(t *testing.T, l eventlog.Log) {
	mut := map[string]func(*eventlog.Event){
		"no id":                func(e *eventlog.Event) { e.ID = "" },
		"no type":              func(e *eventlog.Event) { e.Type = "" },
		"no tenant":            func(e *eventlog.Event) { e.Tenant = "" },
		"no workspace":         func(e *eventlog.Event) { e.Workspace = "" },
		"NUL in id":            func(e *eventlog.Event) { e.ID = "a\x00b" },
		"NUL in type":          func(e *eventlog.Event) { e.Type = "app:\x00" },
		"NUL in correlation":   func(e *eventlog.Event) { e.Correlation = "\x00" },
		"invalid UTF-8 in id":  func(e *eventlog.Event) { e.ID = "\xff" },
		"NUL in the workspace": func(e *eventlog.Event) { e.Workspace = "o\x00ps" },
	}
	for name, m := range mut {
		e := event("acme", "ops", "id")
		m(&e)
		if _, _, err := l.Append(t.Context(), eventlog.AppendParams{Publisher: "rules", Event: e}); !errors.Is(err, eventlog.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if got := read(t, l, "acme", "ops", 0, 10); len(got) != 0 {
		t.Fatalf("a refused append landed: %s", seqs(got))
	}
	if _, err := l.Read(t.Context(), "acme", "o\x00ps", 0, 10); !errors.Is(err, eventlog.ErrInvalid) {
		t.Errorf("Read of a NUL workspace: %v, want ErrInvalid", err)
	}
}

func roundTrip(t *testing.T, l eventlog.Log) {
	big := strings.Repeat(`ü'\"日本`, 10*1024/8)
	data, err := json.Marshal(map[string]string{"title": big, "nul": "\x00"})
	if err != nil {
		t.Fatal(err)
	}
	e := eventlog.Event{ID: `id 'q' "d" 🚀`, Tenant: `t'"`, Workspace: "wörk", Type: "app:ünicode", Correlation: big, Data: data, At: t0.Add(123 * time.Millisecond)}
	appendOK(t, l, e)
	got := read(t, l, e.Tenant, e.Workspace, 0, 1)
	if len(got) != 1 {
		t.Fatalf("read %d events", len(got))
	}
	g := got[0]
	if g.ID != e.ID || g.Type != e.Type || g.Correlation != e.Correlation || string(g.Data) != string(e.Data) || !g.At.Equal(e.At) || g.Seq != 1 {
		t.Fatalf("event did not round-trip: %+v", g)
	}
}

func concurrentAppends(t *testing.T, l eventlog.Log) {
	const goroutines, each = 8, 25
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				// Every goroutine also appends ids another one appends.
				id := fmt.Sprintf("e-%d-%d", g%4, i)
				if _, _, err := l.Append(t.Context(), eventlog.AppendParams{Publisher: "rules", Event: event("acme", "ops", id)}); err != nil {
					t.Errorf("Append: %v", err)
				}
			}
		})
	}
	wg.Wait()
	es := read(t, l, "acme", "ops", 0, 1000)
	if len(es) != 4*each {
		t.Fatalf("%d events, want %d (each id once)", len(es), 4*each)
	}
	ids := map[string]bool{}
	for i, e := range es {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: a gap or a duplicate", i, e.Seq)
		}
		if ids[e.ID] {
			t.Fatalf("id %s appended twice", e.ID)
		}
		ids[e.ID] = true
	}
}

func cancelledContext(t *testing.T, l eventlog.Log) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, err := l.Append(ctx, eventlog.AppendParams{Publisher: "rules", Event: event("acme", "ops", "a")}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append with a cancelled context: %v", err)
	}
	if _, err := l.Read(ctx, "acme", "ops", 0, 10); !errors.Is(err, context.Canceled) {
		t.Fatalf("Read with a cancelled context: %v", err)
	}
	if got := read(t, l, "acme", "ops", 0, 10); len(got) != 0 {
		t.Fatalf("a cancelled append landed: %s", seqs(got))
	}
}

func headIsTheLast(t *testing.T, l eventlog.Log) {
	head := func(tenant, workspace string) int64 {
		t.Helper()
		h, err := l.Head(t.Context(), tenant, workspace)
		if err != nil {
			t.Fatalf("Head(%s/%s): %v", tenant, workspace, err)
		}
		return h
	}
	if h := head("acme", "ops"); h != 0 {
		t.Fatalf("Head of an empty log = %d, want 0", h)
	}
	for i := range 3 {
		appendOK(t, l, event("acme", "ops", fmt.Sprintf("evt_%d", i)))
	}
	appendOK(t, l, event("acme", "ops", "evt_0")) // appended once already
	appendOK(t, l, event("acme", "infra", "evt_x"))
	if h := head("acme", "ops"); h != 3 {
		t.Fatalf("Head = %d after three appends and a repeat, want 3", h)
	}
	if h := head("acme", "infra"); h != 1 {
		t.Fatalf("Head of another workspace = %d, want 1", h)
	}
	if h := head("other", "ops"); h != 0 {
		t.Fatalf("Head of another tenant's workspace = %d, want 0", h)
	}
	if _, err := l.Head(t.Context(), "", "ops"); !errors.Is(err, eventlog.ErrInvalid) {
		t.Fatalf("Head without a tenant: %v, want ErrInvalid", err)
	}
}
