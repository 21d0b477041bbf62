package gitlab_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/core/writes"
	"github.com/relayr-go/relayr/fixtures/gitlabemu"
)

// TestABurstOfCommentsIsPacedUnderTheNoteLimit: 150 comments at once on
// 10 issues, on GitLab.com's limits (60 note creations a minute a user,
// whose 429 says not when to come back, docs/trackers/gitlab.md §2; 2,000
// requests a minute), are all posted, once each, with no answer over a
// limit: the driver keeps the 60 a minute unsent, answering the callers it
// cannot serve within their deadline rate-limited, and they retry. 150 at
// 60 a minute take two minutes past the first sixty (the driver's span is
// a minute and a second), and no more than a retry's 5 s beyond.
func TestABurstOfCommentsIsPacedUnderTheNoteLimit(t *testing.T) {
	const issues, each = 10, 15 // 15 comments and a filing: within an item's cap of 20 writes an hour
	synctest.Test(t, func(t *testing.T) {
		r := newRun(t, gitlabemu.GitLabCom())
		var iids []int64
		for i := range issues {
			res, _, err := r.ensure(fmt.Sprintf("issue-%d", i))
			if err != nil {
				t.Fatal(err)
			}
			iids = append(iids, res.Item.Ref.Number)
		}
		r.e.ResetCounts()
		start := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, issues*each)
		for i := range issues {
			for c := range each {
				wg.Go(func() {
					retryAsCI(start, errs, func() error {
						_, err := r.w.Comment(context.Background(), writes.CommentParams{Tenant: "t1", Workspace: "w1", ItemKey: fmt.Sprintf("issue-%d", i),
							Key: fmt.Sprintf("comment-%d-%d", i, c), Body: fmt.Sprintf("run %d failed again", c), Correlation: "burst"})
						return err
					})
				})
			}
		}
		wg.Wait()
		took := time.Since(start)
		close(errs)
		for err := range errs {
			t.Errorf("a comment failed: %v", err)
		}
		for k, n := range iids {
			if is, ok := r.e.Issue(project, n); !ok || is.UserNotesCount != each {
				t.Errorf("issue-%d holds %d notes, want %d, each once", k, is.UserNotesCount, each)
			}
		}
		if n := r.e.Requests(routeNote); n != issues*each {
			t.Errorf("%d note creations sent, want %d: none refused, none sent twice", n, issues*each)
		}
		if n := r.e.Over(); n != 0 {
			t.Errorf("%d answers over a limit, want none", n)
		}
		if took < 2*time.Minute || took > 2*time.Minute+2*time.Second+5*time.Second {
			t.Errorf("the burst took %s, want two minutes past the first sixty (60 notes a minute)", took)
		}
	})
}
