package ledgerpg

import "strings"

// queries are the ledger's statements with its schema filled in.
type queries struct {
	lookup, lookupItem, claim, record, recordFiled, release, markDeleted string
	valuesForUpdate, setValues, countWrite, forgetWrites                 string
	uncountWrite                                                         string
	snapshot, saveSnapshots, deleteSnapshot, snapshotIDs                 string
	followed, ping, appendEvent, readEvents, headEvent                   string
	latestEvents, unrecorded, deletedKeys, atCap                         string
	beat, leave, lockLog                                                 string
	tracker, log                                                         followerQueries
}

const deadLetterColumns = `event_id, seq, event, reason, at, resolution, resolved_at`

type followerQueries struct {
	takeLease, renewLease, releaseLease, lease, cursor, deadLetter, deadLetters, resolve string
	recentDeadLetters, deadLetterRow                                                     string
	makeFollower, cursorForUpdate, setCursor                                             string
}

const claimColumns = `tenant, workspace, kind, key, nonce, claimed_at, correlation, recorded,
	item_id, item_number, item_name, item_link, item_key, recorded_at, deleted, recorded_values`

// takenColumns are what a claim that takes its key, or a record that
// records, returns: what its parameters leave open. The rest of the row
// is what the statement wrote, and returning the whole row cost the
// server (the columns' output) and the client (their scan) a few percent
// of a filing with one filer (README, the ledgers against their floor).
const takenColumns = `claimed_at, correlation, recorded_values`

const keyWhere = `tenant = $1 AND workspace = $2 AND kind = $3 AND key = $4`

