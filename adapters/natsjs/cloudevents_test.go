package natsjs_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	cejetstream "github.com/cloudevents/sdk-go/protocol/nats_jetstream/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	cevent "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/relayr-go/relayr/adapters/cloudevents"
	"github.com/relayr-go/relayr/adapters/natsjs"
	"github.com/relayr-go/relayr/adapters/natsjs/natstest"
	"github.com/relayr-go/relayr/core/eventlog"
)

// A CloudEvents target's messages, received by the CloudEvents SDK's own
// NATS JetStream consumer (protocol/nats_jetstream, a durable push consumer
// on the machine's NATS) and turned into events by the SDK, are each event
// once, in order, every attribute set.
func TestCloudEventsAreReceivedByTheSDKsJetStreamConsumer(t *testing.T) {
	js := natstest.JetStream(t)
	tg := target(t, js, jetstream.StreamConfig{})
	tg.CloudEvents = true
	s := newSink(t, tg, natsjs.SinkOptions{})
	es := events(3, 1)
	es[0].Data = json.RawMessage(`{"tracker":"plane","project":"p1","item":{"id":"i1","number":42,"name":"OPS-42","link":"","key":"ci/build-1042"},"field":"state","old":"\"backlog\"","new":"\"done\""}`)
	es[2].Correlation = ""
	if n, err := s.PublishBatch(t.Context(), es[:2]); n != 2 || err != nil {
		t.Fatalf("PublishBatch = %d, %v", n, err)
	}
	// A page read again after a crash: the stream keeps each id once.
	if n, err := s.PublishBatch(t.Context(), es); n != 3 || err != nil {
		t.Fatalf("PublishBatch again = %d, %v", n, err)
	}

	const durable = "triage"
	consumer, err := cejetstream.NewConsumerFromConn(natstest.Connect(t), tg.Stream, tg.Prefix+".acme.ops.>", nil,
		[]nats.SubOpt{nats.BindStream(tg.Stream), nats.Durable(durable), nats.DeliverAll(), nats.AckExplicit()})
	if err != nil {
		t.Fatalf("the SDK's consumer: %v", err)
	}
	ctx, stop := context.WithCancel(t.Context())
	inbound := make(chan error, 1)
	go func() { inbound <- consumer.OpenInbound(ctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-inbound; err != nil {
			t.Errorf("the SDK's consumer: %v", err)
		}
	})

	var got []cevent.Event
	for range es {
		m, err := consumer.Receive(t.Context()) // the stream acknowledged every publish: all are there
		if err != nil {
			t.Fatalf("the SDK's consumer received %d events, then: %v", len(got), err)
		}
		if enc := m.ReadEncoding(); enc != binding.EncodingStructured {
			t.Errorf("encoding %v, want structured (%s)", enc, cloudevents.ContentType)
		}
		msg := m.(*cejetstream.Message).Msg
		if ct := msg.Header.Get("Content-Type"); ct != cloudevents.ContentType {
			t.Errorf("Content-Type %q, want %s", ct, cloudevents.ContentType)
		}
		ev, err := binding.ToEvent(t.Context(), m)
		if err != nil {
			t.Fatalf("the SDK cannot read %s: %v", msg.Data, err)
		}
		if msg.Header.Get(jetstream.MsgIDHeader) != ev.ID() {
			t.Errorf("Nats-Msg-Id %q, want the CloudEvent's id %q", msg.Header.Get(jetstream.MsgIDHeader), ev.ID())
		}
		if err := m.Finish(nil); err != nil {
			t.Fatal(err)
		}
		got = append(got, *ev)
	}
	for i, e := range es {
		check(t, got[i], e)
	}
	if got[0].Subject() != "ci/build-1042" || got[1].Subject() != "" {
		t.Errorf("subjects %q, %q; want the item's key, then none (its data names no item)", got[0].Subject(), got[1].Subject())
	}
	// Each event once: the SDK's consumer was handed three messages, and
	// none is left for it.
	info, err := consumer.Jsm.ConsumerInfo(tg.Stream, durable, nats.Context(t.Context()))
	if err != nil {
		t.Fatal(err)
	}
	if info.Delivered.Consumer != uint64(len(es)) || info.NumPending != 0 {
		t.Errorf("the consumer was handed %d messages with %d pending, want each of the %d events once", info.Delivered.Consumer, info.NumPending, len(es))
	}
}

func check(t *testing.T, got cevent.Event, e eventlog.Event) {
	t.Helper()
	if err := got.Validate(); err != nil {
		t.Fatalf("the SDK finds %s invalid: %v", e.ID, err)
	}
	for _, c := range []struct{ name, got, want string }{
		{"specversion", got.SpecVersion(), "1.0"},
		{"id", got.ID(), e.ID},
		{"source", got.Source(), "/relayr/acme/ops"},
		{"type", got.Type(), "io.github.relayr-go.tracker.item_changed"},
		{"datacontenttype", got.DataContentType(), "application/json"},
		{"data", string(got.Data()), string(e.Data)},
	} {
		if c.got != c.want {
			t.Errorf("%s: %s %q, want %q", e.ID, c.name, c.got, c.want)
		}
	}
	if !got.Time().Equal(e.At) {
		t.Errorf("%s: time %v, want %v", e.ID, got.Time(), e.At)
	}
	ext := got.Extensions()
	if c, ok := ext[cloudevents.CorrelationExtension]; (e.Correlation == "" && ok) || (e.Correlation != "" && c != e.Correlation) {
		t.Errorf("%s: correlation %v, want %q", e.ID, c, e.Correlation)
	}
	if ext[cloudevents.SeqExtension] != strconv.FormatInt(e.Seq, 10) {
		t.Errorf("%s: relayrseq %v, want %d", e.ID, ext[cloudevents.SeqExtension], e.Seq)
	}
}
