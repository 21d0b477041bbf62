package ledgerpg_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/relayr-go/relayr/adapters/ledgerpg"
	"github.com/relayr-go/relayr/adapters/ledgerpg/pgtest"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/eventlog/eventlogtest"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/ledger/ledgertest"
	"github.com/relayr-go/relayr/core/tracker"
)

var t0 = time.Date(2026, 10, 17, 9, 30, 0, 0, time.UTC)

// store is one test's ledger on a schema of its own.
type store struct {
	*ledgerpg.Ledger
	schema string
	admin  *pgxpool.Pool
	pool   *pgxpool.Pool // the ledger's own: the admin's, or the restricted role's
}

// newStore migrates a fresh schema (twice: migrations are idempotent) and
// opens a ledger on it, as the restricted role when rls is set.
func newStore(t testing.TB, rls bool, tune func(*pgxpool.Config)) *store {
	t.Helper()
	ctx := t.Context()
	schema := pgtest.Schema(t)
	admin := pgtest.Open(t, pgtest.Admin(t))
	for range 2 {
		if err := ledgerpg.MigrateSchema(ctx, admin, schema); err != nil {
			t.Fatal(err)
		}
	}
	cfg := pgtest.Admin(t)
	if rls {
		cfg = pgtest.Restricted(t, schema)
	}
	if tune != nil {
		tune(cfg)
	}
	pool := pgtest.Open(t, cfg)
	l := ledgerpg.New(pool, ledgerpg.Options{Schema: schema, RLS: rls})
	if err := l.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	return &store{Ledger: l, schema: schema, admin: admin, pool: pool}
}

func TestContract(t *testing.T) {
	for _, run := range pgtest.Modes {
		t.Run(run.Name, func(t *testing.T) {
			t.Parallel()
			t.Run("Ledger", func(t *testing.T) {
				ledgertest.Run(t, func(t *testing.T) ledger.Ledger { return newStore(t, run.RLS, nil) })
			})
			t.Run("EventLog", func(t *testing.T) {
				eventlogtest.Run(t, func(t *testing.T) eventlog.Log { return newStore(t, run.RLS, nil) })
			})
			t.Run("Operator", func(t *testing.T) {
				ledgertest.RunOperator(t, func(t *testing.T) ledgertest.OperatorStore { return newStore(t, run.RLS, nil) })
			})
		})
	}
}

var tables = []string{"relayr_tracker_items", "relayr_tracker_writes", "relayr_tracker_snapshots", "relayr_tracker_followers",
	"relayr_followers", "relayr_tracker_dead_letters", "relayr_dead_letters", "relayr_events"}

func TestRestrictedRoleIsBoundByRowLevelSecurity(t *testing.T) {
	t.Parallel()
	s := newStore(t, true, nil)
	ctx := t.Context()
	var (
		user                 string
		super, bypass, owner bool
	)
	err := s.pool.QueryRow(ctx, `SELECT current_user, r.rolsuper, r.rolbypassrls,
			EXISTS (SELECT FROM pg_tables WHERE schemaname = $1 AND tableowner = current_user)
		FROM pg_roles r WHERE r.rolname = current_user`, s.schema).Scan(&user, &super, &bypass, &owner)
	if err != nil {
		t.Fatal(err)
	}
	if user != pgtest.RestrictedRole || super || bypass || owner {
		t.Fatalf("the RLS run connects as %s: superuser %v, bypassrls %v, owns tables %v", user, super, bypass, owner)
	}
	for _, table := range tables {
		var enabled, active bool
		err := s.pool.QueryRow(ctx, `SELECT c.relrowsecurity, row_security_active(c.oid)
			FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2`,
			s.schema, table).Scan(&enabled, &active)
		if err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		if !enabled || !active {
			t.Errorf("%s: row-level security enabled %v, active for the role %v", table, enabled, active)
		}
	}
}

