package ledgerpg

import (
	"testing"

	"github.com/relayr-go/relayr/adapters/ledgerpg/pgtest"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/ledger/drivertest"
)

// newTestLedger opens a ledger on a fresh schema of t's own, as the role
// row-level security binds when rls is set.
func newTestLedger(t *testing.T, rls bool) *Ledger {
	t.Helper()
	schema := pgtest.Schema(t)
	admin := pgtest.Open(t, pgtest.Admin(t))
	if err := MigrateSchema(t.Context(), admin, schema); err != nil {
		t.Fatal(err)
	}
	cfg := pgtest.Admin(t)
	if rls {
		cfg = pgtest.Restricted(t, schema)
	}
	return New(pgtest.Open(t, cfg), Options{Schema: schema, RLS: rls})
}

// TestDriver runs the drivers' conformance suite on the PostgreSQL driver,
// with and without row-level security.
func TestDriver(t *testing.T) {
	for _, run := range pgtest.Modes {
		t.Run(run.Name, func(t *testing.T) {
			t.Parallel()
			drivertest.Run(t, func(t *testing.T) ledger.Driver { return newTestLedger(t, run.RLS).d })
		})
	}
}
