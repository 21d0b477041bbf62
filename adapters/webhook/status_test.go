package webhook_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/adapters/webhook"
	"github.com/relayr-go/relayr/core/deliver"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/ledger/memledger"
	"github.com/relayr-go/relayr/core/metrics"
	"github.com/relayr-go/relayr/fixtures/memnet"
)

// A subscriber that fails while its follower delivers to it shows in the
// follower's status and metrics, with why, until it takes the event.
func TestAFailingSubscriberShowsInItsFollowersStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		attempts := 0
		srv := memnet.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			attempts++
			if attempts < 3 {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		}))
		defer srv.Close()
		mem := memledger.New()
		m := metrics.NewMemory()
		lf := deliver.New(deliver.Config{Ledger: mem, Log: mem, Metrics: m, Holder: "a"})
		defer lf.Stop()
		if _, _, err := mem.Append(context.Background(), eventlog.AppendParams{Publisher: "rules", Event: eventlog.Event{
			ID: "e1", Tenant: "acme", Workspace: "ops", Type: "app:thing", Data: json.RawMessage(`{}`),
		}}); err != nil {
			t.Fatal(err)
		}
		f := ledger.Follower{Kind: ledger.LogFollower, Tenant: "acme", Workspace: "ops", Name: "rules"}
		sub := &webhook.Subscriber{URL: srv.URL + "/hook", Secret: "x", Client: srv.Client()}
		if err := lf.Follow(context.Background(), f, deliver.Subscription{Sink: sub}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		st, err := lf.Status(context.Background())
		if err != nil || len(st) != 1 {
			t.Fatalf("status %+v %v", st, err)
		}
		if s := st[0]; s.State != deliver.Retrying || s.Failures != 1 || !strings.Contains(s.LastError, "503") || s.Cursor != 0 || s.Head != 1 {
			t.Fatalf("status while the subscriber fails: %+v", s)
		}
		if n := m.Get(metrics.DeliveryFailures); n != 1 {
			t.Fatalf("failures counted %v, want 1", n)
		}
		time.Sleep(3 * time.Second) // the subscriber's backoff: 1 s, then 2 s
		synctest.Wait()
		st, _ = lf.Status(context.Background())
		if s := st[0]; s.State != deliver.Running || s.Failures != 0 || s.Cursor != 1 || m.Get(metrics.DeliveryFailures) != 2 {
			t.Fatalf("status after the subscriber took it: %+v, failures counted %v", s, m.Get(metrics.DeliveryFailures))
		}
	})
}
