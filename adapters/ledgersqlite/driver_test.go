package ledgersqlite

import (
	"testing"

	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/ledger/drivertest"
)

// TestDriver runs the driver conformance suite on the SQLite driver, a
// file of its own per case.
func TestDriver(t *testing.T) {
	drivertest.Run(t, func(t *testing.T) ledger.Driver {
		return newLedger(t).d
	})
}
