package jira

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// Status categories (components.schemas.StatusCategory key): every status
// of every workflow is in one, and "undefined" stands for none.
const (
	categoryNew           = "new"
	categoryIndeterminate = "indeterminate"
	categoryDone          = "done"
)

// status is a workflow status as Jira answers it
// (components.schemas.StatusDetails).
type status struct {
	ID             string `json:"id"`
	Name           string `json:"name"`
	StatusCategory struct {
		Key string `json:"key"`
	} `json:"statusCategory"`
}

func (s status) category() string { return s.StatusCategory.Key }

// workflow is what relayr knows of the statuses of the issue type it
// files, and how it reads and sets the five states through them.
type workflow struct {
	statuses  []status
	names     map[tracker.State]string // configured status names
	cancelled []string                 // resolutions that read as cancelled
}

// cancelledNames are the status names that read as cancelled in the done
// category whatever the resolution ("Cancelled" in Jira Work Management's
// templates, "Won't Do" in Jira Software's).
var cancelledNames = []string{"Cancelled", "Canceled", "Won't Do", "Declined", "Rejected"}

func containsFold(list []string, s string) bool {
	return slices.ContainsFunc(list, func(v string) bool { return strings.EqualFold(strings.TrimSpace(v), strings.TrimSpace(s)) })
}

// state reads an issue's state off its status and resolution: a status
// configured for a state is that state (done and cancelled told apart by
// the resolution where both name it); else the category: new is todo (a
// status named Backlog is backlog), indeterminate started, done done, or
// cancelled where the status or the resolution says so.
func (w workflow) state(st status, resolution string) tracker.State {
	var named []tracker.State
	for _, s := range tracker.States {
		if n, ok := w.names[s]; ok && strings.EqualFold(n, st.Name) {
			named = append(named, s)
		}
	}
	switch {
	case len(named) == 1:
		return named[0]
	case len(named) > 1 && containsFold(w.cancelled, resolution) && slices.Contains(named, tracker.Cancelled):
		return tracker.Cancelled
	case len(named) > 1:
		return named[0]
	}
	switch st.category() {
	case categoryNew:
		if strings.EqualFold(st.Name, "Backlog") {
			return tracker.Backlog
		}
		return tracker.Todo
	case categoryIndeterminate:
		return tracker.Started
	case categoryDone:
		if containsFold(cancelledNames, st.Name) || containsFold(w.cancelled, resolution) {
			return tracker.Cancelled
		}
		return tracker.Done
	}
	return tracker.Todo
}

// target answers the status an issue set to s goes to, and false when
// the workflow has none that reads as s.
func (w workflow) target(s tracker.State) (status, bool) {
	if n, ok := w.names[s]; ok {
		i := slices.IndexFunc(w.statuses, func(st status) bool { return strings.EqualFold(st.Name, n) })
		return w.statuses[max(i, 0)], i >= 0
	}
	for _, st := range w.statuses {
		if w.state(st, "") == s {
			return st, true
		}
	}
	return status{}, false
}

// holds is Capabilities.States: a state the workflow has no status for is
// held as the nearest one it has (backlog as todo, cancelled as done,
// started as todo).
func (w workflow) holds() map[tracker.State]tracker.State {
	near := map[tracker.State][]tracker.State{
		tracker.Backlog:   {tracker.Todo, tracker.Started},
		tracker.Todo:      {tracker.Backlog, tracker.Started},
		tracker.Started:   {tracker.Todo, tracker.Backlog},
		tracker.Done:      {tracker.Cancelled},
		tracker.Cancelled: {tracker.Done},
	}
	out := map[tracker.State]tracker.State{}
	for _, s := range tracker.States {
		if _, ok := w.target(s); ok {
			continue
		}
		for _, n := range near[s] {
			if _, ok := w.target(n); ok {
				out[s] = n
				break
			}
		}
	}
	return out
}

// readProject reads the project's key and the statuses of the issue type
// relayr files (paths./rest/api/3/project/{projectIdOrKey}/statuses.get).
func (d *Driver) readProject(ctx context.Context) error {
	var p struct {
		ID  string `json:"id"`
		Key string `json:"key"`
	}
	path := "rest/api/3/project/" + d.cfg.Project
	if _, err := d.read(ctx, trackerhttp.Request{Method: http.MethodGet, Path: path}, "", "project", &p, func() bool { return p.Key != "" }); err != nil {
		return err
	}
	d.project = p.Key
	var types []struct {
		Name     string   `json:"name"`
		Statuses []status `json:"statuses"`
	}
	if _, err := d.read(ctx, trackerhttp.Request{Method: http.MethodGet, Path: path + "/statuses"}, "", "project statuses", &types, nil); err != nil {
		return err
	}
	i := slices.IndexFunc(types, func(t struct {
		Name     string   `json:"name"`
		Statuses []status `json:"statuses"`
	}) bool {
		return strings.EqualFold(t.Name, d.cfg.IssueType)
	})
	if i < 0 {
		return fmt.Errorf("no issue type %s in the project: %w", tracker.Quote(d.cfg.IssueType), tracker.ErrRefused)
	}
	d.wf = workflow{statuses: types[i].Statuses, names: d.cfg.Statuses, cancelled: d.cfg.CancelledResolutions}
	for s, n := range d.cfg.Statuses {
		if !slices.ContainsFunc(d.wf.statuses, func(st status) bool { return strings.EqualFold(st.Name, n) }) {
			return fmt.Errorf("the %s status %s is not in the %s workflow: %w", s, tracker.Quote(n), d.cfg.IssueType, tracker.ErrRefused)
		}
	}
	return nil
}

// transition is one transition valid now
// (components.schemas.IssueTransition).
type transition struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	To   status `json:"to"`
}

// ErrNoTransition is a state the issue's workflow cannot reach from where
// it stands in one transition: refused (it matches tracker.ErrRefused),
// since trying again cannot help.
var ErrNoTransition = fmt.Errorf("no transition valid now reaches the state: %w", tracker.ErrRefused)

// setState moves the issue to s, when it isn't there: the transition valid
// now (paths./rest/api/3/issue/{issueIdOrKey}/transitions.get) to the
// status s is set to, else to any status that reads as s.
func (d *Driver) setState(ctx context.Context, id string, cur tracker.State, s tracker.State) (bool, error) {
	want := d.Capabilities().Holds(s)
	if cur == want {
		return false, nil
	}
	target, _ := d.wf.target(want)
	var ts struct {
		Transitions []transition `json:"transitions"`
	}
	path := "rest/api/3/issue/" + id + "/transitions"
	if _, err := d.read(ctx, trackerhttp.Request{Method: http.MethodGet, Path: path}, id, "transitions", &ts, nil); err != nil {
		return false, err
	}
	i := slices.IndexFunc(ts.Transitions, func(t transition) bool { return target.ID != "" && t.To.ID == target.ID })
	if i < 0 {
		i = slices.IndexFunc(ts.Transitions, func(t transition) bool { return d.wf.state(t.To, "") == want })
	}
	if i < 0 {
		var names []string
		for _, t := range ts.Transitions {
			names = append(names, fmt.Sprintf("%s → %s", t.Name, t.To.Name))
		}
		return false, fmt.Errorf("jira: issue %s to %s: the transitions valid now are %s: %w", id, want, strings.Join(names, ", "), ErrNoTransition)
	}
	body := map[string]any{"transition": map[string]string{"id": ts.Transitions[i].ID}}
	_, err := d.send(ctx, trackerhttp.Request{Method: http.MethodPost, Path: path, Body: body}, "POST /rest/api/3/issue/{issueIdOrKey}/transitions", id)
	return true, err
}
