package memledger_test

import (
	"fmt"
	"testing"

	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/eventlog/eventlogtest"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/ledger/ledgertest"
	"github.com/relayr-go/relayr/core/ledger/memledger"
)

func TestContract(t *testing.T) {
	t.Run("Memory", func(t *testing.T) {
		t.Run("Ledger", func(t *testing.T) {
			ledgertest.Run(t, func(*testing.T) ledger.Ledger { return memledger.New() })
		})
		t.Run("EventLog", func(t *testing.T) {
			eventlogtest.Run(t, func(*testing.T) eventlog.Log { return memledger.New() })
		})
	})
}

func BenchmarkFiling(b *testing.B) {
	for _, p := range []int{1, 8} {
		b.Run(fmt.Sprintf("Memory/p%d", p), func(b *testing.B) {
			ledgertest.Filings(b, memledger.New(), p)
		})
	}
}

func TestOperatorContract(t *testing.T) {
	ledgertest.RunOperator(t, func(*testing.T) ledgertest.OperatorStore { return memledger.New() })
}
