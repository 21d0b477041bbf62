-- The snapshot of an item the followers published as removed without
-- knowing it deleted (archived on Plane) stays as a tombstone (removed = 1),
-- so that the item listed again is published as created again, not lost
-- (ledger.SnapshotRow's Removed). Older relayrs read a tombstone as a
-- snapshot: their sweep removes it again, as it did before.
ALTER TABLE relayr_tracker_snapshots ADD COLUMN removed INTEGER NOT NULL DEFAULT 0;
