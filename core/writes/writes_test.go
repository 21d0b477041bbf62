package writes_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/core/binding"
	"github.com/relayr-go/relayr/core/budget"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/coretest"
	"github.com/relayr-go/relayr/core/faketracker"
	"github.com/relayr-go/relayr/core/integrations"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/ledger/memledger"
	"github.com/relayr-go/relayr/core/metrics"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
)

// env is a writer over a fake tracker and an in-memory ledger, on the
// system clock: its tests run in synctest bubbles, where that clock's time
// is virtual and starts when the env does.
type env struct {
	t       *testing.T
	clock   clock.Clock
	start   time.Time // when the env was made
	fake    *faketracker.Tracker
	ledger  *memledger.Ledger
	conns   *binding.Connections
	switch_ *integrations.Switches
	m       *metrics.Memory
	budget  *budget.Budget
	w       *writes.Writer
}

func newEnv(t *testing.T, f faketracker.Flavour) *env {
	t.Helper()
	return newEnvOn(t, f, clock.System{})
}

// newEnvOn is newEnv on the clock clk (the system's, or one that counts its
// timers).
func newEnvOn(t *testing.T, f faketracker.Flavour, clk clock.Clock) *env {
	t.Helper()
	led := memledger.New()
	sw := integrations.NewSwitches()
	m := metrics.NewMemory()
	bud := budget.New(clk, 40) // the writer's alone: the connections observe none
	wd := coretest.NewWorld(coretest.WorldOptions{Driver: faketracker.New(f, faketracker.WithClock(clk)), Ledger: led, Clock: clk,
		Writes: writes.Config{Log: led, Integrations: sw, Metrics: m, Budget: bud}})
	return &env{t: t, clock: clk, start: time.Now(), fake: wd.Fake, ledger: led, conns: wd.Connections, switch_: sw, m: m, budget: bud, w: wd.Writer}
}

func (e *env) ensure(key string, d tracker.Draft) (writes.Result, error) {
	return e.w.EnsureItem(context.Background(), writes.EnsureParams{Tenant: "acme", Workspace: "ops", Key: key, Draft: d, Correlation: "run-" + key})
}

func (e *env) mustEnsure(key string, d tracker.Draft) writes.Result {
	e.t.Helper()
	r, err := e.ensure(key, d)
	if err != nil {
		e.t.Fatalf("EnsureItem(%q): %v", key, err)
	}
	return r
}

func (e *env) mustEnsureLive(key string, d tracker.Draft) writes.Result {
	e.t.Helper()
	r, err := e.w.EnsureItem(context.Background(), writes.EnsureParams{Tenant: "acme", Workspace: "ops", Key: key, Draft: d, Live: true})
	if err != nil {
		e.t.Fatalf("EnsureItem(%q, live): %v", key, err)
	}
	return r
}

func (e *env) update(key string, p tracker.Patch) (tracker.Item, error) {
	return e.w.Update(context.Background(), writes.UpdateParams{Tenant: "acme", Workspace: "ops", Key: key, Patch: p})
}

// through makes the writer reach the fake through tr, a wrapper that
// changes some of its answers.
func (e *env) through(tr tracker.Driver) {
	wd := coretest.NewWorld(coretest.WorldOptions{Driver: tr, Ledger: e.ledger, Clock: e.clock, Writes: writes.Config{Budget: e.budget}})
	e.conns, e.w = wd.Connections, wd.Writer
}

func (e *env) row(kind ledger.Kind, key string) ledger.Claim {
	e.t.Helper()
	r, err := e.ledger.Lookup(context.Background(), ledger.Key{Tenant: "acme", Workspace: "ops", Kind: kind, Key: key})
	if err != nil {
		e.t.Fatalf("Lookup(%q): %v", key, err)
	}
	return r
}

func wantCode(t *testing.T, err error, code writes.Code) {
	t.Helper()
	if got := writes.CodeOf(err); got != code {
		t.Fatalf("err %v: code %q, want %q", err, got, code)
	}
}

func calls(e *env) map[string]int {
	out := map[string]int{}
	for _, m := range []string{faketracker.MethodFind, faketracker.MethodCreate, faketracker.MethodItem, faketracker.MethodUpdate, faketracker.MethodComment, faketracker.MethodComments} {
		if n := e.fake.Calls(m); n > 0 {
			out[m] = n
		}
	}
	return out
}

// claimedElsewhere claims key as another replica's attempt would, when the
// env was made.
func (e *env) claimedElsewhere(key string) ledger.Claim {
	e.t.Helper()
	row, _, err := e.ledger.Claim(context.Background(), ledger.ClaimParams{
		Key: ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindItem, Key: key}, Correlation: "other", Now: e.start, RetakeAfter: writes.DefaultRetakeAfter,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return row
}

// sentNothing fails the test if the tracker was asked anything.
func (e *env) sentNothing() {
	e.t.Helper()
	if e.fake.TotalCalls() != 0 {
		e.t.Fatalf("a held claim sent %v", calls(e))
	}
}

// crashed leaves k as an attempt would that died between its create and
// its record: the claim taken now, the item made, nothing recorded.
func (e *env) crashed(key string, d tracker.Draft) {
	e.t.Helper()
	k := ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindItem, Key: key}
	if _, _, err := e.ledger.Claim(context.Background(), ledger.ClaimParams{Key: k, Correlation: "run-" + key, Now: time.Now(), RetakeAfter: writes.DefaultRetakeAfter}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.fake.Create(context.Background(), key, d); err != nil {
		e.t.Fatal(err)
	}
}

// drain lets virtual time pass until what the writer left going (a
// look-up of a filing in doubt, a wait for a holder) has ended, so a
// synctest bubble ends with no goroutine blocked.
func (e *env) drain() {
	for range 8 {
		synctest.Wait()
		time.Sleep(10 * time.Second)
	}
	synctest.Wait()
}

// answerOf runs fn in the bubble, letting virtual time pass by step each
// time every goroutine is blocked, until fn answers.
func answerOf[T any](e *env, step time.Duration, fn func() T) T {
	got := make(chan T, 1)
	go func() { got <- fn() }()
	for {
		synctest.Wait()
		select {
		case v := <-got:
			return v
		default:
			time.Sleep(step)
		}
	}
}

type answer struct {
	r   writes.Result
	err error
}

// timers is the system clock, counting the timers and deadlines pending on
// it as the fake clock's Waiters does: an After until it fires, a WithTimeout
// until its deadline passes or it is cancelled. It fakes no time: in a
// bubble that time is synctest's.
type timers struct {
	clock.System
	mu sync.Mutex
	n  int
}

func (c *timers) add(d int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n += d
}

// pending is how many timers and deadlines are pending.
func (c *timers) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (c *timers) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- time.Now()
		return ch
	}
	c.add(1)
	time.AfterFunc(d, func() {
		c.add(-1)
		ch <- time.Now()
	})
	return ch
}

func (c *timers) WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, d)
	if d <= 0 {
		return ctx, cancel
	}
	c.add(1)
	var once sync.Once
	end := func() { once.Do(func() { c.add(-1) }) }
	deadline := time.AfterFunc(d, end)
	return ctx, func() {
		deadline.Stop()
		end()
		cancel()
	}
}

