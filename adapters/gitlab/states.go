package gitlab

import (
	"slices"
	"strings"

	"github.com/relayr-go/relayr/core/tracker"
)

// StateLabels names the labels relayr holds the states other than opened
// and closed by (docs/trackers/gitlab.md §5): GitLab has only opened and
// closed, and no close reason a client sets. A scoped label ("status::…")
// is exclusive on Premium and Ultimate and a plain label elsewhere.
type StateLabels struct {
	// Backlog, Todo and Started are the labels of an opened issue in
	// those states; an opened issue with none of them reads as todo.
	Backlog, Todo, Started string
	// Cancelled is the label of a closed issue cancelled, not done.
	Cancelled string
}

// DefaultLabels are the state labels where none are configured.
var DefaultLabels = StateLabels{
	Backlog: "status::backlog", Todo: "status::todo", Started: "status::in progress", Cancelled: "status::cancelled",
}

// withDefaults fills the labels not named and checks them: each one
// label's name (no comma, GitLab's separator in labels=), all different.
func (l StateLabels) withDefaults() (StateLabels, error) {
	fill := func(s *string, def string) {
		if *s == "" {
			*s = def
		}
	}
	fill(&l.Backlog, DefaultLabels.Backlog)
	fill(&l.Todo, DefaultLabels.Todo)
	fill(&l.Started, DefaultLabels.Started)
	fill(&l.Cancelled, DefaultLabels.Cancelled)
	seen := map[string]bool{}
	for _, n := range l.all() {
		if err := checkLabel(n); err != nil {
			return l, &tracker.InvalidError{Field: "gitlab state labels", Reason: err.Error()}
		}
		if seen[n] {
			return l, &tracker.InvalidError{Field: "gitlab state labels", Reason: tracker.Quote(n) + " names two states"}
		}
		seen[n] = true
	}
	return l, nil
}

// all answers the four labels, in the order a state is read by when a
// person left several on an issue: started over todo over backlog.
func (l StateLabels) all() []string { return []string{l.Cancelled, l.Started, l.Todo, l.Backlog} }

// of answers the label a state is held by ("" for done).
func (l StateLabels) of(s tracker.State) string {
	switch s {
	case tracker.Backlog:
		return l.Backlog
	case tracker.Todo:
		return l.Todo
	case tracker.Started:
		return l.Started
	case tracker.Cancelled:
		return l.Cancelled
	}
	return ""
}

// isState reports whether a label is one of the four.
func (l StateLabels) isState(name string) bool { return slices.Contains(l.all(), name) }

// stateOf reads an issue's state: closed is done, or cancelled with the
// cancelled label; opened is started, todo or backlog by its label, todo
// without one. A person's several state labels read by all's order.
func (l StateLabels) stateOf(state string, labels []string) tracker.State {
	if state == "closed" {
		if slices.Contains(labels, l.Cancelled) {
			return tracker.Cancelled
		}
		return tracker.Done
	}
	for _, s := range []tracker.State{tracker.Started, tracker.Todo, tracker.Backlog} {
		if slices.Contains(labels, l.of(s)) {
			return s
		}
	}
	return tracker.Todo
}

// closed reports whether a state is held by a closed issue.
func closed(s tracker.State) bool { return s == tracker.Done || s == tracker.Cancelled }

// checkLabel: a label's name is not empty, holds no comma (labels= is a
// comma-separated list, §3) and no line break.
func checkLabel(n string) error {
	switch {
	case strings.TrimSpace(n) == "":
		return errLabel("an empty label")
	case strings.ContainsAny(n, ",\r\n"):
		return errLabel("label " + tracker.Quote(n) + " holds a comma or a line break, which GitLab's label lists cannot carry")
	}
	return nil
}

type errLabel string

func (e errLabel) Error() string { return string(e) }
