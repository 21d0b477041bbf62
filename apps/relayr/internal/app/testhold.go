package app

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"

	"github.com/relayr-go/relayr/adapters/natsjs"
	"github.com/relayr-go/relayr/core/deliver"
	"github.com/relayr-go/relayr/core/eventlog"
)

// HoldAfterAckEnv names a count of events: a test's hook, honoured only
// when the variable is set. Once the broker has acknowledged that many
// events in this process, the NATS sink writes HoldLine and the count to
// standard error and holds, before its follower saves the cursor, so a test
// can SIGKILL the process in exactly the window between the publish and
// the cursor's save.
const HoldAfterAckEnv = "RELAYR_TEST_HOLD_AFTER_ACK"

// HoldLine begins the line the hook writes when it holds.
const HoldLine = "relayr-test: holding after ack"

// withTestHold wraps sink in the hook when HoldAfterAckEnv is set.
func withTestHold(sink deliver.Sink, getenv func(string) string) deliver.Sink {
	n, err := strconv.Atoi(getenv(HoldAfterAckEnv))
	if err != nil || n < 1 {
		return sink
	}
	b, ok := sink.(deliver.BatchSink)
	if !ok {
		return sink
	}
	return &holdAfterAck{BatchSink: b, after: n}
}

// unwrapNATS answers the NATS sink under the hook, if any.
func unwrapNATS(sink deliver.Sink) (*natsjs.Sink, bool) {
	if h, ok := sink.(*holdAfterAck); ok {
		sink = h.BatchSink
	}
	n, ok := sink.(*natsjs.Sink)
	return n, ok
}

type holdAfterAck struct {
	deliver.BatchSink
	after int

	mu    sync.Mutex
	acked int
}

// Publish implements deliver.Sink.
func (h *holdAfterAck) Publish(ctx context.Context, e eventlog.Event) error {
	_, err := h.PublishBatch(ctx, []eventlog.Event{e})
	return err
}

// PublishBatch publishes up to the count, then holds until ctx ends.
func (h *holdAfterAck) PublishBatch(ctx context.Context, es []eventlog.Event) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	left := h.after - h.acked
	if left <= 0 || left > len(es) {
		n, err := h.BatchSink.PublishBatch(ctx, es)
		h.acked += n
		return n, err
	}
	head := es[:left]
	n, err := h.BatchSink.PublishBatch(ctx, head)
	h.acked += n
	if err != nil || n < len(head) {
		return n, err
	}
	fmt.Fprintf(os.Stderr, "%s %d (seq %d)\n", HoldLine, h.acked, head[len(head)-1].Seq)
	<-ctx.Done()
	return n, ctx.Err()
}

// Close closes the sink under the hook.
func (h *holdAfterAck) Close() {
	if c, ok := h.BatchSink.(interface{ Close() }); ok {
		c.Close()
	}
}
