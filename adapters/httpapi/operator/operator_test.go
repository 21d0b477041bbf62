package operator_test

import (
	"testing"

	"github.com/relayr-go/relayr/adapters/httpapi"
	"github.com/relayr-go/relayr/adapters/httpapi/operator"
)

// TestThePageIsWhereTheAPIMountsIt: the API serves Config.UI at UIPath,
// and the page dispatches its own paths under Path.
func TestThePageIsWhereTheAPIMountsIt(t *testing.T) {
	if operator.Path != httpapi.UIPath {
		t.Fatalf("the page serves %s, the API mounts it at %s", operator.Path, httpapi.UIPath)
	}
}