func newQueries(schema string) queries {
	s := func(sql string) string { return strings.ReplaceAll(sql, "{s}", schema) }
	return queries{
		lookup: s(`SELECT ` + claimColumns + ` FROM {s}.relayr_tracker_items WHERE ` + keyWhere),
		lookupItem: s(`SELECT ` + claimColumns + ` FROM {s}.relayr_tracker_items
			WHERE tenant = $1 AND workspace = $2 AND item_id = $3 AND recorded AND kind = 'item'
			ORDER BY key LIMIT 1`),
		// A new key is inserted (xmax = 0); an unrecorded, undeleted claim
		// older than the cutoff is taken again; any other row answers no
		// row and is read as it stands.
		claim: s(`INSERT INTO {s}.relayr_tracker_items AS t (tenant, workspace, kind, key, nonce, claimed_at, correlation)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (tenant, workspace, kind, key) DO UPDATE SET nonce = excluded.nonce, claimed_at = excluded.claimed_at
			WHERE NOT t.recorded AND NOT t.deleted AND t.claimed_at < $8
			RETURNING ` + takenColumns + `, (xmax = 0)`),
		record: s(`UPDATE {s}.relayr_tracker_items SET recorded = true, nonce = $6, recorded_at = $7,
				item_id = $8, item_number = $9, item_name = $10, item_link = $11, item_key = $12
			WHERE ` + keyWhere + ` AND nonce = $5 AND NOT recorded
			RETURNING ` + takenColumns + `, recorded_at, deleted`),
		// The record and the filing's first snapshot in one statement:
		// the snapshot only when the row is recorded, and only where the
		// item has none.
		recordFiled: s(`WITH rec AS (
				UPDATE {s}.relayr_tracker_items SET recorded = true, nonce = $6, recorded_at = $7,
					item_id = $8, item_number = $9, item_name = $10, item_link = $11, item_key = $12
				WHERE ` + keyWhere + ` AND nonce = $5 AND NOT recorded
				RETURNING ` + takenColumns + `, recorded_at, deleted),
			snap AS (
				INSERT INTO {s}.relayr_tracker_snapshots (tenant, workspace, item_id, item, updated_at, comments_until, removed)
				SELECT $1, $2, $13, $14, $15, $16, false FROM rec
				ON CONFLICT (tenant, workspace, item_id) DO NOTHING)
			SELECT * FROM rec`),
		release: s(`DELETE FROM {s}.relayr_tracker_items
			WHERE ` + keyWhere + ` AND nonce = $5 AND NOT recorded AND NOT deleted
			RETURNING true`),
		markDeleted: s(`INSERT INTO {s}.relayr_tracker_items (tenant, workspace, kind, key, nonce, deleted)
			VALUES ($1, $2, $3, $4, $5, true)
			ON CONFLICT (tenant, workspace, kind, key) DO UPDATE SET deleted = true, nonce = excluded.nonce`),
		valuesForUpdate: s(`SELECT recorded_values FROM {s}.relayr_tracker_items WHERE ` + keyWhere + ` FOR UPDATE`),
		setValues:       s(`UPDATE {s}.relayr_tracker_items SET recorded_values = $5::jsonb WHERE ` + keyWhere),
		// The counter row is locked by the upsert; every SET sees the row as
		// it was, so kept is the writes still inside the window.
		countWrite: s(`INSERT INTO {s}.relayr_tracker_writes AS w (tenant, workspace, item_id, ats, counted)
			VALUES ($1, $2, $3, ARRAY[$4::timestamptz], true)
			ON CONFLICT (tenant, workspace, item_id) DO UPDATE SET
				ats = CASE WHEN cardinality(ARRAY(SELECT a FROM unnest(w.ats) a WHERE a > $6)) < $5
					THEN ARRAY(SELECT a FROM unnest(w.ats) a WHERE a > $6) || $4::timestamptz
					ELSE ARRAY(SELECT a FROM unnest(w.ats) a WHERE a > $6) END,
				counted = cardinality(ARRAY(SELECT a FROM unnest(w.ats) a WHERE a > $6)) < $5
			RETURNING cardinality(ats), counted`),
		forgetWrites: s(`DELETE FROM {s}.relayr_tracker_writes WHERE tenant = $1 AND workspace = $2 AND item_id = $3`),
		// The first write counted at $4 leaves the array; the others stay.
		uncountWrite: s(`UPDATE {s}.relayr_tracker_writes
			SET ats = ats[:array_position(ats, $4::timestamptz) - 1] || ats[array_position(ats, $4::timestamptz) + 1:]
			WHERE tenant = $1 AND workspace = $2 AND item_id = $3 AND $4::timestamptz = ANY (ats)`),
		snapshot: s(`SELECT item, updated_at, comments_until, removed FROM {s}.relayr_tracker_snapshots
			WHERE tenant = $1 AND workspace = $2 AND item_id = $3`),
		saveSnapshots: s(`INSERT INTO {s}.relayr_tracker_snapshots (tenant, workspace, item_id, item, updated_at, comments_until, removed)
			SELECT $1, r.workspace, r.item_id, r.item, r.updated_at, r.comments_until, r.removed
			FROM unnest($2::text[], $3::text[], $4::bytea[], $5::timestamptz[], $6::timestamptz[], $7::boolean[])
				AS r (workspace, item_id, item, updated_at, comments_until, removed)
			ON CONFLICT (tenant, workspace, item_id) DO UPDATE SET
				item = excluded.item, updated_at = excluded.updated_at, comments_until = excluded.comments_until,
				removed = excluded.removed`),
		deleteSnapshot: s(`DELETE FROM {s}.relayr_tracker_snapshots WHERE tenant = $1 AND workspace = $2 AND item_id = $3`),
		snapshotIDs: s(`SELECT item_id FROM {s}.relayr_tracker_snapshots
			WHERE tenant = $1 AND workspace = $2 AND item_id > $3 AND NOT removed ORDER BY item_id LIMIT $4`),
		// A beat upserts the holder's row, forgets the rows that lapsed,
		// and reads the live ones, in one statement.
		// $4 is Now less KeepLapsed: rows lapsed before it are forgotten.
		beat: s(`WITH up AS (
				INSERT INTO {s}.relayr_holders AS h (holder, expires, spent) VALUES ($1, $2, $3)
				ON CONFLICT (holder) DO UPDATE SET expires = excluded.expires, spent = excluded.spent
				RETURNING holder, expires, spent),
			gone AS (DELETE FROM {s}.relayr_holders WHERE expires <= $4 AND holder <> $1)
			SELECT holder, expires, spent FROM up
			UNION ALL
			SELECT holder, expires, spent FROM {s}.relayr_holders WHERE expires > $4 AND holder <> $1
			ORDER BY 1`),
		leave:    s(`UPDATE {s}.relayr_holders SET expires = $2 WHERE holder = $1 AND expires > $2`),
		followed: s(`SELECT tenant, workspace, name FROM {s}.relayr_followed()`),
		ping: s(`SELECT (SELECT coalesce(max(version), 0) FROM {s}.relayr_migrations),
			row_security_active($1::text)`),
		appendEvent: s(`WITH existing AS (
				SELECT seq FROM {s}.relayr_events WHERE tenant = $1 AND workspace = $2 AND id = $3
			), appended AS (
				INSERT INTO {s}.relayr_events (tenant, workspace, seq, id, type, correlation, data, at)
				SELECT $1, $2, coalesce((SELECT max(seq) FROM {s}.relayr_events WHERE tenant = $1 AND workspace = $2), 0) + 1,
					$3, $4, $5, $6, $7
				WHERE NOT EXISTS (SELECT 1 FROM existing)
				RETURNING seq
			)
			SELECT seq, true FROM appended UNION ALL SELECT seq, false FROM existing`),
		// Append's lock on the workspace's log, until its transaction ends.
		lockLog: `SELECT pg_advisory_xact_lock(hashtextextended($1::text || '/' || $2::text, 5370))`,
		readEvents: s(`SELECT seq, id, type, correlation, data, at FROM {s}.relayr_events
			WHERE tenant = $1 AND workspace = $2 AND seq > $3 ORDER BY seq LIMIT $4`),
		headEvent: s(`SELECT coalesce(max(seq), 0) FROM {s}.relayr_events WHERE tenant = $1 AND workspace = $2`),
		latestEvents: s(`SELECT seq, id, type, correlation, data, at FROM {s}.relayr_events
			WHERE tenant = $1 AND workspace = $2 AND ($3 = '' OR type = $3) ORDER BY seq DESC LIMIT $4`),
		unrecorded: s(`SELECT ` + claimColumns + ` FROM {s}.relayr_tracker_items
			WHERE tenant = $1 AND NOT recorded AND NOT deleted ORDER BY claimed_at, workspace, kind, key LIMIT $2`),
		deletedKeys: s(`SELECT ` + claimColumns + ` FROM {s}.relayr_tracker_items
			WHERE tenant = $1 AND deleted ORDER BY workspace, kind, key LIMIT $2`),
		// A write at w counts while now-w < window, as countWrite keeps it.
		atCap: s(`SELECT workspace, item_id, n, oldest FROM (
				SELECT workspace, item_id,
					(SELECT count(*) FROM unnest(ats) a WHERE a > $2) AS n,
					(SELECT min(a) FROM unnest(ats) a WHERE a > $2) AS oldest
				FROM {s}.relayr_tracker_writes
				WHERE tenant = $1 AND ats[cardinality(ats)] > $2) w
			WHERE n >= $3 ORDER BY workspace, item_id LIMIT $4`),
		tracker: newFollowerQueries(schema, "relayr_tracker_followers", "relayr_tracker_dead_letters"),
		log:     newFollowerQueries(schema, "relayr_followers", "relayr_dead_letters"),
	}
}

