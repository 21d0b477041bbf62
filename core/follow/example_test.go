package follow_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/relayr-go/relayr/core/binding"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/faketracker"
	"github.com/relayr-go/relayr/core/follow"
	"github.com/relayr-go/relayr/core/ledger/memledger"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
)

// A run files an item once by key; a person closes it and comments; the
// follower publishes both, in the run's chain, and never relayr's own
// writes. A process runs the followers with Start; PollOnce reads once, now.
func Example() {
	ctx := context.Background()
	store := memledger.New() // the ledger and the event log
	fake := faketracker.New(faketracker.LikePlane)
	b := binding.Binding{Tenant: "acme", Workspace: "ops", Connector: &faketracker.Connector{Fake: fake}}
	conns := binding.NewConnections(clock.System{}, tracker.StaticCredentials{"acme/fake": {Token: "key"}}, b)
	w := writes.New(writes.Config{Ledger: store, Connections: conns})
	fs := follow.New(follow.Config{Ledger: store, Log: store, Connections: conns, Logger: slog.New(slog.DiscardHandler)})

	filed, err := w.EnsureItem(ctx, writes.EnsureParams{Tenant: "acme", Workspace: "ops", Key: "build-42", Draft: tracker.Draft{Title: "Build 42 failed"}, Correlation: "run-7"})
	if err != nil {
		panic(err)
	}
	if err := fs.PollOnce(ctx, "acme", "ops"); err != nil { // the first read seeds silently
		panic(err)
	}
	_ = fake.SetState(filed.Item.Ref.ID, tracker.Done)
	_ = fake.PersonComment(ctx, filed.Item.Ref.ID, "fixed by a revert")
	if _, err := w.Update(ctx, writes.UpdateParams{Tenant: "acme", Workspace: "ops", Key: "build-42", Patch: tracker.Patch{Title: new("Build 42 failed (reverted)")}}); err != nil {
		panic(err)
	}
	if err := fs.PollOnce(ctx, "acme", "ops"); err != nil {
		panic(err)
	}

	events, _ := store.Read(ctx, "acme", "ops", 0, 100)
	for _, e := range events {
		d, _ := follow.DataOf(e)
		switch e.Type {
		case follow.TypeItemChanged:
			fmt.Println(e.Type, d.Item.Key, d.Field, string(d.Old), "->", string(d.New), "in", e.Correlation)
		case follow.TypeItemCommented:
			fmt.Println(e.Type, d.Item.Key, d.Comment.Body, "in", e.Correlation)
		}
	}
	// Output:
	// tracker:item_changed build-42 state "backlog" -> "done" in run-7
	// tracker:item_commented build-42 fixed by a revert in run-7
}
