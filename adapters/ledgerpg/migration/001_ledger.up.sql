-- relayr's ledger on PostgreSQL. Run by Migrate with search_path set to the
-- ledger's schema, under an advisory lock, once per version; every statement
-- is also safe to run again. Text that is compared or ordered is COLLATE "C",
-- byte order, as Go compares strings. Every table carries the tenant, and
-- row-level security keys each row to the tenant the transaction names in
-- relayr.tenant (set_config('relayr.tenant', $1, true)); the tables' owner
-- (and a superuser) bypasses the policies, which is the RLS-off mode.

-- Claims and records of the keys relayr files under (ADR-0033), items and
-- comments alike (kind), with the values relayr last set (ADR-0036).
CREATE TABLE IF NOT EXISTS relayr_tracker_items (
	tenant          text COLLATE "C" NOT NULL,
	workspace       text COLLATE "C" NOT NULL,
	kind            text COLLATE "C" NOT NULL CHECK (kind IN ('item', 'comment')),
	key             text COLLATE "C" NOT NULL,
	nonce           text NOT NULL,
	claimed_at      timestamptz,
	correlation     text NOT NULL DEFAULT '',
	recorded        boolean NOT NULL DEFAULT false,
	item_id         text COLLATE "C" NOT NULL DEFAULT '',
	item_number     bigint NOT NULL DEFAULT 0,
	item_name       text NOT NULL DEFAULT '',
	item_link       text NOT NULL DEFAULT '',
	item_key        text NOT NULL DEFAULT '',
	recorded_at     timestamptz,
	deleted         boolean NOT NULL DEFAULT false,
	recorded_values jsonb NOT NULL DEFAULT '{}',
	PRIMARY KEY (tenant, workspace, kind, key)
);

-- LookupItem's index: recorded items only, and no key in it, so a record
-- writes as little as it can.
CREATE INDEX IF NOT EXISTS relayr_tracker_items_item
	ON relayr_tracker_items (tenant, workspace, item_id)
	WHERE recorded AND kind = 'item';

-- relayr's writes to each item within the cap's window, one row per item:
-- counting locks the row, so the cap holds across replicas (ADR-0036).
CREATE TABLE IF NOT EXISTS relayr_tracker_writes (
	tenant    text COLLATE "C" NOT NULL,
	workspace text COLLATE "C" NOT NULL,
	item_id   text COLLATE "C" NOT NULL,
	ats       timestamptz[] NOT NULL,
	counted   boolean NOT NULL,
	PRIMARY KEY (tenant, workspace, item_id)
);

-- The tracker followers' snapshot of each item, keyed by the tracker's id.
CREATE TABLE IF NOT EXISTS relayr_tracker_snapshots (
	tenant         text COLLATE "C" NOT NULL,
	workspace      text COLLATE "C" NOT NULL,
	item_id        text COLLATE "C" NOT NULL,
	item           bytea NOT NULL,
	updated_at     timestamptz,
	comments_until timestamptz,
	PRIMARY KEY (tenant, workspace, item_id)
);

-- A follower's lease and cursor in one row (ADR-0015), for the tracker
-- followers and the log followers apart.
CREATE TABLE IF NOT EXISTS relayr_tracker_followers (
	tenant            text COLLATE "C" NOT NULL,
	workspace         text COLLATE "C" NOT NULL,
	name              text COLLATE "C" NOT NULL,
	holder            text NOT NULL DEFAULT '',
	nonce             text NOT NULL DEFAULT '',
	expires           timestamptz,
	cursor_updated_at timestamptz,
	cursor_item_id    text COLLATE "C" NOT NULL DEFAULT '',
	cursor_seq        bigint NOT NULL DEFAULT 0,
	seeded            boolean NOT NULL DEFAULT false,
	swept_at          timestamptz,
	PRIMARY KEY (tenant, workspace, name)
);

CREATE TABLE IF NOT EXISTS relayr_followers (LIKE relayr_tracker_followers INCLUDING ALL);

-- Dead letters, once per event id (tracker) or sequence (log); n keeps the
-- order they were kept in.
CREATE TABLE IF NOT EXISTS relayr_tracker_dead_letters (
	n         bigint GENERATED ALWAYS AS IDENTITY,
	tenant    text COLLATE "C" NOT NULL,
	workspace text COLLATE "C" NOT NULL,
	name      text COLLATE "C" NOT NULL,
	event_id  text COLLATE "C" NOT NULL,
	seq       bigint NOT NULL DEFAULT 0,
	event     bytea NOT NULL,
	reason    text NOT NULL DEFAULT '',
	at        timestamptz,
	PRIMARY KEY (tenant, workspace, name, event_id)
);

CREATE TABLE IF NOT EXISTS relayr_dead_letters (
	n         bigint GENERATED ALWAYS AS IDENTITY,
	tenant    text COLLATE "C" NOT NULL,
	workspace text COLLATE "C" NOT NULL,
	name      text COLLATE "C" NOT NULL,
	event_id  text COLLATE "C" NOT NULL,
	seq       bigint NOT NULL DEFAULT 0,
	event     bytea NOT NULL,
	reason    text NOT NULL DEFAULT '',
	at        timestamptz,
	PRIMARY KEY (tenant, workspace, name, event_id)
);

-- The event log: each id once per workspace, sequences per workspace from 1.
CREATE TABLE IF NOT EXISTS relayr_events (
	tenant      text COLLATE "C" NOT NULL,
	workspace   text COLLATE "C" NOT NULL,
	seq         bigint NOT NULL,
	id          text COLLATE "C" NOT NULL,
	type        text NOT NULL,
	correlation text NOT NULL DEFAULT '',
	data        bytea NOT NULL,
	at          timestamptz,
	PRIMARY KEY (tenant, workspace, seq),
	UNIQUE (tenant, workspace, id)
);

-- Row-level security: one policy per table, the row's tenant against the
-- transaction's. A connection that names no tenant sees and writes nothing.
DO $$
DECLARE
	t text;
BEGIN
	FOREACH t IN ARRAY ARRAY['relayr_tracker_items', 'relayr_tracker_writes', 'relayr_tracker_snapshots',
		'relayr_tracker_followers', 'relayr_followers', 'relayr_tracker_dead_letters', 'relayr_dead_letters',
		'relayr_events']
	LOOP
		EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
		EXECUTE format('DROP POLICY IF EXISTS relayr_tenant ON %I', t);
		EXECUTE format('CREATE POLICY relayr_tenant ON %I
			USING (tenant = current_setting(''relayr.tenant'', true))
			WITH CHECK (tenant = current_setting(''relayr.tenant'', true))', t);
	END LOOP;
END
$$;

-- Followed is the one read across tenants (ADR-0015): it runs as the tables'
-- owner, past the policies, and answers tenant, workspace and name only.
CREATE OR REPLACE FUNCTION relayr_followed()
	RETURNS TABLE (tenant text, workspace text, name text)
	LANGUAGE sql STABLE SECURITY DEFINER
	SET search_path FROM CURRENT
AS $$
	SELECT f.tenant, f.workspace, f.name FROM relayr_followers f ORDER BY 1, 2, 3
$$;
