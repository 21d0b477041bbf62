package deliver_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/core/deliver"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/ledger/memledger"
)

// idSink counts what it is given and takes an id once, as a sink must.
type idSink struct {
	mu    sync.Mutex
	calls int
	taken map[string]int
	fail  error
}

func (s *idSink) Publish(_ context.Context, e eventlog.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.fail != nil {
		return s.fail
	}
	if s.taken == nil {
		s.taken = map[string]int{}
	}
	s.taken[e.ID]++
	return nil
}

func replaySetup(t *testing.T) (*memledger.Ledger, *idSink, *deliver.Resolver, ledger.Follower) {
	t.Helper()
	l := memledger.New()
	f := ledger.Follower{Kind: ledger.LogFollower, Tenant: "acme", Workspace: "ops", Name: "rules"}
	raw, _ := json.Marshal(eventlog.Event{ID: "trk_00000000000000aa", Seq: 3, Tenant: "acme", Workspace: "ops", Type: "tracker:item_changed", Data: json.RawMessage(`{}`)})
	if _, err := l.DeadLetter(t.Context(), ledger.DeadLetter{Follower: f, ID: "3", Seq: 3, Event: raw, Reason: "projection failed: boom", At: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	sink := &idSink{}
	rv := &deliver.Resolver{
		Ledger: l, // Clock nil: the system clock, virtual in the tests' bubbles
		Sink:   func(ledger.Follower) (deliver.Sink, error) { return sink, nil },
	}
	return l, sink, rv, f
}

func TestReplayPublishesUnderTheEventsIDOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, sink, rv, f := replaySetup(t)
		d, changed, err := rv.Resolve(t.Context(), f, "3", ledger.Replayed)
		if err != nil || !changed || d.Resolution != ledger.Replayed {
			t.Fatalf("replay: %v %v %+v", err, changed, d)
		}
		// A second click, either action, publishes and changes nothing.
		for _, r := range []ledger.Resolution{ledger.Replayed, ledger.Skipped} {
			d, changed, err = rv.Resolve(t.Context(), f, "3", r)
			if err != nil || changed || d.Resolution != ledger.Replayed {
				t.Fatalf("second %s: %v %v %+v", r, err, changed, d)
			}
		}
		if sink.calls != 1 || sink.taken["trk_00000000000000aa"] != 1 {
			t.Fatalf("the sink was called %d times: %v", sink.calls, sink.taken)
		}
		list, _ := l.DeadLetters(t.Context(), f)
		if len(list) != 1 || list[0].Resolution != ledger.Replayed {
			t.Fatalf("dead letters %+v", list)
		}
	})
}

func TestConcurrentReplaysPublishOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, sink, rv, f := replaySetup(t)
		var wg sync.WaitGroup
		var mu sync.Mutex
		resolved := 0
		for range 8 {
			wg.Go(func() {
				_, changed, err := rv.Resolve(t.Context(), f, "3", ledger.Replayed)
				if err != nil {
					t.Error(err)
				}
				if changed {
					mu.Lock()
					resolved++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if resolved != 1 || sink.calls != 1 {
			t.Fatalf("%d replays resolved it, the sink was called %d times", resolved, sink.calls)
		}
	})
}

func TestSkipPublishesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, sink, rv, f := replaySetup(t)
		d, changed, err := rv.Resolve(t.Context(), f, "3", ledger.Skipped)
		if err != nil || !changed || d.Resolution != ledger.Skipped {
			t.Fatalf("skip: %v %v %+v", err, changed, d)
		}
		if _, changed, _ := rv.Resolve(t.Context(), f, "3", ledger.Replayed); changed || sink.calls != 0 {
			t.Fatalf("a replay after a skip published (%d calls)", sink.calls)
		}
	})
}

func TestAFailedReplayRecordsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, sink, rv, f := replaySetup(t)
		sink.fail = deliver.Retry("unreachable", errors.New("connection refused"))
		if _, changed, err := rv.Resolve(t.Context(), f, "3", ledger.Replayed); err == nil || changed {
			t.Fatalf("a refused replay answered %v, changed %v", err, changed)
		}
		list, _ := l.DeadLetters(t.Context(), f)
		if list[0].Resolution != "" {
			t.Fatal("a refused replay was recorded")
		}
		sink.fail = nil
		if _, changed, err := rv.Resolve(t.Context(), f, "3", ledger.Replayed); err != nil || !changed {
			t.Fatalf("the replay tried again: %v %v", err, changed)
		}
	})
}

func TestResolvingAMissingOrUnreadableDeadLetter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, sink, rv, f := replaySetup(t)
		if _, _, err := rv.Resolve(t.Context(), f, "9", ledger.Replayed); !errors.Is(err, ledger.ErrNotFound) {
			t.Fatalf("a missing dead letter: %v", err)
		}
		if _, err := l.DeadLetter(t.Context(), ledger.DeadLetter{Follower: f, ID: "4", Seq: 4, Event: []byte("not json"), Reason: "x", At: time.Unix(1, 0)}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := rv.Resolve(t.Context(), f, "4", ledger.Replayed); !errors.Is(err, deliver.ErrUnreadable) {
			t.Fatalf("an unreadable event: %v", err)
		}
		if _, _, err := rv.Resolve(t.Context(), f, "4", "forget"); !errors.Is(err, ledger.ErrInvalid) {
			t.Fatalf("an unknown action: %v", err)
		}
		if sink.calls != 0 {
			t.Fatalf("the sink was called %d times", sink.calls)
		}
	})
}
