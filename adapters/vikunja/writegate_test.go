package vikunja_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/adapters/vikunja"
	"github.com/relayr-go/relayr/core/coretest"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
	"github.com/relayr-go/relayr/fixtures/memnet"
	"github.com/relayr-go/relayr/fixtures/vikunjaemu"
)

// flood is sixteen callers filing 200 keys through the write path, each
// retrying what it is told to retry, against Vikunja on SQLite (a write
// that meets another answers 500).
type flood struct {
	locked   int           // writes the server refused as locked
	retries  int           // attempts that failed and were tried again
	slowest  time.Duration // the longest a key took, retries included
	took     time.Duration // the whole run
	perKey   map[string]int
	tasksNow int
}

const (
	floodCallers  = 16
	floodKeys     = 200
	floodWriteFor = 10 * time.Millisecond
)

// runFlood runs the flood; callers give each try patience (none when 0),
// as a CI job's HTTP client would, and retry what they are told to.
func runFlood(t *testing.T, patience time.Duration, opts ...vikunja.Option) flood {
	t.Helper()
	e := vikunjaemu.New(vikunjaemu.Options{LockingWrites: true, WriteTime: floodWriteFor, RateLimit: -1})
	s := memnet.NewServer(e)
	t.Cleanup(s.Close)
	t.Cleanup(e.Close)
	conn := vikunja.Connector{BaseURL: s.URL, Project: e.CreateProject("Lattice", "LAT"),
		Options: append([]vikunja.Option{vikunja.WithTransport(s.Transport())}, opts...)}
	w := coretest.NewWorld(coretest.WorldOptions{Tenant: "t1", Workspace: "w1", Connector: conn, Credentials: tracker.Credentials{Token: e.Token}}).Writer

	var mu sync.Mutex
	var f flood
	keys := make(chan string, floodKeys)
	for i := range floodKeys {
		keys <- fmt.Sprintf("flood/%03d", i)
	}
	close(keys)
	start := time.Now()
	var wg sync.WaitGroup
	for range floodCallers {
		wg.Go(func() {
			for key := range keys {
				began := time.Now()
				for {
					ctx, cancel := t.Context(), context.CancelFunc(func() {})
					if patience > 0 {
						ctx, cancel = context.WithTimeout(t.Context(), patience)
					}
					_, err := w.EnsureItem(ctx, writes.EnsureParams{Tenant: "t1", Workspace: "w1", Key: key,
						Draft: tracker.Draft{Title: "filed as " + key}, Correlation: "run"})
					cancel()
					if err == nil {
						break
					}
					var we *writes.Error
					if !errors.As(err, &we) || !we.Code.Retryable() {
						t.Errorf("%s: %v", key, err)
						return
					}
					mu.Lock()
					f.retries++
					mu.Unlock()
					time.Sleep(max(we.RetryAfter, time.Second))
				}
				mu.Lock()
				f.slowest = max(f.slowest, time.Since(began))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	f.took = time.Since(start)
	f.locked = e.Locked()
	f.perKey = map[string]int{}
	tr, err := conn.Connect(t.Context(), tracker.Credentials{Token: e.Token}, tracker.Source{Tenant: "t1", Workspace: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	q := tracker.Query{}
	for {
		p, err := tr.Items(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range p.Items {
			f.perKey[it.Ref.Key]++
			f.tasksNow++
		}
		if p.Next == "" {
			break
		}
		q.Page = p.Next
	}
	return f
}

// relayr never makes Vikunja lock itself (ADR-0033's departures: writes to
// one Vikunja server go one at a time). The process sends one
// server one write at a time, so sixteen callers filing 200 keys meet no
// "database is locked", retry nothing, and no key waits for its claim to be
// retaken: the run takes the writes' own time, one after another.
func TestWritesToOneServerGoOneAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := runFlood(t, 0)
		if f.locked != 0 || f.retries != 0 {
			t.Fatalf("%d writes refused as locked, %d retries; want none", f.locked, f.retries)
		}
		if f.tasksNow != floodKeys || len(f.perKey) != floodKeys {
			t.Fatalf("%d tasks for %d keys, want one each", f.tasksNow, len(f.perKey))
		}
		if want := floodKeys * floodWriteFor; f.took != want || f.slowest > want {
			t.Fatalf("the run took %s (slowest key %s), want the writes' own time, %s", f.took, f.slowest, want)
		}
	})
}

// The same run with callers that give up on each try after 50 ms, most
// of them waiting for the write slot: a filing goes on when its caller
// gives up, its retry waits for it, and nothing relayr sends meets its own
// writes. Every key is filed once, and no write is refused as locked.
func TestCallersThatGiveUpMidFilingMakeVikunjaLockNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := runFlood(t, 50*time.Millisecond)
		if f.locked != 0 {
			t.Fatalf("%d writes refused as locked: relayr met its own writes", f.locked)
		}
		if f.tasksNow != floodKeys || len(f.perKey) != floodKeys {
			t.Fatalf("%d tasks for %d keys, want one each", f.tasksNow, len(f.perKey))
		}
		for k, n := range f.perKey {
			if n != 1 {
				t.Fatalf("%s filed %d times", k, n)
			}
		}
		t.Logf("callers of 50 ms patience: %d retries, slowest key %s, run %s", f.retries, f.slowest, f.took)
	})
}

// The same run with the gate opened to sixteen writes at once, as for a
// Vikunja on PostgreSQL, meets SQLite's locks: this is what the gate
// prevents. Every key still lands once, but only after retries: a locked
// create is in doubt until relayr's look-up finds nothing and frees it.
func TestSixteenWritesAtOnceLockVikunjaOnSQLite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := runFlood(t, 0, vikunja.WithConcurrentWrites(floodCallers))
		if f.locked == 0 {
			t.Fatal("no write met another: the emulation does not lock as SQLite does")
		}
		if f.tasksNow != floodKeys || len(f.perKey) != floodKeys {
			t.Fatalf("%d tasks for %d keys, want one each", f.tasksNow, len(f.perKey))
		}
		t.Logf("sixteen at once: %d writes locked, %d retries, slowest key %s, run %s", f.locked, f.retries, f.slowest, f.took)
	})
}

