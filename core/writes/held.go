package writes

import (
	"context"
	"encoding/json"

	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
)

// recordHeld records, once a create or an edit has landed, the values the
// tracker answered it holds for the fields it set, after the ones
// predicted and recorded before the write (ADR-0036: "Filing records the
// values it files, as the tracker will hold them"). The tracker's answer is
// what it holds: Plane's sanitizer rewrites a description and trims a
// title and label names. The prediction stays recorded for a process that
// dies between the write and its answer, where the follower compares a
// description as the tracker does (tracker.DescriptionComparer). A field
// whose answer is what was predicted records nothing more.
func (s session) recordHeld(ctx context.Context, k ledger.Key, recorded map[string]string, got tracker.Item) error {
	held := map[string]string{}
	for field, predicted := range recorded {
		if v := ledger.Canonical(field, got); v != predicted {
			held[field] = v
		}
	}
	if len(held) == 0 {
		return nil
	}
	_, err := s.w.ledger.SetValues(ctx, k, held)
	return err
}

// recordLanded records, once an edit has landed, what recordHeld records,
// and marks the edit's values landed at the writer's time of the answer:
// a poll that reads a person's value with a request sent after it knows
// the tracker holds a later value than relayr's, which will never be read
// back, and drops it (ledger.SupersedePending), so the person setting it
// again later is published (ADR-0036: "kept, it would drop a person's later
// change to it").
func (s session) recordLanded(ctx context.Context, k ledger.Key, sent map[string]string, got tracker.Item) error {
	held := map[string]string{}
	for field, predicted := range sent {
		if v := ledger.Canonical(field, got); v != predicted {
			held[field] = v
		}
	}
	return s.w.ledger.LandValues(ctx, k, sent, held, s.w.clock.Now())
}

// answered is the tracker's answer's values of the fields a write set, in
// canonical JSON: what relayr knows the tracker holds once the write
// landed (certain.go).
func answered(set map[string]string, got tracker.Item) map[string]string {
	out := make(map[string]string, len(set))
	for field := range set {
		out[field] = ledger.Canonical(field, got)
	}
	return out
}

// sameValue says whether a field's value relayr wants (canonical JSON, as
// the tracker will hold it) is the one the tracker holds: equal, or for a
// description the same as the tracker holds descriptions
// (tracker.DescriptionComparer: Plane's sanitizer rewrites them).
func sameValue(t *tracker.Tracker, field, want, held string) bool {
	if want == held {
		return true
	}
	if field != tracker.FieldDescription {
		return false
	}
	var w, h string
	if json.Unmarshal([]byte(want), &w) != nil || json.Unmarshal([]byte(held), &h) != nil {
		return false
	}
	return t.SameDescription(w, h)
}
