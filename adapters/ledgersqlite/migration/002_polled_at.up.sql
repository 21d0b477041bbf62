-- When a tracker follower last completed a poll, whichever process polled:
-- what an operator reads a starved follower from (ledger.Cursor.PolledAt).
ALTER TABLE relayr_tracker_followers ADD COLUMN polled_at INTEGER;
ALTER TABLE relayr_followers ADD COLUMN polled_at INTEGER;