func TestEnsureItem(t *testing.T) {
	t.Run("AFreshClaimGoesStraightToTheCreate", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikeVikunja)
			r := e.mustEnsure("k", tracker.Draft{Title: "Disk full"})
			if r.How != writes.Created || r.Item.Ref.Key != "k" {
				t.Fatalf("result %+v", r)
			}
			if c := calls(e); c[faketracker.MethodFind] != 0 || c[faketracker.MethodCreate] != 1 {
				t.Fatalf("calls %v: a fresh claim asks no lookup", c)
			}
		})
	})

	t.Run("AClaimHeldElsewhereIsWaitedForAndItsItemAnsweredOnceRecorded", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikeVikunja)
			// Another replica holds the claim, and records 300 ms on.
			row := e.claimedElsewhere("k")
			got := make(chan answer, 1)
			go func() { r, err := e.ensure("k", tracker.Draft{Title: "x"}); got <- answer{r, err} }()
			synctest.Wait()
			time.Sleep(300 * time.Millisecond)
			if _, err := e.ledger.Record(context.Background(), ledger.RecordParams{Key: row.Key, Nonce: row.Nonce, Ref: tracker.ItemRef{ID: "it-9", Key: "k"}, Now: time.Now()}); err != nil {
				t.Fatal(err)
			}
			a := answerOf(e, 20*time.Millisecond, func() answer { return <-got })
			if a.err != nil || a.r.Item.Ref.ID != "it-9" || a.r.How != writes.Existing {
				t.Fatalf("answered %+v, %v; want the holder's item", a.r, a.err)
			}
			if at := time.Since(e.start); at > 300*time.Millisecond+100*time.Millisecond {
				t.Fatalf("answered at +%v, want within 100 ms of the record at +300ms", at)
			}
			e.sentNothing()
		})
	})

	t.Run("AClaimHeldElsewhereAnswersTrackerClaimedAtTheCallersBoundWithWhenTheHolderIsLikelyDone", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikeVikunja)
			e.claimedElsewhere("k")
			a := answerOf(e, 250*time.Millisecond, func() answer { r, err := e.ensure("k", tracker.Draft{Title: "x"}); return answer{r, err} })
			wantCode(t, a.err, writes.CodeClaimed)
			if waited := time.Since(e.start); waited < writes.DefaultWriteBound || waited > writes.DefaultWriteBound+250*time.Millisecond {
				t.Fatalf("answered after %v, want at the caller's bound", waited)
			}
			// The holder is past what filings take and has its look-up's
			// 2 s left: a second, not the end of the bound.
			var we *writes.Error
			if !errors.As(a.err, &we) || we.RetryAfter != time.Second {
				t.Fatalf("retry after %v, want 1s", we)
			}
			e.sentNothing()
		})
	})

	t.Run("AKeyALiveAttemptIsFilingAnswersItsItemOnceRecordedAndSendsNothing", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			clk := &timers{}
			e := newEnvOn(t, faketracker.LikeVikunja, clk)
			slow := &slowCreate{Tracker: e.fake, entered: make(chan struct{}), release: make(chan struct{})}
			e.through(slow)
			first := make(chan writes.Result, 1)
			go func() { r, _ := e.ensure("k", tracker.Draft{Title: "x"}); first <- r }()
			<-slow.entered
			second := make(chan answer, 1)
			go func() { r, err := e.ensure("k", tracker.Draft{Title: "x"}); second <- answer{r, err} }()
			synctest.Wait()
			select {
			case a := <-second:
				t.Fatalf("the second attempt answered before the first recorded: %v", a.err)
			default:
			}
			before := e.fake.TotalCalls()
			close(slow.release)
			filed := <-first
			got := <-second
			if got.err != nil {
				t.Fatalf("the waiting attempt: %v", got.err)
			}
			if got.r.Item.Ref.ID != filed.Item.Ref.ID || got.r.How != writes.Existing || got.r.Item.Title != "x" {
				t.Fatalf("the waiting attempt answered %+v, want the filed item %s", got.r, filed.Item.Ref.ID)
			}
			if n := e.fake.TotalCalls() - before; n != 1 {
				t.Fatalf("%d calls after the first attempt's create, want none of the second's", n-1)
			}
			synctest.Wait()
			if n := clk.pending(); n != 0 {
				t.Fatalf("%d timers left on the clock once both attempts ended, want none", n)
			}
		})
	})

	t.Run("AWaitForALiveAttemptSpendsNoneOfTheWaitersBound", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikeVikunja)
			create := &slowCreate{Tracker: e.fake, entered: make(chan struct{}), release: make(chan struct{})}
			read := &slowItem{slowCreate: create, itemEntered: make(chan struct{}), itemRelease: make(chan struct{})}
			e.through(read)
			first := make(chan error, 1)
			go func() { _, err := e.ensure("k", tracker.Draft{Title: "x"}); first <- err }()
			<-create.entered
			second := make(chan error, 1)
			go func() { second <- ensureLive(e, "k") }()
			synctest.Wait()
			time.Sleep(19 * time.Second) // the first files within its bound
			close(create.release)
			if err := <-first; err != nil {
				t.Fatalf("the first attempt: %v", err)
			}
			// The second reads the item live, and the read takes 2 s: past
			// 20 s from the second's start, within 20 s of its wait's end.
			<-read.itemEntered
			time.Sleep(2 * time.Second)
			close(read.itemRelease)
			if err := <-second; err != nil {
				t.Fatalf("the waiting attempt's read, 21 s after it began and 2 s after its wait: %v", err)
			}
		})
	})

	t.Run("AWaitForALiveAttemptEndsAtTheCallersBound", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikeVikunja)
			create := &slowCreate{Tracker: e.fake, entered: make(chan struct{}), release: make(chan struct{})}
			e.through(create)
			first := make(chan error, 1)
			go func() { _, err := e.ensure("k", tracker.Draft{Title: "x"}); first <- err }()
			<-create.entered
			second := make(chan error, 1)
			go func() { _, err := e.ensure("k", tracker.Draft{Title: "x"}); second <- err }()
			synctest.Wait()
			// The first is held up past its bound (a create that ignores
			// it): the second stops waiting at its own bound.
			time.Sleep(20 * time.Second)
			err := <-second
			wantCode(t, err, writes.CodeClaimed)
			var we *writes.Error
			if !errors.As(err, &we) || we.RetryAfter != time.Second {
				t.Fatalf("retry after %v, want 1s: past what filings take", we)
			}
			// Its own caller is told the same at the bound; its filing goes
			// on, and records what the late create made.
			wantCode(t, <-first, writes.CodeUnavailable)
			close(create.release)
			synctest.Wait()
			if row := e.row(ledger.KindItem, "k"); !row.Recorded {
				t.Fatalf("row %+v: the late create was not recorded", row)
			}
			e.drain()
		})
	})

	t.Run("ARetriedFilingOfARecordedKeyIsAnsweredFromTheLedgerWithNoRequest", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikeVikunja)
			filed := e.mustEnsure("k", tracker.Draft{Title: "Disk full", Labels: []string{"ci"}, State: tracker.Started})
			e.fake.ResetCalls()
			for range 5 {
				r := e.mustEnsure("k", tracker.Draft{Title: "Disk full"})
				if r.How != writes.Existing || r.Item.Ref != filed.Item.Ref || r.Item.Title != "Disk full" ||
					r.Item.State != tracker.Todo || len(r.Item.Labels) != 1 {
					t.Fatalf("retry answered %+v, want the recorded item %+v", r, filed.Item)
				}
			}
			if n := e.fake.TotalCalls(); n != 0 {
				t.Fatalf("five retries made %d tracker requests, want none", n)
			}
			if left := e.budget.Left("acme/fake"); left != 40-1 { // the create
				t.Fatalf("budget left %d, want the retries to spend none", left)
			}
			// A caller that wants the live item asks for it.
			r, err := e.w.EnsureItem(context.Background(), writes.EnsureParams{Tenant: "acme", Workspace: "ops", Key: "k", Draft: tracker.Draft{Title: "x"}, Live: true})
			if err != nil || r.How != writes.Existing {
				t.Fatalf("live: %+v, %v", r, err)
			}
			if c := calls(e); c[faketracker.MethodItem] != 1 || len(c) != 1 {
				t.Fatalf("a live answer made %v, want one read", c)
			}
		})
	})

	t.Run("ARetriedFilingIsNotAnsweredFromARemovedItemsTombstone", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikePlane)
			filed := e.mustEnsure("k", tracker.Draft{Title: "Disk full"})
			read := filed.Item
			read.UpdatedBy = "the followers' last read"
			raw, err := json.Marshal(map[string]tracker.Item{"item": read})
			if err != nil {
				t.Fatal(err)
			}
			snap := ledger.SnapshotRow{Tenant: "acme", Workspace: "ops", ItemID: read.Ref.ID, Item: raw, UpdatedAt: read.UpdatedAt}
			for _, removed := range []bool{false, true} {
				snap.Removed = removed
				if err := e.ledger.SaveSnapshots(context.Background(), []ledger.SnapshotRow{snap}); err != nil {
					t.Fatal(err)
				}
				r := e.mustEnsure("k", tracker.Draft{Title: "Disk full"})
				if got := r.Item.UpdatedBy == read.UpdatedBy; got == removed || r.Item.Title != "Disk full" {
					t.Fatalf("removed %v: answered %+v", removed, r.Item)
				}
			}
		})
	})

	t.Run("ARetakenClaimLooksTheItemUpAndFilesNothingTwice", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikeVikunja)
			e.crashed("k", tracker.Draft{Title: "x"})
			time.Sleep(31 * time.Second)
			r := e.mustEnsure("k", tracker.Draft{Title: "x"})
			if r.How != writes.Found {
				t.Fatalf("how %q, want found", r.How)
			}
			if perKey, created := e.fake.Filed(); perKey["k"] != 1 || created != 1 {
				t.Fatalf("filed %v (%d creates): want one item", perKey, created)
			}
			if c := calls(e); c[faketracker.MethodFind] != 1 || c[faketracker.MethodCreate] != 1 {
				t.Fatalf("calls %v", c)
			}
		})
	})

	t.Run("AClaimIsRetakenOnlyMoreThan30sLaterWithNothingRecorded", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikeVikunja)
			e.crashed("k", tracker.Draft{Title: "x"})
			time.Sleep(30 * time.Second)
			// At 30 s the claim still holds: the caller waits for it, and
			// retakes it the moment it can (a millisecond on).
			a := answerOf(e, time.Millisecond, func() answer { r, err := e.ensure("k", tracker.Draft{Title: "x"}); return answer{r, err} })
			if a.err != nil || a.r.How != writes.Found {
				t.Fatalf("answered %+v, %v; want the item found under the retaken claim", a.r, a.err)
			}
			if at := time.Since(e.start); at <= 30*time.Second || at > 30*time.Second+5*time.Millisecond {
				t.Fatalf("answered at +%v, want just past 30 s", at)
			}
			e.drain()
		})
	})

	t.Run("ALookupThatFailsUnderARetakenClaimHoldsTheClaimAndIsTriedAgain", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikeVikunja)
			e.crashed("k", tracker.Draft{Title: "x"})
			time.Sleep(31 * time.Second)
			// The retake's look-up is rate limited, and the one after the
			// settle too: the caller hears the failure, the claim holds
			// (released, the next attempt's fresh claim would skip the
			// look-up and file a second item), and relayr looks again.
			e.fake.FailNext(faketracker.MethodFind, 2, tracker.RateLimited(3*time.Second))
			a := answerOf(e, 100*time.Millisecond, func() answer { r, err := e.ensure("k", tracker.Draft{Title: "x"}); return answer{r, err} })
			wantCode(t, a.err, writes.CodeUnavailable)
			if row := e.row(ledger.KindItem, "k"); row.Recorded {
				t.Fatalf("row %+v recorded before any look-up answered", row)
			}
			e.drain()
			row := e.row(ledger.KindItem, "k")
			if !row.Recorded {
				t.Fatalf("row %+v: the look-up tried again did not record the item", row)
			}
			if c := calls(e); c[faketracker.MethodFind] != 3 || c[faketracker.MethodCreate] != 1 {
				t.Fatalf("calls %v: want three look-ups (two rate limited) and the one create", c)
			}
			if r := e.mustEnsure("k", tracker.Draft{Title: "x"}); r.Item.Ref.ID != row.Ref.ID {
				t.Fatalf("the retry answered %+v", r)
			}
		})
	})

	t.Run("OnATrackerThatGuardsKeysARetakenClaimCreatesAndReadsTheExistingItemOn409", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikePlane)
			e.crashed("k", tracker.Draft{Title: "x"})
			time.Sleep(31 * time.Second)
			e.fake.ResetCalls()
			r := e.mustEnsure("k", tracker.Draft{Title: "x"})
			if r.How != writes.Found {
				t.Fatalf("how %q", r.How)
			}
			if c := calls(e); c[faketracker.MethodCreate] != 1 || c[faketracker.MethodFind] != 1 {
				t.Fatalf("calls %v: the create is the lookup, a 409 costs one read", c)
			}
			if perKey, _ := e.fake.Filed(); perKey["k"] != 1 {
				t.Fatalf("filed %v", perKey)
			}
		})
	})

	t.Run("TheDraftsLabelsGoOnAnItemFoundUnderARetakenClaim", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikeVikunja)
			e.crashed("k", tracker.Draft{Title: "x"}) // Vikunja labels after the create: the crash left none
			if got := e.fake.ItemsByKey("k")[0].Labels; len(got) != 0 {
				t.Fatalf("labels %v before the retry", got)
			}
			time.Sleep(31 * time.Second)
			r := e.mustEnsure("k", tracker.Draft{Title: "x", Labels: []string{"ci", "relayr"}})
			got := e.fake.ItemsByKey("k")[0].Labels
			if len(got) != 2 || len(r.Item.Labels) != 2 {
				t.Fatalf("labels %v (answered %v), want ci and relayr", got, r.Item.Labels)
			}
		})
	})

	t.Run("TheRecordKeepsTheFirstRecord", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikeVikunja)
			first := e.mustEnsure("k", tracker.Draft{Title: "x"})
			again := e.mustEnsure("k", tracker.Draft{Title: "another title"})
			if again.Item.Ref.ID != first.Item.Ref.ID || again.How != writes.Existing {
				t.Fatalf("second filing %+v, first %+v", again, first)
			}
			if row := e.row(ledger.KindItem, "k"); row.Ref.ID != first.Item.Ref.ID {
				t.Fatalf("row %+v", row)
			}
		})
	})

	t.Run("LiveARecordedItemIsReadBeforeItIsReturned", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikeVikunja)
			r := e.mustEnsure("k", tracker.Draft{Title: "x"})
			if err := e.fake.Retitle(context.Background(), r.Item.Ref.ID, "renamed by a person"); err != nil {
				t.Fatal(err)
			}
			e.fake.ResetCalls()
			again := e.mustEnsureLive("k", tracker.Draft{Title: "x"})
			if again.Item.Title != "renamed by a person" {
				t.Fatalf("title %q: the recorded item was not read", again.Item.Title)
			}
			if c := calls(e); c[faketracker.MethodItem] != 1 || len(c) != 1 {
				t.Fatalf("calls %v: a live answer costs one read", c)
			}
		})
	})

	t.Run("ADeletedItemReadLiveMarksItsKeyAndDeletedIsAnsweredFromThenOnWithoutAsking", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikePlane)
			r := e.mustEnsure("k", tracker.Draft{Title: "x"})
			if err := e.fake.Delete(context.Background(), r.Item.Ref.ID); err != nil {
				t.Fatal(err)
			}
			_, err := e.w.EnsureItem(context.Background(), writes.EnsureParams{Tenant: "acme", Workspace: "ops", Key: "k", Draft: tracker.Draft{Title: "x"}, Live: true})
			wantCode(t, err, writes.CodeDeleted)
			if !e.row(ledger.KindItem, "k").Deleted {
				t.Fatal("the key is not marked deleted")
			}
			e.fake.ResetCalls()
			_, err = e.ensure("k", tracker.Draft{Title: "x"})
			wantCode(t, err, writes.CodeDeleted)
			if e.fake.TotalCalls() != 0 {
				t.Fatalf("a deleted key asked the tracker: %v", calls(e))
			}
			if perKey, _ := e.fake.Filed(); perKey["k"] != 0 {
				t.Fatal("a deleted key filed again")
			}
		})
	})

	t.Run("AnArchivedItemIsReturnedLive", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikePlane)
			r := e.mustEnsure("k", tracker.Draft{Title: "x"})
			if err := e.fake.Archive(r.Item.Ref.ID); err != nil {
				t.Fatal(err)
			}
			again := e.mustEnsureLive("k", tracker.Draft{Title: "x"})
			if !again.Item.Archived || again.Item.Ref.ID != r.Item.Ref.ID {
				t.Fatalf("answered %+v, want the archived item", again.Item)
			}
		})
	})

	t.Run("ACallerWithADeadlineIsAnsweredBeforeItWithWhenItsItemIsLikelyThere", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikePlane)
			e.fake.HangNext(faketracker.MethodCreate, 1)
			// A caller that waits 5 s (an HTTP client's Prefer: wait=5, or
			// its own timeout) is answered before it gives up: retryable,
			// told when to come back; the filing goes on.
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			start := time.Now()
			_, err := e.w.EnsureItem(ctx, writes.EnsureParams{Tenant: "acme", Workspace: "ops", Key: "k", Draft: tracker.Draft{Title: "x"}})
			var we *writes.Error
			if !errors.As(err, &we) || we.Code != writes.CodeUnavailable || we.RetryAfter <= 0 {
				t.Fatalf("answered %v, want tracker_unavailable with a Retry-After", err)
			}
			if took := time.Since(start); took != 5*time.Second-writes.AnswerMargin {
				t.Fatalf("answered after %v, want the margin before the caller's 5 s", took)
			}
			if ctx.Err() != nil {
				t.Fatal("answered after the caller's deadline")
			}
			e.drain()
		})
	})

	t.Run("ACallerThatWaitsPastTheLookUpOfItsFilingInDoubtIsAnsweredTheItemFound", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikeVikunja)
			e.fake.CrashAfterCreate(1) // the item is made, its answer lost
			ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
			defer cancel()
			start := time.Now()
			r, err := e.w.EnsureItem(ctx, writes.EnsureParams{Tenant: "acme", Workspace: "ops", Key: "k", Draft: tracker.Draft{Title: "x"}})
			if err != nil {
				t.Fatalf("answered %v, want the item relayr's look-up found", err)
			}
			if took := time.Since(start); took > writes.DefaultSettle+time.Second {
				t.Fatalf("answered after %v, want about the look-up's settle", took)
			}
			if perKey, _ := e.fake.Filed(); perKey["k"] != 1 || r.Item.Ref.ID == "" {
				t.Fatalf("filed %v, answered %+v", perKey, r.Item.Ref)
			}
			e.drain()
		})
	})

	t.Run("AllWritesUnderAClaimAreBoundedAt20sAndTheClaimHoldsUntilALookUpSaysThereIsNone", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikeVikunja)
			e.fake.HangNext(faketracker.MethodCreate, 1)
			done := make(chan error)
			go func() { _, err := e.ensure("k", tracker.Draft{Title: "x"}); done <- err }()
			synctest.Wait()
			time.Sleep(19 * time.Second)
			synctest.Wait()
			select {
			case err := <-done:
				t.Fatalf("gave up before the bound: %v", err)
			default:
			}
			time.Sleep(time.Second)
			wantCode(t, <-done, writes.CodeUnavailable)
			if row := e.row(ledger.KindItem, "k"); row.Recorded {
				t.Fatalf("row %+v, want the claim held", row)
			}
			// A retry waits for relayr's own look-up, Settle after the
			// request ended: the tracker has none, the claim is freed, and
			// the retry files the key.
			a := answerOf(e, 100*time.Millisecond, func() answer { r, err := e.ensure("k", tracker.Draft{Title: "x"}); return answer{r, err} })
			if a.err != nil || a.r.How != writes.Created {
				t.Fatalf("the retry answered %+v, %v; want the key filed", a.r, a.err)
			}
			if at := time.Since(e.start); at > 20*time.Second+writes.DefaultSettle+time.Second {
				t.Fatalf("the retry answered at +%v, want within the settle of the bound", at)
			}
			if c := calls(e); c[faketracker.MethodFind] != 1 || c[faketracker.MethodCreate] != 2 {
				t.Fatalf("calls %v: want one look-up and the two creates", c)
			}
			if perKey, _ := e.fake.Filed(); perKey["k"] != 1 {
				t.Fatalf("filed %v", perKey)
			}
			e.drain()
		})
	})

	t.Run("AWriteTheTrackerCertainlyDidNotTakeReleasesTheClaim", func(t *testing.T) {
		for _, c := range []struct {
			name string
			err  error
			code writes.Code
		}{
			{"Refused", tracker.ErrRefused, writes.CodeRefused},
			{"Missing", tracker.ErrNotFound, writes.CodeRefused},
			{"RateLimited", tracker.RateLimited(7 * time.Second), writes.CodeUnavailable},
		} {
			t.Run(c.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					e := newEnv(t, faketracker.LikeVikunja)
					e.fake.FailNext(faketracker.MethodCreate, 1, c.err)
					_, err := e.ensure("k", tracker.Draft{Title: "x"})
					wantCode(t, err, c.code)
					if c.name == "RateLimited" {
						var we *writes.Error
						if !errors.As(err, &we) || we.RetryAfter != 7*time.Second {
							t.Fatalf("err %v carries no retry-after of 7s", err)
						}
					}
					if r := e.mustEnsure("k", tracker.Draft{Title: "x"}); r.How != writes.Created {
						t.Fatalf("the retry was not a fresh create: %+v", r)
					}
				})
			})
		}
	})

	// An earlier attempt made the item and died before recording it; the
	// retake's request then fails in a way the tracker certainly did not
	// take. The item stands under the key, so the claim holds: released,
	// a follower would find the item with no claim and publish relayr's
	// own creation as a person's (found by the chaos run).
	t.Run("ARetakeThatFailsWhileAnEarlierItemMayStandHoldsTheClaimUntilALookUpFindsIt", func(t *testing.T) {
		for _, c := range []struct {
			name   string
			method string
		}{
			{"TheCreateThatIsTheLookupIsRateLimited", faketracker.MethodCreate},
			{"TheLookupAfterA409IsRateLimited", faketracker.MethodFind},
		} {
			t.Run(c.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					e := newEnv(t, faketracker.LikePlane)
					e.crashed("k", tracker.Draft{Title: "x"})
					time.Sleep(31 * time.Second)
					e.fake.FailNext(c.method, 1, tracker.RateLimited(time.Second))
					var held ledger.Claim
					e.fake.OnRequest(func() {
						held, _ = e.ledger.Lookup(context.Background(), ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindItem, Key: "k"})
					})
					_, err := e.ensure("k", tracker.Draft{Title: "x"})
					wantCode(t, err, writes.CodeUnavailable)
					if held.Recorded || held.Nonce == "" {
						t.Fatalf("the claim while the retake ran: %+v, want it held unrecorded", held)
					}
					// relayr's own look-up finds the earlier item, and the
					// retry is answered it.
					a := answerOf(e, 100*time.Millisecond, func() answer { r, err := e.ensure("k", tracker.Draft{Title: "x"}); return answer{r, err} })
					if a.err != nil || a.r.Item.Ref.ID != e.fake.ItemsByKey("k")[0].Ref.ID {
						t.Fatalf("the retry answered %+v, %v; want the earlier item", a.r, a.err)
					}
					if perKey, _ := e.fake.Filed(); perKey["k"] != 1 {
						t.Fatalf("%d items filed under the key, want 1", perKey["k"])
					}
					e.drain()
				})
			})
		}
	})

	t.Run("AnItemFoundUnderARetakenClaimRecordsWhatTheTrackerHolds", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikeVikunja)
			e.crashed("k", tracker.Draft{Title: "  Disk full  "})
			time.Sleep(31 * time.Second)
			// The tracker trims titles, as Plane does: the item found holds
			// what the draft did not predict.
			trims := &trimmingFind{Tracker: e.fake}
			e.through(trims)
			r, err := e.ensure("k", tracker.Draft{Title: "  Disk full  "})
			if err != nil || r.How != writes.Found {
				t.Fatalf("the retry: %+v, %v; want the item found", r, err)
			}
			if !ledger.IsPending(e.row(ledger.KindItem, "k").Values[tracker.FieldTitle], `"Disk full"`) {
				t.Fatalf("title values %q, want the title the tracker holds recorded", e.row(ledger.KindItem, "k").Values[tracker.FieldTitle])
			}
		})
	})

	t.Run("TheFirstClaimersCorrelationIsKeptOnTheRow", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikeVikunja)
			e.crashed("k", tracker.Draft{Title: "x"}) // claimed as run-k
			time.Sleep(31 * time.Second)
			if _, err := e.w.EnsureItem(context.Background(), writes.EnsureParams{Tenant: "acme", Workspace: "ops", Key: "k", Draft: tracker.Draft{Title: "x"}, Correlation: "second"}); err != nil {
				t.Fatal(err)
			}
			if got := e.row(ledger.KindItem, "k").Correlation; got != "run-k" {
				t.Fatalf("correlation %q, want the first claimer's run-k", got)
			}
		})
	})

	t.Run("AClaimerWhoseClaimWasRetakenCannotRecordOverTheNewClaimer", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikeVikunja)
			slow := &slowCreate{Tracker: e.fake, entered: make(chan struct{}), release: make(chan struct{})}
			w := coretest.NewWorld(coretest.WorldOptions{Driver: slow, Ledger: e.ledger, Clock: e.clock,
				Writes: writes.Config{Options: writes.Options{WriteBound: time.Hour}}}).Writer
			type answer struct {
				r   writes.Result
				err error
			}
			done := make(chan answer)
			go func() {
				r, err := w.EnsureItem(context.Background(), writes.EnsureParams{Tenant: "acme", Workspace: "ops", Key: "k", Draft: tracker.Draft{Title: "slow"}})
				done <- answer{r, err}
			}()
			<-slow.entered
			time.Sleep(31 * time.Second)
			second := e.mustEnsure("k", tracker.Draft{Title: "fast"}) // retakes, finds nothing, files
			close(slow.release)
			late := <-done
			if late.err != nil {
				t.Fatalf("the late claimer: %v", late.err)
			}
			if row := e.row(ledger.KindItem, "k"); row.Ref.ID != second.Item.Ref.ID {
				t.Fatalf("the late claimer recorded over the new one: row %s, new %s", row.Ref.ID, second.Item.Ref.ID)
			}
			if late.r.Item.Ref.ID != second.Item.Ref.ID {
				t.Fatalf("the late claimer answered %s, not the recorded %s", late.r.Item.Ref.ID, second.Item.Ref.ID)
			}
		})
	})

	t.Run("IntegrationsAreAskedBeforeTheLedgerOrTheTracker", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikeVikunja)
			e.switch_.Set("acme", "ops", "tracker:fake", false)
			_, err := e.ensure("k", tracker.Draft{Title: "x"})
			wantCode(t, err, writes.CodeNotAllowed)
			if _, err := e.ledger.Lookup(context.Background(), ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindItem, Key: "k"}); !errors.Is(err, ledger.ErrNotFound) {
				t.Fatalf("a switched-off write touched the ledger: %v", err)
			}
			if e.fake.TotalCalls() != 0 {
				t.Fatal("a switched-off write reached the tracker")
			}
		})
	})

	t.Run("AnUnboundWorkspaceIsNotAllowed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikeVikunja)
			_, err := e.w.EnsureItem(context.Background(), writes.EnsureParams{Tenant: "acme", Workspace: "nowhere", Key: "k", Draft: tracker.Draft{Title: "x"}})
			wantCode(t, err, writes.CodeNotAllowed)
		})
	})

	t.Run("BadInputIsATypedErrorBeforeTheLedgerOrTheTrackerIsTouched", func(t *testing.T) {
		for _, c := range []struct {
			name, key, title string
		}{
			{"EmptyKey", "", "x"},
			{"KeyOver1024Bytes", strings.Repeat("k", 1025), "x"},
			{"KeyWithNUL", "a\x00b", "x"},
			{"KeyWithAControlCharacter", "a\nb", "x"},
			{"KeyNotUTF8", "a\xffb", "x"},
			{"EmptyTitle", "k", ""},
			{"BlankTitle", "k", "   "},
		} {
			t.Run(c.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					e := newEnv(t, faketracker.LikeVikunja)
					_, err := e.ensure(c.key, tracker.Draft{Title: c.title})
					wantCode(t, err, writes.CodeInvalid)
					if !errors.Is(err, tracker.ErrInvalid) {
						t.Fatalf("err %v does not match tracker.ErrInvalid", err)
					}
					if e.fake.TotalCalls() != 0 {
						t.Fatal("bad input reached the tracker")
					}
					if _, err := e.ledger.Lookup(context.Background(), ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindItem, Key: "k"}); !errors.Is(err, ledger.ErrNotFound) {
						t.Fatal("bad input touched the ledger")
					}
				})
			})
		}
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikeVikunja)
			if _, err := e.ensure(strings.Repeat("k", 1024), tracker.Draft{Title: "x"}); err != nil {
				t.Fatalf("a key of exactly 1024 bytes was refused: %v", err)
			}
		})
	})

	t.Run("TheBindingsDefaultsFillWhatTheDraftLeavesOut", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := coretest.NewWorld(coretest.WorldOptions{Defaults: tracker.Draft{State: tracker.Todo, Labels: []string{"relayr"}}}).Writer
			r, err := w.EnsureItem(context.Background(), writes.EnsureParams{Tenant: "acme", Workspace: "ops", Key: "k", Draft: tracker.Draft{Title: "x", Labels: []string{"ci"}}})
			if err != nil {
				t.Fatal(err)
			}
			if r.Item.State != tracker.Todo || len(r.Item.Labels) != 2 {
				t.Fatalf("item %+v, want todo with ci and relayr", r.Item)
			}
		})
	})

	t.Run("FilingRecordsTheValuesAsTheTrackerWillHoldThem", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikeVikunja)
			e.mustEnsure("k", tracker.Draft{Title: "x", State: tracker.Started, Labels: []string{"b", "a"}})
			v := e.row(ledger.KindItem, "k").Values
			if ledger.Last(v[tracker.FieldState]) != `"todo"` || ledger.Last(v[tracker.FieldTitle]) != `"x"` || ledger.Last(v[tracker.FieldLabels]) != `["a","b"]` {
				t.Fatalf("values %v", v)
			}
		})
	})
}

