package clock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/clock"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func TestFakeAfterFiresWhenTimeReachesIt(t *testing.T) {
	f := clock.NewFake(t0)
	ch := f.After(10 * time.Second)
	f.Advance(9 * time.Second)
	select {
	case <-ch:
		t.Fatal("fired early")
	default:
	}
	f.Advance(time.Second)
	if got := <-ch; !got.Equal(t0.Add(10 * time.Second)) {
		t.Fatalf("fired at %s", got)
	}
}

func TestFakeWithTimeoutEndsAtTheDeadline(t *testing.T) {
	f := clock.NewFake(t0)
	ctx, cancel := f.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f.Advance(19 * time.Second)
	if ctx.Err() != nil {
		t.Fatal("ended early")
	}
	f.Advance(time.Second)
	<-ctx.Done()
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("err %v, want deadline exceeded", ctx.Err())
	}
}

func TestFakeCancelRemovesTheDeadline(t *testing.T) {
	f := clock.NewFake(t0)
	_, cancel := f.WithTimeout(context.Background(), time.Second)
	if f.Waiters() != 1 {
		t.Fatalf("waiters %d", f.Waiters())
	}
	cancel()
	if f.Waiters() != 0 {
		t.Fatalf("waiters %d after cancel", f.Waiters())
	}
}

func TestSleepAnswersTheContextWhenItEndsFirst(t *testing.T) {
	f := clock.NewFake(t0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- clock.Sleep(ctx, f, time.Hour) }()
	if err := f.BlockUntil(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
}

func TestFakeNeverMovesBackwards(t *testing.T) {
	f := clock.NewFake(t0)
	f.Set(t0.Add(-time.Hour))
	if !f.Now().Equal(t0) {
		t.Fatalf("now %s", f.Now())
	}
}
