package ledgersqlite

import "strings"

// The ledger's statements, so the driver's methods read as method, query,
// scan. Times are Unix nanoseconds (NULL for none); a bool is 0 or 1.

// The migrations' own bookkeeping.
const (
	createMigrations = `CREATE TABLE IF NOT EXISTS relayr_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`
	schemaVersion     = `SELECT coalesce(max(version), 0) FROM relayr_migrations`
	appliedMigrations = `SELECT version, name FROM relayr_migrations ORDER BY version`
	recordMigration   = `INSERT INTO relayr_migrations (version, name, applied_at) VALUES (?, ?, ?)`
)

// A batch of writes runs each in a savepoint (batch.go).
const (
	savepoint           = `SAVEPOINT write`
	rollbackToSavepoint = `ROLLBACK TO write`
	releaseSavepoint    = `RELEASE write`
)

const claimColumns = `tenant, workspace, kind, key, nonce, claimed_at, correlation, recorded,
	item_id, item_number, item_name, item_link, item_key, recorded_at, deleted, recorded_values`

// keyWhere picks a claim's row; its four arguments are ledger.Key's
// tenant, workspace, kind and key.
const keyWhere = `tenant = ? AND workspace = ? AND kind = ? AND key = ?`

// The claims (ADR-0033) and the values relayr set (ADR-0036).
const (
	lookupClaim = `SELECT ` + claimColumns + ` FROM relayr_tracker_items WHERE ` + keyWhere
	// Of two keys recorded for one item, the first in byte order answers.
	lookupItem = `SELECT ` + claimColumns + ` FROM relayr_tracker_items
		WHERE tenant = ? AND workspace = ? AND item_id = ? AND recorded = 1 AND kind = 'item'
		ORDER BY key LIMIT 1`
	// A key with no row is taken: the new row, or no row when it has one.
	claimFresh = `INSERT INTO relayr_tracker_items (tenant, workspace, kind, key, nonce, claimed_at, correlation)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant, workspace, kind, key) DO NOTHING
		RETURNING ` + claimColumns
	// ADR-0033: an unrecorded, undeleted claim made before the cutoff
	// (the last argument, Now less RetakeAfter) is taken again; the first
	// claimer's correlation stays.
	claimRetake = `UPDATE relayr_tracker_items SET nonce = ?, claimed_at = ?
		WHERE ` + keyWhere + ` AND recorded = 0 AND deleted = 0 AND claimed_at < ?
		RETURNING ` + claimColumns
	// The unrecorded row holding the nonce (the last argument) is
	// recorded; any other answers no row.
	recordClaim = `UPDATE relayr_tracker_items SET recorded = 1, nonce = ?, recorded_at = ?,
			item_id = ?, item_number = ?, item_name = ?, item_link = ?, item_key = ?
		WHERE ` + keyWhere + ` AND nonce = ? AND recorded = 0
		RETURNING ` + claimColumns
	releaseClaim = `DELETE FROM relayr_tracker_items
		WHERE ` + keyWhere + ` AND nonce = ? AND recorded = 0 AND deleted = 0
		RETURNING 1`
	markDeleted = `INSERT INTO relayr_tracker_items (tenant, workspace, kind, key, nonce, deleted)
		VALUES (?, ?, ?, ?, ?, 1)
		ON CONFLICT (tenant, workspace, kind, key) DO UPDATE SET deleted = 1, nonce = excluded.nonce`
	claimValues    = `SELECT recorded_values FROM relayr_tracker_items WHERE ` + keyWhere
	setClaimValues = `UPDATE relayr_tracker_items SET recorded_values = ? WHERE ` + keyWhere
)

// The writes the loop cap counts (ADR-0036): writes that left the window
// (at or before its start) are forgotten as it counts.
const (
	forgetLapsedWrites = `DELETE FROM relayr_tracker_writes WHERE tenant = ? AND workspace = ? AND item_id = ? AND at <= ?`
	countWrites        = `SELECT count(*) FROM relayr_tracker_writes WHERE tenant = ? AND workspace = ? AND item_id = ?`
	addWrite           = `INSERT INTO relayr_tracker_writes (tenant, workspace, item_id, at) VALUES (?, ?, ?, ?)`
	forgetWrites       = `DELETE FROM relayr_tracker_writes WHERE tenant = ? AND workspace = ? AND item_id = ?`
	// One write counted at the time given is forgotten, of several there.
	uncountWrite = `DELETE FROM relayr_tracker_writes WHERE rowid = (SELECT rowid FROM relayr_tracker_writes
		WHERE tenant = ? AND workspace = ? AND item_id = ? AND at = ? LIMIT 1)`
)

