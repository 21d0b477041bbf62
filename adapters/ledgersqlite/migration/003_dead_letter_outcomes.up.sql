-- What an operator did with a dead letter (ledger.Operator's
-- ResolveDeadLetter): 'replayed' or 'skipped', once; '' while it is open.
ALTER TABLE relayr_tracker_dead_letters ADD COLUMN resolution TEXT NOT NULL DEFAULT '';
ALTER TABLE relayr_tracker_dead_letters ADD COLUMN resolved_at INTEGER;
ALTER TABLE relayr_dead_letters ADD COLUMN resolution TEXT NOT NULL DEFAULT '';
ALTER TABLE relayr_dead_letters ADD COLUMN resolved_at INTEGER;

-- The operator's page lists unrecorded and deleted keys per tenant.
CREATE INDEX IF NOT EXISTS relayr_tracker_items_open
	ON relayr_tracker_items (tenant, claimed_at)
	WHERE recorded = 0 AND deleted = 0;
CREATE INDEX IF NOT EXISTS relayr_tracker_items_deleted
	ON relayr_tracker_items (tenant, workspace, kind, key)
	WHERE deleted = 1;
