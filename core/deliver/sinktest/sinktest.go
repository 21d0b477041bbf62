// Package sinktest is the contract suite of deliver.Sink: what every sink
// (the in-memory one, the webhook subscriber, NATS JetStream) promises the
// log followers, run through the followers themselves (ADR-0015). Each
// sink's module runs it, as watermill's pub/subs run one suite:
//
//	func TestSink(t *testing.T) {
//		sinktest.Run(t, sinktest.Setup{New: …, Refusals: …})
//	}
//
// The rules: an id is taken once, however often it is published; the
// followers deliver a workspace's log in order, every event once, across a
// restart and a read from the start again; a far end that refuses is
// retried from the cursor, backing off, and nothing is skipped or sent
// elsewhere; an event its subscription's projection refuses is dead-
// lettered once and the rest go on.
package sinktest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/core/deliver"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/ledger/memledger"
)

// Harness is one sink under test and the far end it delivers to.
type Harness struct {
	// Sink delivers to the far end.
	Sink deliver.Sink
	// Taken answers the ids of the events the far end holds, in the order
	// it first took each. A far end keys what it takes by the event's id
	// (a subscriber by Idempotency-Key, a stream by Nats-Msg-Id), so each
	// id is there once.
	Taken func(t *testing.T) []string
}

// Refusing is a sink whose far end refuses every delivery until Up is
// called.
type Refusing struct {
	Harness
	// Up makes the far end take deliveries again.
	Up func()
	// Elsewhere, when set, answers how many deliveries reached another
	// place than the far end (a redirect's target): the suite wants none.
	Elsewhere func() int
}

// Setup is how a sink's module makes its sinks for the suite.
type Setup struct {
	// New answers a sink to a far end that takes everything.
	New func(t *testing.T) Harness
	// Refusals answer a sink to a far end that refuses, one for each way
	// the far end can (a broker down, a subscriber answering 503, a
	// redirect), by name; at least one.
	Refusals map[string]func(t *testing.T) Refusing
	// Virtual runs every case in a synctest bubble, on virtual time: the
	// sink holds no real socket (memory, a subscriber on memnet). A sink
	// over a real broker runs on real time, waiting for what it must see.
	Virtual bool
}

// Run runs every case against the setup's sinks, one subtest each.
func Run(t *testing.T, s Setup) {
	t.Helper()
	if s.New == nil || len(s.Refusals) == 0 {
		t.Fatal("sinktest: a setup needs New and at least one refusal")
	}
	run := func(name string, fn func(t *testing.T)) {
		t.Run(name, func(t *testing.T) {
			if s.Virtual {
				synctest.Test(t, fn)
				return
			}
			fn(t)
		})
	}
	run("ARepeatedIDIsTakenOnce", func(t *testing.T) { repeatedID(t, s.New(t)) })
	run("TheFollowersDeliverAWorkspacesLogOnceInOrder", func(t *testing.T) { inOrder(t, s.New(t)) })
	run("ARestartGoesOnFromTheCursor", func(t *testing.T) { restart(t, s.New(t)) })
	run("AReadFromTheStartAgainTakesNothingTwice", func(t *testing.T) { readAgain(t, s.New(t)) })
	run("AnEventItsProjectionRefusesIsDeadLetteredOnce", func(t *testing.T) { deadLettered(t, s.New(t)) })
	names := make([]string, 0, len(s.Refusals))
	for name := range s.Refusals {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		run("AFarEndThatRefusesIsRetriedBackingOff/"+name, func(t *testing.T) { refused(t, s.Refusals[name](t)) })
	}
}

const (
	tenant    = "sinktest"
	workspace = "ws"
	// retryFirst is the followers' first backoff: a refusal's third
	// failure comes no sooner than three of it after the first attempt.
	retryFirst = 50 * time.Millisecond
)

var follower = ledger.Follower{Kind: ledger.LogFollower, Tenant: tenant, Workspace: workspace, Name: "sink"}

// events makes n events of a workspace, ids unique to the test.
func events(t *testing.T, ws string, from, n int, typ string) []eventlog.Event {
	out := make([]eventlog.Event, 0, n)
	for i := range n {
		out = append(out, eventlog.Event{
			ID: fmt.Sprintf("evt_%s_%s_%05d", ws, safe(t.Name()), from+i), Tenant: tenant, Workspace: ws, Type: typ,
			Data: json.RawMessage(`{"n":` + fmt.Sprint(from+i) + `}`), At: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC),
		})
	}
	return out
}

