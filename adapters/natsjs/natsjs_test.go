package natsjs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/relayr-go/relayr/adapters/natsjs"
	"github.com/relayr-go/relayr/adapters/natsjs/natstest"
	"github.com/relayr-go/relayr/core/deliver"
	"github.com/relayr-go/relayr/core/eventlog"
)

func events(n int, from int) []eventlog.Event {
	var out []eventlog.Event
	for i := range n {
		seq := int64(from + i)
		out = append(out, eventlog.Event{
			ID: fmt.Sprintf("trk_%016x", seq), Seq: seq, Tenant: "acme", Workspace: "ops",
			Type: "tracker:item_changed", Correlation: "run-7", Data: json.RawMessage(`{"field":"state"}`),
			At: time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC),
		})
	}
	return out
}

// target makes a stream of the test's own and a target on it.
func target(t *testing.T, js jetstream.JetStream, cfg jetstream.StreamConfig) natsjs.Target {
	t.Helper()
	prefix := natstest.Name("relayrtest")
	if cfg.Subjects == nil {
		cfg.Subjects = []string{prefix + ".>"}
	}
	if cfg.Duplicates == 0 {
		cfg.Duplicates = 2 * time.Minute
	}
	st := natstest.Stream(t, js, cfg)
	return natsjs.Target{Servers: []string{natstest.URL()}, Stream: st.CachedInfo().Config.Name, Prefix: prefix, MinDuplicates: 30 * time.Second}
}

func newSink(t *testing.T, tg natsjs.Target, o natsjs.SinkOptions) *natsjs.Sink {
	s := natsjs.NewSink(tg, o)
	t.Cleanup(s.Close)
	return s
}

func TestSinkPublishesEachEventOnceInOrderWithItsIDAndHeaders(t *testing.T) {
	js := natstest.JetStream(t)
	tg := target(t, js, jetstream.StreamConfig{})
	s := newSink(t, tg, natsjs.SinkOptions{})
	es := events(4, 1)
	if n, err := s.PublishBatch(t.Context(), es[:3]); n != 3 || err != nil {
		t.Fatalf("PublishBatch = %d, %v", n, err)
	}
	// A page read again after a crash, and one more.
	if n, err := s.PublishBatch(t.Context(), es); n != 4 || err != nil {
		t.Fatalf("PublishBatch again = %d, %v", n, err)
	}
	if err := s.Publish(t.Context(), es[1]); err != nil {
		t.Fatal(err)
	}
	msgs := natstest.Messages(t, js, tg.Stream)
	if len(msgs) != 4 {
		t.Fatalf("the stream holds %d messages, want each of the 4 events once", len(msgs))
	}
	for i, m := range msgs {
		e := es[i]
		if want := tg.Prefix + ".acme.ops.tracker.item_changed"; m.Subject != want {
			t.Fatalf("subject %q, want %q", m.Subject, want)
		}
		h := m.Header
		if h.Get(jetstream.MsgIDHeader) != e.ID || h.Get(natsjs.TypeHeader) != e.Type ||
			h.Get(natsjs.CorrelationHeader) != "run-7" || h.Get(natsjs.SeqHeader) != fmt.Sprint(e.Seq) {
			t.Fatalf("message %d's headers %v", i, h)
		}
		var back eventlog.Event
		if err := json.Unmarshal(m.Data, &back); err != nil || back.ID != e.ID || back.Seq != e.Seq || string(back.Data) != string(e.Data) {
			t.Fatalf("message %d's body %s", i, m.Data)
		}
	}
}

func TestSubject(t *testing.T) {
	e := events(1, 1)[0]
	if s, err := natsjs.Subject("acme.events", e); err != nil || s != "acme.events.acme.ops.tracker.item_changed" {
		t.Fatalf("Subject = %q, %v", s, err)
	}
	for _, bad := range []struct{ tenant, workspace, typ string }{
		{"ac.me", "ops", "tracker:x"}, {"acme", "o*s", "tracker:x"}, {"acme", "ops", "tracker:a>"},
		{"acme", "ops", "tracker:"}, {"acme", "my ops", "tracker:x"}, {"acme", "ops", "tracker::x"},
	} {
		e.Tenant, e.Workspace, e.Type = bad.tenant, bad.workspace, bad.typ
		if _, err := natsjs.Subject("relayr", e); !errors.Is(err, deliver.ErrUnknownType) {
			t.Errorf("Subject of %+v: %v, want ErrUnknownType", bad, err)
		}
	}
}