func TestUpdate(t *testing.T) {
	t.Run("AKeyedEditSendsOnlyTheFieldsThatDifferAndRecordsThemFirst", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikePlane)
			r := e.mustEnsure("k", tracker.Draft{Title: "x", State: tracker.Todo})
			e.fake.ResetCalls()
			got, err := e.update("k", tracker.Patch{Title: coretest.Ptr("x"), State: coretest.Ptr(tracker.Done)})
			if err != nil {
				t.Fatal(err)
			}
			if got.State != tracker.Done || got.Ref.ID != r.Item.Ref.ID {
				t.Fatalf("item %+v", got)
			}
			// The filing's answer told relayr what the tracker holds: the edit
			// reads nothing first.
			if c := calls(e); c[faketracker.MethodUpdate] != 1 || len(c) != 1 {
				t.Fatalf("calls %v", c)
			}
			v := e.row(ledger.KindItem, "k").Values
			if last(v[tracker.FieldState]) != `"done"` {
				t.Fatalf("values %v: the state sent is not recorded", v)
			}
		})
	})

	t.Run("ARetriedEditSendsNothing", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikePlane)
			e.mustEnsure("k", tracker.Draft{Title: "x", State: tracker.Todo})
			if _, err := e.update("k", tracker.Patch{Title: coretest.Ptr("y")}); err != nil {
				t.Fatal(err)
			}
			e.fake.ResetCalls()
			for range 3 {
				got, err := e.update("k", tracker.Patch{Title: coretest.Ptr("y")})
				if err != nil || got.Title != "y" {
					t.Fatalf("retry answered %+v, %v", got, err)
				}
			}
			if n := e.fake.TotalCalls(); n != 0 {
				t.Fatalf("three retried edits made %d requests, want none", n)
			}
		})
	})

	t.Run("AnEditWhoseAnswerWasLostReadsTheItemBeforeItSendsAgain", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikePlane)
			e.mustEnsure("k", tracker.Draft{Title: "x", State: tracker.Todo})
			e.fake.FailNext(faketracker.MethodUpdate, 1, tracker.ErrUnavailable)
			_, err := e.update("k", tracker.Patch{Title: coretest.Ptr("y")})
			wantCode(t, err, writes.CodeUnavailable)
			e.fake.ResetCalls()
			// relayr recorded y and never heard whether it landed: the retry
			// asks the tracker, which holds x, and sends y.
			if _, err := e.update("k", tracker.Patch{Title: coretest.Ptr("y")}); err != nil {
				t.Fatal(err)
			}
			if c := calls(e); c[faketracker.MethodItem] != 1 || c[faketracker.MethodUpdate] != 1 {
				t.Fatalf("calls %v, want a read and the edit", c)
			}
		})
	})

	t.Run("LiveAnEditReadsTheItemFirst", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikePlane)
			r := e.mustEnsure("k", tracker.Draft{Title: "x"})
			if err := e.fake.Retitle(context.Background(), r.Item.Ref.ID, "y"); err != nil {
				t.Fatal(err)
			}
			e.fake.ResetCalls()
			// The tracker holds the person's y already: nothing is sent.
			if _, err := e.w.Update(context.Background(), writes.UpdateParams{Tenant: "acme", Workspace: "ops", Key: "k", Patch: tracker.Patch{Title: coretest.Ptr("y")}, Live: true}); err != nil {
				t.Fatal(err)
			}
			if c := calls(e); c[faketracker.MethodItem] != 1 || len(c) != 1 {
				t.Fatalf("calls %v, want one read and nothing sent", c)
			}
		})
	})

	t.Run("AnEditWhereNothingDiffersSendsNothing", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikeVikunja)
			e.mustEnsure("k", tracker.Draft{Title: "x"})
			e.fake.ResetCalls()
			// Vikunja holds started as todo: nothing differs (ADR-0036).
			if _, err := e.update("k", tracker.Patch{Title: coretest.Ptr("x"), State: coretest.Ptr(tracker.Started)}); err != nil {
				t.Fatal(err)
			}
			if e.fake.Calls(faketracker.MethodUpdate) != 0 {
				t.Fatalf("calls %v", calls(e))
			}
		})
	})

	t.Run("ARefusedEditPutsBackTheValueRecordedBeforeIt", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikePlane)
			e.mustEnsure("k", tracker.Draft{Title: "x"})
			if _, err := e.update("k", tracker.Patch{Title: coretest.Ptr("A")}); err != nil {
				t.Fatal(err)
			}
			e.fake.FailNext(faketracker.MethodUpdate, 1, tracker.ErrRefused)
			_, err := e.update("k", tracker.Patch{Title: coretest.Ptr("B"), State: coretest.Ptr(tracker.Done)})
			wantCode(t, err, writes.CodeRefused)
			v := e.row(ledger.KindItem, "k").Values
			if last(v[tracker.FieldTitle]) != `"A"` || ledger.IsPending(v[tracker.FieldTitle], `"B"`) {
				t.Fatalf("title values %q, want the earlier \"A\" last and no \"B\"", v[tracker.FieldTitle])
			}
			if _, ok := v[tracker.FieldState]; ok {
				t.Fatalf("state value %s kept after a refused edit that set it first", v[tracker.FieldState])
			}
		})
	})

	t.Run("AnEditThatMayHaveLandedKeepsItsValues", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikePlane)
			e.mustEnsure("k", tracker.Draft{Title: "x"})
			e.fake.FailNext(faketracker.MethodUpdate, 1, tracker.ErrUnavailable)
			_, err := e.update("k", tracker.Patch{Title: coretest.Ptr("B")})
			wantCode(t, err, writes.CodeUnavailable)
			if v := e.row(ledger.KindItem, "k").Values; last(v[tracker.FieldTitle]) != `"B"` {
				t.Fatalf("values %v", v)
			}
		})
	})

	t.Run("UpdateChangesOnlyItemsRelayrFiled", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikePlane)
			_, err := e.update("never-filed", tracker.Patch{Title: coretest.Ptr("B")})
			wantCode(t, err, writes.CodeRefused)
		})
	})

	t.Run("TheCapOf20WritesPerItemAnHourFailsTheNextAsTrackerLoopAndCountsIt", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikePlane)
			e.mustEnsure("k", tracker.Draft{Title: "t0"}) // the create is the first write
			for i := 1; i < 20; i++ {
				time.Sleep(time.Minute)
				if _, err := e.update("k", tracker.Patch{Title: coretest.Ptr("t" + string(rune('a'+i)))}); err != nil {
					t.Fatalf("write %d: %v", i+1, err)
				}
			}
			_, err := e.update("k", tracker.Patch{Title: coretest.Ptr("one too many")})
			wantCode(t, err, writes.CodeLoop)
			if writes.CodeLoop.Retryable() {
				t.Fatal("tracker_loop must not be retryable")
			}
			if e.m.Get(metrics.Loops) != 1 {
				t.Fatalf("loops counted %v", e.m.Get(metrics.Loops))
			}
			time.Sleep(42 * time.Minute) // the create and the first edit leave the hour
			if _, err := e.update("k", tracker.Patch{Title: coretest.Ptr("later")}); err != nil {
				t.Fatalf("after the hour slid: %v", err)
			}
		})
	})

	t.Run("AWriteTheTrackerDidNotTakeSpendsNoCapAndOneThatMayHaveLandedDoes", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikePlane)
			e.mustEnsure("k", tracker.Draft{Title: "t0"}) // the create is the first write
			comment := func(key string) error {
				_, err := e.w.Comment(context.Background(), writes.CommentParams{Tenant: "acme", Workspace: "ops", ItemKey: "k", Key: key, Body: "b"})
				return err
			}
			// Twice the cap of edits and comments the tracker refused or
			// rate-limited: a run retried under 429s is not a loop.
			// A key refused is asked for again and refused once more.
			notTaken := []struct {
				err   error
				times int
			}{{tracker.RateLimited(time.Second), 1}, {tracker.ErrRefused, 1}, {tracker.ErrUnauthorized, 2}}
			for i := range 40 {
				time.Sleep(2 * time.Second)
				fail := notTaken[i%len(notTaken)]
				e.fake.FailNext(faketracker.MethodUpdate, fail.times, fail.err)
				_, err := e.update("k", tracker.Patch{Title: coretest.Ptr(fmt.Sprint("refused ", i))})
				if err == nil || writes.CodeOf(err) == writes.CodeLoop {
					t.Fatalf("refused edit %d: %v, want the tracker's refusal", i+1, err)
				}
				e.fake.FailNext(faketracker.MethodComment, fail.times, fail.err)
				if err := comment(fmt.Sprint("c-refused-", i)); err == nil || writes.CodeOf(err) == writes.CodeLoop {
					t.Fatalf("refused comment %d: %v, want the tracker's refusal", i+1, err)
				}
			}
			// An edit whose fate is unknown stays counted, as does one that
			// landed: 19 more reach the cap.
			for i := 1; i < 20; i++ {
				time.Sleep(2 * time.Second)
				if i%2 == 0 {
					e.fake.FailNext(faketracker.MethodUpdate, 1, tracker.ErrUnavailable)
					_, err := e.update("k", tracker.Patch{Title: coretest.Ptr(fmt.Sprint("lost ", i))})
					wantCode(t, err, writes.CodeUnavailable)
					continue
				}
				if _, err := e.update("k", tracker.Patch{Title: coretest.Ptr(fmt.Sprint("landed ", i))}); err != nil {
					t.Fatalf("write %d: %v", i+1, err)
				}
			}
			wantCode(t, comment("c-one-too-many"), writes.CodeLoop)
			_, err := e.update("k", tracker.Patch{Title: coretest.Ptr("one too many")})
			wantCode(t, err, writes.CodeLoop)
		})
	})

	t.Run("AnEditNeverSentBecauseItsCallerGaveUpSpendsNoCap", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikePlane)
			e.mustEnsure("k", tracker.Draft{Title: "t0"})
			// The caller gives up while the edit's values are recorded, after
			// the cap counted it and before anything is sent.
			gives := &cancelOnSetValues{Ledger: e.ledger}
			w := writes.New(writes.Config{Ledger: gives, Log: e.ledger, Connections: e.conns, Clock: e.clock, Budget: e.budget})
			for i := range 25 {
				time.Sleep(time.Second)
				ctx, cancel := context.WithCancel(context.Background())
				gives.cancel = cancel
				_, err := w.Update(ctx, writes.UpdateParams{Tenant: "acme", Workspace: "ops", Key: "k", Patch: tracker.Patch{Title: coretest.Ptr(fmt.Sprint("given up ", i))}})
				if err == nil || writes.CodeOf(err) == writes.CodeLoop {
					t.Fatalf("edit %d, never sent: %v", i+1, err)
				}
			}
			if n := e.fake.Calls(faketracker.MethodUpdate); n != 0 {
				t.Fatalf("%d updates sent, want none", n)
			}
		})
	})

	t.Run("AnEditOfADeletedItemMarksItsKey", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikePlane)
			r := e.mustEnsure("k", tracker.Draft{Title: "x"})
			_ = e.fake.Delete(context.Background(), r.Item.Ref.ID)
			_, err := e.update("k", tracker.Patch{Title: coretest.Ptr("B")})
			wantCode(t, err, writes.CodeDeleted)
			_, err = e.update("k", tracker.Patch{Title: coretest.Ptr("B")})
			wantCode(t, err, writes.CodeDeleted)
		})
	})
}

