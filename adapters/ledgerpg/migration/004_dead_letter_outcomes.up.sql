-- What an operator did with a dead letter (ledger.Operator's
-- ResolveDeadLetter): 'replayed' or 'skipped', once; '' while it is open.
-- New columns of tables that already have row-level security and their
-- grants: the policies of 001 cover them, and a role granted the tables
-- (SELECT, INSERT, UPDATE, DELETE ON ALL TABLES, as the README says) reads
-- and updates them with no grant of their own.
ALTER TABLE relayr_tracker_dead_letters ADD COLUMN IF NOT EXISTS resolution text NOT NULL DEFAULT '';
ALTER TABLE relayr_tracker_dead_letters ADD COLUMN IF NOT EXISTS resolved_at timestamptz;
ALTER TABLE relayr_dead_letters ADD COLUMN IF NOT EXISTS resolution text NOT NULL DEFAULT '';
ALTER TABLE relayr_dead_letters ADD COLUMN IF NOT EXISTS resolved_at timestamptz;

-- The operator's page lists unrecorded and deleted keys per tenant.
CREATE INDEX IF NOT EXISTS relayr_tracker_items_open
	ON relayr_tracker_items (tenant, claimed_at)
	WHERE NOT recorded AND NOT deleted;
CREATE INDEX IF NOT EXISTS relayr_tracker_items_deleted
	ON relayr_tracker_items (tenant, workspace, kind, key)
	WHERE deleted;
