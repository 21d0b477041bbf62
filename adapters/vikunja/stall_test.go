package vikunja_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/adapters/vikunja"
	"github.com/relayr-go/relayr/core/binding"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/coretest"
	"github.com/relayr-go/relayr/core/ledger/memledger"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
	"github.com/relayr-go/relayr/fixtures/memnet"
	"github.com/relayr-go/relayr/fixtures/vikunjaemu"
)

// stallMode is how a fault proxy in front of the tracker treats a share
// of the creates: each lands, and its answer is late or lost.
type stallMode int

const (
	noStall stallMode = iota
	// lateAnswer: the answer comes stallFor after the create landed, as a
	// proxy's 504 (an overloaded tracker, a proxy in front of it).
	lateAnswer
	// lostAnswer: the connection drops once the create landed.
	lostAnswer
)

// stallFor is how late a late answer comes: past the adapter's 10 s
// request phase, inside the callers' 15 s.
const stallFor = 12 * time.Second

// stallProxy lets a share of the creates of tasks land, then answers them
// late (with a 504) or never.
type stallProxy struct {
	next  http.Handler
	mode  stallMode
	share float64
	mu    sync.Mutex
	rnd   *rand.Rand
	hit   atomic.Int64
}

// set changes the proxy's mode.
func (p *stallProxy) set(m stallMode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = m
}

func (p *stallProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	creates := r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/tasks")
	p.mu.Lock()
	mode := p.mode
	stall := creates && mode != noStall && p.rnd.Float64() < p.share
	p.mu.Unlock()
	if !stall {
		p.next.ServeHTTP(w, r)
		return
	}
	p.hit.Add(1)
	p.next.ServeHTTP(httptest.NewRecorder(), r) // the create lands
	if mode == lostAnswer {
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				_ = c.Close()
				return
			}
		}
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	select {
	case <-time.After(stallFor):
	case <-r.Context().Done():
		return
	}
	w.WriteHeader(http.StatusGatewayTimeout)
}

// stallRun is what a run of callers met.
type stallRun struct {
	failedCallers, unfiled, duplicates, creates int
	took                                        time.Duration
}

// runStalled files keys keys, each by two callers at once (a CI job and
// its re-run), each caller trying up to four times within a 15 s timeout
// an attempt and honouring the Retry-After it is told, over Vikunja's
// emulation behind a proxy in mode; then it lets relayr finish what it
// left in the background and counts the tasks per key.
func runStalled(t *testing.T, mode stallMode, keys int) stallRun {
	e := vikunjaemu.New(vikunjaemu.Options{RateLimit: 1 << 30})
	proxy := &stallProxy{next: e, mode: mode, share: 0.3, rnd: rand.New(rand.NewPCG(7, 7))} //nolint:gosec // reproducible faults, not secrets
	srv := memnet.NewServer(proxy)
	t.Cleanup(func() { srv.Close(); e.Close() })
	pid := e.CreateProject("Lattice", "LAT")
	d, err := vikunja.NewDriver(vikunja.Params{BaseURL: srv.URL, Token: e.Token, Project: pid, Source: scheduleSource},
		vikunja.WithTransport(srv.Transport()), vikunja.WithWriteGates(vikunja.NewWriteGates()))
	if err != nil {
		t.Fatal(err)
	}
	b := binding.Binding{Tenant: "acme", Workspace: "ops", Connector: coretest.Connector{Driver: d, KindName: vikunja.Kind}}
	conns := binding.NewConnections(clock.System{}, tracker.StaticCredentials{"acme/" + vikunja.Kind: {Token: e.Token}}, b)
	w := writes.New(writes.Config{Ledger: memledger.New(), Connections: conns})

	var failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for k := range keys {
		key := fmt.Sprintf("build-%d", k)
		for range 2 {
			wg.Go(func() {
				for attempt := range 4 {
					ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
					_, err := w.EnsureItem(ctx, writes.EnsureParams{Tenant: "acme", Workspace: "ops", Key: key, Draft: tracker.Draft{Title: "Build failed: " + key}})
					cancel()
					if err == nil {
						return
					}
					var we *writes.Error
					if attempt == 3 || !errors.As(err, &we) || (we.Code != writes.CodeUnavailable && we.Code != writes.CodeClaimed) {
						failed.Add(1)
						t.Logf("%s: a caller gave up after %d attempts: %v", key, attempt+1, err)
						return
					}
					time.Sleep(max(we.RetryAfter, time.Second))
				}
			})
		}
	}
	wg.Wait()
	run := stallRun{failedCallers: int(failed.Load()), took: time.Since(start)}
	// What relayr resolves in the background (a filing in doubt) ends.
	time.Sleep(time.Minute)
	synctest.Wait()
	perKey := map[string]int{}
	for i := range keys {
		perKey[fmt.Sprintf("build-%d", i)] = 0
	}
	pg, err := tracker.New(d).Items(context.Background(), tracker.Query{})
	for err == nil {
		for _, it := range pg.Items {
			perKey[strings.TrimPrefix(it.Title, "Build failed: ")]++
		}
		if pg.Next == "" {
			break
		}
		pg, err = tracker.New(d).Items(context.Background(), tracker.Query{Page: pg.Next})
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range perKey {
		switch {
		case n == 0:
			run.unfiled++
		case n > 1:
			run.duplicates += n - 1
		}
		run.creates += n
	}
	t.Logf("mode %d: %d stalled creates; %d callers failed, %d keys unfiled, %d duplicates, in %v", mode, proxy.hit.Load(), run.failedCallers, run.unfiled, run.duplicates, run.took)
	return run
}

// A slow tracker answers every caller: 50 keys, each sent by two callers
// at once, each caller with a 15 s timeout and up to three retries, while
// a proxy answers 30% of the creates that land 12 s late or never. Every
// caller gets its item, no key is filed twice and none is left unfiled.
// Writes to one Vikunja server go one at a time; a stalled create must not
// hold the rest (before, 29 of 50 keys went unfiled, live).
func TestAStalledWriteHoldsNobodyUp(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode stallMode
	}{{"NoFaults", noStall}, {"LateAnswers", lateAnswer}, {"LostAnswers", lostAnswer}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				run := runStalled(t, tc.mode, 50)
				if run.failedCallers != 0 || run.unfiled != 0 || run.duplicates != 0 {
					t.Fatalf("%d callers failed, %d keys unfiled, %d filed twice; want none", run.failedCallers, run.unfiled, run.duplicates)
				}
			})
		})
	}
}