// seed writes one of everything for tenant through the ledger.
func seed(t *testing.T, l ledger.Ledger, log eventlog.Log, tenant string) {
	t.Helper()
	ctx := t.Context()
	k := ledger.Key{Tenant: tenant, Workspace: "ops", Kind: ledger.KindItem, Key: "k"}
	c, _, err := l.Claim(ctx, ledger.ClaimParams{Key: k, Correlation: "run", Now: t0, RetakeAfter: 30 * time.Second})
	must(t, err)
	_, err = l.Record(ctx, ledger.RecordParams{Key: k, Nonce: c.Nonce, Ref: tracker.ItemRef{ID: "item"}, Now: t0})
	must(t, err)
	_, err = l.CountWrite(ctx, ledger.WriteParams{Tenant: tenant, Workspace: "ops", ItemID: "item", Now: t0, Window: time.Hour, Limit: 20})
	must(t, err)
	must(t, l.SaveSnapshots(ctx, []ledger.SnapshotRow{{Tenant: tenant, Workspace: "ops", ItemID: "item", Item: []byte("{}"), UpdatedAt: t0}}))
	for _, kind := range []ledger.FollowerKind{ledger.TrackerFollower, ledger.LogFollower} {
		f := ledger.Follower{Kind: kind, Tenant: tenant, Workspace: "ops", Name: "f"}
		_, err = l.TakeLease(ctx, ledger.LeaseParams{Follower: f, Holder: "h", Now: t0, TTL: time.Minute})
		must(t, err)
		must(t, l.SaveCursor(ctx, f, ledger.Cursor{Seq: 1}))
		_, err = l.DeadLetter(ctx, ledger.DeadLetter{Follower: f, ID: "1", At: t0})
		must(t, err)
	}
	_, _, err = log.Append(ctx, eventlog.AppendParams{Publisher: "rules", Event: eventlog.Event{ID: "e", Tenant: tenant, Workspace: "ops", Type: "app:x"}})
	must(t, err)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestTenantIsolationUnderRLS(t *testing.T) {
	t.Parallel()
	s := newStore(t, true, nil)
	ctx := t.Context()
	seed(t, s, s, "tenant-a")
	seed(t, s, s, "tenant-b")

	// Each statement in a transaction of its own, naming tenant A.
	asA := func(sql string) (int64, error) {
		tx, err := s.pool.Begin(ctx)
		must(t, err)
		defer func() { _ = tx.Rollback(ctx) }()
		if _, err := tx.Exec(ctx, `SELECT set_config('relayr.tenant', 'tenant-a', true)`); err != nil {
			return 0, err
		}
		tag, err := tx.Exec(ctx, sql)
		if err != nil {
			return 0, err
		}
		return tag.RowsAffected(), tx.Commit(ctx)
	}
	count := func(sql string) int64 {
		t.Helper()
		var n int64
		must(t, s.admin.QueryRow(ctx, sql).Scan(&n))
		return n
	}
	for _, table := range tables {
		q := pgx.Identifier{s.schema, table}.Sanitize()
		t.Run(table, func(t *testing.T) {
			var seen int64
			tx, err := s.pool.Begin(ctx)
			must(t, err)
			_, err = tx.Exec(ctx, `SELECT set_config('relayr.tenant', 'tenant-a', true)`)
			must(t, err)
			must(t, tx.QueryRow(ctx, `SELECT count(*) FROM `+q+` WHERE tenant = 'tenant-b'`).Scan(&seen))
			var own int64
			must(t, tx.QueryRow(ctx, `SELECT count(*) FROM `+q).Scan(&own))
			_ = tx.Rollback(ctx)
			if seen != 0 || own == 0 {
				t.Fatalf("tenant A reads %d of tenant B's rows and %d of all", seen, own)
			}
			if n, err := asA(`UPDATE ` + q + ` SET tenant = tenant WHERE tenant = 'tenant-b'`); err != nil || n != 0 {
				t.Fatalf("tenant A changed %d of tenant B's rows (%v)", n, err)
			}
			if n, err := asA(`DELETE FROM ` + q + ` WHERE tenant = 'tenant-b'`); err != nil || n != 0 {
				t.Fatalf("tenant A deleted %d of tenant B's rows (%v)", n, err)
			}
			if _, err := asA(`UPDATE ` + q + ` SET tenant = 'tenant-b' WHERE tenant = 'tenant-a'`); err == nil {
				t.Fatal("tenant A moved its rows to tenant B")
			}
			if count(`SELECT count(*) FROM `+q+` WHERE tenant = 'tenant-b'`) == 0 {
				t.Fatal("tenant B's rows are gone")
			}
			// A connection that names no tenant sees nothing.
			var none int64
			must(t, s.pool.QueryRow(ctx, `SELECT count(*) FROM `+q).Scan(&none))
			if none != 0 {
				t.Fatalf("a connection naming no tenant sees %d rows", none)
			}
		})
	}
	inserts := map[string]string{
		"relayr_tracker_items":        `(tenant, workspace, kind, key, nonce) VALUES ('tenant-b', 'ops', 'item', 'new', 'n')`,
		"relayr_tracker_writes":       `(tenant, workspace, item_id, ats, counted) VALUES ('tenant-b', 'ops', 'new', '{}', true)`,
		"relayr_tracker_snapshots":    `(tenant, workspace, item_id, item) VALUES ('tenant-b', 'ops', 'new', '')`,
		"relayr_tracker_followers":    `(tenant, workspace, name) VALUES ('tenant-b', 'ops', 'new')`,
		"relayr_followers":            `(tenant, workspace, name) VALUES ('tenant-b', 'ops', 'new')`,
		"relayr_tracker_dead_letters": `(tenant, workspace, name, event_id, event) VALUES ('tenant-b', 'ops', 'f', 'new', '')`,
		"relayr_dead_letters":         `(tenant, workspace, name, event_id, event) VALUES ('tenant-b', 'ops', 'f', 'new', '')`,
		"relayr_events":               `(tenant, workspace, seq, id, type, data) VALUES ('tenant-b', 'ops', 99, 'new', 'app:x', '')`,
	}
	for table, values := range inserts {
		if _, err := asA(`INSERT INTO ` + pgx.Identifier{s.schema, table}.Sanitize() + ` ` + values); err == nil {
			t.Errorf("%s: tenant A inserted a row naming tenant B", table)
		}
		if _, err := asA(`INSERT INTO ` + pgx.Identifier{s.schema, table}.Sanitize() + ` ` + strings.Replace(values, "'tenant-b'", "'tenant-a'", 1)); err != nil {
			t.Errorf("%s: tenant A could not insert its own row: %v", table, err)
		}
	}
	// Through the ledger, B's rows are intact after all of it.
	c, err := s.Lookup(ctx, ledger.Key{Tenant: "tenant-b", Workspace: "ops", Kind: ledger.KindItem, Key: "k"})
	if err != nil || !c.Recorded {
		t.Fatalf("tenant B's claim after the attempts: %+v %v", c, err)
	}
	followed, err := s.Followed(ctx)
	must(t, err)
	if len(followed) != 3 { // A's and B's "f", and A's "new"
		t.Fatalf("Followed under RLS answered %+v", followed)
	}
}

func TestMigrationsRunTwiceApplyEachOnce(t *testing.T) {
	t.Parallel()
	s := newStore(t, false, nil) // migrated twice already
	ctx := t.Context()
	var n, max int
	must(t, s.admin.QueryRow(ctx, `SELECT count(*), max(version) FROM `+pgx.Identifier{s.schema, "relayr_migrations"}.Sanitize()).Scan(&n, &max))
	if n != max || n < 1 {
		t.Fatalf("%d migration rows up to version %d after migrating twice", n, max)
	}
}

func TestConcurrentMigrationsApplyEachOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := pgtest.Schema(t)
	// Each migrator on a pool of its own, as two processes would be.
	pools := []*pgxpool.Pool{pgtest.Open(t, pgtest.Admin(t)), pgtest.Open(t, pgtest.Admin(t)), pgtest.Open(t, pgtest.Admin(t))}
	var wg sync.WaitGroup
	errs := make([]error, len(pools))
	for i, p := range pools {
		wg.Go(func() { errs[i] = ledgerpg.MigrateSchema(ctx, p, schema) })
	}
	wg.Wait()
	for _, err := range errs {
		must(t, err)
	}
	var n, max int
	must(t, pools[0].QueryRow(ctx, `SELECT count(*), max(version) FROM `+pgx.Identifier{schema, "relayr_migrations"}.Sanitize()).Scan(&n, &max))
	if n != max {
		t.Fatalf("%d migration rows up to version %d", n, max)
	}
	must(t, ledgerpg.New(pools[1], ledgerpg.Options{Schema: schema}).Ping(ctx))
}

