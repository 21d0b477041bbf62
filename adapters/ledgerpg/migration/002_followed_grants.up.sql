-- relayr_followed reads every tenant's followers past row-level security,
-- as the tables' owner. PostgreSQL lets PUBLIC execute a new function, so
-- any role of the database could list every tenant's workspaces and
-- subscriptions. Only the roles relayr runs as may: the owner, and the
-- roles granted SELECT on relayr_followers (a replicas' role under RLS),
-- which relied on PUBLIC's grant until now. A role set up later is granted
-- it as the README says.
REVOKE EXECUTE ON FUNCTION relayr_followed() FROM PUBLIC;

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
		EXECUTE format('GRANT EXECUTE ON FUNCTION relayr_followed() TO %s', r);
	END LOOP;
END
$$;
