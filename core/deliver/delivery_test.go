package deliver_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/core/coretest"
	"github.com/relayr-go/relayr/core/deliver"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/metrics"
)

func TestLogFollowerDelivery(t *testing.T) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"AFailureThatPassesIsRetriedWithBackoffFromTheCursor", logRetriesWithBackoff},
		{"ARetryingFollowerKeepsItsLease", logRetryKeepsLease},
		{"ASinkThatRetriesItselfReportsEachFailure", logSinkReportsFailures},
		{"ALeaseLostDuringAPublishEndsIt", logLeaseLostEndsPublish},
		{"ABatchSinkMovesTheCursorOncePerBatch", logBatchCursor},
		{"ABatchTakenInPartMovesTheCursorPastWhatWasTaken", logBatchPartial},
		{"StatusSaysWhyAFollowerStopped", logStatusStopped},
	} {
		t.Run(c.name, func(t *testing.T) { synctest.Test(t, c.run) })
	}
}

var errBrokerDown = errors.New("no servers available for connection")

func logRetriesWithBackoff(t *testing.T) {
	s := newSink()
	var mu sync.Mutex
	var tries []time.Time
	s.setFail(func(ev eventlog.Event) error {
		if ev.Seq != 3 {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		tries = append(tries, time.Now())
		if len(tries) <= 3 {
			return deliver.Retry("unreachable", errBrokerDown)
		}
		return nil
	})
	e := newLogEnv(t, deliver.Subscription{Sink: s}, "a")
	ids := e.appendN(5, "app:thing")
	start := time.Now()
	e.follow()
	st := e.status()
	if st.State != deliver.Retrying || st.Failures != 1 || st.Cursor != 2 || st.Head != 5 ||
		!strings.Contains(st.LastError, "no servers") || !st.RetryAt.Equal(start.Add(time.Second)) {
		t.Fatalf("status after the first failure: %+v", st)
	}
	if n := e.m.With(metrics.DeliveryFailures, metrics.Labels{"tenant": tenant, "workspace": workspace, "name": "sub-1", "reason": "unreachable"}); n != 1 {
		t.Fatalf("failures counted %v, want 1 with its reason", n)
	}
	e.wait(10 * time.Second)
	mu.Lock()
	var gaps []time.Duration
	for _, at := range tries {
		gaps = append(gaps, at.Sub(start))
	}
	mu.Unlock()
	// Tried at once, then after 1 s, 2 s and 4 s: each wait doubles.
	if want := []time.Duration{0, time.Second, 3 * time.Second, 7 * time.Second}; !slices.Equal(gaps, want) {
		t.Fatalf("seq 3 tried at %v, want %v", gaps, want)
	}
	if got := s.got(); !slices.Equal(got, ids) {
		t.Fatalf("sink got %v, want every entry once in order %v", got, ids)
	}
	st = e.status()
	if st.State != deliver.Running || st.Failures != 0 || st.Cursor != 5 || st.LastDelivery.IsZero() || st.LastError == "" {
		t.Fatalf("status after the sink recovered: %+v", st)
	}
	if e.lf.Stopped(e.f) != nil || e.m.Get(metrics.FollowersStopped) != 0 {
		t.Fatal("a failure that passes stopped the follower")
	}
	if n := e.m.Get(metrics.Delivered); n != 5 {
		t.Fatalf("delivered counted %v, want 5", n)
	}
}

func logRetryKeepsLease(t *testing.T) {
	s := newSink()
	s.setFail(func(eventlog.Event) error {
		return deliver.Retry("stream_full", errors.New("maximum messages exceeded"))
	})
	e := newLogEnv(t, deliver.Subscription{Sink: s}, "a")
	e.appendN(2, "app:thing")
	e.follow()
	sb := newSink()
	lfB := e.followers("b", deliver.Subscription{Sink: sb})
	if err := lfB.Follow(context.Background(), e.f, deliver.Subscription{Sink: sb}); err != nil {
		t.Fatal(err)
	}
	e.wait(10 * time.Minute)
	if len(sb.got()) != 0 || sb.calls != 0 {
		t.Fatal("another holder relayed while the failing follower retried: it let its lease lapse")
	}
	st := e.status()
	if st.State != deliver.Retrying || st.Failures < 5 {
		t.Fatalf("status after ten minutes of failures: %+v", st)
	}
	bs, err := lfB.Status(context.Background())
	if err != nil || len(bs) != 1 || bs[0].State != deliver.Waiting {
		t.Fatalf("the other holder's status %+v %v, want waiting", bs, err)
	}
}

// selfRetrying retries inside Publish, as the HTTP subscriber does,
// reporting each failure, and takes the event after a given number.
type selfRetrying struct {
	failures int
	wait     time.Duration
	mu       sync.Mutex
	got      []string
}

func (s *selfRetrying) Publish(ctx context.Context, e eventlog.Event) error {
	for range s.failures {
		deliver.ReportFailure(ctx, errors.New("subscriber answered 503 Service Unavailable"))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(s.wait):
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, e.ID)
	return nil
}

func logSinkReportsFailures(t *testing.T) {
	s := &selfRetrying{failures: 3, wait: time.Minute}
	e := newLogEnv(t, deliver.Subscription{Sink: s}, "a")
	e.appendN(1, "app:thing")
	e.follow()
	st := e.status()
	if st.State != deliver.Retrying || st.Failures != 1 || !strings.Contains(st.LastError, "503") {
		t.Fatalf("status while the sink retries: %+v", st)
	}
	if n := e.m.With(metrics.DeliveryFailures, metrics.Labels{"tenant": tenant, "workspace": workspace, "name": "sub-1", "reason": "failed"}); n != 1 {
		t.Fatalf("failures counted %v, want 1", n)
	}
	// The sink's call outlasts the lease; the lease is renewed under it.
	sb := newSink()
	lfB := e.followers("b", deliver.Subscription{Sink: sb})
	if err := lfB.Follow(context.Background(), e.f, deliver.Subscription{Sink: sb}); err != nil {
		t.Fatal(err)
	}
	e.wait(2*time.Minute + time.Second)
	if st := e.status(); st.Failures != 3 || sb.calls != 0 {
		t.Fatalf("status %+v, other holder's calls %d; want three failures and the lease kept", st, sb.calls)
	}
	e.wait(time.Minute)
	if st := e.status(); st.State != deliver.Running || st.Failures != 0 || st.Cursor != 1 || len(s.got) != 1 {
		t.Fatalf("status after the sink took it: %+v", st)
	}
}

// blocking waits in Publish until its context ends.
type blocking struct{ ended chan error }

func (s *blocking) Publish(ctx context.Context, _ eventlog.Event) error {
	<-ctx.Done()
	s.ended <- ctx.Err()
	return ctx.Err()
}

func logLeaseLostEndsPublish(t *testing.T) {
	s := &blocking{ended: make(chan error, 1)}
	e := newLogEnv(t, deliver.Subscription{Sink: s}, "a")
	e.appendN(1, "app:thing")
	e.follow()
	e.led.SetFailHolder("a")
	e.wait(11 * time.Second) // the renewal at 10 s failed
	select {
	case err := <-s.ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the sink's call ended with %v, want its context cancelled", err)
		}
	default:
		t.Fatal("the sink's call went on after the lease was lost")
	}
	if st := e.status(); st.State != deliver.Waiting || e.lf.Stopped(e.f) != nil || st.Cursor != 0 {
		t.Fatalf("status %+v, stopped %v; want waiting for the lease, cursor unmoved", st, e.lf.Stopped(e.f))
	}
}

