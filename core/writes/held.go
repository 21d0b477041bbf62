package writes

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
)

// recordFiled records what a filing left in the tracker, before its
// record: the values the tracker answered it holds for the fields the
// draft set, where they differ from the ones predicted and recorded before
// the create (ADR-0036: "Filing records the values it files, as the
// tracker will hold them"), marked landed at at with the item's version in
// the answer. The tracker's answer is what it holds: Plane's sanitizer
// rewrites a description and trims a title and label names. The
// prediction stays recorded for a process that dies between the create
// and its answer, where the follower compares a description as the
// tracker does (tracker.DescriptionComparer). A field whose answer is what
// was predicted records nothing more, and costs no commit.
//
// It answers the item's first snapshot, baseline, every field as the
// tracker holds it (ADR-0036's departures: a baseline for every field),
// which the record saves with it in one transaction
// (ledger.RecordParams.Snapshot), so a recorded item always has one: every
// read of the item is diffed against it, and a person's change to any
// field after the filing is published, whenever it is first read. A
// follower's read of the item before it is left for the next poll.
func (s session) recordFiled(ctx context.Context, k ledger.Key, predicted map[string]string, got, baseline tracker.Item, at time.Time, moment ledger.Moment) (*ledger.SnapshotRow, error) {
	held := map[string]string{}
	for field, p := range predicted {
		if v := ledger.Canonical(field, got); v != p {
			held[field] = v
		}
	}
	if len(held) > 0 {
		if err := s.w.ledger.LandValues(ctx, ledger.LandParams{Key: k, Sent: predicted, Held: held, At: at, Version: got.UpdatedAt}); err != nil {
			return nil, err
		}
	}
	baseline.Ref.Key = k.Key
	row, err := ledger.ItemSnapshot{Item: baseline, Filed: at, FiledAt: moment}.Row(k.Tenant, k.Workspace)
	if err != nil {
		return nil, err
	}
	return &row, nil
}

// foundBaseline is the first snapshot of an item an earlier attempt
// filed and relayr found by its key (its create's answer lost, or its
// claim retaken), and the values of it to record as the filing's: the
// item as found, but for a field the draft set that the tracker holds
// otherwise than the tracker makes of the draft's value. That value is a
// person's change, made before relayr found the item: the baseline keeps
// the draft's value, so the follower's first read publishes the change
// (ADR-0036's departures). A field the draft left unset has no value to
// tell a person's change from what the tracker made of it: the item as
// found is its baseline.
func foundBaseline(t *tracker.Tracker, predicted map[string]string, found tracker.Item) (baseline tracker.Item, got tracker.Item) {
	baseline, got = found, found
	for field, p := range predicted {
		if v := ledger.Canonical(field, found); !heldAlike(t, field, p, v) {
			ledger.SetCanonical(&baseline, field, p)
			ledger.SetCanonical(&got, field, p)
		}
	}
	return baseline, got
}

// heldAlike says whether a tracker holding held is what it makes of a value
// relayr set, want (both canonical JSON): the same, a description the
// tracker holds alike (sameValue), or a title that differs only by the
// space at either end (Plane trims titles).
func heldAlike(t *tracker.Tracker, field, want, held string) bool {
	if sameValue(t, field, want, held) {
		return true
	}
	if field != tracker.FieldTitle {
		return false
	}
	var w, h string
	if json.Unmarshal([]byte(want), &w) != nil || json.Unmarshal([]byte(held), &h) != nil {
		return false
	}
	return strings.TrimSpace(w) == strings.TrimSpace(h)
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
	return s.w.ledger.LandValues(ctx, ledger.LandParams{Key: k, Sent: sent, Held: held, At: s.w.clock.Now(), Version: got.UpdatedAt})
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
