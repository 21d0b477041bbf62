package follow_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/relayr-go/relayr/core/coretest"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
)

// A tracker that rewrites descriptions (Plane's sanitizer) answers a create
// and an edit with what it holds; relayr records that answer beside its
// prediction, and the follower drops the description read back as an echo
// and consumes both (ADR-0036's departures: what the tracker answered it
// holds is recorded too).
func rewrittenDescriptionEcho(t *testing.T) {
	e := newEnv(t, withSanitizing())
	it := e.ensure("k1", tracker.Draft{Title: "T", Description: "Failed: see the log"})
	if it.Description != "<p>Failed: see the log</p>" {
		t.Fatalf("the fake holds %q, want it rewritten", it.Description)
	}
	want := []string{`"Failed: see the log"`, `"\u003cp\u003eFailed: see the log\u003c/p\u003e"`}
	if v := ledger.Pending(e.row("k1").Values[tracker.FieldDescription]); !slices.Equal(v, want) {
		t.Fatalf("recorded %q, want the prediction then the answer", v)
	}
	e.start()
	e.wantEvents(0)
	if v, ok := e.row("k1").Values[tracker.FieldDescription]; ok {
		t.Fatalf("%q still recorded after the read back, want both consumed", ledger.Pending(v))
	}
	if err := e.update("k1", tracker.Patch{Description: coretest.Ptr(`Retried: <a href="https://ci/1">run 1</a>`)}); err != nil {
		t.Fatal(err)
	}
	e.poll()
	e.wantEvents(0)
	// An edit to what the tracker already holds, as it holds it, sends
	// nothing.
	calls := e.fake.Calls("Update")
	if err := e.update("k1", tracker.Patch{Description: coretest.Ptr(`Retried: <a href="https://ci/1">run 1</a>`)}); err != nil {
		t.Fatal(err)
	}
	if e.fake.Calls("Update") != calls {
		t.Fatal("an edit to the description the tracker already holds was sent")
	}
}

// An edit whose answer never came leaves only the prediction recorded; the
// tracker holds it rewritten, and its comparison tells the follower the two
// are the same: an echo, consumed. A person's later edit is published.
func unansweredDescriptionEcho(t *testing.T) {
	e := newEnv(t, withSanitizing())
	it := e.ensure("k1", tracker.Draft{Title: "T", Description: "first"})
	e.start()
	e.fake.CrashAfterUpdate(1)
	if err := e.update("k1", tracker.Patch{Description: coretest.Ptr("second <br/> line")}); err == nil {
		t.Fatal("the edit whose answer never came succeeded")
	}
	if v := e.row("k1").Values[tracker.FieldDescription]; v != `"second \u003cbr/\u003e line"` {
		t.Fatalf("recorded %q, want the prediction alone", ledger.Pending(v))
	}
	e.poll()
	e.wantEvents(0)
	if v, ok := e.row("k1").Values[tracker.FieldDescription]; ok {
		t.Fatalf("%q still recorded, want the prediction consumed", ledger.Pending(v))
	}
	if err := e.fake.Edit(it.Ref.ID, tracker.Patch{Description: coretest.Ptr("a person's words")}); err != nil {
		t.Fatal(err)
	}
	e.poll()
	evs := e.wantEvents(1)
	if d := e.data(evs[0]); d.Field != tracker.FieldDescription || !strings.Contains(string(d.New), "a person's words") {
		t.Fatalf("published %s, want the person's description", evs[0].Data)
	}
}
