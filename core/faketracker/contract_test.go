package faketracker_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/clock"
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

// fake makes one flavour's fake on a fake clock, and its deletion
// delivery where the flavour sends one (like Vikunja's task.deleted; Plane
// sends none).
func fake(t *testing.T, flavour faketracker.Flavour, opts []faketracker.Option) (*faketracker.Tracker, *clock.Fake, func(id, secret string) (http.Header, []byte)) {
	clk := clock.NewFake(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	f := faketracker.New(flavour, append([]faketracker.Option{faketracker.WithClock(clk)}, opts...)...)
	if flavour != faketracker.LikeVikunja {
		return f, clk, nil
	}
	return f, clk, func(id, secret string) (http.Header, []byte) {
		if err := f.Delete(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		return faketracker.DeletionDelivery(secret, f.Project(), id)
	}
}

func TestContract(t *testing.T) {
	for _, c := range flavours {
		t.Run(c.name, func(t *testing.T) {
			trackertest.Run(t, func(t *testing.T) trackertest.Harness {
				f, clk, deletion := fake(t, c.flavour, c.opts)
				return trackertest.Harness{
					Tracker:  tracker.New(f),
					Person:   f.Person(),
					Wait:     clk.Advance,
					Webhook:  func(_, secret string) (http.Header, []byte) { return f.Delivery(secret) },
					Deletion: deletion,
				}
			})
		})
	}
}

func TestDriver(t *testing.T) {
	for _, c := range flavours {
		t.Run(c.name, func(t *testing.T) {
			drivertest.Run(t, func(t *testing.T) drivertest.Harness {
				f, clk, deletion := fake(t, c.flavour, c.opts)
				return drivertest.Harness{Driver: f, Person: f.Person(), Wait: clk.Advance, Deletion: deletion}
			})
		})
	}
}
