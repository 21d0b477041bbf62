package followtest_test

import (
	"testing"

	"github.com/relayr-go/relayr/core/follow/followtest"
	"github.com/relayr-go/relayr/core/ledger/memledger"
)

func TestScenarios(t *testing.T) {
	followtest.Run(t, func(t *testing.T) followtest.Store {
		l := memledger.New()
		return followtest.Store{Ledger: l, Log: l}
	})
}
