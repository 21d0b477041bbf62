package ledgersqlite

import (
	"testing"

	"github.com/relayr-go/relayr/core/follow/followtest"
)

// TestScenarios runs the followers' scenarios on a SQLite ledger, a temp
// file of its own per scenario, opened inside the scenario's bubble and
// closed when it ends.
func TestScenarios(t *testing.T) {
	t.Run("SQLite", func(t *testing.T) {
		followtest.Run(t, func(t *testing.T) followtest.Store {
			l := newLedger(t)
			return followtest.Store{Ledger: l, Log: l}
		})
	})
}
