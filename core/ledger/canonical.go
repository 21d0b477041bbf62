package ledger

import (
	"encoding/json"
	"slices"

	"github.com/relayr-go/relayr/core/tracker"
)

// Canonical renders a field's value as the ledger records it and the
// followers compare it: JSON, label sets sorted. The write path records
// what it sets in it and a follower reads a value back in it, so relayr's
// own write is known by its value (ADR-0036: echoes dropped by value).
func Canonical(field string, it tracker.Item) string {
	switch field {
	case tracker.FieldTitle:
		return canonical(it.Title)
	case tracker.FieldDescription:
		return canonical(it.Description)
	case tracker.FieldState:
		return canonical(string(it.State))
	case tracker.FieldLabels:
		return canonical(sortedSet(it.Labels))
	}
	return ""
}

// SetCanonical sets a field of it from its canonical JSON (Canonical's
// inverse); a value that doesn't decode is left out.
func SetCanonical(it *tracker.Item, field, v string) {
	switch field {
	case tracker.FieldTitle:
		_ = json.Unmarshal([]byte(v), &it.Title)
	case tracker.FieldDescription:
		_ = json.Unmarshal([]byte(v), &it.Description)
	case tracker.FieldState:
		var st string
		if json.Unmarshal([]byte(v), &st) == nil {
			it.State = tracker.State(st)
		}
	case tracker.FieldLabels:
		var labels []string
		if json.Unmarshal([]byte(v), &labels) == nil {
			it.Labels = labels
		}
	}
}

func canonical(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func sortedSet(labels []string) []string {
	out := slices.Clone(labels)
	slices.Sort(out)
	return slices.Compact(out)
}
