package follow_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/faketracker"
	"github.com/relayr-go/relayr/core/follow/scheduletest"
	"github.com/relayr-go/relayr/core/tracker"
)

// fakePerson is a person's hands in the fake.
type fakePerson struct{ f *faketracker.Tracker }

func (p fakePerson) Edit(_ context.Context, id string, patch tracker.Patch) error {
	return p.f.Edit(id, patch)
}

func (p fakePerson) Comment(ctx context.Context, id, body string) error {
	return p.f.PersonComment(ctx, id, body)
}

func (p fakePerson) Delete(ctx context.Context, id string) error { return p.f.Delete(ctx, id) }

func (p fakePerson) Create(_ context.Context, title string) (string, error) {
	it, err := p.f.PersonCreate(tracker.Draft{Title: title})
	return it.Ref.ID, err
}

// fakeSchedules is the schedule test's tracker over a fake.
func fakeSchedules(opts ...faketracker.Option) func(f faketracker.Flavour) func(t *testing.T) scheduletest.Tracker {
	return func(fl faketracker.Flavour) func(t *testing.T) scheduletest.Tracker {
		return func(t *testing.T) scheduletest.Tracker {
			f := faketracker.New(fl, opts...)
			return scheduletest.Tracker{
				Connect: func() tracker.Driver { return f },
				Person:  fakePerson{f},
				Labels:  []string{"ci", "flaky"},
				Deletes: true,
				Nudge: func(id string, deleted bool, secret string) (http.Header, []byte, bool) {
					if deleted {
						h, b := faketracker.DeletionDelivery(secret, f.Project(), id)
						return h, b, true
					}
					h, b := f.Delivery(secret)
					return h, b, true
				},
			}
		}
	}
}

// Every change a person makes is published once, whatever it races:
// thousands of seeded schedules of relayr's writes, a person's changes,
// polls, nudges, lost answers and two replicas, on every flavour of the
// fake (scheduletest).
func TestEveryChangeAPersonMakesIsPublishedOnce(t *testing.T) {
	flavours := []struct {
		name    string
		flavour faketracker.Flavour
		opts    []faketracker.Option
	}{
		{"LikePlane", faketracker.LikePlane, nil},
		{"LikeVikunja", faketracker.LikeVikunja, nil},
		{"LikePlaneSanitizing", faketracker.LikePlane, []faketracker.Option{faketracker.Sanitizing()}},
		{"LikeGiteaReadingProjectComments", faketracker.LikePlane, []faketracker.Option{faketracker.WithProjectComments()}},
		// GitLab's throttled touch: a comment within a minute of its
		// item's last change leaves the item's updated_at.
		{"LikeGitLabQuietTouch", faketracker.LikePlane, []faketracker.Option{faketracker.WithQuietTouch(time.Minute)}},
	}
	for _, fl := range flavours {
		t.Run(fl.name, func(t *testing.T) {
			scheduletest.Run(t, fakeSchedules(fl.opts...)(fl.flavour), scheduletest.Options{Schedules: 500})
		})
	}
}