// batchSink takes pages, recording each call's size, and can take only
// part of one.
type batchSink struct {
	*sink
	mu      sync.Mutex
	batches []int
	take    func(es []eventlog.Event) (int, error)
}

func (b *batchSink) PublishBatch(ctx context.Context, es []eventlog.Event) (int, error) {
	b.mu.Lock()
	b.batches = append(b.batches, len(es))
	take := b.take
	b.mu.Unlock()
	n, err := len(es), error(nil)
	if take != nil {
		n, err = take(es)
	}
	for _, e := range es[:n] {
		if perr := b.Publish(ctx, e); perr != nil {
			return 0, perr
		}
	}
	return n, err
}

// countingLedger counts cursor saves.
type countingLedger struct {
	*coretest.FaultLedger
	mu    sync.Mutex
	saves []int64
}

func (l *countingLedger) SaveCursor(ctx context.Context, f ledger.Follower, c ledger.Cursor) error {
	l.mu.Lock()
	l.saves = append(l.saves, c.Seq)
	l.mu.Unlock()
	return l.FaultLedger.SaveCursor(ctx, f, c)
}

func logBatchCursor(t *testing.T) {
	b := &batchSink{sink: newSink()}
	e := newLogEnv(t, deliver.Subscription{Sink: b}, "a")
	cl := &countingLedger{FaultLedger: e.led}
	lf := deliver.New(deliver.Config{Ledger: cl, Log: e.log, Metrics: e.m, Holder: "a", Options: deliver.Options{Batch: 100}})
	t.Cleanup(lf.Stop)
	ids := e.appendN(250, "app:thing")
	if err := lf.Follow(context.Background(), e.f, deliver.Subscription{Sink: b}); err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
	if got := b.got(); !slices.Equal(got, ids) {
		t.Fatalf("batch sink got %d events, want all 250 in order", len(got))
	}
	if !slices.Equal(b.batches, []int{100, 100, 50}) || !slices.Equal(cl.saves, []int64{100, 200, 250}) {
		t.Fatalf("batches %v, cursor saves %v; want one save after each page", b.batches, cl.saves)
	}
}

