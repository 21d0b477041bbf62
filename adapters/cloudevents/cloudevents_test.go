package cloudevents_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	cevent "github.com/cloudevents/sdk-go/v2/event"

	"github.com/relayr-go/relayr/adapters/cloudevents"
	"github.com/relayr-go/relayr/core/eventlog"
)

func TestTypes(t *testing.T) {
	for _, c := range []struct{ relayr, ce string }{
		{"tracker:item_created", "io.github.relayr-go.tracker.item_created"},
		{"tracker:item_changed", "io.github.relayr-go.tracker.item_changed"},
		{"tracker:item_commented", "io.github.relayr-go.tracker.item_commented"},
		{"tracker:item_removed", "io.github.relayr-go.tracker.item_removed"},
		{"rules:build.failed", "io.github.relayr-go.rules.build.failed"},
	} {
		if got := cloudevents.Type(c.relayr); got != c.ce {
			t.Errorf("Type(%q) = %q, want %q", c.relayr, got, c.ce)
		}
		if back, ok := cloudevents.RelayrType(c.ce); !ok || back != c.relayr {
			t.Errorf("RelayrType(%q) = %q, %v; want %q", c.ce, back, ok, c.relayr)
		}
	}
	if _, ok := cloudevents.RelayrType("com.github.pull_request.opened"); ok {
		t.Error("RelayrType took another producer's type")
	}
}

func TestSubjectIsTheItemsKeyOrNone(t *testing.T) {
	for data, want := range map[string]string{
		`{"item":{"key":"ci/build-1042"}}`: "ci/build-1042",
		`{"item":{"key":""}}`:              "",
		`{"field":"state"}`:                "",
		`[1,2]`:                            "",
		`"text"`:                           "",
		`null`:                             "",
	} {
		if got := cloudevents.Subject(json.RawMessage(data)); got != want {
			t.Errorf("Subject(%s) = %q, want %q", data, got, want)
		}
	}
}

func TestEvent(t *testing.T) {
	e := eventlog.Event{ID: "trk_1", Seq: 1, Tenant: "acme", Workspace: "ops", Type: "tracker:item_removed",
		At: time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)}

	t.Run("AnEventWithoutDataCarriesNull", func(t *testing.T) {
		ev, err := cloudevents.Event(e)
		if err != nil {
			t.Fatal(err)
		}
		if string(ev.Data()) != "null" {
			t.Fatalf("data %q, want null", ev.Data())
		}
	})

	t.Run("RoundTripsThroughTheSDKsJSON", func(t *testing.T) {
		e := e
		e.Data = json.RawMessage(`{"item":{"key":"k"},"deleted":true}`)
		ev, err := cloudevents.Event(e)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		var back cevent.Event
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if back.ID() != e.ID || back.Subject() != "k" || string(back.Data()) != string(e.Data) || back.Source() != "/relayr/acme/ops" {
			t.Fatalf("back %s", back)
		}
	})

	t.Run("DataThatIsNotJSONIsAnError", func(t *testing.T) {
		e := e
		e.Data = json.RawMessage(`{not json`)
		_, err := cloudevents.Event(e)
		var ce *cloudevents.Error
		if !errors.As(err, &ce) || ce.ID != e.ID {
			t.Fatalf("%v, want a *cloudevents.Error for %s", err, e.ID)
		}
	})

	t.Run("AnEventWithoutAnIDIsAnError", func(t *testing.T) {
		e := e
		e.ID = ""
		var ce *cloudevents.Error
		if _, err := cloudevents.Event(e); !errors.As(err, &ce) {
			t.Fatalf("%v, want a *cloudevents.Error", err)
		}
	})
}
