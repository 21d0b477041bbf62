package figures

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/relayr-go/relayr/adapters/ledgersqlite"
	"github.com/relayr-go/relayr/adapters/natsjs"
	"github.com/relayr-go/relayr/adapters/natsjs/natstest"
	"github.com/relayr-go/relayr/core/deliver"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/follow"
	"github.com/relayr-go/relayr/core/ledger"
)

// The NATS figures (relayr's JetStream sink beside a plain publish; why it
// does not pipeline is ADR-0015's departures), against the machine's server:
//
//	BenchmarkNATS/<subs>/relayr  events/s from a SQLite log into JetStream
//	                             through the log followers and the sink
//	BenchmarkNATS/<subs>/direct  events/s of a plain JetStream publish of the
//	                             same messages, each acknowledged, from the
//	                             same process
//	BenchmarkNATSLatency         ms from the append to the broker's ack
//
// with one subscription and eight (eight streams, one connection each).

// natsEvents is how many events each subscription delivers a round.
const natsEvents = 1000

// natsLog is a SQLite log of natsEvents events in acme/ops, as the service
// keeps it.
func natsLog(b *testing.B) *ledgersqlite.Ledger {
	b.Helper()
	led, err := ledgersqlite.Open(context.Background(), filepath.Join(b.TempDir(), "relayr.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = led.Close() })
	for i := range natsEvents {
		if _, _, err := led.Append(context.Background(), eventlog.AppendParams{Publisher: eventlog.TrackerPublisher, Event: natsEvent(i)}); err != nil {
			b.Fatal(err)
		}
	}
	return led
}

func natsEvent(i int) eventlog.Event {
	return eventlog.Event{
		ID: eventlog.DeriveID("bench", strconv.Itoa(i)), Tenant: "acme", Workspace: "ops", Type: "tracker:item_changed",
		Correlation: "run-" + strconv.Itoa(i%17),
		Data:        json.RawMessage(`{"tracker":"plane","project":"p","item":{"id":"3f1c","number":12,"name":"OPS-12"},"field":"state","old":"todo","new":"done"}`),
		At:          time.Now(),
	}
}

// natsTargets makes n streams of the round's own, deleted when it ends.
func natsTargets(b *testing.B, js jetstream.JetStream, n int) []natsjs.Target {
	b.Helper()
	var out []natsjs.Target
	for range n {
		prefix := natstest.Name("relayrbench")
		st := natstest.Stream(b, js, jetstream.StreamConfig{Subjects: []string{prefix + ".>"}, Duplicates: 2 * time.Minute})
		out = append(out, natsjs.Target{Servers: []string{natstest.URL()}, Stream: st.CachedInfo().Config.Name, Prefix: prefix, MinDuplicates: follow.DefaultLeaseTTL})
	}
	return out
}

var natsRound int

func BenchmarkNATS(b *testing.B) {
	js := natstest.JetStream(b)
	for _, subs := range []int{1, 8} {
		name := "one"
		if subs > 1 {
			name = "eight"
		}
		b.Run(name+"/relayr", func(b *testing.B) {
			led := natsLog(b)
			var elapsed time.Duration
			for b.Loop() {
				b.StopTimer()
				targets := natsTargets(b, js, subs)
				lf := deliver.New(deliver.Config{Ledger: led, Log: led, Logger: slog.New(slog.DiscardHandler)})
				var fs []ledger.Follower
				var sinks []*natsjs.Sink
				natsRound++
				for i, tg := range targets {
					s := natsjs.NewSink(tg, natsjs.SinkOptions{})
					if err := s.Check(b.Context()); err != nil { // connected, as a running service is
						b.Fatal(err)
					}
					sinks = append(sinks, s)
					fs = append(fs, ledger.Follower{Kind: ledger.LogFollower, Tenant: "acme", Workspace: "ops", Name: fmt.Sprintf("bench-%d-%d", natsRound, i)})
				}
				b.StartTimer()
				start := time.Now()
				for i, f := range fs {
					if err := lf.Follow(b.Context(), f, deliver.Subscription{Sink: sinks[i]}); err != nil {
						b.Fatal(err)
					}
				}
				for _, f := range fs {
					for {
						c, err := led.Cursor(context.Background(), f)
						if err != nil {
							b.Fatal(err)
						}
						if c.Seq == natsEvents {
							break
						}
						time.Sleep(time.Millisecond) // the followers run on real time
					}
				}
				elapsed += time.Since(start)
				b.StopTimer()
				lf.Stop()
				for _, s := range sinks {
					s.Close()
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(b.N*subs*natsEvents)/elapsed.Seconds(), "events/s")
		})
		b.Run(name+"/direct", func(b *testing.B) {
			var elapsed time.Duration
			for b.Loop() {
				b.StopTimer()
				targets := natsTargets(b, js, subs)
				var conns []jetstream.JetStream
				var msgs [][]*nats.Msg
				for _, tg := range targets {
					msgs = append(msgs, directMessages(b, tg))
					nc, err := nats.Connect(natstest.URL())
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(nc.Close)
					d, err := jetstream.New(nc)
					if err != nil {
						b.Fatal(err)
					}
					conns = append(conns, d)
				}
				b.StartTimer()
				start := time.Now()
				var wg sync.WaitGroup
				for i, tg := range targets {
					wg.Go(func() {
						for _, m := range msgs[i] {
							if _, err := conns[i].PublishMsg(context.Background(), m, jetstream.WithMsgID(m.Header.Get("Relayr-Id")), jetstream.WithExpectStream(tg.Stream)); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				elapsed += time.Since(start)
			}
			b.ReportMetric(float64(b.N*subs*natsEvents)/elapsed.Seconds(), "events/s")
		})
	}
}

// directMessages are the messages relayr publishes into tg, built as a
// program without relayr would: the subject, the headers, the event's JSON.
func directMessages(b *testing.B, tg natsjs.Target) []*nats.Msg {
	var out []*nats.Msg
	for i := range natsEvents {
		e := natsEvent(i)
		e.Seq = int64(i + 1)
		subj, err := natsjs.Subject(tg.Prefix, e)
		if err != nil {
			b.Fatal(err)
		}
		body, err := json.Marshal(e)
		if err != nil {
			b.Fatal(err)
		}
		m := nats.NewMsg(subj)
		m.Data = body
		m.Header.Set(natsjs.TypeHeader, e.Type)
		m.Header.Set(natsjs.SeqHeader, strconv.FormatInt(e.Seq, 10))
		m.Header.Set(natsjs.CorrelationHeader, e.Correlation)
		m.Header.Set("Content-Type", "application/json")
		m.Header.Set("Relayr-Id", e.ID) // read back for the message id; sent as well
		out = append(out, m)
	}
	return out
}

// acked tells when the broker acknowledged each event.
type acked struct {
	*natsjs.Sink
	ch chan time.Time
}

func (a *acked) PublishBatch(ctx context.Context, es []eventlog.Event) (int, error) {
	n, err := a.Sink.PublishBatch(ctx, es)
	for range n {
		a.ch <- time.Now()
	}
	return n, err
}

func (a *acked) Publish(ctx context.Context, e eventlog.Event) error {
	_, err := a.PublishBatch(ctx, []eventlog.Event{e})
	return err
}

// BenchmarkNATSLatency appends one event at a time to a SQLite log that a
// running follower delivers into JetStream, waking it as the service's
// append does, and measures the time from the append's start to the
// broker's acknowledgement.
func BenchmarkNATSLatency(b *testing.B) {
	js := natstest.JetStream(b)
	led, err := ledgersqlite.Open(context.Background(), filepath.Join(b.TempDir(), "relayr.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = led.Close() })
	tg := natsTargets(b, js, 1)[0]
	s := &acked{Sink: natsjs.NewSink(tg, natsjs.SinkOptions{}), ch: make(chan time.Time, 1)}
	b.Cleanup(s.Close)
	lf := deliver.New(deliver.Config{Ledger: led, Log: led, Logger: slog.New(slog.DiscardHandler)})
	b.Cleanup(lf.Stop)
	if err := lf.Follow(b.Context(), ledger.Follower{Kind: ledger.LogFollower, Tenant: "acme", Workspace: "ops", Name: "latency"}, deliver.Subscription{Sink: s}); err != nil {
		b.Fatal(err)
	}
	var lat []time.Duration
	i := 0
	for b.Loop() {
		start := time.Now()
		if _, _, err := led.Append(context.Background(), eventlog.AppendParams{Publisher: eventlog.TrackerPublisher, Event: natsEvent(1_000_000 + i)}); err != nil {
			b.Fatal(err)
		}
		lf.Notify("acme", "ops") // as the service's append wakes its followers
		select {
		case at := <-s.ch:
			lat = append(lat, at.Sub(start))
		case <-time.After(10 * time.Second):
			b.Fatal("no ack within 10 s")
		}
		i++
	}
	slices.Sort(lat)
	b.ReportMetric(ms(lat[len(lat)/2]), "ms-p50")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "ms-p99")
}
