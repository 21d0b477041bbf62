package binding_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/core/binding"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/faketracker"
	"github.com/relayr-go/relayr/core/tracker"
)

type countingStore struct {
	n     int
	creds tracker.Credentials
}

func (s *countingStore) Credentials(context.Context, string, string) (tracker.Credentials, error) {
	s.n++
	return s.creds, nil
}

// setUp runs on the system clock; a test that lets time pass runs it in a
// synctest bubble, where that time is virtual.
func setUp() (*binding.Connections, binding.Binding, *countingStore, *faketracker.Connector) {
	conn := &faketracker.Connector{Fake: faketracker.New(faketracker.LikePlane)}
	b := binding.Binding{Tenant: "acme", Workspace: "ops", Connector: conn}
	store := &countingStore{creds: tracker.Credentials{Token: "k1", WebhookSecret: "s1"}}
	return binding.NewConnections(clock.System{}, store, b), b, store, conn
}

func TestCredentialsAreAskedAtMostEveryTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs, b, store, _ := setUp()
		ctx := context.Background()
		for range 3 {
			if _, err := cs.Tracker(ctx, b); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Minute)
		}
		if store.n != 1 {
			t.Fatalf("asked %d times within the TTL", store.n)
		}
		time.Sleep(binding.CredentialsTTL)
		if _, err := cs.Tracker(ctx, b); err != nil {
			t.Fatal(err)
		}
		if store.n != 2 || cs.Asked("acme", "fake") != 2 {
			t.Fatalf("asked %d times after the TTL, want 2", store.n)
		}
	})
}

func TestDoAsksAgainAtOnceAfterUnauthorizedAndRetriesOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs, b, store, conn := setUp()
		calls := 0
		err := cs.Do(context.Background(), b, func(context.Context, *tracker.Tracker) error {
			calls++
			return tracker.ErrUnauthorized
		})
		if !errors.Is(err, tracker.ErrUnauthorized) || calls != 2 || store.n != 2 {
			t.Fatalf("err %v, calls %d, asked %d: want one retry after asking again", err, calls, store.n)
		}
		if conn.Connects() != 1 {
			t.Fatalf("connected %d times: the same credentials need no new connection", conn.Connects())
		}
		store.creds.Token = "k2" // rotated
		_ = cs.Do(context.Background(), b, func(context.Context, *tracker.Tracker) error { return tracker.ErrUnauthorized })
		if conn.Connects() != 2 {
			t.Fatalf("connected %d times: rotated credentials need a new connection", conn.Connects())
		}
	})
}

func TestLastCredentialsNeverAsk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs, b, store, _ := setUp()
		if _, ok := cs.LastCredentials(b); ok || store.n != 0 {
			t.Fatal("answered credentials never asked for, or asked")
		}
		if _, err := cs.Tracker(context.Background(), b); err != nil {
			t.Fatal(err)
		}
		c, ok := cs.LastCredentials(b)
		if !ok || c.WebhookSecret != "s1" || store.n != 1 {
			t.Fatalf("last credentials %v %v, asked %d", c, ok, store.n)
		}
	})
}

func TestAnUnboundWorkspaceIsErrUnbound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs, _, _, _ := setUp()
		if _, err := cs.Binding("acme", "nowhere"); !errors.Is(err, binding.ErrUnbound) {
			t.Fatalf("err %v", err)
		}
	})
}

// A "/" in a request's workspace does not reach another tenant's binding:
// tenant "acme" with workspace "x/ops" is not tenant "acme/x"'s "ops".
func TestASlashInANameReachesNoOtherTenantsBinding(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		theirs := binding.Binding{Tenant: "acme/x", Workspace: "ops", Connector: &faketracker.Connector{Fake: faketracker.New(faketracker.LikePlane)}}
		cs := binding.NewConnections(clock.System{}, &countingStore{}, theirs)
		if _, err := cs.Binding("acme", "x/ops"); !errors.Is(err, binding.ErrUnbound) {
			t.Fatalf("tenant acme's workspace x/ops answered %v, want ErrUnbound", err)
		}
		if b, err := cs.Binding("acme/x", "ops"); err != nil || b.Tenant != "acme/x" {
			t.Fatalf("the binding's own names answered %+v, %v", b, err)
		}
	})
}