func TestComment(t *testing.T) {
	comment := func(e *env, key, body string) (writes.CommentResult, error) {
		return e.w.Comment(context.Background(), writes.CommentParams{Tenant: "acme", Workspace: "ops", ItemKey: "k", Key: key, Body: body})
	}
	t.Run("CommentsAreClaimedAsKindCommentAndPostedOnce", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikeVikunja)
			e.mustEnsure("k", tracker.Draft{Title: "x"})
			first, err := comment(e, "c1", "hello")
			if err != nil {
				t.Fatal(err)
			}
			again, err := comment(e, "c1", "hello")
			if err != nil {
				t.Fatal(err)
			}
			if again.Comment.ID != first.Comment.ID || e.fake.Calls(faketracker.MethodComment) != 1 {
				t.Fatalf("posted %d times", e.fake.Calls(faketracker.MethodComment))
			}
			if row := e.row(ledger.KindComment, "c1"); !row.Recorded || row.Ref.ID != first.Comment.ID {
				t.Fatalf("comment row %+v", row)
			}
		})
	})

	t.Run("ARetakenCommentClaimFindsTheCommentAnEarlierAttemptPosted", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikeVikunja)
			r := e.mustEnsure("k", tracker.Draft{Title: "x"})
			// An attempt that claimed and posted, then died before recording.
			_, _, err := e.ledger.Claim(context.Background(), ledger.ClaimParams{Key: ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindComment, Key: "c1"}, Now: time.Now(), RetakeAfter: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.fake.Comment(context.Background(), r.Item.Ref.ID, "c1", "hello"); err != nil {
				t.Fatal(err)
			}
			time.Sleep(31 * time.Second)
			got, err := comment(e, "c1", "hello")
			if err != nil {
				t.Fatal(err)
			}
			if got.How != writes.Found || e.fake.Calls(faketracker.MethodComment) != 1 {
				t.Fatalf("how %q, comments posted %d", got.How, e.fake.Calls(faketracker.MethodComment))
			}
		})
	})

	t.Run("AnEmptyCommentIsInvalid", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikeVikunja)
			e.mustEnsure("k", tracker.Draft{Title: "x"})
			_, err := comment(e, "c1", " ")
			wantCode(t, err, writes.CodeInvalid)
		})
	})
}

