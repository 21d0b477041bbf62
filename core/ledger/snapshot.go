package ledger

import (
	"encoding/json"
	"fmt"

	"github.com/relayr-go/relayr/core/tracker"
)

// SnapshotItem decodes the item a snapshot row keeps. The tracker followers
// write a snapshot as JSON whose "item" is the tracker.Item as last read;
// the write path reads it to answer what relayr knows of an item without
// asking the tracker.
func SnapshotItem(row SnapshotRow) (tracker.Item, error) {
	var doc struct {
		Item *tracker.Item `json:"item"`
	}
	if err := json.Unmarshal(row.Item, &doc); err != nil {
		return tracker.Item{}, fmt.Errorf("snapshot of %s: %w", row.ItemID, err)
	}
	if doc.Item == nil {
		return tracker.Item{}, fmt.Errorf("snapshot of %s holds no item", row.ItemID)
	}
	return *doc.Item, nil
}
