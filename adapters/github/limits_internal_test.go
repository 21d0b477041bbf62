package github

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
)

// TestATokensRequestsAtOnceAreHeldToGitHubsHundred: the hundred-and-first
// request waits for a place, unsent, and goes once one is left; one whose
// context ends first is not sent.
func TestATokensRequestsAtOnceAreHeldToGitHubsHundred(t *testing.T) {
	synctest.Test(t, atOnce)
}

func atOnce(t *testing.T) {
	l := newLimits(time.Now)
	var leaves []func(bool, int)
	for range ConcurrentRequests {
		leave, err := l.Enter(context.Background(), http.MethodGet)
		if err != nil {
			t.Fatal(err)
		}
		leaves = append(leaves, leave)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Enter(ctx, http.MethodGet); !errors.Is(err, tracker.ErrNotSent) {
		t.Fatalf("a request past the hundred whose caller gave up: %v, want it not sent", err)
	}
	entered := make(chan error)
	go func() {
		leave, err := l.Enter(context.Background(), http.MethodGet)
		if err == nil {
			leave(true, http.StatusOK)
		}
		entered <- err
	}()
	synctest.Wait() // the request is waiting, or went
	select {
	case err := <-entered:
		t.Fatalf("a request past the hundred went at once (%v)", err)
	default:
	}
	leaves[0](true, http.StatusOK)
	if err := <-entered; err != nil {
		t.Fatalf("a request waiting for a place: %v, want it sent once one was left", err)
	}
	// A request refused for a limit gives its place back.
	l.heldUntil = time.Now().Add(time.Hour)
	for range 2 {
		if _, err := l.Enter(context.Background(), http.MethodGet); !errors.Is(err, tracker.ErrRateLimited) {
			t.Fatalf("a request while GitHub's limit holds: %v, want rate-limited", err)
		}
	}
	if n := len(l.slots); n != ConcurrentRequests-1 {
		t.Fatalf("%d places taken, want the %d still held", n, ConcurrentRequests-1)
	}
}
