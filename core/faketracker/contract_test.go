package faketracker_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/faketracker"
	"github.com/relayr-go/relayr/core/tracker/trackertest"
)

func TestContract(t *testing.T) {
	for _, c := range []struct {
		name    string
		flavour faketracker.Flavour
		opts    []faketracker.Option
	}{
		{"FakeLikePlane", faketracker.LikePlane, nil},
		{"FakeLikeVikunja", faketracker.LikeVikunja, nil},
		{"FakeLikePlaneSanitizing", faketracker.LikePlane, []faketracker.Option{faketracker.Sanitizing()}},
	} {
		t.Run(c.name, func(t *testing.T) {
			trackertest.Run(t, func(t *testing.T) trackertest.Harness {
				clk := clock.NewFake(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
				f := faketracker.New(c.flavour, append([]faketracker.Option{faketracker.WithClock(clk)}, c.opts...)...)
				h := trackertest.Harness{
					Tracker: f,
					Person:  f.Person(),
					Wait:    clk.Advance,
					Webhook: func(_, secret string) (http.Header, []byte) { return f.Delivery(secret) },
				}
				if c.flavour == faketracker.LikeVikunja {
					// Like Vikunja's task.deleted; Plane sends no deletion.
					h.Deletion = func(id, secret string) (http.Header, []byte) {
						if err := f.Delete(context.Background(), id); err != nil {
							t.Fatal(err)
						}
						return faketracker.DeletionDelivery(secret, f.Project(), id)
					}
				}
				return h
			})
		})
	}
}
