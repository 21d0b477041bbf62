-- The operator's page lists a tenant's items at the loop cap
-- (ledger.Operator's AtCap): through this index it reads the items
-- written within the cap's window only, not every item the tenant ever
-- wrote. A counter's writes are appended in time order (the replicas'
-- clocks agree to well within the window), so its last is its latest. Only an index: older replicas' statements run as before,
-- and their writes are indexed too.
CREATE INDEX IF NOT EXISTS relayr_tracker_writes_recent
	ON relayr_tracker_writes (tenant, (ats[cardinality(ats)]));
