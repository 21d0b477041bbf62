package gitlab_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/gitlab"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/gitlabemu"
)

// poll reads what changed since since as a follower does on GitLab: the
// pages of Items, and the comments of each changed item.
func poll(ctx context.Context, d *gitlab.Driver, since time.Time) error {
	page := ""
	for {
		pg, err := d.Items(ctx, tracker.Query{Since: since, Page: page})
		if err != nil {
			return err
		}
		for _, it := range pg.Items {
			if _, err := d.Comments(ctx, it.Ref.ID, since); err != nil {
				return err
			}
		}
		if page = pg.Next; page == "" {
			return nil
		}
	}
}

// BenchmarkGitLabRequests is what relayr's use of GitLab costs, counted by
// the emulation on GitLab.com's limits: the requests of a filing, of a
// poll that reads one change, of a poll that finds nothing changed, of a
// poll after a person commented on 10 issues, and a burst of 300 filings:
// GitLab's answers over a limit (goal 0: the driver keeps the 200
// creations a minute unsent) and the virtual seconds the burst took (at
// least one minute past the first 200); and a burst of 150 comments on the
// 10 issues, its answers over a limit (goal 0: the 60 notes a minute kept
// unsent) and its virtual seconds (two minutes past the first 60).
func BenchmarkGitLabRequests(b *testing.B) {
	var filing, change, idle, comments, over, burst, notesOver, notes float64
	for b.Loop() {
		em := newEmulated(b, gitlabemu.GitLabCom(), gitlab.Config{})
		d := em.driver(b)
		ctx := context.Background()
		var ids []int64
		for i := range 10 {
			em.e.ResetCounts()
			it, err := d.Create(ctx, fmt.Sprintf("k%d", i), tracker.Draft{Title: "build failed", Labels: []string{"ci"}})
			if err != nil {
				b.Fatal(err)
			}
			if i == 0 {
				filing += float64(em.e.TotalRequests())
			}
			ids = append(ids, it.Ref.Number)
		}
		em.clock.Advance(time.Hour)
		since := em.clock.Now().Add(-2 * time.Minute)

		em.e.ResetCounts()
		if err := poll(ctx, d, since); err != nil {
			b.Fatal(err)
		}
		idle += float64(em.e.TotalRequests())

		if err := em.person.Retitle(ids[0], "retitled by a person"); err != nil {
			b.Fatal(err)
		}
		em.clock.Advance(time.Second)
		em.e.ResetCounts()
		if err := poll(ctx, d, since); err != nil {
			b.Fatal(err)
		}
		change += float64(em.e.TotalRequests())

		em.clock.Advance(time.Hour)
		since = em.clock.Now().Add(-2 * time.Minute)
		for _, n := range ids {
			if _, err := em.person.Comment(n, "seen it"); err != nil {
				b.Fatal(err)
			}
		}
		em.clock.Advance(time.Second)
		em.e.ResetCounts()
		if err := poll(ctx, d, since); err != nil {
			b.Fatal(err)
		}
		comments += float64(em.e.TotalRequests())

		start := em.clock.Now()
		for i := range 300 {
			if _, err := d.Create(ctx, fmt.Sprintf("burst-%d", i), tracker.Draft{Title: fmt.Sprintf("burst %d", i)}); err != nil {
				b.Fatalf("filing %d: %v", i, err)
			}
		}
		burst += em.clock.Now().Sub(start).Seconds()
		over += float64(em.e.Over())

		before := em.e.Over()
		start = em.clock.Now()
		for i := range 150 {
			id := strconv.FormatInt(ids[i%len(ids)], 10)
			if _, err := d.Comment(ctx, id, fmt.Sprintf("c%d", i), fmt.Sprintf("run %d failed again", i)); err != nil {
				b.Fatalf("comment %d: %v", i, err)
			}
		}
		notes += em.clock.Now().Sub(start).Seconds()
		notesOver += float64(em.e.Over() - before)
	}
	n := float64(b.N)
	b.ReportMetric(filing/n, "requests/filing")
	b.ReportMetric(change/n, "requests/change")
	b.ReportMetric(idle/n, "requests/idle-poll")
	b.ReportMetric(comments/n, "requests/poll-10-commented")
	b.ReportMetric(over/n, "burst-429s")
	b.ReportMetric(burst/n, "burst-s")
	b.ReportMetric(notesOver/n, "comment-burst-429s")
	b.ReportMetric(notes/n, "comment-burst-s")
}
