-- The operator's page reads each follower's latest dead letters
-- (ledger.Operator's RecentDeadLetters): in this index's order, with no
-- sort of the follower's whole backlog. Only an index: older replicas'
-- statements run as before.
CREATE INDEX IF NOT EXISTS relayr_tracker_dead_letters_recent
	ON relayr_tracker_dead_letters (tenant, workspace, name, at DESC NULLS LAST, n DESC);
CREATE INDEX IF NOT EXISTS relayr_dead_letters_recent
	ON relayr_dead_letters (tenant, workspace, name, at DESC NULLS LAST, n DESC);
