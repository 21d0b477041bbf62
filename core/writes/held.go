package writes

import (
	"context"

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
		if v := Canonical(field, got); v != predicted {
			held[field] = v
		}
	}
	if len(held) == 0 {
		return nil
	}
	_, err := s.w.ledger.SetValues(ctx, k, held)
	return err
}

// sameDescription says whether the item's description, as the tracker
// holds it, is already d as the tracker would hold it.
func sameDescription(t tracker.Tracker, d, held string) bool {
	return tracker.SameDescription(t, HeldDescription(t, d), held)
}