func TestPingRefusesAModeTheRoleDoesNotMatch(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newStore(t, false, nil)
	if err := ledgerpg.New(s.admin, ledgerpg.Options{Schema: s.schema, RLS: true}).Ping(ctx); err == nil {
		t.Error("RLS on as a role the policies don't bind: Ping passed")
	}
	restricted := pgtest.Open(t, pgtest.Restricted(t, s.schema))
	if err := ledgerpg.New(restricted, ledgerpg.Options{Schema: s.schema}).Ping(ctx); err == nil {
		t.Error("RLS off as a role the policies bind: Ping passed")
	}
	if err := ledgerpg.New(s.admin, ledgerpg.Options{Schema: pgtest.Schema(t)}).Ping(ctx); err == nil {
		t.Error("an unmigrated schema: Ping passed")
	}
}

// A newer relayr migrates the schema while this one serves (a rolling
// upgrade): this one stays ready; an older schema is not.
func TestPingIsReadyOnASchemaANewerRelayrMigrated(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newStore(t, false, nil)
	migrations := pgx.Identifier{s.schema, "relayr_migrations"}.Sanitize()
	var top int
	must(t, s.admin.QueryRow(ctx, `SELECT max(version) FROM `+migrations).Scan(&top))
	if _, err := s.admin.Exec(ctx, `INSERT INTO `+migrations+` (version, name) VALUES ($1, 'a_newer_relayrs')`, top+1); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("a schema one migration ahead: %v", err)
	}
	if _, err := s.admin.Exec(ctx, `DELETE FROM `+migrations+` WHERE version >= $1`, top); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(ctx); err == nil {
		t.Fatal("a schema one migration behind: Ping passed")
	}
}

