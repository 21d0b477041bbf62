-- When a tracker follower last completed a poll, whichever replica polled:
-- what an operator reads a starved follower from (ledger.Cursor.PolledAt).
ALTER TABLE relayr_tracker_followers ADD COLUMN IF NOT EXISTS polled_at timestamptz;
ALTER TABLE relayr_followers ADD COLUMN IF NOT EXISTS polled_at timestamptz;