// safe keeps what an id, a subject or a header takes of a test's name.
func safe(s string) string {
	b := []byte(s)
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			b[i] = '_'
		}
	}
	if len(b) > 40 {
		b = b[len(b)-40:]
	}
	return string(b)
}

func ids(es []eventlog.Event) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

func appendAll(t *testing.T, log eventlog.Log, es []eventlog.Event) {
	t.Helper()
	for _, e := range es {
		if _, _, err := log.Append(context.Background(), eventlog.AppendParams{Publisher: "sinktest", Event: e}); err != nil {
			t.Fatal(err)
		}
	}
}

// followers runs log followers over the cursors of l and the log, into
// the subscription.
func followers(t *testing.T, l ledger.Followers, log eventlog.Log, sub deliver.Subscription) *deliver.Followers {
	t.Helper()
	lf := deliver.New(deliver.Config{Ledger: l, Log: log, Logger: slog.New(slog.DiscardHandler),
		Options: deliver.Options{RetryFirst: retryFirst, RetryMax: 8 * retryFirst}})
	t.Cleanup(lf.Stop)
	if err := lf.Follow(context.Background(), follower, sub); err != nil {
		t.Fatal(err)
	}
	return lf
}

// waitFor waits for ok: on virtual time in a bubble, on real time (a real
// broker, no clock to step) otherwise, for a minute at most.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("sinktest: %s did not happen within a minute", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func wantTaken(t *testing.T, h Harness, want []string) {
	t.Helper()
	var got []string
	waitFor(t, fmt.Sprintf("the far end holding %d events", len(want)), func() bool {
		got = h.Taken(t)
		return len(got) >= len(want)
	})
	if !slices.Equal(got, want) {
		t.Fatalf("the far end holds %d events %v…, want %d in the log's order", len(got), head(got), len(want))
	}
}

func head(s []string) []string { return s[:min(len(s), 5)] }

// repeatedID: a sink publishes an id it took before as nothing new, and
// answers nil, so an entry read twice is delivered once.
func repeatedID(t *testing.T, h Harness) {
	es := events(t, workspace, 1, 2, "app:thing")
	for _, e := range []eventlog.Event{es[0], es[0], es[1], es[0]} {
		if err := h.Sink.Publish(context.Background(), e); err != nil {
			t.Fatalf("Publish %s: %v", e.ID, err)
		}
	}
	wantTaken(t, h, ids(es))
	if b, ok := h.Sink.(deliver.BatchSink); ok {
		more := events(t, workspace, 3, 3, "app:thing")
		n, err := b.PublishBatch(context.Background(), append([]eventlog.Event{es[1]}, more...))
		if n != 4 || err != nil {
			t.Fatalf("PublishBatch of an id taken and three new: %d, %v; want all 4", n, err)
		}
		wantTaken(t, h, append(ids(es), ids(more)...))
	}
}

// inOrder: a workspace's log, more than a page of it, and none of another
// workspace's.
func inOrder(t *testing.T, h Harness) {
	mem := memledger.New()
	log := eventlog.NewNotifying(mem)
	mine := events(t, workspace, 1, 250, "app:thing")
	other := events(t, "other", 1, 50, "app:thing")
	for i := range mine {
		appendAll(t, log, mine[i:i+1])
		if i%5 == 0 {
			appendAll(t, log, other[i/5:i/5+1])
		}
	}
	followers(t, mem, log, deliver.Subscription{Sink: h.Sink})
	wantTaken(t, h, ids(mine))
	// What is appended while it follows arrives too, in order.
	late := events(t, workspace, 251, 20, "app:thing")
	appendAll(t, log, late)
	wantTaken(t, h, append(ids(mine), ids(late)...))
}

// restart: followers stopped and started again go on from their cursor.
func restart(t *testing.T, h Harness) {
	mem := memledger.New()
	first := events(t, workspace, 1, 120, "app:thing")
	appendAll(t, mem, first)
	lf := followers(t, mem, mem, deliver.Subscription{Sink: h.Sink})
	wantTaken(t, h, ids(first))
	waitFor(t, "the cursor at the log's end", func() bool { c, _ := mem.Cursor(context.Background(), follower); return c.Seq == 120 })
	lf.Stop()
	second := events(t, workspace, 121, 80, "app:thing")
	appendAll(t, mem, second)
	followers(t, mem, mem, deliver.Subscription{Sink: h.Sink})
	wantTaken(t, h, append(ids(first), ids(second)...))
}

