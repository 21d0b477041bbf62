package vikunja_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/adapters/vikunja"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/memnet"
	"github.com/relayr-go/relayr/fixtures/vikunjaemu"
)

// slowWrites is a Vikunja emulation whose writes each take writeTakes
// (within the write hold) before the emulation sees them, counting how many are in flight at once,
// and whose /api/v1/info answers info (the emulation's own when nil; a
// hang when "hang").
type slowWrites struct {
	e        *vikunjaemu.Emulator
	info     func(w http.ResponseWriter) bool
	inFlight atomic.Int64
	most     atomic.Int64
	asked    atomic.Int64
}

func (s *slowWrites) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/api/v1/info" {
		s.asked.Add(1)
		if s.info != nil && s.info(w) {
			return
		}
	}
	if r.Method != http.MethodGet {
		n := s.inFlight.Add(1)
		for {
			m := s.most.Load()
			if n <= m || s.most.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(writeTakes)
		defer s.inFlight.Add(-1)
	}
	s.e.ServeHTTP(w, r)
}

// writeTakes is how long each of slowWrites' writes takes.
const writeTakes = 500 * time.Millisecond

// newSlowWrites serves s on loopback and answers a Tracker reaching it.
func newSlowWrites(t *testing.T, s *slowWrites, opts ...vikunja.Option) *tracker.Tracker {
	t.Helper()
	srv := memnet.NewServer(s)
	t.Cleanup(srv.Close)
	t.Cleanup(s.e.Close)
	project := s.e.CreateProject("Lattice", "LAT")
	tr, err := vikunja.New(vikunja.Params{BaseURL: srv.URL, Token: s.e.Token, Project: project, Source: source},
		append([]vikunja.Option{vikunja.WithTransport(srv.Transport()), vikunja.WithWriteGates(vikunja.NewWriteGates())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// fileAtOnce files n keys at once and answers how long they took.
func fileAtOnce(t *testing.T, tr *tracker.Tracker, prefix string, n int) time.Duration {
	t.Helper()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			if _, err := tr.Create(t.Context(), fmt.Sprintf("%s/%d", prefix, i), tracker.Draft{Title: "at once"}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return time.Since(start)
}

// Writes go one at a time only where the server needs them so: Vikunja
// says in /api/v1/info whether its database takes writes at once
// (concurrent_writes, false on SQLite). Asked once an hour, beside the
// first write, which goes meanwhile as to a server that needs its writes
// one at a time.
func TestTheServerSaysWhetherItTakesWritesAtOnce(t *testing.T) {
	answer := func(body string) func(w http.ResponseWriter) bool {
		return func(w http.ResponseWriter) bool {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, body)
			return true
		}
	}
	for _, c := range []struct {
		name string
		opts vikunjaemu.Options
		info func(w http.ResponseWriter) bool
		// most is how many writes the server saw at once.
		most int64
	}{
		{name: "PostgreSQLSaysTrue", opts: vikunjaemu.Options{ConcurrentWrites: true}, most: 8},
		{name: "SQLiteSaysFalse", opts: vikunjaemu.Options{}, most: 1},
		{name: "AnOlderVikunjaSaysNothing", info: answer(`{"version":"v0.24.6"}`), most: 1},
		{name: "NoInfo", info: func(w http.ResponseWriter) bool { http.NotFound(w, nil); return true }, most: 1},
		{name: "AnInfoThatIsNotJSON", info: answer(`<html>`), most: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c.opts.RateLimit = -1
				s := &slowWrites{e: vikunjaemu.New(c.opts), info: c.info}
				tr := newSlowWrites(t, s)
				fileAtOnce(t, tr, "first", 8)
				if got := s.most.Load(); got != c.most {
					t.Fatalf("%d writes at once, want %d", got, c.most)
				}
				// The answer stands for an hour: the next writes ask
				// nothing; past the hour, the server is asked again.
				fileAtOnce(t, tr, "second", 8)
				if n := s.asked.Load(); n != 1 {
					t.Fatalf("asked %d times within the hour, want once", n)
				}
				time.Sleep(time.Hour)
				fileAtOnce(t, tr, "third", 1)
				synctest.Wait()
				if n := s.asked.Load(); n != 2 {
					t.Fatalf("asked %d times over an hour, want twice", n)
				}
			})
		})
	}

	t.Run("AnAskThatHangsHoldsNoWriteUp", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			hang := make(chan struct{})
			s := &slowWrites{e: vikunjaemu.New(vikunjaemu.Options{RateLimit: -1, ConcurrentWrites: true}),
				info: func(http.ResponseWriter) bool { <-hang; return true }}
			t.Cleanup(func() { close(hang) })
			tr := newSlowWrites(t, s)
			// One at a time while unanswered, none waiting for the ask.
			if took := fileAtOnce(t, tr, "k", 3); took != 3*writeTakes {
				t.Fatalf("three writes took %v beside a hung ask, want %v each", took, writeTakes)
			}
			// The ask timed out: asked again a minute after.
			time.Sleep(2 * time.Minute)
			fileAtOnce(t, tr, "later", 1)
			synctest.Wait()
			if n := s.asked.Load(); n != 2 {
				t.Fatalf("asked %d times, want again a minute after the ask failed", n)
			}
		})
	})

	t.Run("TheConfigurationSaysFirst", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := &slowWrites{e: vikunjaemu.New(vikunjaemu.Options{RateLimit: -1, ConcurrentWrites: true})}
			tr := newSlowWrites(t, s, vikunja.WithConcurrentWrites(2))
			fileAtOnce(t, tr, "k", 6)
			if got, n := s.most.Load(), s.asked.Load(); got != 2 || n != 0 {
				t.Fatalf("%d writes at once, %d asks: want the configured 2, and no ask", got, n)
			}
		})
	})

	// A server that says it takes writes at once and locks all the same
	// (SQLite behind a proxy that answers for another server) shows it by
	// a 500 to a write sent beside another: from then on its writes go one
	// at a time, each held until answered.
	t.Run("AServerThatSaysTrueAndLocksIsTakenAtItsLock", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := vikunjaemu.New(vikunjaemu.Options{RateLimit: -1, ConcurrentWrites: true, LockingWrites: true, WriteTime: time.Second})
			s := &slowWrites{e: e}
			tr := newSlowWrites(t, s)
			if _, err := tr.Create(t.Context(), "warm", tracker.Draft{Title: "asks"}); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			var failed atomic.Int64
			for i := range 4 {
				wg.Go(func() {
					if _, err := tr.Create(t.Context(), fmt.Sprintf("met/%d", i), tracker.Draft{Title: "at once"}); err != nil {
						if !errors.Is(err, tracker.ErrUnavailable) {
							t.Errorf("a write that met another: %v, want unavailable", err)
						}
						failed.Add(1)
					}
				})
			}
			wg.Wait()
			if failed.Load() == 0 || e.Locked() == 0 {
				t.Fatalf("%d failed, %d locked: the four writes at once met none", failed.Load(), e.Locked())
			}
			locked := e.Locked()
			fileAtOnce(t, tr, "after", 6)
			if n := e.Locked() - locked; n != 0 {
				t.Fatalf("%d writes locked after the server showed it locks, want none", n)
			}
		})
	})
}
