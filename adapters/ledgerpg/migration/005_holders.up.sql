-- The replicas' heartbeat (issue 13): a row per holder, alive until
-- expires, with what it spent of each tenant's key in its last minute.
-- Replicas see each other through it and share the bindings' leases
-- evenly. A holder belongs to no tenant: the table has no row-level
-- policy, and holds replica names and counts per budget key only.
CREATE TABLE IF NOT EXISTS relayr_holders (
	holder  text COLLATE "C" PRIMARY KEY,
	expires timestamptz NOT NULL,
	spent   jsonb NOT NULL DEFAULT '{}'
);

-- The roles the replicas run as under RLS were granted the tables there
-- were: every role that may read relayr_followers may use this one.
DO $$
DECLARE
	r regrole;
BEGIN
	FOR r IN
		-- A replica's role: it may read and write the followers. A role
		-- that may only read them (a report's) is given nothing.
		SELECT a.grantee::regrole
		FROM pg_class c, aclexplode(c.relacl) a
		WHERE c.oid = 'relayr_followers'::regclass
			AND a.privilege_type IN ('SELECT', 'INSERT', 'UPDATE', 'DELETE')
			AND a.grantee <> 0
			AND a.grantee <> c.relowner
		GROUP BY a.grantee
		HAVING count(DISTINCT a.privilege_type) = 4
	LOOP
		EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON relayr_holders TO %s', r);
	END LOOP;
END
$$;
