package faketracker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/faketracker"
	"github.com/relayr-go/relayr/core/tracker"
)

func TestFailNextFailsExactlyNCallsOfThatMethod(t *testing.T) {
	f := faketracker.New(faketracker.LikePlane)
	ctx := context.Background()
	f.FailNext(faketracker.MethodFind, 2, tracker.RateLimited(3*time.Second))
	for i := range 2 {
		_, err := f.Find(ctx, "k")
		var rl *tracker.RateLimitedError
		if !errors.As(err, &rl) || rl.RetryAfter != 3*time.Second {
			t.Fatalf("call %d: %v, want rate limited 3s", i, err)
		}
	}
	if _, err := f.Find(ctx, "k"); !errors.Is(err, tracker.ErrNotFound) {
		t.Fatalf("third call: %v, want not found", err)
	}
	if _, err := f.Create(ctx, "k", tracker.Draft{Title: "t"}); err != nil {
		t.Fatalf("Create was failed by a Find fault: %v", err)
	}
	if f.Calls(faketracker.MethodFind) != 3 || f.Calls(faketracker.MethodCreate) != 1 || f.TotalCalls() != 4 {
		t.Fatalf("calls find=%d create=%d total=%d", f.Calls(faketracker.MethodFind), f.Calls(faketracker.MethodCreate), f.TotalCalls())
	}
}

func TestHangNextHangsUntilTheCallersContextEnds(t *testing.T) {
	f := faketracker.New(faketracker.LikePlane)
	f.HangNext(faketracker.MethodItem, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { _, err := f.Item(ctx, "x"); done <- err }()
	select {
	case err := <-done:
		t.Fatalf("returned before its context ended: %v", err)
	default:
	}
	cancel()
	err := <-done
	if !errors.Is(err, tracker.ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want unavailable wrapping canceled", err)
	}
}

func TestCrashAfterCreateFilesTheItemAndFails(t *testing.T) {
	f := faketracker.New(faketracker.LikeVikunja)
	f.CrashAfterCreate(1)
	ctx := context.Background()
	if _, err := f.Create(ctx, "k", tracker.Draft{Title: "t"}); !errors.Is(err, tracker.ErrUnavailable) {
		t.Fatalf("err %v, want unavailable", err)
	}
	got, err := f.Find(ctx, "k")
	if err != nil {
		t.Fatalf("the crashed create filed nothing: %v", err)
	}
	if perKey, created := f.Filed(); perKey["k"] != 1 || created != 1 {
		t.Fatalf("filed %v created %d", perKey, created)
	}
	if got.Ref.Key != "k" {
		t.Fatalf("ref %+v", got.Ref)
	}
}

func TestLikePlaneCreateAnswersExistsWithTheExistingID(t *testing.T) {
	f := faketracker.New(faketracker.LikePlane)
	ctx := context.Background()
	first, err := f.Create(ctx, "k", tracker.Draft{Title: "t"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Create(ctx, "k", tracker.Draft{Title: "t"})
	var ex *tracker.ExistsError
	if !errors.As(err, &ex) || ex.ID != first.Ref.ID {
		t.Fatalf("err %v, want exists %s", err, first.Ref.ID)
	}
	if err := f.Archive(first.Ref.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := f.Find(ctx, "k"); err != nil || !got.Archived {
		t.Fatalf("the lookup lost an archived item: %+v %v", got, err)
	}
}

func TestLikeVikunjaFilesTwiceAndFoldsStates(t *testing.T) {
	f := faketracker.New(faketracker.LikeVikunja)
	ctx := context.Background()
	for range 2 {
		if _, err := f.Create(ctx, "k", tracker.Draft{Title: "t", State: tracker.Started}); err != nil {
			t.Fatal(err)
		}
	}
	if perKey, _ := f.Filed(); perKey["k"] != 2 {
		t.Fatalf("a text-search tracker enforces nothing; filed %v", perKey)
	}
	if it := f.ItemsByKey("k")[0]; it.State != tracker.Todo {
		t.Fatalf("started reads back %s, want todo", it.State)
	}
	if f.Holds(tracker.Cancelled) != tracker.Done || f.Holds(tracker.Backlog) != tracker.Todo {
		t.Fatal("Holds does not fold as Vikunja's done flag")
	}
}
