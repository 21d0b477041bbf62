-- The operator's page reads each follower's latest dead letters
-- (ledger.Operator's RecentDeadLetters): in this index's order, backwards,
-- with no sort of the follower's whole backlog.
CREATE INDEX IF NOT EXISTS relayr_tracker_dead_letters_recent
	ON relayr_tracker_dead_letters (tenant, workspace, name, coalesce(at, 0), n);
CREATE INDEX IF NOT EXISTS relayr_dead_letters_recent
	ON relayr_dead_letters (tenant, workspace, name, coalesce(at, 0), n);
