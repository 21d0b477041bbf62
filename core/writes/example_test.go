package writes_test

import (
	"context"
	"fmt"

	"github.com/relayr-go/relayr/core/binding"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/faketracker"
	"github.com/relayr-go/relayr/core/ledger/memledger"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
)

// A run files its failure by key. However often it is retried, the tracker
// holds one item, and every retry answers it.
func Example() {
	fake := faketracker.New(faketracker.LikePlane, faketracker.WithProject("ops", "OPS"))
	ops := binding.Binding{Tenant: "acme", Workspace: "ops", Connector: &faketracker.Connector{Fake: fake}}
	w := writes.New(writes.Config{
		Ledger:      memledger.New(),
		Connections: binding.NewConnections(clock.System{}, tracker.StaticCredentials{"acme/fake": {Token: "key"}}, ops),
	})

	for attempt := 1; attempt <= 3; attempt++ {
		r, err := w.EnsureItem(context.Background(), writes.EnsureParams{
			Tenant: "acme", Workspace: "ops", Key: "ci/build-1234",
			Draft:       tracker.Draft{Title: "Build 1234 failed", Labels: []string{"ci"}},
			Correlation: "run-1234",
		})
		if err != nil {
			fmt.Println(writes.CodeOf(err), err)
			continue
		}
		fmt.Printf("attempt %d: %s %s\n", attempt, r.How, r.Item.Ref.Name)
	}
	perKey, _ := fake.Filed()
	fmt.Println("items filed under the key:", perKey["ci/build-1234"])
	// Output:
	// attempt 1: created OPS-1
	// attempt 2: existing OPS-1
	// attempt 3: existing OPS-1
	// items filed under the key: 1
}