func TestCredentials(t *testing.T) {
	t.Run("CredentialsAreAskedAtMostEveryFiveMinutes", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikeVikunja)
			for i := range 5 {
				e.mustEnsure("k"+string(rune('a'+i)), tracker.Draft{Title: "x"})
				time.Sleep(time.Minute)
			}
			if got := e.conns.Asked("acme", "fake"); got != 1 {
				t.Fatalf("asked %d times in five minutes", got)
			}
			e.mustEnsure("kz", tracker.Draft{Title: "x"})
			if got := e.conns.Asked("acme", "fake"); got != 2 {
				t.Fatalf("asked %d times after five minutes, want 2", got)
			}
		})
	})

	t.Run("UnauthorizedAsksAgainAtOnceAndRetriesOnce", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikeVikunja)
			e.fake.FailNext(faketracker.MethodCreate, 1, tracker.ErrUnauthorized)
			e.mustEnsure("k", tracker.Draft{Title: "x"})
			if got := e.conns.Asked("acme", "fake"); got != 2 {
				t.Fatalf("asked %d times, want 2", got)
			}
			if got := e.fake.Calls(faketracker.MethodCreate); got != 2 {
				t.Fatalf("creates %d, want 2", got)
			}
		})
	})

	t.Run("UnauthorizedTwiceIsRetriedOnlyOnce", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, faketracker.LikeVikunja)
			e.fake.FailNext(faketracker.MethodCreate, 2, tracker.ErrUnauthorized)
			_, err := e.ensure("k", tracker.Draft{Title: "x"})
			wantCode(t, err, writes.CodeUnavailable)
			if got := e.fake.Calls(faketracker.MethodCreate); got != 2 {
				t.Fatalf("creates %d, want 2", got)
			}
		})
	})
}

