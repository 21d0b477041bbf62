package lease_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/lease"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/ledger/memledger"
)

var f = ledger.Follower{Kind: ledger.LogFollower, Tenant: "acme", Workspace: "ops", Name: "rules"}

// TestOneHolderAtATime: a lease taken is refused to another holder until
// it is released or lapses; a renewal keeps it; a holder whose lease was
// taken cannot renew it.
func TestOneHolderAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memledger.New()
		ctx := context.Background()
		a := &lease.Lease{Ledger: mem, Clock: clock.System{}, Follower: f, Holder: "a", TTL: lease.DefaultTTL}
		b := &lease.Lease{Ledger: mem, Clock: clock.System{}, Follower: f, Holder: "b", TTL: lease.DefaultTTL}
		if err := a.Take(ctx); err != nil || !a.Held() {
			t.Fatalf("take: %v, held %v", err, a.Held())
		}
		if want := time.Now().Add(lease.DefaultTTL); !a.Expires().Equal(want) {
			t.Fatalf("expires %s, want %s", a.Expires(), want)
		}
		if err := b.Take(ctx); !errors.Is(err, ledger.ErrLeaseHeld) || b.Held() {
			t.Fatalf("a second holder's take: %v, want ErrLeaseHeld", err)
		}
		time.Sleep(lease.RenewEvery(lease.DefaultTTL))
		if err := a.Renew(ctx); err != nil || !a.Expires().Equal(time.Now().Add(lease.DefaultTTL)) {
			t.Fatalf("renew: %v, expires %s", err, a.Expires())
		}
		a.Release(ctx)
		if a.Held() {
			t.Fatal("held after its release")
		}
		if err := b.Take(ctx); err != nil {
			t.Fatalf("a take after the release: %v", err)
		}
		// b's lease lapses unrenewed: a takes it, and b can no longer renew.
		time.Sleep(lease.DefaultTTL + time.Second)
		if err := a.Take(ctx); err != nil {
			t.Fatalf("a take after the lease lapsed: %v", err)
		}
		if err := b.Renew(ctx); err == nil || b.Held() {
			t.Fatalf("a renewal of a lease taken over: %v, held %v", err, b.Held())
		}
		a.Drop()
		if a.Held() {
			t.Fatal("held after Drop")
		}
	})
}

func TestHoldersAreNamedApart(t *testing.T) {
	a, b := lease.NewHolder(), lease.NewHolder()
	if a == b || !strings.HasPrefix(a, "relayr-") || len(a) != len("relayr-")+16 {
		t.Fatalf("holders %q and %q", a, b)
	}
}