func newFollowerQueries(schema, followers, deadLetters string) followerQueries {
	s := func(sql string) string {
		return strings.NewReplacer("{s}", schema, "{f}", followers, "{d}", deadLetters).Replace(sql)
	}
	const where = `tenant = $1 AND workspace = $2 AND name = $3`
	return followerQueries{
		// Taken when nobody holds it or it lapsed (ADR-0015).
		takeLease: s(`INSERT INTO {s}.{f} AS f (tenant, workspace, name, holder, nonce, expires)
			VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (tenant, workspace, name) DO UPDATE SET holder = excluded.holder, nonce = excluded.nonce, expires = excluded.expires
			WHERE f.holder = '' OR f.expires <= $7`),
		renewLease: s(`UPDATE {s}.{f} SET nonce = $5, expires = $6
			WHERE ` + where + ` AND holder <> '' AND nonce = $4
			RETURNING holder`),
		releaseLease: s(`UPDATE {s}.{f} SET holder = '', nonce = '', expires = NULL
			WHERE ` + where + ` AND holder <> '' AND nonce = $4`),
		lease:  s(`SELECT holder, expires FROM {s}.{f} WHERE ` + where),
		cursor: s(`SELECT cursor_updated_at, cursor_item_id, cursor_seq, seeded, swept_at, polled_at FROM {s}.{f} WHERE ` + where),
		// ChangeCursor's transaction: the row made if missing, locked,
		// and set to what ledger.Forward answers.
		makeFollower: s(`INSERT INTO {s}.{f} (tenant, workspace, name) VALUES ($1, $2, $3)
			ON CONFLICT (tenant, workspace, name) DO NOTHING`),
		cursorForUpdate: s(`SELECT cursor_updated_at, cursor_item_id, cursor_seq, seeded, swept_at, polled_at FROM {s}.{f}
			WHERE ` + where + ` FOR UPDATE`),
		setCursor: s(`UPDATE {s}.{f} SET cursor_updated_at = $4, cursor_item_id = $5, cursor_seq = $6,
				seeded = $7, swept_at = $8, polled_at = $9
			WHERE ` + where),
		deadLetter: s(`INSERT INTO {s}.{d} (tenant, workspace, name, event_id, seq, event, reason, at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
			ON CONFLICT (tenant, workspace, name, event_id) DO NOTHING`),
		deadLetters: s(`SELECT ` + deadLetterColumns + ` FROM {s}.{d}
			WHERE ` + where + ` ORDER BY at NULLS FIRST, n`),
		recentDeadLetters: s(`SELECT ` + deadLetterColumns + ` FROM {s}.{d}
			WHERE ` + where + ` ORDER BY at DESC NULLS LAST, n DESC LIMIT $4`),
		deadLetterRow: s(`SELECT ` + deadLetterColumns + ` FROM {s}.{d} WHERE ` + where + ` AND event_id = $4`),
		// An open dead letter is resolved; the row is answered as it
		// stands, with whether this statement resolved it.
		resolve: s(`WITH u AS (UPDATE {s}.{d} SET resolution = $5, resolved_at = $6
				WHERE ` + where + ` AND event_id = $4 AND resolution = ''
				RETURNING ` + deadLetterColumns + `)
			SELECT ` + deadLetterColumns + `, true FROM u
			UNION ALL
			SELECT ` + deadLetterColumns + `, false FROM {s}.{d}
				WHERE ` + where + ` AND event_id = $4 AND NOT EXISTS (SELECT 1 FROM u)`),
	}
}
