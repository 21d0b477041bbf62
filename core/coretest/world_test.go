package coretest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/binding"
	"github.com/relayr-go/relayr/core/budget"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/coretest"
	"github.com/relayr-go/relayr/core/faketracker"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/metrics"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
)

func TestAWorldOfNothingFilesToAPlaneLikeFakeOnAMemoryLedger(t *testing.T) {
	w := coretest.NewWorld(coretest.WorldOptions{})
	if w.Binding.Tenant != coretest.DefaultTenant || w.Binding.Workspace != coretest.DefaultWorkspace || w.Binding.Kind() != "fake" {
		t.Fatalf("binding %+v", w.Binding)
	}
	if w.Fake == nil || w.Memory == nil || w.Ledger != w.Memory || w.Clock != (clock.System{}) || w.Connections.Budget != nil {
		t.Fatalf("world %+v", w)
	}
	if _, ok := w.Credentials["acme/fake"]; !ok {
		t.Fatalf("credentials %v, want acme/fake's", w.Credentials)
	}
	if b, err := w.Connections.Binding("acme", "ops"); err != nil || b.Name() != "acme/ops" {
		t.Fatalf("the connections' binding: %+v, %v", b, err)
	}
	ctx := context.Background()
	p := writes.EnsureParams{Tenant: "acme", Workspace: "ops", Key: "k", Draft: tracker.Draft{Title: "x"}, Correlation: "run"}
	r, err := w.Writer.EnsureItem(ctx, p)
	if err != nil || r.How != writes.Created {
		t.Fatalf("filing: %+v, %v", r, err)
	}
	if perKey, _ := w.Fake.Filed(); perKey["k"] != 1 {
		t.Fatalf("filed %v, want k once in the fake", perKey)
	}
	if c, err := w.Memory.Lookup(ctx, ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindItem, Key: "k"}); err != nil || c.Ref.ID != r.Item.Ref.ID {
		t.Fatalf("the ledger's row %+v, %v", c, err)
	}
	if n := w.Connections.Asked("acme", "fake"); n != 1 {
		t.Fatalf("credentials asked %d times, want 1", n)
	}
}

func TestAWorldIsWhatItIsGiven(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	fake := faketracker.New(faketracker.LikeVikunja, faketracker.WithClock(clk))
	conn := &faketracker.Connector{Fake: fake, KindName: "other"}
	l := coretest.NewFailingRecord()
	bud := budget.New(clk, 40)
	creds := tracker.Credentials{Token: "tk", WebhookSecret: "s"}
	w := coretest.NewWorld(coretest.WorldOptions{
		Tenant: "t1", Workspace: "w1", Connector: conn, Credentials: creds, Ledger: l, Clock: clk, Budget: bud,
		Defaults: tracker.Draft{Labels: []string{"relayr"}},
	})
	if w.Binding.Name() != "t1/w1" || w.Binding.Connector != conn || w.Fake != nil || w.Memory != nil || w.Ledger != l || w.Clock != clk {
		t.Fatalf("world %+v", w)
	}
	if w.Credentials["t1/other"] != creds || w.Connections.Budget != bud {
		t.Fatalf("credentials %v, budget %v", w.Credentials, w.Connections.Budget)
	}
	ctx := context.Background()
	l.Arm()
	p := writes.EnsureParams{Tenant: "t1", Workspace: "w1", Key: "k", Draft: tracker.Draft{Title: "x"}, Correlation: "run"}
	if _, err := w.Writer.EnsureItem(ctx, p); err == nil {
		t.Fatal("the writer recorded on the armed ledger: it is not the world's")
	}
	clk.Advance(writes.DefaultRetakeAfter + time.Second) // the writer is on clk: the claim is retaken
	r, err := w.Writer.EnsureItem(ctx, p)
	if err != nil || r.How != writes.Found {
		t.Fatalf("the retry: %+v, %v; want the item found", r, err)
	}
	if len(r.Item.Labels) != 1 || r.Item.Labels[0] != "relayr" {
		t.Fatalf("labels %v, want the binding's defaults", r.Item.Labels)
	}
	if c, _, ok := w.Connections.Cached(w.Binding); !ok || c == nil {
		t.Fatal("the connections made no tracker")
	}
	if _, got, _ := w.Connections.Cached(w.Binding); got != creds {
		t.Fatalf("connected with %+v, want %+v", got, creds)
	}
	if conn.Connects() != 1 {
		t.Fatalf("connected %d times", conn.Connects())
	}
	if s := bud.Status(); len(s) == 0 {
		t.Fatal("the writer spent nothing of the budget")
	}
}