func TestKilledConnectionFailsOneCallAsUnavailable(t *testing.T) {
	for _, mode := range pgtest.Modes {
		t.Run(mode.Name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t, mode.RLS, func(cfg *pgxpool.Config) {
				cfg.MaxConns = 1
				// No health check before a call: the call itself meets the
				// dead connection, as one would whose server went away.
				cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
			})
			ctx := t.Context()
			var pid int32
			must(t, s.pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid))
			var killed bool
			must(t, s.admin.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, pid).Scan(&killed))
			if !killed {
				t.Fatal("the backend was not terminated")
			}
			k := ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindItem, Key: "k"}
			p := ledger.ClaimParams{Key: k, Now: t0, RetakeAfter: 30 * time.Second}
			_, _, err := s.Claim(ctx, p)
			if !errors.Is(err, ledger.ErrUnavailable) {
				t.Fatalf("the call on a killed connection: %v, want ErrUnavailable", err)
			}
			if _, o, err := s.Claim(ctx, p); err != nil || o != ledger.Fresh {
				t.Fatalf("the next call: %v %v, want a fresh claim", o, err)
			}
		})
	}
}

func TestClosedLedgerAnswersErrClosed(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newStore(t, false, nil)
	l, err := ledgerpg.Open(ctx, pgtest.Admin(t).ConnString(), ledgerpg.Options{Schema: s.schema})
	must(t, err)
	l.Close()
	l.Close()
	// A ledger on a pool its caller closed answers the same.
	pool := pgtest.Open(t, pgtest.Admin(t))
	onClosed := ledgerpg.New(pool, ledgerpg.Options{Schema: s.schema})
	pool.Close()
	k := ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindItem, Key: "k"}
	for name, l := range map[string]*ledgerpg.Ledger{"closed ledger": l, "closed pool": onClosed} {
		if _, _, err := l.Claim(ctx, ledger.ClaimParams{Key: k, Now: t0, RetakeAfter: time.Second}); !errors.Is(err, ledger.ErrClosed) {
			t.Errorf("%s: Claim: %v, want ErrClosed", name, err)
		}
		if _, err := l.Followed(ctx); !errors.Is(err, ledger.ErrClosed) {
			t.Errorf("%s: Followed: %v, want ErrClosed", name, err)
		}
		if _, _, err := l.Append(ctx, eventlog.AppendParams{Event: eventlog.Event{ID: "e", Tenant: "a", Workspace: "w", Type: "app:x"}}); !errors.Is(err, ledger.ErrClosed) {
			t.Errorf("%s: Append: %v, want ErrClosed", name, err)
		}
	}
}

func TestOpenMigratesWhenAsked(t *testing.T) {
	t.Parallel()
	schema := pgtest.Schema(t)
	l, err := ledgerpg.Open(t.Context(), pgtest.Admin(t).ConnString(), ledgerpg.Options{Schema: schema, Migrate: true})
	must(t, err)
	defer l.Close()
	must(t, l.Ping(t.Context()))
}