func logBatchPartial(t *testing.T) {
	b := &batchSink{sink: newSink()}
	first := true
	b.take = func(es []eventlog.Event) (int, error) {
		if first {
			first = false
			return 3, deliver.Retry("timeout", errors.New("timeout waiting for the ack"))
		}
		return len(es), nil
	}
	e := newLogEnv(t, deliver.Subscription{Sink: b}, "a")
	ids := e.appendN(5, "app:thing")
	e.follow()
	if e.cursor() != 3 || len(b.got()) != 3 {
		t.Fatalf("cursor %d, sink %v; want the cursor after the three taken", e.cursor(), b.got())
	}
	e.wait(time.Second)
	if got := b.got(); !slices.Equal(got, ids) || e.cursor() != 5 || !slices.Equal(b.batches, []int{5, 2}) {
		t.Fatalf("sink %v, cursor %d, batches %v; want the rest from the cursor", got, e.cursor(), b.batches)
	}
}

func logStatusStopped(t *testing.T) {
	s := newSink()
	s.setFail(func(ev eventlog.Event) error {
		if ev.Seq == 2 {
			return errors.New("subscriber answered 410 Gone")
		}
		return nil
	})
	e := newLogEnv(t, deliver.Subscription{Sink: s}, "a")
	e.appendN(3, "app:thing")
	e.follow()
	st := e.status()
	if st.State != deliver.Stopped || !strings.Contains(st.Stopped, "410") || st.Cursor != 1 || st.Head != 3 {
		t.Fatalf("status of a stopped follower: %+v", st)
	}
}

func (e *logEnv) status() deliver.Status {
	e.t.Helper()
	all, err := e.lf.Status(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	for _, s := range all {
		if s.Tenant == e.f.Tenant && s.Workspace == e.f.Workspace && s.Name == e.f.Name {
			return s
		}
	}
	e.t.Fatalf("no status for %v in %+v", e.f, all)
	return deliver.Status{}
}
