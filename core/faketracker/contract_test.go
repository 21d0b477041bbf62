package faketracker_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/faketracker"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/drivertest"
	"github.com/relayr-go/relayr/core/tracker/trackertest"
)

// flavours are the fakes both suites run on.
var flavours = []struct {
	name    string
	flavour faketracker.Flavour
	opts    []faketracker.Option
}{
	{"FakeLikePlane", faketracker.LikePlane, nil},
	{"FakeLikeVikunja", faketracker.LikeVikunja, nil},
	{"FakeLikePlaneSanitizing", faketracker.LikePlane, []faketracker.Option{faketracker.Sanitizing()}},
	{"FakeListingProjectComments", faketracker.LikeVikunja, []faketracker.Option{faketracker.WithProjectComments()}},
}

// fake makes one flavour's fake, and its deletion delivery where the
// flavour sends one (like Vikunja's task.deleted; Plane sends none).
func fake(t *testing.T, flavour faketracker.Flavour, opts []faketracker.Option) (*faketracker.Tracker, func(id, secret string) (http.Header, []byte)) {
	f := faketracker.New(flavour, opts...)
	if flavour != faketracker.LikeVikunja {
		return f, nil
	}
	return f, func(id, secret string) (http.Header, []byte) {
		if err := f.Delete(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		return faketracker.DeletionDelivery(secret, f.Project(), id)
	}
}

// TestContract runs the port's contract over each flavour, every case in a
// synctest bubble: the fake's clock (the system's) is virtual there.
func TestContract(t *testing.T) {
	for _, c := range flavours {
		t.Run(c.name, func(t *testing.T) {
			trackertest.RunVirtual(t, func(t *testing.T) trackertest.Harness {
				f, deletion := fake(t, c.flavour, c.opts)
				return trackertest.Harness{
					Tracker:  tracker.New(f),
					Person:   f.Person(),
					Wait:     time.Sleep,
					Webhook:  func(_, secret string) (http.Header, []byte) { return f.Delivery(secret) },
					Deletion: deletion,
				}
			})
		})
	}
}

// TestDriver runs the driver suite over each flavour, every case in a
// synctest bubble.
func TestDriver(t *testing.T) {
	for _, c := range flavours {
		t.Run(c.name, func(t *testing.T) {
			drivertest.RunVirtual(t, func(t *testing.T) drivertest.Harness {
				f, deletion := fake(t, c.flavour, c.opts)
				return drivertest.Harness{Driver: f, Person: f.Person(), Wait: time.Sleep, Deletion: deletion}
			})
		})
	}
}

// TestDriverThatFetchesAndFindsTogether runs the driver suite over each flavour as a
// tracker that reads several items by id at once (ItemsFetching), and one
// that finds several keys at once (KeysFinding).
func TestDriverThatFetchesAndFindsTogether(t *testing.T) {
	for _, c := range flavours {
		t.Run(c.name, func(t *testing.T) {
			drivertest.RunVirtual(t, func(t *testing.T) drivertest.Harness {
				f, deletion := fake(t, c.flavour, c.opts)
				d := both{ItemsFetching: faketracker.ItemsFetching{Tracker: f}, keys: faketracker.KeysFinding{Tracker: f}}
				return drivertest.Harness{Driver: d, Person: f.Person(), Wait: time.Sleep, Deletion: deletion}
			})
		})
	}
}

// both is the fake as a tracker that fetches items and finds keys
// together.
type both struct {
	faketracker.ItemsFetching
	keys faketracker.KeysFinding
}

func (b both) FindKeys(ctx context.Context, keys []string, since time.Time) (map[string]tracker.Item, bool, error) {
	return b.keys.FindKeys(ctx, keys, since)
}