func TestOneServerHasOneSetting(t *testing.T) {
	g := vikunja.NewWriteGates()
	p := vikunja.Params{BaseURL: "http://vikunja.example:3456/", Token: "t", Project: 1, Source: source}
	if _, err := vikunja.New(p, vikunja.WithWriteGates(g)); err != nil {
		t.Fatal(err)
	}
	p.Project = 2
	p.BaseURL = "HTTP://Vikunja.Example:3456"
	if _, err := vikunja.New(p, vikunja.WithWriteGates(g)); err != nil {
		t.Fatalf("the same server, the same setting, another project: %v", err)
	}
	if _, err := vikunja.New(p, vikunja.WithWriteGates(g), vikunja.WithConcurrentWrites(1)); !errors.Is(err, tracker.ErrInvalid) {
		t.Fatalf("the same server, one write at once where the other asks the server: %v, want refused", err)
	}
	if _, err := vikunja.New(p, vikunja.WithWriteGates(g), vikunja.WithConcurrentWrites(4)); !errors.Is(err, tracker.ErrInvalid) {
		t.Fatalf("the same server with another setting: %v, want refused", err)
	}
	p.BaseURL = "http://other.example"
	if _, err := vikunja.New(p, vikunja.WithWriteGates(g), vikunja.WithConcurrentWrites(4)); err != nil {
		t.Fatalf("another server: %v", err)
	}
}

// A write given up mid-request keeps the server's slot until the server
// can no longer be acting on it: its connection closed and the settle
// passed. Vikunja on SQLite goes on with a request whose client left, so
// a write sent at once would meet it and be refused as locked; relayr's
// next write waits, and nothing relayr sends meets its own writes. (A
// server whose writes are held until answered: see the hold's tests.)
func TestAWriteGivenUpMidRequestKeepsTheServersSlotUntilItSettles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Each write holds the database for 3 s; the first's caller gives
		// up after 1 s, and relayr takes the server to be done 3 s after.
		e, tr := lockingServer(t, vikunja.WithWriteSettle(3*time.Second), vikunja.WithWriteHold(-1))
		start := time.Now()
		gaveUp, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if _, err := tr.Create(gaveUp, "k1", tracker.Draft{Title: "first"}); !errors.Is(err, tracker.ErrUnavailable) || tracker.CertainlyNotTaken(err) {
			t.Fatalf("the write given up: %v, want unavailable and not certainly untaken", err)
		}
		if _, err := tr.Create(t.Context(), "k2", tracker.Draft{Title: "second"}); err != nil {
			t.Fatalf("the next write: %v", err)
		}
		if n := e.Locked(); n != 0 {
			t.Fatalf("%d writes refused as locked: relayr's next write met the one it gave up", n)
		}
		if took := time.Since(start); took < 4*time.Second {
			t.Fatalf("the next write went %v after the first began, before the first could settle", took)
		}
	})
}