func TestWritesSpendTheBudgetAndAreNeverHeldBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, faketracker.LikeVikunja)
		for i := range 45 {
			e.mustEnsure("k"+string(rune('A'+i)), tracker.Draft{Title: "x"})
		}
		if left := e.budget.Left("acme/fake"); left != 0 {
			t.Fatalf("left %d after 45 writes", left)
		}
		if e.budget.Take("acme/fake") {
			t.Fatal("a poll took a request the writes spent")
		}
	})
}

// slowCreate blocks Create until released, whatever its context says: a
// request the tracker finishes after relayr gave up.
type slowCreate struct {
	*faketracker.Tracker
	entered chan struct{}
	release chan struct{}
}

func (s *slowCreate) Create(_ context.Context, key string, d tracker.Draft) (tracker.Item, error) {
	close(s.entered)
	<-s.release
	return s.Tracker.Create(context.Background(), key, d)
}

// trimmingFind answers Find's item with its title trimmed, as a tracker
// that trims titles holds it.
type trimmingFind struct{ *faketracker.Tracker }

func (f *trimmingFind) Find(ctx context.Context, key string) (tracker.Item, error) {
	it, err := f.Tracker.Find(ctx, key)
	it.Title = strings.TrimSpace(it.Title)
	return it, err
}