// readAgain: a follower that lost its cursor (a crash before any save)
// reads its log from the start; the far end takes nothing twice.
func readAgain(t *testing.T, h Harness) {
	log := memledger.New()
	es := events(t, workspace, 1, 150, "app:thing")
	appendAll(t, log, es)
	for range 2 {
		cursors := memledger.New()
		lf := followers(t, cursors, log, deliver.Subscription{Sink: h.Sink})
		waitFor(t, "the cursor at the log's end", func() bool { c, _ := cursors.Cursor(context.Background(), follower); return c.Seq == 150 })
		lf.Stop()
	}
	wantTaken(t, h, ids(es))
}

var errBadEvent = errors.New("sinktest: the projection refuses this event")

// deadLettered: an event the subscription's projection refuses is kept as
// a dead letter once, and the events after it are delivered.
func deadLettered(t *testing.T, h Harness) {
	mem := memledger.New()
	good := events(t, workspace, 1, 4, "app:good")
	bad := events(t, workspace, 100, 1, "app:bad")[0]
	appendAll(t, mem, good[:2])
	appendAll(t, mem, []eventlog.Event{bad})
	appendAll(t, mem, good[2:])
	sub := deliver.Subscription{Sink: h.Sink, Projection: func(e eventlog.Event) (*eventlog.Event, error) {
		if e.Type == "app:bad" {
			return nil, errBadEvent
		}
		return &e, nil
	}}
	followers(t, mem, mem, sub)
	wantTaken(t, h, ids(good))
	waitFor(t, "the cursor at the log's end", func() bool { c, _ := mem.Cursor(context.Background(), follower); return c.Seq == 5 })
	ds, err := mem.DeadLetters(context.Background(), follower)
	if err != nil || len(ds) != 1 || ds[0].Seq != 3 {
		t.Fatalf("dead letters %+v %v, want the refused event's, once", ds, err)
	}
	var e eventlog.Event
	if err := json.Unmarshal(ds[0].Event, &e); err != nil || e.ID != bad.ID {
		t.Fatalf("the dead letter holds %s (%v), want %s", ds[0].Event, err, bad.ID)
	}
}

// refused: a far end that refuses stops nothing and loses nothing: the
// follower retries from its cursor, backing off, says why in its status,
// and once the far end takes deliveries again every event arrives once,
// in order, at the far end and nowhere else.
func refused(t *testing.T, r Refusing) {
	mem := memledger.New()
	es := events(t, workspace, 1, 5, "app:thing")
	appendAll(t, mem, es)
	start := time.Now()
	lf := followers(t, mem, mem, deliver.Subscription{Sink: r.Sink})
	var st deliver.Status
	waitFor(t, "three failed attempts", func() bool {
		s, err := lf.Status(context.Background())
		if err != nil || len(s) != 1 {
			return false
		}
		st = s[0]
		return st.Failures >= 3
	})
	if took := time.Since(start); took < 3*retryFirst {
		t.Fatalf("three attempts in %s: no backoff between them (the first waits at least %s, doubling)", took, retryFirst)
	}
	if st.State != deliver.Retrying || st.Cursor != 0 || st.LastError == "" || lf.Stopped(follower) != nil {
		t.Fatalf("status while the far end refuses: %+v, stopped %v; want retrying at cursor 0, with why", st, lf.Stopped(follower))
	}
	if got := r.Taken(t); len(got) != 0 {
		t.Fatalf("a refusing far end holds %v", got)
	}
	r.Up()
	wantTaken(t, r.Harness, ids(es))
	waitFor(t, "the follower running again", func() bool {
		s, _ := lf.Status(context.Background())
		return len(s) == 1 && s[0].State == deliver.Running && s[0].Failures == 0 && s[0].Cursor == 5
	})
	if r.Elsewhere != nil {
		if n := r.Elsewhere(); n != 0 {
			t.Fatalf("%d deliveries reached another place than the far end", n)
		}
	}
}
