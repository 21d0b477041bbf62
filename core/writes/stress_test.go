package writes_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/coretest"
	"github.com/relayr-go/relayr/core/faketracker"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
)

// TestExactlyOnceUnderFaults: 200 keys, 16 goroutines each retrying every
// key until it succeeds, while the tracker is rate limited, unavailable,
// hangs past the 20 s bound and dies between its create and the record. At
// the end every key has exactly one item and one record. It runs on
// synctest's virtual time, so the bound, the 30 s retakes and the retry
// waits pass instantly.
func TestExactlyOnceUnderFaults(t *testing.T) {
	for _, c := range []struct {
		name    string
		flavour faketracker.Flavour
	}{{"LikeVikunja", faketracker.LikeVikunja}, {"LikePlane", faketracker.LikePlane}} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				stress(t, c.flavour)
			})
		})
	}
}

func stress(t *testing.T, flavour faketracker.Flavour) {
	const keys, workers = 200, 16
	clk := clock.System{} // virtual inside the bubble
	fake := faketracker.New(flavour, faketracker.WithClock(clk), faketracker.WithChaos(faketracker.Chaos{P: 0.25, Seed: 7}))
	wd := coretest.NewWorld(coretest.WorldOptions{Driver: fake, Clock: clk})
	led, w := wd.Memory, wd.Writer

	var attempts atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range keys {
				key := fmt.Sprintf("key-%03d", (i+g*13)%keys)
				for {
					attempts.Add(1)
					_, err := w.EnsureItem(context.Background(), writes.EnsureParams{
						Tenant: "acme", Workspace: "ops", Key: key,
						Draft: tracker.Draft{Title: "Build failed: " + key, Labels: []string{"ci"}}, Correlation: fmt.Sprintf("run-%d", g),
					})
					if err == nil {
						break
					}
					var we *writes.Error
					if !errors.As(err, &we) || !we.Code.Retryable() {
						errs <- fmt.Errorf("%s: not retryable: %w", key, err)
						return
					}
					wait := time.Second
					if we.RetryAfter > 0 {
						wait = we.RetryAfter
					}
					time.Sleep(wait)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	perKey, _ := fake.Filed()
	var duplicates, lost int
	for i := range keys {
		key := fmt.Sprintf("key-%03d", i)
		switch n := perKey[key]; {
		case n == 0:
			lost++
		case n > 1:
			duplicates += n - 1
		}
		row, err := led.Lookup(context.Background(), ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindItem, Key: key})
		if err != nil || !row.Recorded {
			lost++
			continue
		}
		items := fake.ItemsByKey(key)
		if len(items) == 1 && items[0].Ref.ID != row.Ref.ID {
			t.Errorf("%s: recorded %s, filed %s", key, row.Ref.ID, items[0].Ref.ID)
		}
	}
	faults := 0
	for _, n := range fake.Faults() {
		faults += n
	}
	t.Logf("keys=%d attempts=%d faults=%d %v duplicates=%d lost=%d", keys, attempts.Load(), faults, fake.Faults(), duplicates, lost)
	if duplicates != 0 || lost != 0 {
		t.Fatalf("duplicates=%d lost=%d, both must be 0", duplicates, lost)
	}
	if faults == 0 {
		t.Fatal("no fault was injected: the test proves nothing")
	}
}
