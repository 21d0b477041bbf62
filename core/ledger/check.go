package ledger

import "fmt"

// The checks Store runs on every input before a driver sees it, so that
// every store refuses the same values with the same error (one wrapping
// ErrInvalid): an empty name, a NUL byte, text that is not UTF-8, a cap or
// lease without a duration.

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// checkClaim checks a claim's key, correlation, time and retake duration.
func checkClaim(p ClaimParams) error {
	if err := CheckKey(p.Key); err != nil {
		return err
	}
	if p.RetakeAfter <= 0 {
		return invalid("RetakeAfter must be positive")
	}
	if len(p.Correlation) > MaxCorrelation {
		// Copied onto every event of the item, for the item's life.
		return invalid("a correlation over %d bytes", MaxCorrelation)
	}
	if p.Now.IsZero() {
		// ADR-0033's retake counts from the claim's time: a claim without
		// one could never lapse where a store keeps no zero time.
		return invalid("a claim needs its time (Now)")
	}
	return CheckText(p.Correlation)
}

// checkRecord checks a record's key and the item it names.
func checkRecord(p RecordParams) error {
	if err := CheckKey(p.Key); err != nil {
		return err
	}
	if len(p.Ref.ID) > MaxKey {
		return invalid("an item id over %d bytes", MaxKey)
	}
	if p.Snapshot != nil {
		if err := checkSnapshots([]SnapshotRow{*p.Snapshot}); err != nil {
			return err
		}
		if p.Snapshot.Tenant != p.Tenant || p.Snapshot.Workspace != p.Workspace || p.Snapshot.Removed {
			return invalid("a filing's snapshot is a live one of the claim's own workspace")
		}
	}
	return CheckText(p.Nonce, p.Ref.ID, p.Ref.Name, p.Ref.Link, p.Ref.Key)
}

// checkWorkspace checks a tenant and a workspace.
func checkWorkspace(tenant, workspace string) error {
	if tenant == "" || workspace == "" {
		return invalid("needs a tenant and a workspace")
	}
	if len(tenant) > MaxName || len(workspace) > MaxName {
		return invalid("tenant or workspace over %d bytes", MaxName)
	}
	return CheckText(tenant, workspace)
}

// checkItem checks a tenant, a workspace and the tracker's id for an item.
func checkItem(tenant, workspace, itemID string) error {
	if itemID == "" || len(itemID) > MaxKey {
		return invalid("needs an item id of at most %d bytes", MaxKey)
	}
	if err := checkWorkspace(tenant, workspace); err != nil {
		return err
	}
	return CheckText(itemID)
}

// checkWrite checks a write counted against the loop cap.
func checkWrite(p WriteParams) error {
	if p.Window <= 0 || p.Limit < 1 {
		return invalid("the cap needs a positive window and limit")
	}
	return checkCounted(p)
}

// checkCounted checks a write to count or give back: an item, and the time
// it is counted at (a zero time has no place in the window).
func checkCounted(p WriteParams) error {
	if p.Now.IsZero() {
		return invalid("a counted write needs its time")
	}
	return checkItem(p.Tenant, p.Workspace, p.ItemID)
}

// checkSnapshots checks the rows SaveSnapshots is given.
func checkSnapshots(rows []SnapshotRow) error {
	for _, r := range rows {
		if err := checkItem(r.Tenant, r.Workspace, r.ItemID); err != nil {
			return err
		}
	}
	return nil
}

// checkLease checks a lease to take or renew.
func checkLease(p LeaseParams) error {
	if err := CheckFollower(p.Follower); err != nil {
		return err
	}
	if p.Holder == "" {
		return invalid("a lease needs a holder")
	}
	if p.TTL <= 0 {
		return invalid("a lease needs a positive TTL")
	}
	return CheckText(p.Holder, p.Nonce)
}

// checkNonce checks a follower and the nonce its caller holds.
func checkNonce(f Follower, nonce string) error {
	if err := CheckFollower(f); err != nil {
		return err
	}
	return CheckText(nonce)
}

// checkCursor checks a cursor to save.
func checkCursor(f Follower, c Cursor) error {
	if err := CheckFollower(f); err != nil {
		return err
	}
	return CheckText(c.ItemID)
}

// checkDeadLetter checks a dead letter to keep.
func checkDeadLetter(d DeadLetter) error {
	if err := CheckFollower(d.Follower); err != nil {
		return err
	}
	if d.ID == "" || len(d.ID) > MaxKey {
		return invalid("a dead letter needs an id of at most %d bytes", MaxKey)
	}
	return CheckText(d.ID, d.Reason)
}
