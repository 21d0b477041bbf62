package ledgerpg

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/relayr-go/relayr/adapters/ledgerpg/pgtest"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
)

// A replica's role set up before 006, granted the tables there were, may
// record and look an item up through relayr_tracker_item_ids under RLS, and
// a key recorded before 006 is found through it.
func TestItemIDsAreKeptForTheReplicasRoleAndEarlierRecords(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	all, err := loadMigrations(migrationFS, "migration")
	if err != nil {
		t.Fatal(err)
	}
	schema := pgtest.Schema(t)
	admin := pgtest.Open(t, pgtest.Admin(t))
	if err := migrateSchema(ctx, admin, schema, all[:5]); err != nil {
		t.Fatal(err)
	}
	items := pgx.Identifier{schema, "relayr_tracker_items"}.Sanitize()
	if _, err := admin.Exec(ctx, `INSERT INTO `+items+` (tenant, workspace, kind, key, nonce, recorded, item_id)
		VALUES ('acme', 'ops', 'item', 'before', 'n', true, 'item-1')`); err != nil {
		t.Fatal(err)
	}
	replica := role(t, admin, schema, "SELECT, INSERT, UPDATE, DELETE ON ALL TABLES", "EXECUTE ON ALL FUNCTIONS")
	if err := migrateSchema(ctx, admin, schema, all); err != nil {
		t.Fatal(err)
	}
	l := New(pgtest.Open(t, replica), Options{Schema: schema, RLS: true})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(l.Ping(ctx))
	c, err := l.LookupItem(ctx, "acme", "ops", "item-1")
	if err != nil || c.Key.Key != "before" {
		t.Fatalf("a record from before 006: %+v %v", c, err)
	}
	now := time.Date(2026, 10, 17, 9, 30, 0, 0, time.UTC)
	k := ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindItem, Key: "after"}
	c, _, err = l.Claim(ctx, ledger.ClaimParams{Key: k, Now: now, RetakeAfter: 30 * time.Second})
	must(err)
	_, err = l.Record(ctx, ledger.RecordParams{Key: k, Nonce: c.Nonce, Ref: tracker.ItemRef{ID: "item-2"}, Now: now})
	must(err)
	c, err = l.LookupItem(ctx, "acme", "ops", "item-2")
	if err != nil || c.Key != k || !c.Recorded {
		t.Fatalf("a record as the replica's role: %+v %v", c, err)
	}
	// Another tenant sees nothing of acme's item ids.
	if _, err := l.LookupItem(ctx, "globex", "ops", "item-2"); err == nil {
		t.Fatal("globex found acme's item")
	}
	var enabled, active bool
	must(admin.QueryRow(ctx, `SELECT c.relrowsecurity, EXISTS (SELECT FROM pg_policies p WHERE p.schemaname = $1 AND p.tablename = c.relname)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = 'relayr_tracker_item_ids'`,
		schema).Scan(&enabled, &active))
	if !enabled || !active {
		t.Fatalf("relayr_tracker_item_ids: row-level security %v, a policy %v", enabled, active)
	}
}
