package memledger

import (
	"testing"

	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/ledger/drivertest"
)

func TestDriver(t *testing.T) {
	drivertest.Run(t, func(*testing.T) ledger.Driver { return newDriver() })
}