// A write that waited for the server's slot and gave up was never sent:
// it says so (tracker.ErrNotSent), and its claim is released at once.
func TestAWriteThatGaveUpWaitingForTheSlotWasNeverSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, tr := lockingServer(t)
		done := make(chan error, 1)
		go func() { _, err := tr.Create(t.Context(), "k1", tracker.Draft{Title: "first"}); done <- err }()
		synctest.Wait()
		// It gives up before the first write's hold lets it go.
		ctx, cancel := context.WithTimeout(t.Context(), vikunja.DefaultWriteHold/2)
		defer cancel()
		_, err := tr.Create(ctx, "k2", tracker.Draft{Title: "second"})
		if !errors.Is(err, tracker.ErrNotSent) || !tracker.CertainlyNotTaken(err) || !errors.Is(err, tracker.ErrUnavailable) {
			t.Fatalf("the write that waited: %v, want never sent", err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// A write that never reached the server (no connection was had) frees
// the server's slot at once: the server has nothing to settle, and the
// next write goes without waiting.
func TestAWriteThatNeverReachedTheServerFreesItsSlotAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := vikunjaemu.New(vikunjaemu.Options{LockingWrites: true, WriteTime: time.Second, RateLimit: -1})
		s := memnet.NewServer(e)
		t.Cleanup(s.Close)
		t.Cleanup(e.Close)
		project := e.CreateProject("Lattice", "LAT")
		rt := &failFirst{rt: s.Transport()}
		tr, err := vikunja.New(vikunja.Params{BaseURL: s.URL, Token: e.Token, Project: project, Source: source},
			vikunja.WithTransport(rt), vikunja.WithWriteGates(vikunja.NewWriteGates()), vikunja.WithWriteSettle(time.Hour),
			vikunja.WithConcurrentWrites(1)) // no ask of the server's /info takes the failure
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := tr.Create(t.Context(), "k1", tracker.Draft{Title: "first"}); !errors.Is(err, tracker.ErrUnavailable) {
			t.Fatalf("the write that found no connection: %v", err)
		}
		if _, err := tr.Create(t.Context(), "k2", tracker.Draft{Title: "second"}); err != nil {
			t.Fatalf("the next write: %v", err)
		}
		if took := time.Since(start); took != time.Second {
			t.Fatalf("the next write took until %v, want its own second: it waited for a write that never reached the server", took)
		}
	})
}

// failFirst fails its first request before any connection is had.
type failFirst struct {
	rt     http.RoundTripper
	failed atomic.Bool
}

func (f *failFirst) RoundTrip(r *http.Request) (*http.Response, error) {
	if !f.failed.Swap(true) {
		return nil, errors.New("no route to the server")
	}
	return f.rt.RoundTrip(r)
}

