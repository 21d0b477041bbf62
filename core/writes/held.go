package writes

import (
	"context"

	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
)

// recordHeld records, once a create or an edit that set a description has
// landed, the description the tracker answered it holds, after the one
// predicted and recorded before the write (ADR-0036: "Filing records the
// values it files, as the tracker will hold them"). The tracker's answer is
// what it holds; the prediction stays recorded for a process that dies
// between the write and its answer, where the follower compares it as the
// tracker does (tracker.DescriptionComparer). Nothing is recorded when the
// write set no description or the answer is what was predicted.
func (s session) recordHeld(ctx context.Context, k ledger.Key, recorded map[string]string, got tracker.Item) error {
	predicted, ok := recorded[tracker.FieldDescription]
	if !ok {
		return nil
	}
	held := Canonical(tracker.FieldDescription, got)
	if held == predicted {
		return nil
	}
	_, err := s.w.ledger.SetValues(ctx, k, map[string]string{tracker.FieldDescription: held})
	return err
}

// sameDescription says whether the item's description, as the tracker
// holds it, is already d as the tracker would hold it.
func sameDescription(t tracker.Tracker, d, held string) bool {
	return tracker.SameDescription(t, HeldDescription(t, d), held)
}
