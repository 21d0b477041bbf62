// Package validate holds the checks every Ledger runs on its inputs before
// it touches its store, so that memory, SQLite and PostgreSQL refuse the
// same values with the same error (one wrapping ledger.ErrInvalid): an empty
// name, a NUL byte, text that is not UTF-8, a cap or lease without a
// duration.
package validate

import (
	"fmt"

	"github.com/relayr-go/relayr/core/ledger"
)

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ledger.ErrInvalid}, args...)...)
}

// Claim checks a claim's key, correlation and retake duration.
func Claim(p ledger.ClaimParams) error {
	if err := ledger.CheckKey(p.Key); err != nil {
		return err
	}
	if p.RetakeAfter <= 0 {
		return invalid("RetakeAfter must be positive")
	}
	return ledger.CheckText(p.Correlation)
}

// Record checks a record's key and the item it names.
func Record(p ledger.RecordParams) error {
	if err := ledger.CheckKey(p.Key); err != nil {
		return err
	}
	if len(p.Ref.ID) > ledger.MaxKey {
		return invalid("an item id over %d bytes", ledger.MaxKey)
	}
	return ledger.CheckText(p.Nonce, p.Ref.ID, p.Ref.Name, p.Ref.Link, p.Ref.Key)
}

// Workspace checks a tenant and a workspace.
func Workspace(tenant, workspace string) error {
	if tenant == "" || workspace == "" {
		return invalid("needs a tenant and a workspace")
	}
	if len(tenant) > ledger.MaxName || len(workspace) > ledger.MaxName {
		return invalid("tenant or workspace over %d bytes", ledger.MaxName)
	}
	return ledger.CheckText(tenant, workspace)
}

// Item checks a tenant, a workspace and the tracker's id for an item.
func Item(tenant, workspace, itemID string) error {
	if itemID == "" || len(itemID) > ledger.MaxKey {
		return invalid("needs an item id of at most %d bytes", ledger.MaxKey)
	}
	if err := Workspace(tenant, workspace); err != nil {
		return err
	}
	return ledger.CheckText(itemID)
}

// Values checks recorded values: each names a field, and holds text.
func Values(values map[string]string) error { return ledger.CheckValues(values) }

// Fields checks the names of fields.
func Fields(fields []string) error { return ledger.CheckText(fields...) }

// Write checks a write counted against the loop cap.
func Write(p ledger.WriteParams) error {
	if p.Window <= 0 || p.Limit < 1 {
		return invalid("the cap needs a positive window and limit")
	}
	return Item(p.Tenant, p.Workspace, p.ItemID)
}

// Snapshots checks the rows SaveSnapshots is given.
func Snapshots(rows []ledger.SnapshotRow) error {
	for _, r := range rows {
		if err := Item(r.Tenant, r.Workspace, r.ItemID); err != nil {
			return err
		}
	}
	return nil
}

// Lease checks a lease to take or renew.
func Lease(p ledger.LeaseParams) error {
	if err := ledger.CheckFollower(p.Follower); err != nil {
		return err
	}
	if p.Holder == "" {
		return invalid("a lease needs a holder")
	}
	if p.TTL <= 0 {
		return invalid("a lease needs a positive TTL")
	}
	return ledger.CheckText(p.Holder, p.Nonce)
}

// Nonce checks a follower and the nonce its caller holds.
func Nonce(f ledger.Follower, nonce string) error {
	if err := ledger.CheckFollower(f); err != nil {
		return err
	}
	return ledger.CheckText(nonce)
}

// Cursor checks a cursor to save.
func Cursor(f ledger.Follower, c ledger.Cursor) error {
	if err := ledger.CheckFollower(f); err != nil {
		return err
	}
	return ledger.CheckText(c.ItemID)
}

// DeadLetter checks a dead letter to keep.
func DeadLetter(d ledger.DeadLetter) error {
	if err := ledger.CheckFollower(d.Follower); err != nil {
		return err
	}
	if d.ID == "" || len(d.ID) > ledger.MaxKey {
		return invalid("a dead letter needs an id of at most %d bytes", ledger.MaxKey)
	}
	return ledger.CheckText(d.ID, d.Reason)
}