// lockingServer is Vikunja on SQLite whose writes each hold the database
// for 3 s, and a Tracker of its own gates reaching it.
func lockingServer(t *testing.T, opts ...vikunja.Option) (*vikunjaemu.Emulator, *tracker.Tracker) {
	t.Helper()
	e := vikunjaemu.New(vikunjaemu.Options{LockingWrites: true, WriteTime: 3 * time.Second, RateLimit: -1})
	s := memnet.NewServer(e)
	t.Cleanup(s.Close)
	t.Cleanup(e.Close)
	project := e.CreateProject("Lattice", "LAT")
	tr, err := vikunja.New(vikunja.Params{BaseURL: s.URL, Token: e.Token, Project: project, Source: tracker.Source{Tenant: "t1", Workspace: "w1"}},
		append([]vikunja.Option{vikunja.WithTransport(s.Transport()), vikunja.WithWriteGates(vikunja.NewWriteGates())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return e, tr
}

// A write whose answer is late past its hold (a proxy in front of the
// server, a network) lets the next write go: the server took it, and
// holds nothing of it. The late one is answered in its own time.
func TestAWriteLateToAnswerPastItsHoldLetsTheNextGo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := vikunjaemu.New(vikunjaemu.Options{RateLimit: -1})
		proxy := &stallProxy{next: e, mode: lateAnswer, share: 1, rnd: rand.New(rand.NewPCG(1, 1))} //nolint:gosec // reproducible faults, not secrets
		s := memnet.NewServer(proxy)
		t.Cleanup(func() { s.Close(); e.Close() })
		project := e.CreateProject("Lattice", "LAT")
		tr, err := vikunja.New(vikunja.Params{BaseURL: s.URL, Token: e.Token, Project: project, Source: tracker.Source{Tenant: "t1", Workspace: "w1"}},
			vikunja.WithTransport(s.Transport()), vikunja.WithWriteGates(vikunja.NewWriteGates()), vikunja.WithTimeout(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		late := make(chan error, 1)
		go func() {
			_, err := tr.Create(t.Context(), "k1", tracker.Draft{Title: "late"})
			late <- err
		}()
		time.Sleep(time.Millisecond)
		proxy.set(noStall)
		if _, err := tr.Create(t.Context(), "k2", tracker.Draft{Title: "next"}); err != nil {
			t.Fatalf("the next write: %v", err)
		}
		if took := time.Since(start); took != vikunja.DefaultWriteHold {
			t.Fatalf("the next write went %v after the late one, want its hold, %v", took, vikunja.DefaultWriteHold)
		}
		if err := <-late; !errors.Is(err, tracker.ErrUnavailable) {
			t.Fatalf("the late write: %v, want the proxy's 504, unavailable", err)
		}
		if n := e.Locked(); n != 0 {
			t.Fatalf("%d writes locked", n)
		}
	})
}

// A server whose write outlasts its hold and then fails the write sent
// beside it (SQLite locked: the late one was at work) has its writes held
// until answered from then on: one write failed to learn it, none after.
func TestAServerThatLocksHasItsWritesHeldUntilAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, tr := lockingServer(t) // each write holds the database 3 s
		first := make(chan error, 1)
		go func() {
			_, err := tr.Create(t.Context(), "k1", tracker.Draft{Title: "slow at the server"})
			first <- err
		}()
		time.Sleep(time.Millisecond)
		if _, err := tr.Create(t.Context(), "k2", tracker.Draft{Title: "beside it"}); !errors.Is(err, tracker.ErrUnavailable) {
			t.Fatalf("the write sent beside the slow one: %v, want it locked (500)", err)
		}
		if err := <-first; err != nil {
			t.Fatalf("the slow write: %v", err)
		}
		for i := range 3 {
			if _, err := tr.Create(t.Context(), fmt.Sprintf("k%d", i+3), tracker.Draft{Title: "after"}); err != nil {
				t.Fatalf("a write after the server showed it locks: %v", err)
			}
		}
		if n := e.Locked(); n != 1 {
			t.Fatalf("%d writes locked, want the one that showed it", n)
		}
	})
}

// A server's write slot is shared fairly between tenants: a write of one
// tenant waits for the write under way and then goes, not behind every
// write another tenant's burst queued before it.
func TestOneTenantsBurstDoesNotStallAnothersWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, tr := lockingServer(t, vikunja.WithWriteHold(-1)) // each write holds the server 3 s
		burst := tracker.ForParty(t.Context(), "tenant-a")
		var wg sync.WaitGroup
		for i := range 10 {
			wg.Go(func() {
				if _, err := tr.Create(burst, fmt.Sprintf("a-%d", i), tracker.Draft{Title: "a's burst"}); err != nil {
					t.Errorf("a's write %d: %v", i, err)
				}
			})
		}
		time.Sleep(time.Millisecond) // the burst is queued
		start := time.Now()
		if _, err := tr.Create(tracker.ForParty(t.Context(), "tenant-b"), "b-1", tracker.Draft{Title: "b's one"}); err != nil {
			t.Fatal(err)
		}
		// The write under way (3 s), then b's turn: 6 s, not 33.
		if took := time.Since(start); took > 6*time.Second {
			t.Fatalf("b's write took %v behind a's burst, want its turn after the write under way", took)
		}
		wg.Wait()
	})
}
