-- The operator's page lists a tenant's items at the loop cap
-- (ledger.Operator's AtCap): through this index it reads the writes within
-- the cap's window only, not every write the tenant's items keep (atCap
-- names it: with no statistics SQLite prefers the items' index, whose
-- order its GROUP BY wants). Only an index: older relayrs' statements run
-- as before.
CREATE INDEX IF NOT EXISTS relayr_tracker_writes_recent
	ON relayr_tracker_writes (tenant, at, workspace, item_id);
