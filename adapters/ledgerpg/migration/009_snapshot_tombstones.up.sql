-- The snapshot of an item the followers published as removed without
-- knowing it deleted (archived on Plane) stays as a tombstone (removed),
-- so that the item listed again is published as created again, not lost
-- (ledger.SnapshotRow's Removed). A column with a constant default: no
-- rewrite of the table. The policies of 001 and the table's grants cover
-- it. Older replicas read a tombstone as a snapshot: their sweep removes
-- it again, as it did before.
ALTER TABLE relayr_tracker_snapshots ADD COLUMN IF NOT EXISTS removed boolean NOT NULL DEFAULT false;