func TestAWorldsDriverIsReachedThroughACoretestConnector(t *testing.T) {
	fake := faketracker.New(faketracker.LikePlane)
	w := coretest.NewWorld(coretest.WorldOptions{Driver: fake})
	if w.Fake != fake {
		t.Fatal("a fake driver is not the world's Fake")
	}
	wrapped := struct{ tracker.Driver }{fake}
	w = coretest.NewWorld(coretest.WorldOptions{Driver: wrapped})
	if w.Fake != nil {
		t.Fatal("a wrapper was taken for a fake")
	}
	if c, ok := w.Binding.Connector.(coretest.Connector); !ok || c.Driver != tracker.Driver(wrapped) {
		t.Fatalf("connector %#v, want a coretest.Connector over the driver", w.Binding.Connector)
	}
}

func TestAWorldsWritesConfigIsKeptAndItsZeroFieldsAreTheWorlds(t *testing.T) {
	m := metrics.NewMemory()
	own := budget.New(clock.System{}, 40)
	w := coretest.NewWorld(coretest.WorldOptions{Writes: writes.Config{Metrics: m, Budget: own}})
	if w.Connections.Budget != nil {
		t.Fatal("the writer's own budget was given to the connections")
	}
	if _, err := w.Writer.EnsureItem(context.Background(), writes.EnsureParams{Tenant: "acme", Workspace: "ops", Key: "k", Draft: tracker.Draft{Title: "x"}}); err != nil {
		t.Fatal(err)
	}
	if len(own.Status()) == 0 {
		t.Fatal("the writer did not spend its own budget")
	}
}

func TestAWorldOfBindingsKeepsThemAllUnderTheCredentials(t *testing.T) {
	a := faketracker.New(faketracker.LikePlane)
	bs := []binding.Binding{
		{Tenant: "acme", Workspace: "a", Connector: coretest.Connector{Driver: a}},
		{Tenant: "acme", Workspace: "b", Connector: coretest.Connector{Driver: faketracker.New(faketracker.LikePlane), KindName: "other"}},
	}
	w := coretest.NewWorld(coretest.WorldOptions{Tenant: "ignored", Bindings: bs, Credentials: tracker.Credentials{Token: "tk"}})
	if w.Binding.Name() != "acme/a" || w.Fake != nil || len(w.Connections.Bindings()) != 2 {
		t.Fatalf("world %+v, bindings %v", w, w.Connections.Bindings())
	}
	if len(w.Credentials) != 2 || w.Credentials["acme/fake"].Token != "tk" || w.Credentials["acme/other"].Token != "tk" {
		t.Fatalf("credentials %v", w.Credentials)
	}
	for _, ws := range []string{"a", "b"} {
		if _, err := w.Writer.EnsureItem(context.Background(), writes.EnsureParams{Tenant: "acme", Workspace: ws, Key: "k", Draft: tracker.Draft{Title: "x"}}); err != nil {
			t.Fatalf("%s: %v", ws, err)
		}
	}
	if perKey, _ := a.Filed(); perKey["k"] != 1 {
		t.Fatalf("the first binding's tracker filed %v", perKey)
	}
	if _, err := w.Connections.Binding("ignored", "ops"); !errors.Is(err, binding.ErrUnbound) {
		t.Fatalf("the one binding was made beside the bindings: %v", err)
	}
}
