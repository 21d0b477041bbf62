-- A filing's record stays in place (a HOT update: the row's new version on
-- its page, no index touched), which is most of what it costs beyond the
-- floor of two bare commits. A record may change no indexed column, so:
--
-- LookupItem reads the item id from relayr_tracker_item_ids, written with
-- the record in the same statement, instead of an index on the item row's
-- item_id (001).
CREATE TABLE IF NOT EXISTS relayr_tracker_item_ids (
	tenant    text COLLATE "C" NOT NULL,
	workspace text COLLATE "C" NOT NULL,
	item_id   text COLLATE "C" NOT NULL,
	key       text COLLATE "C" NOT NULL,
	PRIMARY KEY (tenant, workspace, item_id, key)
);

INSERT INTO relayr_tracker_item_ids (tenant, workspace, item_id, key)
	SELECT tenant, workspace, item_id, key FROM relayr_tracker_items WHERE recorded AND kind = 'item'
	ON CONFLICT DO NOTHING;

DROP INDEX IF EXISTS relayr_tracker_items_item;

-- The open claims' index (004) keys on recorded, which the record sets:
-- the operator's list of unrecorded claims reads the tenant's rows instead.
DROP INDEX IF EXISTS relayr_tracker_items_open;

-- Room on each page for the record's new version of its rows.
ALTER TABLE relayr_tracker_items SET (fillfactor = 80);

-- Row-level security as on every tenant's table (001).
ALTER TABLE relayr_tracker_item_ids ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS relayr_tenant ON relayr_tracker_item_ids;
CREATE POLICY relayr_tenant ON relayr_tracker_item_ids
	USING (tenant = current_setting('relayr.tenant', true))
	WITH CHECK (tenant = current_setting('relayr.tenant', true));

-- The roles the replicas run as under RLS were granted the tables there
-- were: every role that may read relayr_followers may use this one (005).
DO $$
DECLARE
	r regrole;
BEGIN
	FOR r IN
		SELECT DISTINCT a.grantee::regrole
		FROM pg_class c, aclexplode(c.relacl) a
		WHERE c.oid = 'relayr_followers'::regclass
			AND a.privilege_type = 'SELECT'
			AND a.grantee <> 0
			AND a.grantee <> c.relowner
	LOOP
		EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON relayr_tracker_item_ids TO %s', r);
	END LOOP;
END
$$;
