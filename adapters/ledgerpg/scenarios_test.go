package ledgerpg_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/relayr-go/relayr/adapters/ledgerpg/pgtest"
	"github.com/relayr-go/relayr/core/follow/followtest"
)

// TestScenarios runs the followers' scenarios on PostgreSQL, a schema of
// its own per scenario, as the admin and as the role RLS binds. The store
// and its pool are opened inside the scenario's bubble and closed (with the
// pool's health check) by the cleanups newStore registers there.
func TestScenarios(t *testing.T) {
	for _, run := range pgtest.Modes {
		t.Run(run.Name, func(t *testing.T) {
			t.Parallel()
			followtest.Run(t, func(t *testing.T) followtest.Store {
				s := newStore(t, run.RLS, withoutFlushWait)
				return followtest.Store{Ledger: s, Log: s}
			})
		})
	}
}

// withoutFlushWait has each commit return before its WAL reaches disk.
// Virtual time packs a day of polls into some 30,000 lease and cursor
// writes, and waiting for a flush on each would take most of a minute; what
// a commit makes visible, and when, is unchanged, only durability across a
// server crash, which no scenario needs. Any role may set it, so the RLS
// run gets it too.
func withoutFlushWait(cfg *pgxpool.Config) {
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
}

// TestFigureReplicas runs the replicas' scenario on PostgreSQL for `make
// bench`, whose FIGURE lines give the lease spread after three replicas
// start, the takeover after a kill and the key's worst minute (ADR-1002).
func TestFigureReplicas(t *testing.T) {
	followtest.Replicas(t, func(t *testing.T) followtest.Store {
		s := newStore(t, false, withoutFlushWait)
		return followtest.Store{Ledger: s, Log: s}
	})
}