// slowItem holds the tracker's item read until the test releases it, or
// its caller's context ends.
type slowItem struct {
	*slowCreate
	itemEntered chan struct{}
	itemRelease chan struct{}
}

func (s *slowItem) Item(ctx context.Context, id string) (tracker.Item, error) {
	close(s.itemEntered)
	select {
	case <-s.itemRelease:
	case <-ctx.Done():
		return tracker.Item{}, ctx.Err()
	}
	return s.Tracker.Item(ctx, id)
}

func ensureLive(e *env, key string) error {
	_, err := e.w.EnsureItem(context.Background(), writes.EnsureParams{Tenant: "acme", Workspace: "ops", Key: key, Draft: tracker.Draft{Title: "x"}, Live: true})
	return err
}

// cancelOnSetValues is a caller giving up while an edit's values are
// recorded: the ledger answers the caller's cancellation.
type cancelOnSetValues struct {
	*memledger.Ledger
	cancel context.CancelFunc
}

func (l *cancelOnSetValues) SetValues(ctx context.Context, k ledger.Key, v map[string]string) (map[string]string, error) {
	l.cancel()
	return l.Ledger.SetValues(ctx, k, v)
}

// last is a field's value relayr recorded last.
func last(recorded string) string {
	p := ledger.Pending(recorded)
	if len(p) == 0 {
		return ""
	}
	return p[len(p)-1]
}

