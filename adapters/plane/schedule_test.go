package plane_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/plane"
	"github.com/relayr-go/relayr/core/follow/scheduletest"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/memnet"
	"github.com/relayr-go/relayr/fixtures/planeemu"
)

// schedulePerson acts on the emulation as a person in Plane's web app
// would.
type schedulePerson struct{ e *planeemu.Server }

// stateNames are the states of the emulation's project, one a group, by
// the port's state they hold (the adapter picks a group's one state).
var stateNames = map[tracker.State]string{
	tracker.Backlog: "Backlog", tracker.Todo: "Todo", tracker.Started: "In Progress",
	tracker.Done: "Done", tracker.Cancelled: "Cancelled",
}

func (p schedulePerson) Edit(_ context.Context, id string, patch tracker.Patch) error {
	switch {
	case patch.Title != nil:
		return p.e.Retitle(id, *patch.Title)
	case patch.State != nil:
		return p.e.SetState(id, stateNames[*patch.State])
	}
	// The web app's description editor and label picker are not emulated.
	return fmt.Errorf("plane's person edits no description or labels here: %w", errors.ErrUnsupported)
}

func (p schedulePerson) Comment(_ context.Context, id, body string) error {
	_, err := p.e.Comment(id, body)
	return err
}

func (p schedulePerson) Delete(_ context.Context, id string) error { return p.e.Delete(id) }

func (p schedulePerson) Create(_ context.Context, title string) (string, error) {
	return p.e.CreateItem(title), nil
}

// Every change a person makes is published once, on Plane's emulation:
// the schedules of core's property test (scheduletest), each over a fresh
// emulation served in memory, on virtual time.
func TestEveryChangeAPersonMakesIsPublishedOnce(t *testing.T) {
	scheduletest.Run(t, func(t *testing.T) scheduletest.Tracker {
		// The clock is the bubble's (by default it moves only on
		// Advance), and no limit: the schedules send many requests at
		// one virtual instant.
		e := planeemu.New(planeemu.Options{Now: time.Now, RateLimit: -1})
		srv := memnet.NewServer(e)
		t.Cleanup(srv.Close)
		// One connector, as one process has: its drivers share the
		// project's states and labels.
		conn, err := plane.NewConnector(plane.Config{BaseURL: srv.URL, Workspace: e.Workspace, Project: e.Project, Client: srv.Client()})
		if err != nil {
			t.Fatal(err)
		}
		connect := func() tracker.Driver {
			d, err := conn.ConnectDriver(context.Background(), tracker.Credentials{Token: e.Bot.Key}, scheduleSource)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		return scheduletest.Tracker{
			Connect: connect,
			Person:  schedulePerson{e: e},
			Fields:  []string{tracker.FieldTitle, tracker.FieldState},
			Labels:  []string{"ci", "flaky"},
			Deletes: true,
			// Plane sends no webhook of a deletion: the sweep finds it.
			Nudge: func(id string, deleted bool, secret string) (http.Header, []byte, bool) {
				if deleted {
					return nil, nil, false
				}
				return e.ItemDelivery(id, secret)
			},
		}
	}, scheduletest.Options{Schedules: 300})
}

// scheduleSource is what the schedules file under: the binding's tenant
// and workspace, as the schedules' replicas connect.
var scheduleSource = tracker.Source{Tenant: "acme", Workspace: "ops"}
