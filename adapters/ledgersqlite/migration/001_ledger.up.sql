-- relayr's ledger on SQLite. Times are Unix nanoseconds (NULL for none);
-- text compares in byte order (BINARY), as Go compares strings.

-- Claims and records of the keys relayr files under (ADR-0033), items and
-- comments alike (kind), with the values relayr last set (ADR-0036).
CREATE TABLE IF NOT EXISTS relayr_tracker_items (
	tenant          TEXT    NOT NULL,
	workspace       TEXT    NOT NULL,
	kind            TEXT    NOT NULL CHECK (kind IN ('item', 'comment')),
	key             TEXT    NOT NULL,
	nonce           TEXT    NOT NULL,
	claimed_at      INTEGER,
	correlation     TEXT    NOT NULL DEFAULT '',
	recorded        INTEGER NOT NULL DEFAULT 0,
	item_id         TEXT    NOT NULL DEFAULT '',
	item_number     INTEGER NOT NULL DEFAULT 0,
	item_name       TEXT    NOT NULL DEFAULT '',
	item_link       TEXT    NOT NULL DEFAULT '',
	item_key        TEXT    NOT NULL DEFAULT '',
	recorded_at     INTEGER,
	deleted         INTEGER NOT NULL DEFAULT 0,
	recorded_values TEXT    NOT NULL DEFAULT '{}',
	PRIMARY KEY (tenant, workspace, kind, key)
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS relayr_tracker_items_item
	ON relayr_tracker_items (tenant, workspace, item_id, key)
	WHERE recorded = 1 AND kind = 'item';

-- relayr's writes to each item, which the loop cap counts (ADR-0036).
CREATE TABLE IF NOT EXISTS relayr_tracker_writes (
	tenant    TEXT    NOT NULL,
	workspace TEXT    NOT NULL,
	item_id   TEXT    NOT NULL,
	at        INTEGER NOT NULL
);

CREATE INDEX IF NOT EXISTS relayr_tracker_writes_item
	ON relayr_tracker_writes (tenant, workspace, item_id, at);

-- The tracker followers' snapshot of each item, keyed by the tracker's id.
CREATE TABLE IF NOT EXISTS relayr_tracker_snapshots (
	tenant         TEXT    NOT NULL,
	workspace      TEXT    NOT NULL,
	item_id        TEXT    NOT NULL,
	item           BLOB,
	updated_at     INTEGER,
	comments_until INTEGER,
	PRIMARY KEY (tenant, workspace, item_id)
) WITHOUT ROWID;

-- A follower's lease and cursor in one row (ADR-0015), for the tracker
-- followers and the log followers apart.
CREATE TABLE IF NOT EXISTS relayr_tracker_followers (
	tenant            TEXT    NOT NULL,
	workspace         TEXT    NOT NULL,
	name              TEXT    NOT NULL,
	holder            TEXT    NOT NULL DEFAULT '',
	nonce             TEXT    NOT NULL DEFAULT '',
	expires           INTEGER,
	cursor_updated_at INTEGER,
	cursor_item_id    TEXT    NOT NULL DEFAULT '',
	cursor_seq        INTEGER NOT NULL DEFAULT 0,
	seeded            INTEGER NOT NULL DEFAULT 0,
	swept_at          INTEGER,
	PRIMARY KEY (tenant, workspace, name)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS relayr_followers (
	tenant            TEXT    NOT NULL,
	workspace         TEXT    NOT NULL,
	name              TEXT    NOT NULL,
	holder            TEXT    NOT NULL DEFAULT '',
	nonce             TEXT    NOT NULL DEFAULT '',
	expires           INTEGER,
	cursor_updated_at INTEGER,
	cursor_item_id    TEXT    NOT NULL DEFAULT '',
	cursor_seq        INTEGER NOT NULL DEFAULT 0,
	seeded            INTEGER NOT NULL DEFAULT 0,
	swept_at          INTEGER,
	PRIMARY KEY (tenant, workspace, name)
) WITHOUT ROWID;

-- Dead letters, once per event id (tracker) or sequence (log); the rowid
-- keeps the order they were kept in.
CREATE TABLE IF NOT EXISTS relayr_tracker_dead_letters (
	n         INTEGER PRIMARY KEY AUTOINCREMENT,
	tenant    TEXT    NOT NULL,
	workspace TEXT    NOT NULL,
	name      TEXT    NOT NULL,
	event_id  TEXT    NOT NULL,
	seq       INTEGER NOT NULL DEFAULT 0,
	event     BLOB,
	reason    TEXT    NOT NULL DEFAULT '',
	at        INTEGER,
	UNIQUE (tenant, workspace, name, event_id)
);

CREATE TABLE IF NOT EXISTS relayr_dead_letters (
	n         INTEGER PRIMARY KEY AUTOINCREMENT,
	tenant    TEXT    NOT NULL,
	workspace TEXT    NOT NULL,
	name      TEXT    NOT NULL,
	event_id  TEXT    NOT NULL,
	seq       INTEGER NOT NULL DEFAULT 0,
	event     BLOB,
	reason    TEXT    NOT NULL DEFAULT '',
	at        INTEGER,
	UNIQUE (tenant, workspace, name, event_id)
);

-- The event log: each id once per workspace, sequences per workspace from 1.
CREATE TABLE IF NOT EXISTS relayr_events (
	tenant      TEXT    NOT NULL,
	workspace   TEXT    NOT NULL,
	seq         INTEGER NOT NULL,
	id          TEXT    NOT NULL,
	type        TEXT    NOT NULL,
	correlation TEXT    NOT NULL DEFAULT '',
	data        BLOB,
	at          INTEGER,
	PRIMARY KEY (tenant, workspace, seq),
	UNIQUE (tenant, workspace, id)
) WITHOUT ROWID;