// A caller who gives up once the tracker has taken its create leaves the
// item recorded all the same (ADR-0033): the key holds no unrecorded claim
// and a retry answers the item made, not a second one.
func TestAnItemMadeIsRecordedThoughItsCallerGaveUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, faketracker.LikePlane)
		ctx, cancel := context.WithCancel(context.Background())
		e.fake.OnRequest(cancel) // the caller gives up as the create is sent
		_, _ = e.w.EnsureItem(ctx, writes.EnsureParams{Tenant: "acme", Workspace: "ops", Key: "k", Draft: tracker.Draft{Title: "t"}, Correlation: "run-k"})
		// The filing goes on without its caller: its record may land
		// after the caller's answer.
		synctest.Wait()
		row := e.row(ledger.KindItem, "k")
		if !row.Recorded || row.Ref.ID == "" {
			t.Fatalf("the key's row after its caller gave up: %+v, want the item made recorded", row)
		}
		r := e.mustEnsure("k", tracker.Draft{Title: "t"})
		if r.Item.Ref.ID != row.Ref.ID || r.How != writes.Existing {
			t.Fatalf("the retry answered %+v, want the item made (%s)", r, row.Ref.ID)
		}
		if n := e.fake.Calls("Create"); n != 1 {
			t.Fatalf("%d creates, want 1", n)
		}
	})
}

// setValuesFails is a ledger whose SetValues fails with err.
type setValuesFails struct {
	*memledger.Ledger
	err error
}

func (l setValuesFails) SetValues(context.Context, ledger.Key, map[string]string) (map[string]string, error) {
	return nil, l.err
}

// A ledger failure before the create is sent releases the claim, since the
// tracker was not asked, and answers the ledger's failure: unavailable for
// a store that did not answer, invalid for a value no store keeps.
func TestALedgerFailureBeforeTheCreateReleasesTheClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, c := range []struct {
			err  error
			want writes.Code
		}{
			{ledger.ErrUnavailable, writes.CodeUnavailable},
			{ledger.ErrInvalid, writes.CodeInvalid},
		} {
			e := newEnv(t, faketracker.LikePlane)
			w := writes.New(writes.Config{Ledger: setValuesFails{e.ledger, c.err}, Log: e.ledger, Connections: e.conns, Integrations: e.switch_, Clock: e.clock, Metrics: e.m, Budget: e.budget})
			_, err := w.EnsureItem(context.Background(), writes.EnsureParams{Tenant: "acme", Workspace: "ops", Key: "k", Draft: tracker.Draft{Title: "t"}})
			wantCode(t, err, c.want)
			if _, err := e.ledger.Lookup(context.Background(), ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindItem, Key: "k"}); !errors.Is(err, ledger.ErrNotFound) {
				t.Fatalf("%v: the key's claim after the ledger failed: %v, want it released", c.err, err)
			}
			if n := e.fake.Calls("Create"); n != 0 {
				t.Fatalf("%v: %d creates, want none", c.err, n)
			}
		}
	})
}

// A correlation longer than any store keeps is the caller's error, before
// the ledger or the tracker is touched.
func TestACorrelationOverItsLimitIsInvalid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, faketracker.LikePlane)
		_, err := e.w.EnsureItem(context.Background(), writes.EnsureParams{Tenant: "acme", Workspace: "ops", Key: "k", Draft: tracker.Draft{Title: "t"}, Correlation: strings.Repeat("c", ledger.MaxCorrelation+1)})
		wantCode(t, err, writes.CodeInvalid)
		if e.fake.TotalCalls() != 0 {
			t.Fatal("the correlation reached the tracker")
		}
		if _, err := e.ledger.Lookup(context.Background(), ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindItem, Key: "k"}); !errors.Is(err, ledger.ErrNotFound) {
			t.Fatal("the correlation touched the ledger")
		}
		e.mustEnsure("k", tracker.Draft{Title: "t"})
		_, err = e.w.Comment(context.Background(), writes.CommentParams{Tenant: "acme", Workspace: "ops", ItemKey: "k", Key: "c1", Body: "b", Correlation: strings.Repeat("c", ledger.MaxCorrelation+1)})
		wantCode(t, err, writes.CodeInvalid)
	})
}

// An update to a key whose filing has not finished is told to wait until
// the claim can resolve; once the claim can be retaken, only ensure can
// resolve it, and the update is refused, not told to retry for ever.
func TestAnUpdateToAKeyWhoseFilingDidNotFinishIsToldWhatResolvesIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, faketracker.LikePlane)
		k := ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindItem, Key: "k"}
		if _, _, err := e.ledger.Claim(context.Background(), ledger.ClaimParams{Key: k, Now: e.start, RetakeAfter: writes.DefaultRetakeAfter}); err != nil {
			t.Fatal(err)
		}
		title := "new"
		_, err := e.update("k", tracker.Patch{Title: &title})
		var werr *writes.Error
		if !errors.As(err, &werr) || werr.Code != writes.CodeClaimed || werr.RetryAfter != time.Second {
			t.Fatalf("an update while the filing may still run answered %v, want tracker_claimed after what filings take (a second, none seen)", err)
		}
		time.Sleep(writes.DefaultRetakeAfter)
		if _, err := e.update("k", tracker.Patch{Title: &title}); !errors.As(err, &werr) || werr.Code != writes.CodeClaimed || werr.RetryAfter != time.Second {
			t.Fatalf("an update as the claim lapses answered %v, want tracker_claimed after a second", err)
		}
		time.Sleep(time.Second)
		_, err = e.update("k", tracker.Patch{Title: &title})
		wantCode(t, err, writes.CodeRefused)
		if !strings.Contains(err.Error(), "ensure the key again") {
			t.Fatalf("the refusal %q does not say what resolves it", err)
		}
		e.mustEnsure("k", tracker.Draft{Title: "t"})
		if _, err := e.update("k", tracker.Patch{Title: &title}); err != nil {
			t.Fatalf("the update once ensure resolved the key: %v", err)
		}
	})
}

// TestWritesCountTheRequestsTheySend: relayr.trackers.writes counts every
// request a write sends to the tracker, the look-ups of a retaken claim
// among them, and nothing for a write answered from the ledger.
func TestWritesCountTheRequestsTheySend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, faketracker.LikeVikunja)
		e.mustEnsure("k1", tracker.Draft{Title: "t"})
		if got, want := e.m.Get(metrics.Writes), float64(e.fake.TotalCalls()); got != want || got == 0 {
			t.Fatalf("writes counted %v, the tracker took %v requests", got, want)
		}
		before := e.m.Get(metrics.Writes)
		e.mustEnsure("k1", tracker.Draft{Title: "t"}) // recorded: answered from the ledger
		if e.m.Get(metrics.Writes) != before {
			t.Fatalf("a retried filing of a recorded key counted %v writes", e.m.Get(metrics.Writes)-before)
		}
	})
}
