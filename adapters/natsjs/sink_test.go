package natsjs_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/relayr-go/relayr/adapters/natsjs"
	"github.com/relayr-go/relayr/adapters/natsjs/natstest"
	"github.com/relayr-go/relayr/core/deliver/sinktest"
)

// taken answers the ids a stream holds, in its order: JetStream keys what
// it stores by Nats-Msg-Id within its duplicate window.
func taken(t *testing.T, js jetstream.JetStream, stream string) []string {
	var ids []string
	for _, m := range natstest.Messages(t, js, stream) {
		ids = append(ids, m.Header.Get(jetstream.MsgIDHeader))
	}
	return ids
}

// TestSink runs the sink suite over the JetStream sink, against the
// machine's NATS server (and one of the test's own, brought up late), on
// real time.
func TestSink(t *testing.T) {
	sinktest.Run(t, sinktest.Setup{
		New: func(t *testing.T) sinktest.Harness {
			js := natstest.JetStream(t)
			tg := target(t, js, jetstream.StreamConfig{})
			return sinktest.Harness{Sink: newSink(t, tg, natsjs.SinkOptions{}),
				Taken: func(t *testing.T) []string { return taken(t, js, tg.Stream) }}
		},
		Refusals: map[string]func(*testing.T) sinktest.Refusing{
			"ABrokerDown": func(t *testing.T) sinktest.Refusing {
				url := natstest.ClosedURL(t)
				tg := natsjs.Target{Servers: []string{url}, Stream: natstest.Name("RELAYR_SINKTEST"), Prefix: natstest.Name("sinktest"),
					CreateStream: true, MinDuplicates: time.Minute}
				var js jetstream.JetStream
				return sinktest.Refusing{
					Harness: sinktest.Harness{Sink: newSink(t, tg, natsjs.SinkOptions{}), Taken: func(t *testing.T) []string {
						if js == nil {
							return nil // the broker is down: it holds nothing
						}
						if _, err := js.Stream(t.Context(), tg.Stream); err != nil {
							return nil // up, and the sink has not made its stream yet
						}
						return taken(t, js, tg.Stream)
					}},
					Up: func() {
						natstest.StartAt(t, url)
						nc, err := nats.Connect(url)
						if err != nil {
							t.Fatal(err)
						}
						t.Cleanup(nc.Close)
						if js, err = jetstream.New(nc); err != nil {
							t.Fatal(err)
						}
					},
				}
			},
		},
	})
}
