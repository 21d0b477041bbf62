package ledger_test

import (
	"reflect"
	"testing"

	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
)

func TestCanonical(t *testing.T) {
	it := tracker.Item{Title: "Disk <full>", Description: "line\nnext\tcol", State: tracker.Started, Labels: []string{"b", "a", "b"}}
	want := map[string]string{
		tracker.FieldTitle:       `"Disk \u003cfull\u003e"`,
		tracker.FieldDescription: `"line\nnext\tcol"`,
		tracker.FieldState:       `"started"`,
		tracker.FieldLabels:      `["a","b"]`,
	}
	var back tracker.Item
	for field, w := range want {
		got := ledger.Canonical(field, it)
		if got != w {
			t.Errorf("%s: %s, want %s", field, got, w)
		}
		if err := ledger.CheckValues(map[string]string{field: got}); err != nil {
			t.Errorf("%s: the ledger refuses its own rendering: %v", field, err)
		}
		ledger.SetCanonical(&back, field, got)
	}
	if ledger.Canonical("no such field", it) != "" {
		t.Error("an unknown field rendered a value")
	}
	wantBack := tracker.Item{Title: it.Title, Description: it.Description, State: it.State, Labels: []string{"a", "b"}}
	if !reflect.DeepEqual(back, wantBack) {
		t.Errorf("decoded %+v, want %+v", back, wantBack)
	}
	// A value that doesn't decode is left out.
	ledger.SetCanonical(&back, tracker.FieldTitle, "not json")
	if back.Title != it.Title {
		t.Errorf("title %q after an undecodable value", back.Title)
	}
}