// The tracker followers' snapshots.
const (
	snapshot = `SELECT item, updated_at, comments_until, removed FROM relayr_tracker_snapshots
		WHERE tenant = ? AND workspace = ? AND item_id = ?`
	saveSnapshot = `INSERT INTO relayr_tracker_snapshots (tenant, workspace, item_id, item, updated_at, comments_until, removed)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant, workspace, item_id) DO UPDATE SET
			item = excluded.item, updated_at = excluded.updated_at, comments_until = excluded.comments_until,
			removed = excluded.removed`
	// A filing's first snapshot: written only where the item has none.
	insertSnapshot = `INSERT INTO relayr_tracker_snapshots (tenant, workspace, item_id, item, updated_at, comments_until, removed)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant, workspace, item_id) DO NOTHING`
	deleteSnapshot = `DELETE FROM relayr_tracker_snapshots WHERE tenant = ? AND workspace = ? AND item_id = ?`
	// A page of ids after the third argument, in byte order (BINARY),
	// tombstones left out.
	snapshotIDs = `SELECT item_id FROM relayr_tracker_snapshots
		WHERE tenant = ? AND workspace = ? AND item_id > ? AND removed = 0 ORDER BY item_id LIMIT ?`
)

// The event log: each id once per workspace, sequences from 1.
const (
	// The event after its workspace's last, or no row when its id is in
	// the log (the writer lock keeps max(seq) from moving under it).
	appendEvent = `INSERT INTO relayr_events (tenant, workspace, seq, id, type, correlation, data, at)
		SELECT ?, ?, coalesce(max(seq), 0) + 1, ?, ?, ?, ?, ? FROM relayr_events WHERE tenant = ? AND workspace = ?
		ON CONFLICT (tenant, workspace, id) DO NOTHING
		RETURNING seq`
	eventSeq   = `SELECT seq FROM relayr_events WHERE tenant = ? AND workspace = ? AND id = ?`
	headEvent  = `SELECT coalesce(max(seq), 0) FROM relayr_events WHERE tenant = ? AND workspace = ?`
	readEvents = `SELECT seq, id, type, correlation, data, at FROM relayr_events
		WHERE tenant = ? AND workspace = ? AND seq > ? ORDER BY seq LIMIT ?`
	latestEvents = `SELECT seq, id, type, correlation, data, at FROM relayr_events
		WHERE tenant = ? AND workspace = ? AND (? = '' OR type = ?) ORDER BY seq DESC LIMIT ?`
)

// The operator's reads: the tenant's claims, ordered, at most rows; the
// items at the loop cap, a write at w counting while now-w < window, as
// countWrites counts it.
const (
	unrecordedClaims = `SELECT ` + claimColumns + ` FROM relayr_tracker_items
		WHERE tenant = ? AND recorded = 0 AND deleted = 0 ORDER BY claimed_at, workspace, kind, key LIMIT ?`
	deletedClaims = `SELECT ` + claimColumns + ` FROM relayr_tracker_items
		WHERE tenant = ? AND deleted = 1 ORDER BY workspace, kind, key LIMIT ?`
	atCap = `SELECT workspace, item_id, count(*), min(at) FROM relayr_tracker_writes INDEXED BY relayr_tracker_writes_recent
		WHERE tenant = ? AND at > ? GROUP BY workspace, item_id HAVING count(*) >= ?
		ORDER BY workspace, item_id LIMIT ?`
	followed = `SELECT tenant, workspace, name FROM relayr_followers ORDER BY tenant, workspace, name`
)

const deadLetterColumns = `event_id, seq, event, reason, at, resolution, resolved_at`

