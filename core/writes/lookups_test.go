package writes_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/core/coretest"
	"github.com/relayr-go/relayr/core/faketracker"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
)

// Filings in doubt on one project that fall due together are looked up in
// one read where the tracker finds several keys at once: five lost answers,
// one read, every key recorded with its item and none filed twice.
func TestFilingsInDoubtAreLookedUpTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := faketracker.New(faketracker.LikeVikunja)
		wd := coretest.NewWorld(coretest.WorldOptions{Driver: faketracker.KeysFinding{Tracker: fake}})
		fake.CrashAfterCreate(5) // made, their answers lost
		var wg sync.WaitGroup
		for i := range 5 {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
				defer cancel()
				key := fmt.Sprintf("build-%d", i)
				if _, err := wd.Writer.EnsureItem(ctx, writes.EnsureParams{Tenant: "acme", Workspace: "ops", Key: key, Draft: tracker.Draft{Title: key}}); err != nil {
					t.Errorf("%s: %v", key, err)
				}
			})
		}
		wg.Wait()
		if n := fake.Calls(faketracker.MethodFindKeys); n != 1 {
			t.Fatalf("%d reads of several keys, want one for the five in doubt", n)
		}
		if n := fake.Calls(faketracker.MethodFind); n != 0 {
			t.Fatalf("%d look-ups of one key, want none", n)
		}
		perKey, created := fake.Filed()
		if created != 5 {
			t.Fatalf("%d creates, want five: none filed again", created)
		}
		for i := range 5 {
			if n := perKey[fmt.Sprintf("build-%d", i)]; n != 1 {
				t.Fatalf("build-%d has %d items", i, n)
			}
		}
	})
}

// A key the read of several did not settle is looked up on its own.
func TestAKeyTheReadOfSeveralMissesIsLookedUpAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := faketracker.New(faketracker.LikeVikunja)
		wd := coretest.NewWorld(coretest.WorldOptions{Driver: faketracker.KeysFinding{Tracker: fake}})
		fake.CrashAfterCreate(1)
		fake.FailNext(faketracker.MethodFindKeys, 1, tracker.ErrUnavailable)
		ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
		defer cancel()
		if _, err := wd.Writer.EnsureItem(ctx, writes.EnsureParams{Tenant: "acme", Workspace: "ops", Key: "k", Draft: tracker.Draft{Title: "k"}}); err != nil {
			t.Fatal(err)
		}
		if f, fk := fake.Calls(faketracker.MethodFind), fake.Calls(faketracker.MethodFindKeys); f != 1 || fk != 1 {
			t.Fatalf("%d look-ups alone and %d of several, want the failed read then one alone", f, fk)
		}
		if perKey, _ := fake.Filed(); perKey["k"] != 1 {
			t.Fatalf("filed %v", perKey)
		}
	})
}

// slowComments is the fake with each comment taking 3 s to post.
type slowComments struct{ *faketracker.Tracker }

func (s slowComments) Comment(ctx context.Context, id, key, body string) (tracker.Comment, error) {
	time.Sleep(3 * time.Second)
	return s.Tracker.Comment(ctx, id, key, body)
}

// A comment whose caller gives up before the tracker took it is still
// posted, once, and recorded: the caller's retry finds it, and posts
// nothing again.
func TestACommentWhoseCallerGaveUpIsStillPostedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := faketracker.New(faketracker.LikePlane)
		wd := coretest.NewWorld(coretest.WorldOptions{Driver: slowComments{fake}})
		ctx := t.Context()
		if _, err := wd.Writer.EnsureItem(ctx, writes.EnsureParams{Tenant: "acme", Workspace: "ops", Key: "k", Draft: tracker.Draft{Title: "k"}}); err != nil {
			t.Fatal(err)
		}
		p := writes.CommentParams{Tenant: "acme", Workspace: "ops", ItemKey: "k", Key: "k/note-1", Body: "flaky again"}
		short, cancel := context.WithTimeout(ctx, time.Second)
		_, err := wd.Writer.Comment(short, p)
		cancel()
		if writes.CodeOf(err) != writes.CodeUnavailable {
			t.Fatalf("the caller that gave up was answered %v, want tracker_unavailable", err)
		}
		time.Sleep(5 * time.Second)
		r, err := wd.Writer.Comment(ctx, p)
		if err != nil || r.How != writes.Existing {
			t.Fatalf("the retry: %+v, %v; want the comment posted while it was away", r, err)
		}
		if n := fake.Calls(faketracker.MethodComment); n != 1 {
			t.Fatalf("%d comments posted, want one", n)
		}
	})
}
