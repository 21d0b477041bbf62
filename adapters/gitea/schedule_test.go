package gitea_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/relayr-go/relayr/adapters/gitea"
	"github.com/relayr-go/relayr/core/follow/scheduletest"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/giteaemu"
	"github.com/relayr-go/relayr/fixtures/memnet"
)

// schedulePerson acts on the emulation as a person in Gitea's web UI
// would.
type schedulePerson struct {
	e      *giteaemu.Emulator
	p      *giteaemu.Person
	token  string           // to read an issue as it stands
	labels map[string]int64 // the repository's labels, by name
}

// issue reads issue n as it stands: its body and its labels.
func (p schedulePerson) issue(n int64) (body string, labels map[string]int64, err error) {
	req := httptest.NewRequest(http.MethodGet, fmt.Sprintf("/api/v1/repos/relayr/live/issues/%d", n), nil)
	req.Header.Set("Authorization", "token "+p.token)
	rec := httptest.NewRecorder()
	p.e.ServeHTTP(rec, req)
	var is struct {
		Body   string `json:"body"`
		Labels []struct {
			ID   int64  `json:"id"`
			Name string `json:"name"`
		} `json:"labels"`
	}
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &is) != nil {
		return "", nil, fmt.Errorf("reading #%d: %d %s", n, rec.Code, rec.Body)
	}
	labels = map[string]int64{}
	for _, l := range is.Labels {
		labels[l.Name] = l.ID
	}
	return is.Body, labels, nil
}

func (p schedulePerson) Edit(_ context.Context, id string, patch tracker.Patch) error {
	n := number(id)
	switch {
	case patch.Title != nil:
		return p.p.Retitle(n, *patch.Title)
	case patch.State != nil:
		// Gitea holds open and closed (done and cancelled are closed).
		if *patch.State == tracker.Done || *patch.State == tracker.Cancelled {
			return p.p.Close(n)
		}
		return p.p.Reopen(n)
	}
	body, has, err := p.issue(n)
	if err != nil {
		return err
	}
	if patch.Description != nil {
		// A person editing the text keeps relayr's marker, the body's
		// last line (deleting it takes the key off the issue).
		text := *patch.Description
		if key, _ := (tracker.HiddenMarker{Source: scheduleSource}).Unmark(body); key != "" {
			text = tracker.HiddenMarker{Source: scheduleSource}.Mark(text, key)
		}
		return p.p.EditBody(n, text)
	}
	if patch.Labels == nil {
		return fmt.Errorf("gitea's person edits nothing else: %w", errors.ErrUnsupported)
	}
	// The web UI adds and takes off one label at a time.
	for name, lid := range has {
		if !slices.Contains(*patch.Labels, name) {
			if err := p.p.RemoveLabel(n, lid); err != nil {
				return err
			}
		}
	}
	for _, name := range *patch.Labels {
		if _, ok := has[name]; !ok {
			if err := p.p.AddLabel(n, p.labels[name]); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p schedulePerson) Comment(_ context.Context, id, body string) error {
	_, err := p.p.Comment(number(id), body)
	return err
}

func (p schedulePerson) Delete(_ context.Context, id string) error { return p.p.Delete(number(id)) }

func (p schedulePerson) Create(_ context.Context, title string) (string, error) {
	n, err := p.p.CreateIssue(title, "")
	return fmt.Sprint(n), err
}

// scheduleHooks answers the deliveries Gitea's emulation rendered about
// an issue (scheduletest.Rendered).
func scheduleHooks(e *giteaemu.Emulator) *scheduletest.Rendered {
	return &scheduletest.Rendered{
		Add: func(secret string) error {
			_, err := e.AddHook("relayr", "live", "http://hooks.invalid/relayr", secret, "issues")
			return err
		},
		Deliveries: func() []scheduletest.Delivery {
			var ds []scheduletest.Delivery
			for _, d := range e.Deliveries() {
				ds = append(ds, scheduletest.Delivery{
					Header: d.Header, Body: d.Body, Signature: d.Header.Get(gitea.SignatureHeader),
					Item: scheduletest.IssueNumber(d.Body), Deleted: d.Event == "issues" && d.Action == "deleted",
				})
			}
			return ds
		},
		Sign: giteaemu.Sign,
	}
}

// Every change a person makes is published once, on Gitea's emulation:
// the schedules of core's property test (scheduletest), each over a fresh
// emulation served in memory, on virtual time (the emulation's clock is
// time.Now by default; Gitea has no rate limit).
func TestEveryChangeAPersonMakesIsPublishedOnce(t *testing.T) {
	scheduletest.Run(t, func(t *testing.T) scheduletest.Tracker {
		e := giteaemu.New(giteaemu.Options{WebhookClient: discard()})
		srv := memnet.NewServer(e)
		t.Cleanup(func() { srv.Close(); e.Close() })
		e.SetRootURL(srv.URL)
		token := e.AddToken("relayr", true)
		e.CreateRepo("relayr", "live")
		// The labels exist first: Gitea sets them by id, and two drivers
		// making a missing one at once would make two of that name.
		labels := map[string]int64{}
		for _, name := range []string{"ci", "flaky"} {
			id, err := e.CreateLabel("relayr", "live", name, "#ededed")
			if err != nil {
				t.Fatal(err)
			}
			labels[name] = id
		}
		conn, err := gitea.NewConnector(gitea.Config{BaseURL: srv.URL, Repo: "relayr/live", Client: srv.Client()})
		if err != nil {
			t.Fatal(err)
		}
		connect := func() tracker.Driver {
			d, err := conn.Driver(context.Background(), tracker.Credentials{Token: token}, scheduleSource)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		return scheduletest.Tracker{
			Connect: connect,
			Person:  schedulePerson{e: e, p: e.Person("alice", "relayr", "live"), token: token, labels: labels},
			Fields:  []string{tracker.FieldTitle, tracker.FieldDescription, tracker.FieldState, tracker.FieldLabels},
			Labels:  []string{"ci", "flaky"},
			Deletes: true,
			Nudge:   scheduleHooks(e).Nudge,
		}
	}, scheduletest.Options{Schedules: 300})
}

// scheduleSource is what the schedules file under: the binding's tenant
// and workspace, as the schedules' replicas connect.
var scheduleSource = tracker.Source{Tenant: "acme", Workspace: "ops"}