// followerQueries are one kind of follower's statements: the tracker
// followers' and the log followers' tables apart, same columns.
type followerQueries struct {
	takeLease, renewLease, releaseLease, lease, cursor, saveCursor string
	deadLetter, deadLetters, resolve, deadLetterRow                string
	recentDeadLetters                                              string
}

var (
	trackerQueries = newFollowerQueries("relayr_tracker_followers", "relayr_tracker_dead_letters")
	logQueries     = newFollowerQueries("relayr_followers", "relayr_dead_letters")
)

func newFollowerQueries(followers, deadLetters string) followerQueries {
	s := strings.NewReplacer("{f}", followers, "{d}", deadLetters).Replace
	const where = `tenant = ? AND workspace = ? AND name = ?`
	return followerQueries{
		// ADR-0015: taken when nobody holds it or it lapsed at or before
		// now (the last argument); no row when it is held.
		takeLease: s(`INSERT INTO {f} (tenant, workspace, name, holder, nonce, expires)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (tenant, workspace, name) DO UPDATE SET
				holder = excluded.holder, nonce = excluded.nonce, expires = excluded.expires
			WHERE {f}.holder = '' OR {f}.expires IS NULL OR {f}.expires <= ?
			RETURNING 1`),
		renewLease: s(`UPDATE {f} SET nonce = ?, expires = ?
			WHERE ` + where + ` AND holder <> '' AND nonce = ?
			RETURNING holder`),
		releaseLease: s(`UPDATE {f} SET holder = '', nonce = '', expires = NULL
			WHERE ` + where + ` AND holder <> '' AND nonce = ?
			RETURNING 1`),
		lease:  s(`SELECT holder, expires FROM {f} WHERE ` + where),
		cursor: s(`SELECT cursor_updated_at, cursor_item_id, cursor_seq, seeded, swept_at, polled_at FROM {f} WHERE ` + where),
		saveCursor: s(`INSERT INTO {f} (tenant, workspace, name, cursor_updated_at, cursor_item_id, cursor_seq, seeded, swept_at, polled_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (tenant, workspace, name) DO UPDATE SET cursor_updated_at = excluded.cursor_updated_at,
				cursor_item_id = excluded.cursor_item_id, cursor_seq = excluded.cursor_seq, seeded = excluded.seeded,
				swept_at = excluded.swept_at, polled_at = excluded.polled_at`),
		// ADR-0015: dead letters, once per id.
		deadLetter: s(`INSERT INTO {d} (tenant, workspace, name, event_id, seq, event, reason, at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, workspace, name, event_id) DO NOTHING`),
		// Oldest first: by at (none first), then by when they were kept.
		deadLetters: s(`SELECT ` + deadLetterColumns + ` FROM {d}
			WHERE ` + where + ` ORDER BY coalesce(at, 0), n`),
		recentDeadLetters: s(`SELECT ` + deadLetterColumns + ` FROM {d}
			WHERE ` + where + ` ORDER BY coalesce(at, 0) DESC, n DESC LIMIT ?`),
		// An open dead letter is resolved, once; no row when it is not open.
		resolve: s(`UPDATE {d} SET resolution = ?, resolved_at = ?
			WHERE ` + where + ` AND event_id = ? AND resolution = ''
			RETURNING ` + deadLetterColumns),
		deadLetterRow: s(`SELECT ` + deadLetterColumns + ` FROM {d} WHERE ` + where + ` AND event_id = ?`),
	}
}

// writeStatements are prepared on the writer at Open: those a write
// transaction runs, which could not prepare them on the writer's one
// connection while it holds it.
func writeStatements() []string {
	out := []string{
		claimFresh, claimRetake, recordClaim, releaseClaim, markDeleted, lookupClaim, claimValues, setClaimValues,
		forgetLapsedWrites, countWrites, addWrite, forgetWrites, uncountWrite, saveSnapshot, insertSnapshot, deleteSnapshot, appendEvent, eventSeq,
		savepoint, rollbackToSavepoint, releaseSavepoint,
	}
	for _, q := range []followerQueries{trackerQueries, logQueries} {
		out = append(out, q.takeLease, q.renewLease, q.releaseLease, q.cursor, q.saveCursor, q.deadLetter, q.resolve, q.deadLetterRow)
	}
	return out
}
