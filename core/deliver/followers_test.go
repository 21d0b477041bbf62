package deliver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/core/coretest"
	"github.com/relayr-go/relayr/core/deliver"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/ledger/memledger"
	"github.com/relayr-go/relayr/core/metrics"
)

// sink records what it is given, once per id, and fails on demand.
type sink struct {
	mu    sync.Mutex
	ids   []string
	seen  map[string]bool
	calls int
	fail  func(eventlog.Event) error
}

func newSink() *sink { return &sink{seen: map[string]bool{}} }

func (s *sink) Publish(_ context.Context, e eventlog.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.fail != nil {
		if err := s.fail(e); err != nil {
			return err
		}
	}
	if !s.seen[e.ID] {
		s.seen[e.ID] = true
		s.ids = append(s.ids, e.ID)
	}
	return nil
}

func (s *sink) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ids)
}

func (s *sink) setFail(fn func(eventlog.Event) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = fn
}

type logEnv struct {
	t   *testing.T
	mem *memledger.Ledger
	led *coretest.FaultLedger
	log *coretest.FaultLog
	m   *metrics.Memory
	sub deliver.Subscription
	lf  *deliver.Followers
	f   ledger.Follower
}

func newLogEnv(t *testing.T, sub deliver.Subscription, holder string) *logEnv {
	mem := memledger.New()
	e := &logEnv{t: t, mem: mem, led: &coretest.FaultLedger{Ledger: mem}, log: &coretest.FaultLog{Log: mem}, m: metrics.NewMemory(), sub: sub,
		f: ledger.Follower{Kind: ledger.LogFollower, Tenant: tenant, Workspace: workspace, Name: "sub-1"}}
	e.lf = e.followers(holder, sub)
	return e
}

func (e *logEnv) followers(holder string, sub deliver.Subscription, opts ...deliver.Options) *deliver.Followers {
	var o deliver.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	lf := deliver.New(deliver.Config{
		Ledger: e.led, Log: e.log, Metrics: e.m, Logger: slog.New(slog.DiscardHandler), Holder: holder, Options: o,
		Subscriptions: func(_ context.Context, f ledger.Follower) (deliver.Subscription, error) {
			if f.Name == "unknown" {
				return deliver.Subscription{}, errors.New("no such subscription")
			}
			return sub, nil
		},
	})
	e.t.Cleanup(lf.Stop)
	return lf
}