func TestSubsetOf(t *testing.T) {
	for _, c := range []struct {
		sub, filter string
		want        bool
	}{
		{"relayr.>", "relayr.>", true},
		{"relayr.>", ">", true},
		{"relayr.>", "*.>", true},
		{"relayr.acme.>", "relayr.>", true},
		{"relayr.>", "relayr.acme.>", false},
		{"relayr.>", "relayr.*", false},
		{"relayr.>", "other.>", false},
		{"relayr.a", "relayr.*", true},
		{"relayr.a.b", "relayr.*", false},
		{"relayr", "relayr.>", false},
	} {
		if got := natsjs.SubsetOf(c.sub, c.filter); got != c.want {
			t.Errorf("SubsetOf(%q, %q) = %v, want %v", c.sub, c.filter, got, c.want)
		}
	}
}

func TestCheckStream(t *testing.T) {
	js := natstest.JetStream(t)
	t.Run("AMissingStreamRefusesWithWhatToDo", func(t *testing.T) {
		tg := natsjs.Target{Servers: []string{natstest.URL()}, Stream: natstest.Name("RELAYR_TEST_"), Prefix: "relayr", MinDuplicates: time.Minute}
		_, err := natsjs.CheckStream(t.Context(), js, tg)
		if !errors.Is(err, natsjs.ErrStream) || !strings.Contains(err.Error(), "does not exist") || !strings.Contains(err.Error(), "create_stream") {
			t.Fatalf("CheckStream: %v", err)
		}
		if _, err := js.Stream(t.Context(), tg.Stream); !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Fatalf("the stream was made without create_stream: %v", err)
		}
	})
	t.Run("CreatedOnlyWhenConfiguredTo", func(t *testing.T) {
		tg := natsjs.Target{Stream: natstest.Name("RELAYR_TEST_"), Prefix: natstest.Name("relayrtest"), MinDuplicates: 5 * time.Minute, CreateStream: true}
		natstest.Delete(t, js, tg.Stream)
		info, err := natsjs.CheckStream(t.Context(), js, tg)
		if err != nil {
			t.Fatal(err)
		}
		if c := info.Config; len(c.Subjects) != 1 || c.Subjects[0] != tg.Prefix+".>" || c.Duplicates != 5*time.Minute {
			t.Fatalf("created %+v", c)
		}
		if _, err := natsjs.CheckStream(t.Context(), js, tg); err != nil {
			t.Fatalf("a second check: %v", err)
		}
	})
	t.Run("SubjectsNotCoveredRefuse", func(t *testing.T) {
		tg := target(t, js, jetstream.StreamConfig{Subjects: []string{natstest.Name("other") + ".>"}})
		if _, err := natsjs.CheckStream(t.Context(), js, tg); !errors.Is(err, natsjs.ErrStream) || !strings.Contains(err.Error(), "do not cover") {
			t.Fatalf("CheckStream: %v", err)
		}
	})
	t.Run("ADuplicateWindowShorterThanTheLeaseRefuses", func(t *testing.T) {
		tg := target(t, js, jetstream.StreamConfig{Duplicates: 10 * time.Second})
		if _, err := natsjs.CheckStream(t.Context(), js, tg); !errors.Is(err, natsjs.ErrStream) || !strings.Contains(err.Error(), "duplicate window") {
			t.Fatalf("CheckStream: %v", err)
		}
	})
}

func reason(t *testing.T, err error) string {
	t.Helper()
	var r *deliver.RetryError
	if !errors.As(err, &r) {
		t.Fatalf("%v does not pass: it would stop the follower", err)
	}
	return r.Reason
}

