package natsjs_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/relayr-go/relayr/adapters/natsjs"
	"github.com/relayr-go/relayr/adapters/natsjs/natstest"
	"github.com/relayr-go/relayr/core/deliver"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/ledger/memledger"
	"github.com/relayr-go/relayr/core/metrics"
)

func appendAll(t *testing.T, l eventlog.Log, es []eventlog.Event) {
	t.Helper()
	for _, e := range es {
		if _, _, err := l.Append(context.Background(), eventlog.AppendParams{Publisher: eventlog.TrackerPublisher, Event: e}); err != nil {
			t.Fatal(err)
		}
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond) // a real broker; no clock to step
	}
}

// A log follower delivers a workspace's log into the stream once, in
// order; a second follower reading the same log from the start (a crash
// before any cursor was saved) stores nothing twice.
func TestLogFollowerIntoJetStreamOnce(t *testing.T) {
	js := natstest.JetStream(t)
	tg := target(t, js, jetstream.StreamConfig{})
	es := events(250, 1)
	for i := range es {
		es[i].Seq = 0
	}
	f := ledger.Follower{Kind: ledger.LogFollower, Tenant: "acme", Workspace: "ops", Name: "broker"}
	run := func() {
		mem := memledger.New()
		appendAll(t, mem, es)
		lf := deliver.New(deliver.Config{Ledger: mem, Log: mem, Logger: slog.New(slog.DiscardHandler)})
		defer lf.Stop()
		if err := lf.Follow(t.Context(), f, deliver.Subscription{Sink: newSink(t, tg, natsjs.SinkOptions{})}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the cursor at 250", func() bool { c, _ := mem.Cursor(context.Background(), f); return c.Seq == 250 })
	}
	run()
	run()
	msgs := natstest.Messages(t, js, tg.Stream)
	if len(msgs) != 250 {
		t.Fatalf("the stream holds %d messages, want 250", len(msgs))
	}
	for i, m := range msgs {
		if m.Header.Get(jetstream.MsgIDHeader) != es[i].ID {
			t.Fatalf("message %d is %s, want %s: out of order", i, m.Header.Get(jetstream.MsgIDHeader), es[i].ID)
		}
	}
}

// A broker that is down stops nothing: the follower retries from its
// cursor, its status and metrics say why, and once the broker is up every
// event arrives once.
func TestABrokerDownIsRetriedFromTheCursor(t *testing.T) {
	url := natstest.ClosedURL(t)
	tg := natsjs.Target{Servers: []string{url}, Stream: "RELAYR_TEST", Prefix: "relayr", CreateStream: true, MinDuplicates: time.Minute}
	mem := memledger.New()
	m := metrics.NewMemory()
	es := events(3, 1)
	for i := range es {
		es[i].Seq = 0
	}
	appendAll(t, mem, es)
	lf := deliver.New(deliver.Config{Ledger: mem, Log: mem, Metrics: m, Logger: slog.New(slog.DiscardHandler),
		Options: deliver.Options{RetryFirst: 50 * time.Millisecond, RetryMax: 100 * time.Millisecond}})
	defer lf.Stop()
	f := ledger.Follower{Kind: ledger.LogFollower, Tenant: "acme", Workspace: "ops", Name: "broker"}
	if err := lf.Follow(t.Context(), f, deliver.Subscription{Sink: newSink(t, tg, natsjs.SinkOptions{})}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "three failures", func() bool {
		st, _ := lf.Status(context.Background())
		return len(st) == 1 && st[0].Failures >= 3
	})
	st, err := lf.Status(context.Background())
	if err != nil || st[0].State != deliver.Retrying || st[0].Cursor != 0 || st[0].Head != 3 || !strings.Contains(st[0].LastError, "no servers") {
		t.Fatalf("status while the broker is down: %+v %v", st, err)
	}
	if m.With(metrics.DeliveryFailures, metrics.Labels{"tenant": "acme", "workspace": "ops", "name": "broker", "reason": natsjs.ReasonUnreachable}) < 3 {
		t.Fatal("the failures were not counted with their reason")
	}
	natstest.StartAt(t, url)
	waitFor(t, "the cursor at 3", func() bool { c, _ := mem.Cursor(context.Background(), f); return c.Seq == 3 })
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if msgs := natstest.Messages(t, js, tg.Stream); len(msgs) != 3 {
		t.Fatalf("the stream holds %d, want 3", len(msgs))
	}
	if st, _ := lf.Status(context.Background()); st[0].State != deliver.Running || st[0].Failures != 0 || lf.Stopped(f) != nil {
		t.Fatalf("status after the broker came up: %+v", st)
	}
}