// appendN appends n events of type typ to the workspace's log and answers
// their ids.
func (e *logEnv) appendN(n int, typ string) []string {
	e.t.Helper()
	var ids []string
	for range n {
		id := fmt.Sprintf("evt_%s_%d", typ, len(ids)+e.count())
		_, _, err := e.mem.Append(context.Background(), eventlog.AppendParams{Publisher: "rules", Event: eventlog.Event{
			ID: id, Tenant: tenant, Workspace: workspace, Type: typ, Data: json.RawMessage(`{}`), At: time.Now(),
		}})
		if err != nil {
			e.t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

func (e *logEnv) count() int {
	evs, _ := e.mem.Read(context.Background(), tenant, workspace, 0, 1<<20)
	return len(evs)
}

func (e *logEnv) follow() {
	e.t.Helper()
	if err := e.lf.Follow(context.Background(), e.f, e.sub); err != nil {
		e.t.Fatal(err)
	}
	synctest.Wait()
}

func (e *logEnv) cursor() int64 {
	c, err := e.mem.Cursor(context.Background(), e.f)
	if err != nil {
		e.t.Fatal(err)
	}
	return c.Seq
}

func (e *logEnv) wait(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

func TestLogFollower(t *testing.T) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"PublishesInSequenceWithTheSameIDs", logPublishesInOrder},
		{"PublishesWhatItsProjectionSelects", logProjectionSelects},
		{"DeadLettersOncePerSequence", logDeadLettersOnce},
		{"RefusedPublishStopsAndDeadLettersNothing", logRefusedPublishStops},
		{"AStoppedFollowerIsFollowedAgainAfterReopenAfter", logReopenedAfter},
		{"TypeTheSinkDoesNotAcceptStops", logUnknownTypeStops},
		{"StorageFailureStops", logStorageFailureStops},
		{"CursorSavedAfterEvery500ThatBridgeNothing", logQuietCursor},
		{"ResumesEveryFollowedLogAtStartUp", logResumes},
		{"LostRenewalStopsTheRelaying", logLostRenewal},
		{"NotifyWakesItAtOnce", logNotify},
	} {
		t.Run(c.name, func(t *testing.T) { synctest.Test(t, c.run) })
	}
}

func logPublishesInOrder(t *testing.T) {
	s := newSink()
	e := newLogEnv(t, deliver.Subscription{Sink: s}, "a")
	ids := e.appendN(5, "app:thing")
	e.follow()
	if got := s.got(); !slices.Equal(got, ids) {
		t.Fatalf("sink got %v, want %v", got, ids)
	}
	if e.cursor() != 5 {
		t.Fatalf("cursor %d, want 5", e.cursor())
	}
	more := e.appendN(2, "app:thing")
	e.wait(time.Second)
	if got := s.got(); !slices.Equal(got, append(ids, more...)) {
		t.Fatalf("sink got %v after more", got)
	}
}

func logProjectionSelects(t *testing.T) {
	s := newSink()
	e := newLogEnv(t, deliver.Subscription{Sink: s, Projection: func(ev eventlog.Event) (*eventlog.Event, error) {
		if ev.Seq%2 == 1 {
			return nil, nil
		}
		return &eventlog.Event{Type: "hook:delivered", Data: ev.Data}, nil
	}}, "a")
	ids := e.appendN(5, "app:thing")
	e.follow()
	if got := s.got(); !slices.Equal(got, []string{ids[1], ids[3]}) {
		t.Fatalf("sink got %v, want the even entries with their ids", got)
	}
	// The cursor moved after each published entry, not after the quiet last.
	if e.cursor() != 4 {
		t.Fatalf("cursor %d, want 4", e.cursor())
	}
}

func logDeadLettersOnce(t *testing.T) {
	s := newSink()
	e := newLogEnv(t, deliver.Subscription{Sink: s, Projection: func(ev eventlog.Event) (*eventlog.Event, error) {
		switch ev.Seq {
		case 2:
			return nil, errors.New("cannot map")
		case 3:
			return &eventlog.Event{Type: "tracker:item_changed", Data: ev.Data}, nil
		}
		return &ev, nil
	}}, "a")
	e.appendN(4, "app:thing")
	e.led.FailCursorOnce(2) // the cursor after the first dead letter: a stop, and seq 2 is read again
	e.follow()
	if !errors.Is(e.lf.Stopped(e.f), deliver.ErrStopped) {
		t.Fatalf("Stopped: %v, want a stop for the storage failure", e.lf.Stopped(e.f))
	}
	if err := e.lf.Follow(context.Background(), e.f, e.sub); err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
	dl, err := e.mem.DeadLetters(context.Background(), e.f)
	if err != nil {
		t.Fatal(err)
	}
	if len(dl) != 2 || dl[0].ID != "2" || dl[1].ID != "3" || dl[0].Seq != 2 {
		t.Fatalf("dead letters %+v, want seq 2 and 3 once each", dl)
	}
	if n := e.m.Get(metrics.LogDeadLetters); n != 2 {
		t.Fatalf("dead letters counted %v, want 2", n)
	}
	if len(s.got()) != 2 || e.cursor() != 4 {
		t.Fatalf("sink got %v, cursor %d; want the two others and the cursor at 4", s.got(), e.cursor())
	}
}

func logRefusedPublishStops(t *testing.T) {
	s := newSink()
	s.setFail(func(ev eventlog.Event) error {
		if ev.Seq == 3 {
			return errors.New("subscriber answered 410")
		}
		return nil
	})
	e := newLogEnv(t, deliver.Subscription{Sink: s}, "a")
	e.appendN(5, "app:thing")
	e.follow()
	if !errors.Is(e.lf.Stopped(e.f), deliver.ErrStopped) || e.m.Get(metrics.FollowersStopped) != 1 {
		t.Fatalf("Stopped %v, counted %v; want a stop", e.lf.Stopped(e.f), e.m.Get(metrics.FollowersStopped))
	}
	if dl, _ := e.mem.DeadLetters(context.Background(), e.f); len(dl) != 0 || e.cursor() != 2 {
		t.Fatalf("dead letters %v, cursor %d; want none and the cursor at 2", dl, e.cursor())
	}
	// Its lease was let go at once.
	if _, err := e.mem.TakeLease(context.Background(), ledger.LeaseParams{Follower: e.f, Holder: "probe", Now: time.Now(), TTL: time.Second}); err != nil {
		t.Fatalf("the stopped follower kept its lease: %v", err)
	}
	e.wait(time.Second)
	s.setFail(nil)
	e.follow()
	if len(s.got()) != 5 {
		t.Fatalf("sink got %d after the follower was followed again, want 5", len(s.got()))
	}
}

func logUnknownTypeStops(t *testing.T) {
	s := newSink()
	s.setFail(func(ev eventlog.Event) error {
		if ev.Type == "app:other" {
			return fmt.Errorf("%w: app:other", deliver.ErrUnknownType)
		}
		return nil
	})
	e := newLogEnv(t, deliver.Subscription{Sink: s}, "a")
	e.appendN(1, "app:thing")
	e.appendN(1, "app:other")
	e.appendN(1, "app:thing")
	e.follow()
	if err := e.lf.Stopped(e.f); !errors.Is(err, deliver.ErrUnknownType) {
		t.Fatalf("Stopped %v, want a stop for the type", err)
	}
	if dl, _ := e.mem.DeadLetters(context.Background(), e.f); len(dl) != 0 || len(s.got()) != 1 {
		t.Fatalf("dead letters %v, sink %v; want the follower stopped before the type", dl, s.got())
	}
}

func logStorageFailureStops(t *testing.T) {
	s := newSink()
	e := newLogEnv(t, deliver.Subscription{Sink: s}, "a")
	e.appendN(2, "app:thing")
	e.log.Fail(nil, errDisk)
	e.follow()
	if err := e.lf.Stopped(e.f); !errors.Is(err, errDisk) {
		t.Fatalf("Stopped %v, want a stop for the failing log", err)
	}
}

func logQuietCursor(t *testing.T) {
	s := newSink()
	e := newLogEnv(t, deliver.Subscription{Sink: s, Projection: func(ev eventlog.Event) (*eventlog.Event, error) {
		if ev.Type == "app:wanted" {
			return &ev, nil
		}
		return nil, nil
	}}, "a")
	e.appendN(1200, "app:noise")
	e.follow()
	if e.cursor() != 1000 {
		t.Fatalf("cursor %d after 1200 that bridge nothing, want 1000", e.cursor())
	}
	e.appendN(1, "app:wanted")
	e.wait(time.Second)
	if e.cursor() != 1201 || len(s.got()) != 1 {
		t.Fatalf("cursor %d, sink %d; want 1201 after a published entry", e.cursor(), len(s.got()))
	}
}

func logResumes(t *testing.T) {
	s := newSink()
	e := newLogEnv(t, deliver.Subscription{Sink: s}, "a")
	other := e.f
	other.Name = "sub-2"
	unknown := e.f
	unknown.Name = "unknown"
	e.appendN(3, "app:thing")
	e.follow()
	if err := e.lf.Follow(context.Background(), other, e.sub); err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
	e.lf.Stop()
	if err := e.mem.SaveCursor(context.Background(), unknown, ledger.Cursor{Seq: 1}); err != nil {
		t.Fatal(err)
	}
	calls := s.calls
	ids := e.appendN(2, "app:thing")
	s2 := newSink()
	lf2 := e.followers("b", deliver.Subscription{Sink: s2})
	if err := lf2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
	// Both followed logs resumed from their cursors: each delivers the two
	// new entries only.
	if got := s2.got(); !slices.Equal(got, ids) || s2.calls != 4 || s.calls != calls {
		t.Fatalf("resumed followers delivered %v in %d calls, want %v twice", got, s2.calls, ids)
	}
}

func logLostRenewal(t *testing.T) {
	sa, sb := newSink(), newSink()
	e := newLogEnv(t, deliver.Subscription{Sink: sa}, "a")
	lfB := e.followers("b", deliver.Subscription{Sink: sb})
	ids := e.appendN(3, "app:thing")
	e.follow()
	e.led.SetFailHolder("a")
	if err := lfB.Follow(context.Background(), e.f, deliver.Subscription{Sink: sb}); err != nil {
		t.Fatal(err)
	}
	e.wait(11 * time.Second) // a's renewal failed at 10 s
	more := e.appendN(3, "app:thing")
	e.wait(40 * time.Second) // b takes the lapsed lease
	if got := sa.got(); !slices.Equal(got, ids) {
		t.Fatalf("a relayed %v after losing its lease", got)
	}
	if got := sb.got(); !slices.Equal(got, more) {
		t.Fatalf("b relayed %v, want the entries after a's cursor %v", got, more)
	}
}

func logNotify(t *testing.T) {
	s := newSink()
	mem := memledger.New()
	lf := deliver.New(deliver.Config{Ledger: mem, Log: mem, Logger: slog.New(slog.DiscardHandler), Options: deliver.Options{PollEvery: time.Hour}})
	t.Cleanup(lf.Stop)
	f := ledger.Follower{Kind: ledger.LogFollower, Tenant: tenant, Workspace: workspace, Name: "sub"}
	if err := lf.Follow(context.Background(), f, deliver.Subscription{Sink: s}); err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
	_, _, err := mem.Append(context.Background(), eventlog.AppendParams{Publisher: "rules", Event: eventlog.Event{ID: "e1", Tenant: tenant, Workspace: workspace, Type: "app:x", Data: json.RawMessage(`1`)}})
	if err != nil {
		t.Fatal(err)
	}
	lf.Notify(tenant, workspace)
	synctest.Wait()
	if got := s.got(); len(got) != 1 {
		t.Fatalf("sink got %v without time passing, want the notified entry", got)
	}
}

func logReopenedAfter(t *testing.T) {
	s := newSink()
	s.setFail(func(ev eventlog.Event) error {
		if ev.Seq == 3 {
			return errors.New("the disk is full")
		}
		return nil
	})
	e := newLogEnv(t, deliver.Subscription{Sink: s}, "a")
	e.lf = e.followers("a", e.sub, deliver.Options{ReopenAfter: time.Minute})
	e.appendN(5, "app:thing")
	e.follow()
	if !errors.Is(e.lf.Stopped(e.f), deliver.ErrStopped) {
		t.Fatalf("Stopped %v, want a stop", e.lf.Stopped(e.f))
	}
	s.setFail(nil)
	e.wait(30 * time.Second)
	if len(s.got()) != 2 {
		t.Fatalf("sink got %d before ReopenAfter passed, want 2", len(s.got()))
	}
	e.wait(31 * time.Second)
	if len(s.got()) != 5 || e.lf.Stopped(e.f) != nil {
		t.Fatalf("sink got %d after ReopenAfter, stopped %v; want all 5 and running", len(s.got()), e.lf.Stopped(e.f))
	}
}

// TestAFollowerWakesAtItsLogsNextAppend: over a log that tells when it
// grows, a follower waiting for entries delivers an append at once, not a
// PollEvery later, with nothing calling Notify.
func TestAFollowerWakesAtItsLogsNextAppend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memledger.New()
		log := eventlog.NewNotifying(mem)
		s := newSink()
		f := ledger.Follower{Kind: ledger.LogFollower, Tenant: tenant, Workspace: workspace, Name: "sub-1"}
		lf := deliver.New(deliver.Config{Ledger: mem, Log: log, Logger: slog.New(slog.DiscardHandler), Options: deliver.Options{PollEvery: time.Hour}})
		t.Cleanup(lf.Stop)
		if err := lf.Follow(t.Context(), f, deliver.Subscription{Sink: s}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the follower read nothing and waits
		start := time.Now()
		if _, _, err := log.Append(t.Context(), eventlog.AppendParams{Publisher: "rules", Event: eventlog.Event{
			ID: "evt_1", Tenant: tenant, Workspace: workspace, Type: "app:thing", Data: json.RawMessage(`{}`), At: start,
		}}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := s.got(); len(got) != 1 || time.Since(start) != 0 {
			t.Fatalf("delivered %v after %s, want evt_1 at once", got, time.Since(start))
		}
	})
}
