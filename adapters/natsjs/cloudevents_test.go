package natsjs_test

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/cloudevents/sdk-go/v2/binding/format"
	cevent "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/relayr-go/relayr/adapters/cloudevents"
	"github.com/relayr-go/relayr/adapters/natsjs"
	"github.com/relayr-go/relayr/adapters/natsjs/natstest"
	"github.com/relayr-go/relayr/core/eventlog"
)

// A CloudEvents target's messages, read by a durable JetStream consumer on
// the machine's NATS and decoded by the CloudEvents SDK (the format its
// Content-Type names), are each event once, in order, every attribute set.
func TestCloudEventsAreReadByAConsumerAndDecodedByTheSDK(t *testing.T) {
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
	cons, err := js.CreateOrUpdateConsumer(t.Context(), tg.Stream, jetstream.ConsumerConfig{
		Durable: "triage", FilterSubject: tg.Prefix + ".acme.ops.>", AckPolicy: jetstream.AckExplicitPolicy,
	})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.FetchNoWait(10) // the stream acknowledged every publish: all are there
	if err != nil {
		t.Fatal(err)
	}
	var got []cevent.Event
	for m := range batch.Messages() {
		ct := m.Headers().Get("Content-Type")
		f := format.Lookup(ct)
		if f == nil || ct != cloudevents.ContentType {
			t.Fatalf("Content-Type %q: the SDK knows no event format of it, want %s", ct, cloudevents.ContentType)
		}
		var ev cevent.Event
		if err := f.Unmarshal(m.Data(), &ev); err != nil {
			t.Fatalf("the SDK cannot decode %s: %v", m.Data(), err)
		}
		if m.Headers().Get(jetstream.MsgIDHeader) != ev.ID() {
			t.Errorf("Nats-Msg-Id %q, want the CloudEvent's id %q", m.Headers().Get(jetstream.MsgIDHeader), ev.ID())
		}
		got = append(got, ev)
		if err := m.Ack(); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != len(es) {
		t.Fatalf("the consumer read %d events, want each of the %d once", len(got), len(es))
	}
	for i, e := range es {
		check(t, got[i], e)
	}
	if got[0].Subject() != "ci/build-1042" || got[1].Subject() != "" {
		t.Errorf("subjects %q, %q; want the item's key, then none (its data names no item)", got[0].Subject(), got[1].Subject())
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