func TestFailuresThatPassAreRetriedNeverSkipped(t *testing.T) {
	js := natstest.JetStream(t)
	t.Run("BrokerDown", func(t *testing.T) {
		tg := natsjs.Target{Servers: []string{natstest.ClosedURL(t)}, Stream: "X", Prefix: "relayr"}
		n, err := newSink(t, tg, natsjs.SinkOptions{}).PublishBatch(t.Context(), events(2, 1))
		if n != 0 || reason(t, err) != natsjs.ReasonUnreachable {
			t.Fatalf("PublishBatch = %d, %v", n, err)
		}
	})
	t.Run("StreamFull", func(t *testing.T) {
		tg := target(t, js, jetstream.StreamConfig{MaxMsgs: 2, Discard: jetstream.DiscardNew})
		n, err := newSink(t, tg, natsjs.SinkOptions{}).PublishBatch(t.Context(), events(3, 1))
		if n != 2 || reason(t, err) != natsjs.ReasonStreamFull {
			t.Fatalf("PublishBatch = %d, %v; want 2 taken, then stream_full", n, err)
		}
	})
	t.Run("NoRespondersThenAMissingStreamThenBack", func(t *testing.T) {
		tg := target(t, js, jetstream.StreamConfig{})
		s := newSink(t, tg, natsjs.SinkOptions{})
		es := events(3, 1)
		if n, err := s.PublishBatch(t.Context(), es[:1]); n != 1 || err != nil {
			t.Fatal(n, err)
		}
		if err := js.DeleteStream(t.Context(), tg.Stream); err != nil {
			t.Fatal(err)
		}
		if n, err := s.PublishBatch(t.Context(), es[1:]); n != 0 || reason(t, err) != natsjs.ReasonNoResponders {
			t.Fatalf("PublishBatch with the stream gone = %d, %v", n, err)
		}
		if n, err := s.PublishBatch(t.Context(), es[1:]); n != 0 || reason(t, err) != natsjs.ReasonStream || !errors.Is(err, natsjs.ErrStream) {
			t.Fatalf("PublishBatch again = %d, %v; want the stream checked again", n, err)
		}
		if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: tg.Stream, Subjects: []string{tg.Prefix + ".>"}, Duplicates: time.Minute}); err != nil {
			t.Fatal(err)
		}
		if n, err := s.PublishBatch(t.Context(), es[1:]); n != 2 || err != nil {
			t.Fatalf("PublishBatch with the stream back = %d, %v", n, err)
		}
	})
	t.Run("BadCredentials", func(t *testing.T) {
		srv := natstest.Start(t, "--auth", "right-token")
		tg := natsjs.Target{Servers: []string{srv.URL}, Stream: natstest.Name("RELAYR_TEST_"), Prefix: "relayr", CreateStream: true,
			Credentials: natsjs.Credentials{Token: "wrong-token"}}
		s := newSink(t, tg, natsjs.SinkOptions{})
		n, err := s.PublishBatch(t.Context(), events(1, 1))
		if n != 0 || reason(t, err) != natsjs.ReasonUnauthorized {
			t.Fatalf("PublishBatch with a wrong token = %d, %v", n, err)
		}
		tg.Credentials.Token = "right-token"
		if n, err := newSink(t, tg, natsjs.SinkOptions{}).PublishBatch(t.Context(), events(1, 1)); n != 1 || err != nil {
			t.Fatalf("PublishBatch with the right token = %d, %v", n, err)
		}
	})
	t.Run("SlowBrokerTimesOutAndTheRetryIsStoredOnce", func(t *testing.T) {
		tg := target(t, js, jetstream.StreamConfig{})
		p := newProxy(t, strings.TrimPrefix(natstest.URL(), "nats://"))
		tg.Servers = []string{"nats://" + p.addr}
		s := newSink(t, tg, natsjs.SinkOptions{AckWait: 300 * time.Millisecond})
		es := events(2, 1)
		if n, err := s.PublishBatch(t.Context(), es[:1]); n != 1 || err != nil {
			t.Fatal(n, err)
		}
		p.hold.Store(true) // the broker takes the publish, its ack is held back
		if n, err := s.PublishBatch(t.Context(), es[1:]); n != 0 || reason(t, err) != natsjs.ReasonTimeout {
			t.Fatalf("PublishBatch with the acks held = %d, %v", n, err)
		}
		p.release()
		if n, err := s.PublishBatch(t.Context(), es[1:]); n != 1 || err != nil {
			t.Fatalf("PublishBatch once the broker answers = %d, %v", n, err)
		}
		if msgs := natstest.Messages(t, js, tg.Stream); len(msgs) != 2 {
			t.Fatalf("the stream holds %d messages, want 2: the retried publish is dropped as a duplicate", len(msgs))
		}
	})
}

