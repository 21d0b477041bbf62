package deliver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/relayr-go/relayr/core/deliver"
	"github.com/relayr-go/relayr/core/deliver/memsink"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/ledger/memledger"
)

// A subscription's log follower relays a workspace's log into its sink,
// in order, each event once, from its cursor in the ledger.
func Example() {
	mem := memledger.New()
	log := eventlog.NewNotifying(mem) // wakes the follower at each append
	sink := &memsink.Sink{}
	lf := deliver.New(deliver.Config{Ledger: mem, Log: log, Logger: slog.New(slog.DiscardHandler)})
	defer lf.Stop()
	f := ledger.Follower{Kind: ledger.LogFollower, Tenant: "acme", Workspace: "ops", Name: "rules"}
	if err := lf.Follow(context.Background(), f, deliver.Subscription{Sink: sink}); err != nil {
		fmt.Println(err)
		return
	}
	for i := range 3 {
		_, _, _ = log.Append(context.Background(), eventlog.AppendParams{Publisher: "rules", Event: eventlog.Event{
			ID: fmt.Sprintf("evt_%d", i+1), Tenant: "acme", Workspace: "ops", Type: "app:deployed", Data: json.RawMessage(`{}`), At: time.Now(),
		}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sink.Wait(ctx, 3); err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range sink.Taken() {
		fmt.Println(e.Seq, e.ID)
	}
	// Output:
	// 1 evt_1
	// 2 evt_2
	// 3 evt_3
}
