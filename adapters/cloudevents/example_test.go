package cloudevents_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/relayr-go/relayr/adapters/cloudevents"
	"github.com/relayr-go/relayr/core/eventlog"
)

// A person's change to an item relayr filed, as the CloudEvent a
// subscription that asks for CloudEvents takes.
func ExampleEvent() {
	ev, err := cloudevents.Event(eventlog.Event{
		ID: "trk_0123456789abcdef", Seq: 42, Tenant: "acme", Workspace: "ops",
		Type: "tracker:item_changed", Correlation: "run-7",
		Data: json.RawMessage(`{"item":{"key":"ci/build-1042"},"field":"state","old":"\"backlog\"","new":"\"done\""}`),
		At:   time.Date(2026, 12, 4, 10, 30, 0, 0, time.UTC),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	b, _ := json.MarshalIndent(ev, "", "  ")
	fmt.Println(string(b))
	// Output:
	// {
	//   "specversion": "1.0",
	//   "id": "trk_0123456789abcdef",
	//   "source": "/relayr/acme/ops",
	//   "type": "io.github.relayr-go.tracker.item_changed",
	//   "subject": "ci/build-1042",
	//   "datacontenttype": "application/json",
	//   "time": "2026-12-04T10:30:00Z",
	//   "data": {
	//     "item": {
	//       "key": "ci/build-1042"
	//     },
	//     "field": "state",
	//     "old": "\"backlog\"",
	//     "new": "\"done\""
	//   },
	//   "correlation": "run-7",
	//   "relayrseq": "42"
	// }
}
