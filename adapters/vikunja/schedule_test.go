package vikunja_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/relayr-go/relayr/adapters/vikunja"
	"github.com/relayr-go/relayr/core/follow/scheduletest"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/memnet"
	"github.com/relayr-go/relayr/fixtures/vikunjaemu"
)

// schedulePerson acts on the emulation as a person in the web UI would.
type schedulePerson struct {
	e       *vikunjaemu.Emulator
	p       *vikunjaemu.Person
	project int64
}

// describe rewrites a task's description as a person in the web editor
// does: the text above relayr's marker line, which stays (a person who
// deletes it takes the key off the task: docs/trackers/vikunja.md).
func (p schedulePerson) describe(n int64, text string) error {
	req := httptest.NewRequest(http.MethodGet, fmt.Sprintf("/api/v1/tasks/%d", n), nil)
	req.Header.Set("Authorization", "Bearer "+p.e.Token)
	rec := httptest.NewRecorder()
	p.e.ServeHTTP(rec, req)
	var task struct {
		Description string `json:"description"`
	}
	if rec.Code == http.StatusOK && json.Unmarshal(rec.Body.Bytes(), &task) == nil {
		if key, ok := vikunja.KeyOf(task.Description, scheduleSource); ok {
			text += "\n\n" + vikunja.Marker(scheduleSource, key)
		}
	}
	return p.p.Describe(n, text)
}

func (p schedulePerson) Edit(_ context.Context, id string, patch tracker.Patch) error {
	n, err := taskID(id)
	if err != nil {
		return err
	}
	switch {
	case patch.Title != nil:
		return p.p.Retitle(n, *patch.Title)
	case patch.Description != nil:
		return p.describe(n, *patch.Description)
	case patch.State != nil:
		return p.p.SetDone(n, *patch.State == tracker.Done || *patch.State == tracker.Cancelled)
	}
	return fmt.Errorf("vikunja's person sets no labels here: %w", errors.ErrUnsupported)
}

func (p schedulePerson) Comment(_ context.Context, id, body string) error {
	n, err := taskID(id)
	if err != nil {
		return err
	}
	_, err = p.p.Comment(n, body)
	return err
}

func (p schedulePerson) Delete(_ context.Context, id string) error {
	n, err := taskID(id)
	if err != nil {
		return err
	}
	return p.p.Delete(n)
}

func (p schedulePerson) Create(_ context.Context, title string) (string, error) {
	n, err := p.p.CreateTask(p.project, title, "")
	return fmt.Sprint(n), err
}

// Every change a person makes is published once, on Vikunja's emulation:
// the schedules of core's property test (scheduletest), each over a fresh
// emulation served in memory, on virtual time.
func TestEveryChangeAPersonMakesIsPublishedOnce(t *testing.T) {
	scheduletest.Run(t, func(t *testing.T) scheduletest.Tracker {
		e := vikunjaemu.New(vikunjaemu.Options{RateLimit: 1 << 30})
		srv := memnet.NewServer(e)
		t.Cleanup(func() { srv.Close(); e.Close() })
		pid := e.CreateProject("Lattice", "LAT")
		connect := func() tracker.Driver {
			d, err := vikunja.NewDriver(vikunja.Params{BaseURL: srv.URL, Token: e.Token, Project: pid, Source: scheduleSource},
				vikunja.WithTransport(srv.Transport()))
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		return scheduletest.Tracker{
			Connect: connect,
			Person:  schedulePerson{e: e, p: e.Person(), project: pid},
			Fields:  []string{tracker.FieldTitle, tracker.FieldDescription, tracker.FieldState},
			Labels:  []string{"ci", "flaky"},
			Deletes: true,
			Nudge: func(id string, deleted bool, secret string) (http.Header, []byte, bool) {
				n, err := taskID(id)
				if err != nil {
					return nil, nil, false
				}
				if deleted {
					return e.DeletionDelivery(n, secret)
				}
				return e.Delivery(n, secret)
			},
		}
	}, scheduletest.Options{Schedules: 300})
}

// scheduleSource is what the schedules file under: the binding's tenant
// and workspace, as the schedules' replicas connect.
var scheduleSource = tracker.Source{Tenant: "acme", Workspace: "ops"}