func TestAMessageTooLargeStopsRatherThanRetries(t *testing.T) {
	js := natstest.JetStream(t)
	tg := target(t, js, jetstream.StreamConfig{MaxMsgSize: 512})
	e := events(1, 1)[0]
	e.Data = json.RawMessage(`"` + strings.Repeat("x", 1024) + `"`)
	err := newSink(t, tg, natsjs.SinkOptions{}).Publish(t.Context(), e)
	if err == nil || errors.Is(err, deliver.ErrRetry) {
		t.Fatalf("Publish of an event larger than the stream takes: %v, want a refusal that stops", err)
	}
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		err    error
		reason string // "" for an error that stops
	}{
		{nats.ErrNoServers, natsjs.ReasonUnreachable},
		{nats.ErrConnectionClosed, natsjs.ReasonUnreachable},
		{nats.ErrAuthorization, natsjs.ReasonUnauthorized},
		{errors.New("nats: Authorization Violation"), natsjs.ReasonUnauthorized},
		{nats.ErrTimeout, natsjs.ReasonTimeout},
		{context.DeadlineExceeded, natsjs.ReasonTimeout},
		{jetstream.ErrNoStreamResponse, natsjs.ReasonNoResponders},
		{&jetstream.APIError{ErrorCode: 10077, Description: "maximum messages exceeded"}, natsjs.ReasonStreamFull},
		{&jetstream.APIError{ErrorCode: 10023, Description: "insufficient resources"}, natsjs.ReasonStreamFull},
		{&jetstream.APIError{ErrorCode: 10059, Description: "stream not found"}, natsjs.ReasonStream},
		{&jetstream.APIError{ErrorCode: 10054, Description: "message size exceeds maximum allowed"}, ""},
		{nats.ErrMaxPayload, ""},
		{fmt.Errorf("%w: bad type", deliver.ErrUnknownType), ""},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, natsjs.ReasonUnreachable},
	} {
		got := natsjs.Classify(fmt.Errorf("wrapped: %w", c.err))
		var r *deliver.RetryError
		switch {
		case c.reason == "" && errors.Is(got, deliver.ErrRetry):
			t.Errorf("Classify(%v) passes, want it to stop", c.err)
		case c.reason != "" && (!errors.As(got, &r) || r.Reason != c.reason):
			t.Errorf("Classify(%v) = %v, want reason %s", c.err, got, c.reason)
		}
		if !errors.Is(got, c.err) {
			t.Errorf("Classify(%v) lost the error", c.err)
		}
	}
	if natsjs.Classify(nil) != nil {
		t.Error("Classify(nil) is not nil")
	}
}

// proxy forwards a client's connection to the server and can hold back
// what the server sends: a broker that takes publishes and is slow to ack.
type proxy struct {
	addr    string
	hold    atomic.Bool
	mu      sync.Mutex
	waiting chan struct{}
}

func newProxy(t *testing.T, upstream string) *proxy {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{addr: ln.Addr().String(), waiting: make(chan struct{})}
	var conns sync.WaitGroup
	t.Cleanup(func() {
		_ = ln.Close()
		p.release()
		conns.Wait()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", upstream)
			if err != nil {
				_ = c.Close()
				continue
			}
			conns.Add(2)
			go func() { defer conns.Done(); _, _ = io.Copy(u, c); _ = u.Close() }()
			go func() { defer conns.Done(); p.copyDown(c, u); _ = c.Close() }()
			t.Cleanup(func() { _ = c.Close(); _ = u.Close() })
		}
	}()
	return p
}

func (p *proxy) copyDown(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if p.hold.Load() {
				p.mu.Lock()
				w := p.waiting
				p.mu.Unlock()
				<-w
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *proxy) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hold.Swap(false) {
		close(p.waiting)
		p.waiting = make(chan struct{})
	}
}

// The README's worked example: a durable consumer on the workspace's
// subjects reads every event once, in order, and carries on where it was.
func TestADurableConsumerReadsTheEvents(t *testing.T) {
	js := natstest.JetStream(t)
	tg := target(t, js, jetstream.StreamConfig{})
	s := newSink(t, tg, natsjs.SinkOptions{})
	es := events(5, 1)
	if n, err := s.PublishBatch(t.Context(), es); n != 5 || err != nil {
		t.Fatal(n, err)
	}
	cons, err := js.CreateOrUpdateConsumer(t.Context(), tg.Stream, jetstream.ConsumerConfig{
		Durable: "triage", FilterSubject: tg.Prefix + ".acme.ops.>", AckPolicy: jetstream.AckExplicitPolicy,
	})
	if err != nil {
		t.Fatal(err)
	}
	read := func(n int) []string {
		batch, err := cons.Fetch(n, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for m := range batch.Messages() {
			var e eventlog.Event
			if err := json.Unmarshal(m.Data(), &e); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, e.ID)
			if err := m.Ack(); err != nil {
				t.Fatal(err)
			}
		}
		return ids
	}
	got := read(3)
	got = append(got, read(10)...) // a reader that came back carries on
	var want []string
	for _, e := range es {
		want = append(want, e.ID)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("the consumer read %v, want %v", got, want)
	}
}
