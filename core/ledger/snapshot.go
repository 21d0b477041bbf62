package ledger

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
)

// ItemSnapshot is what a snapshot row keeps of an item (SnapshotRow.Item,
// as JSON): the item as relayr last knew it, every field as the tracker
// holds it, and how far its comments were read. The tracker followers
// write one at each read of the item; a filing writes the item's first
// (RecordParams.Snapshot), from the tracker's answer to its create, so that
// every read of an item relayr filed is a read since a snapshot
// (ADR-0036's departures). Times are kept exact here whatever the store's
// precision.
type ItemSnapshot struct {
	Item tracker.Item `json:"item"`
	// CommentsUntil is the creation time of the newest comment read; SeenAt
	// the ids of those read created at that very time, so one created in
	// the same instant after the read is still new.
	CommentsUntil time.Time `json:"comments_until"`
	SeenAt        []string  `json:"seen_at,omitempty"`
	// Through marks every comment created at or before CommentsUntil as
	// old (ADR-0036: "A seeded item's comments until its last change are
	// old").
	Through bool `json:"through,omitempty"`
	// Settled is set once the item was read long enough after its last
	// change (the followers' SettleAfter): until then a comment made in
	// the same second as that change (Vikunja keeps time to the second)
	// may not have moved the item, so its comments are read again.
	Settled bool `json:"settled,omitempty"`
	// Filed is when the tracker answered the create that made the item,
	// on the filing's clock, and FiledAt the same moment in the order of
	// the process that filed, in the snapshot a filing leaves; both zero
	// once a follower read the item. A read whose request was sent before
	// it may show the item half made (Vikunja labels a task after it
	// makes it).
	Filed   time.Time `json:"filed,omitzero"`
	FiledAt Moment    `json:"filed_at,omitzero"`
}

// Moment is a point in one process's order of events: its process and
// a number that grows with each Now. Two moments of one process are
// ordered exactly, whatever the clocks read (two on virtual time read
// alike); moments of two processes are not ordered at all, and their
// clocks' times, with a margin for the clocks to differ, stand in.
type Moment struct {
	Process string `json:"process"`
	Seq     uint64 `json:"seq"`
}

// thisProcess names this process's moments.
var (
	thisProcess = NewNonce()
	moments     atomic.Uint64
)

// Now answers this process's next moment.
func Now() Moment { return Moment{Process: thisProcess, Seq: moments.Add(1)} }

// Before answers whether m came before o, and whether that is known: both
// moments are of one process.
func (m Moment) Before(o Moment) (before, known bool) {
	if m.Process == "" || m.Process != o.Process {
		return false, false
	}
	return m.Seq < o.Seq, true
}

// Row is the snapshot as a row of the workspace's snapshots.
func (s ItemSnapshot) Row(tenant, workspace string) (SnapshotRow, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return SnapshotRow{}, fmt.Errorf("%w: snapshot of %s: %w", ErrInvalid, s.Item.Ref.ID, err)
	}
	return SnapshotRow{
		Tenant: tenant, Workspace: workspace, ItemID: s.Item.Ref.ID, Item: raw,
		UpdatedAt: s.Item.UpdatedAt, CommentsUntil: s.CommentsUntil,
	}, nil
}

// DecodeSnapshot decodes what a snapshot row keeps of its item.
func DecodeSnapshot(row SnapshotRow) (ItemSnapshot, error) {
	var s struct {
		ItemSnapshot
		Item *tracker.Item `json:"item"`
	}
	if err := json.Unmarshal(row.Item, &s); err != nil {
		return ItemSnapshot{}, fmt.Errorf("snapshot of %s: %w", row.ItemID, err)
	}
	if s.Item == nil {
		return ItemSnapshot{}, fmt.Errorf("snapshot of %s holds no item", row.ItemID)
	}
	out := s.ItemSnapshot
	out.Item = *s.Item
	return out, nil
}

// SnapshotItem decodes the item a snapshot row keeps; the write path reads
// it to answer what relayr knows of an item without asking the tracker.
func SnapshotItem(row SnapshotRow) (tracker.Item, error) {
	s, err := DecodeSnapshot(row)
	return s.Item, err
}
