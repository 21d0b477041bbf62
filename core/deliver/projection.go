package deliver

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/relayr-go/relayr/core/eventlog"
)

// Projection maps an event a follower read to the one it publishes: the
// application's own event, or nil to publish nothing. An error dead-letters
// the event, as does an event of a reserved namespace or one the log would
// refuse as invalid (ADR-0036 and ADR-0015: "An exception, or one of
// reflexr's own events, dead-letters the event").
//
// The follower gives the answer the id of the event it read (ADR-0015:
// "with the same ids"), its tenant and workspace, and its correlation and
// time when the answer leaves them empty. A projection that answers the
// event it was given, or another of the same type, selects it; that is never
// a reserved event. A panic counts as an error.
type Projection func(eventlog.Event) (*eventlog.Event, error)

// Project runs p on in. It answers the event to publish (nil for none) or,
// when the event is to be dead-lettered, why.
func Project(p Projection, in eventlog.Event, reserved []string) (out *eventlog.Event, dead string) {
	if p == nil {
		return &in, ""
	}
	res, err := safely(p, in)
	if err != nil {
		return nil, "projection failed: " + err.Error()
	}
	if res == nil {
		return nil, ""
	}
	e := *res
	e.ID, e.Tenant, e.Workspace, e.Seq = in.ID, in.Tenant, in.Workspace, in.Seq
	if e.Correlation == "" {
		e.Correlation = in.Correlation
	}
	if e.At.IsZero() {
		e.At = in.At
	}
	if len(e.Data) == 0 {
		e.Data = json.RawMessage("null")
	}
	// A reserved namespace is refused to any projection's new event
	// (ADR-0036: "one of reflexr's own events ... dead-letters the event").
	if e.Type != in.Type && slices.Contains(reserved, e.Namespace()) {
		return nil, fmt.Sprintf("projection answered %s, of the reserved namespace %q", e.Type, e.Namespace())
	}
	// An invalid event is the projection's fault (ADR-0015: "when its
	// projection raises, an invalid event included").
	if !json.Valid(e.Data) {
		return nil, fmt.Sprintf("projection answered %s with data that is not JSON", e.Type)
	}
	if err := eventlog.CheckAppend(eventlog.AppendParams{Publisher: eventlog.TrackerPublisher, Event: e}); err != nil {
		return nil, fmt.Sprintf("projection answered an invalid event (%q): %v", e.Type, err)
	}
	return &e, ""
}

func safely(p Projection, in eventlog.Event) (out *eventlog.Event, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("panic: %v", r)
		}
	}()
	return p(in)
}
