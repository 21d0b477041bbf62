package natsjs_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/relayr-go/relayr/adapters/natsjs"
	"github.com/relayr-go/relayr/core/deliver"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/follow"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/ledger/memledger"
)

// Each event is published on the prefix, the tenant, the workspace and its
// type, the type's colon made a token separator.
func ExampleSubject() {
	subj, _ := natsjs.Subject("relayr", eventlog.Event{Tenant: "acme", Workspace: "ops", Type: "tracker:item_changed"})
	fmt.Println(subj)
	fmt.Println(natsjs.SubsetOf(subj, "relayr.acme.>"))
	// Output:
	// relayr.acme.ops.tracker.item_changed
	// true
}

// A subscription's log follower delivers a workspace's events into a
// stream; the follower's cursor moves after the stream's ack.
func ExampleSink() {
	ctx := context.Background()
	target := natsjs.Target{
		Servers:       []string{"nats://127.0.0.1:4222"},
		Stream:        "RELAYR",
		Prefix:        "relayr",
		MinDuplicates: follow.DefaultLeaseTTL, // a replica that lost its lease may publish again within it
	}
	sink := natsjs.NewSink(target, natsjs.SinkOptions{AckWait: 5 * time.Second})
	defer sink.Close()

	store := memledger.New()
	followers := deliver.New(deliver.Config{Ledger: store, Log: store})
	defer followers.Stop()
	f := ledger.Follower{Kind: ledger.LogFollower, Tenant: "acme", Workspace: "ops", Name: "broker"}
	if err := followers.Follow(ctx, f, deliver.Subscription{Sink: sink}); err != nil {
		log.Fatal(err)
	}
}
