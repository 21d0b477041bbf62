package ledgerpg

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/relayr-go/relayr/adapters/ledgerpg/pgtest"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
)

var groupT0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// holdGroups makes the grouper behave as if groupsInFlight groups were
// under way, so that the writes sent next queue; release ends the pretence
// by committing what queued as the first of those groups would, then
// giving back the others' places.
func holdGroups(t *testing.T, g *grouper) (waitQueued func(n int), release func()) {
	t.Helper()
	g.mu.Lock()
	g.inFlight = groupsInFlight
	g.mu.Unlock()
	waitQueued = func(n int) {
		for {
			g.mu.Lock()
			queued := len(g.queue)
			g.mu.Unlock()
			if queued >= n {
				return
			}
			runtime.Gosched()
		}
	}
	release = func() {
		g.commitNext()
		g.mu.Lock()
		g.inFlight -= groupsInFlight - 1
		g.mu.Unlock()
	}
	return waitQueued, release
}

func groupKey(i int) ledger.Key {
	return ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindItem, Key: fmt.Sprintf("group/%02d", i)}
}

// takeClaim takes groupKey(i) through the driver.
func takeClaim(ctx context.Context, l *Ledger, i int) error {
	_, _, err := l.d.TakeClaim(ctx, ledger.ClaimParams{Key: groupKey(i), Now: groupT0, RetakeAfter: time.Minute}, ledger.NewNonce())
	return err
}

// claimLater runs takeClaim on a goroutine of its own, and answers its
// error on the channel answered.
func claimLater(ctx context.Context, l *Ledger, i int) <-chan error {
	done := make(chan error, 1)
	go func() { done <- takeClaim(ctx, l, i) }()
	return done
}

// inOneGroup sends n writes while the groups are held, so that they queue,
// then ends the hold with end (given release, which commits them as one
// group) and answers each write's error.
func inOneGroup(t *testing.T, g *grouper, n int, write func(i int) error, end func(release func())) []error {
	t.Helper()
	waitQueued, release := holdGroups(t, g)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = write(i) })
	}
	waitQueued(n)
	end(release)
	wg.Wait()
	return errs
}

// endAtOnce ends inOneGroup's hold by releasing it.
func endAtOnce(release func()) { release() }

// TestWritesThatArriveTogetherShareOneTransaction queues a filing's claims
// and then its records while every group place is taken, and checks that
// each caller is answered its own row, from one group each time.
func TestWritesThatArriveTogetherShareOneTransaction(t *testing.T) {
	for _, mode := range pgtest.Modes {
		t.Run(mode.Name, func(t *testing.T) {
			l := newTestLedger(t, mode.RLS)
			ctx := t.Context()
			const n = 12
			claims := make([]ledger.Claim, n)
			outcomes := make([]ledger.Outcome, n)
			errs := make([]error, n)
			run := func(do func(i int)) {
				waitQueued, release := holdGroups(t, l.d.group)
				var wg sync.WaitGroup
				for i := range n {
					wg.Go(func() { do(i) })
				}
				waitQueued(n)
				release()
				wg.Wait()
				for i, err := range errs {
					if err != nil {
						t.Fatalf("write %d: %v", i, err)
					}
				}
			}
			run(func(i int) {
				claims[i], outcomes[i], errs[i] = l.Claim(ctx, ledger.ClaimParams{Key: groupKey(i), Correlation: fmt.Sprint("corr-", i), Now: groupT0, RetakeAfter: time.Minute})
			})
			for i, c := range claims {
				if outcomes[i] != ledger.Fresh || c.Key != groupKey(i) || c.Correlation != fmt.Sprint("corr-", i) || c.Nonce == "" {
					t.Fatalf("claim %d answered %v %+v", i, outcomes[i], c)
				}
			}
			if got := l.d.group.grouped.Load(); got != n {
				t.Fatalf("%d writes committed in a group, want the %d claims", got, n)
			}
			run(func(i int) {
				claims[i], errs[i] = l.Record(ctx, ledger.RecordParams{Key: groupKey(i), Nonce: claims[i].Nonce, Ref: tracker.ItemRef{ID: fmt.Sprint(100 + i), Number: int64(i)}, Now: groupT0})
			})
			for i, c := range claims {
				if !c.Recorded || c.Key != groupKey(i) || c.Ref.ID != fmt.Sprint(100+i) {
					t.Fatalf("record %d answered %+v", i, c)
				}
				stored, err := l.Lookup(ctx, groupKey(i))
				if err != nil || !stored.Recorded || stored.Ref.ID != fmt.Sprint(100+i) {
					t.Fatalf("key %d holds %+v, %v", i, stored, err)
				}
			}
			if got := l.d.group.grouped.Load(); got != 2*n {
				t.Fatalf("%d writes committed in a group, want %d", got, 2*n)
			}
		})
	}
}

// TestAWriteTheServerRefusesInAGroupIsUndoneAlone puts a claim the server
// refuses (a key holding a NUL byte, which no text column can keep and
// Store would have refused before) into a group of good ones: the group's
// transaction rolls back, and each write runs again alone, so only the
// refused one fails.
func TestAWriteTheServerRefusesInAGroupIsUndoneAlone(t *testing.T) {
	l := newTestLedger(t, false)
	ctx := t.Context()
	const n = 6
	outcomes := make([]ledger.Outcome, n)
	errs := inOneGroup(t, l.d.group, n, func(i int) error {
		k := groupKey(i)
		if i == 3 {
			k.Key += "\x00"
		}
		var err error
		_, outcomes[i], err = l.d.TakeClaim(ctx, ledger.ClaimParams{Key: k, Now: groupT0, RetakeAfter: time.Minute}, ledger.NewNonce())
		return err
	}, endAtOnce)
	for i, err := range errs {
		var pgErr *pgconn.PgError
		switch {
		case i == 3 && !errors.As(err, &pgErr):
			t.Fatalf("the refused claim answered %v, want the server's refusal", err)
		case i != 3 && (err != nil || outcomes[i] != ledger.Fresh):
			t.Fatalf("claim %d answered %v, %v: want it taken", i, outcomes[i], err)
		case i != 3:
			if _, err := l.Lookup(ctx, groupKey(i)); err != nil {
				t.Fatalf("claim %d was not kept: %v", i, err)
			}
		}
	}
	if got := l.d.group.grouped.Load(); got != 0 {
		t.Fatalf("%d writes counted as committed in a group that rolled back", got)
	}
}

// TestAWriteWhoseCallerGaveUpBeforeItsGroupIsNotRun cancels one caller's
// context while its claim waits for a group: it is answered its context's
// error and its key stays free.
func TestAWriteWhoseCallerGaveUpBeforeItsGroupIsNotRun(t *testing.T) {
	l := newTestLedger(t, false)
	ctx := t.Context()
	waitQueued, release := holdGroups(t, l.d.group)
	gaveUp, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var kept, dropped error
	wg.Go(func() { kept = takeClaim(ctx, l, 1) })
	wg.Go(func() { dropped = takeClaim(gaveUp, l, 2) })
	waitQueued(2)
	cancel()
	release()
	wg.Wait()
	if kept != nil || !errors.Is(dropped, context.Canceled) {
		t.Fatalf("the kept claim answered %v, the dropped one %v", kept, dropped)
	}
	if _, err := l.Lookup(ctx, groupKey(2)); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("the dropped claim's key: %v, want no row", err)
	}
}

// TestAWriteWhoseCallerGivesUpInTheQueueIsAnsweredAtOnce cancels a
// caller's context while its claim waits for a group and no group ends:
// the caller is answered its context's error at once, the claim leaves
// the queue unrun, and the groups under way end as if it had never come.
func TestAWriteWhoseCallerGivesUpInTheQueueIsAnsweredAtOnce(t *testing.T) {
	l := newTestLedger(t, false)
	g := l.d.group
	waitQueued, release := holdGroups(t, g)
	gaveUp, cancel := context.WithCancel(t.Context())
	done := claimLater(gaveUp, l, 1)
	waitQueued(1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the claim answered %v, want its context's error", err)
	}
	g.mu.Lock()
	queued := len(g.queue)
	g.mu.Unlock()
	if queued != 0 {
		t.Fatalf("%d writes queued after the only one gave up, want none", queued)
	}
	release()
	g.mu.Lock()
	inFlight := g.inFlight
	g.mu.Unlock()
	if inFlight != 0 {
		t.Fatalf("%d groups counted under way once both ended, want none", inFlight)
	}
	if _, err := l.Lookup(t.Context(), groupKey(1)); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("the claim's key: %v, want no row", err)
	}
}

// TestAWriteHandedTheLeadHandsItOnWhenItsCallerGaveUp hands the lead to a
// write whose caller has given up, with a write queued behind it that
// waits on another session's lock: the first is answered its context's
// error at once, without waiting on the second, which leads its own group
// and is committed once the lock is let go.
func TestAWriteHandedTheLeadHandsItOnWhenItsCallerGaveUp(t *testing.T) {
	l := newTestLedger(t, false)
	g := l.d.group
	ctx := t.Context()
	lock := fmt.Sprint(time.Now().UnixNano()) // an advisory lock no other test takes
	holder, err := pgtest.Open(t, pgtest.Admin(t)).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock($1::bigint)`, lock); err != nil {
		t.Fatal(err)
	}
	waitQueued, _ := holdGroups(t, g)
	gaveUp, cancel := context.WithCancel(ctx)
	first := claimLater(gaveUp, l, 0)
	waitQueued(1)
	second := make(chan error, 1)
	go func() {
		var n int
		second <- g.row(ctx, groupKey(1), `SELECT 1 FROM pg_advisory_xact_lock($1::bigint)`, []any{lock}, &n)
	}()
	waitQueued(2)
	// As handOn hands the lead to the first write queued, with its caller
	// gone already: under the lock, so that it cannot leave the queue first.
	g.mu.Lock()
	cancel()
	w := g.queue[0]
	w.leads = true
	w.wake <- groupWake{lead: true}
	g.mu.Unlock()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("the first write answered %v, want its context's error", err)
	}
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_unlock($1::bigint)`, lock); err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatalf("the second write answered %v, want it run", err)
	}
	for range groupsInFlight - 1 {
		g.handOn() // the other groups held end
	}
	g.mu.Lock()
	inFlight, queued := g.inFlight, len(g.queue)
	g.mu.Unlock()
	if inFlight != 0 || queued != 0 {
		t.Fatalf("%d groups under way and %d writes queued at the end, want none", inFlight, queued)
	}
	if _, err := l.Lookup(ctx, groupKey(0)); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("the first write's key: %v, want no row", err)
	}
}

// TestARowThatDoesNotScanFailsItsOwnWriteOnly puts a statement whose row
// does not scan into its destination (text into an int) into a group of
// claims: the group commits, that write alone is answered the scan's
// failure, and each claim is answered taken.
func TestARowThatDoesNotScanFailsItsOwnWriteOnly(t *testing.T) {
	l := newTestLedger(t, false)
	ctx := t.Context()
	const n = 4
	errs := inOneGroup(t, l.d.group, n, func(i int) error {
		if i == 2 {
			var number int
			return l.d.group.row(ctx, groupKey(i), `SELECT 'not a number'::text`, nil, &number)
		}
		return takeClaim(ctx, l, i)
	}, endAtOnce)
	for i, err := range errs {
		var scanErr pgx.ScanArgError
		switch {
		case i == 2 && !errors.As(err, &scanErr):
			t.Fatalf("the write that does not scan answered %v, want its scan's failure", err)
		case i != 2 && err != nil:
			t.Fatalf("claim %d answered %v, want it taken", i, err)
		case i != 2:
			if _, err := l.Lookup(ctx, groupKey(i)); err != nil {
				t.Fatalf("claim %d was not kept: %v", i, err)
			}
		}
	}
	if got := l.d.group.grouped.Load(); got != n {
		t.Fatalf("%d writes committed in a group, want %d", got, n)
	}
}

// TestAWriteCutShortByTheGroupersBoundIsUnavailable runs a write alone
// and a group with the grouper's bound already passed: each is answered
// ledger.ErrUnavailable (whether it was kept is unknown), never a
// deadline its caller, still waiting, could take for its own.
func TestAWriteCutShortByTheGroupersBoundIsUnavailable(t *testing.T) {
	l := newTestLedger(t, false)
	ctx := t.Context()
	g := l.d.group
	g.bound = 0
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ledger.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s answered %v, want ledger.ErrUnavailable and not a deadline", what, err)
		}
	}
	_, _, err := l.Claim(ctx, ledger.ClaimParams{Key: groupKey(0), Now: groupT0, RetakeAfter: time.Minute})
	check("a claim alone", err)
	errs := inOneGroup(t, g, 3, func(i int) error {
		_, _, err := l.Claim(ctx, ledger.ClaimParams{Key: groupKey(1 + i), Now: groupT0, RetakeAfter: time.Minute})
		return err
	}, endAtOnce)
	for i, err := range errs {
		check(fmt.Sprintf("claim %d of a group", i), err)
	}
}

// TestManyFilersAreEachAnsweredOnce files from sixteen goroutines at once,
// more than the groups under way can carry, so that groups end while
// writes wait for one: every filing is answered and kept, and none waits
// for a lead handed to a write that already has one.
func TestManyFilersAreEachAnsweredOnce(t *testing.T) {
	for _, mode := range pgtest.Modes {
		t.Run(mode.Name, func(t *testing.T) {
			l := newTestLedger(t, mode.RLS)
			ctx := t.Context()
			const filers, each = 16, 40
			var wg sync.WaitGroup
			errs := make(chan error, filers*each)
			for f := range filers {
				wg.Go(func() {
					for i := range each {
						k := ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindItem, Key: fmt.Sprintf("many/%02d/%02d", f, i)}
						c, o, err := l.Claim(ctx, ledger.ClaimParams{Key: k, Now: groupT0, RetakeAfter: time.Minute})
						if err != nil || o != ledger.Fresh || c.Key != k {
							errs <- fmt.Errorf("claim %v: %v %+v %w", k, o, c, err)
							continue
						}
						r, err := l.Record(ctx, ledger.RecordParams{Key: k, Nonce: c.Nonce, Ref: tracker.ItemRef{ID: k.Key}, Now: groupT0})
						if err != nil || r.Ref.ID != k.Key {
							errs <- fmt.Errorf("record %v: %+v %w", k, r, err)
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			t.Logf("%d of %d writes committed in a group", l.d.group.grouped.Load(), 2*filers*each)
		})
	}
}

// TestGroupsEndingTogetherHandTheLeadOnce ends every group under way while
// one write waits: the first hands it the lead, the others count
// themselves out, and the write then leads its own group to the end. A
// second lead handed to the same write would block that group's end for
// good.
func TestGroupsEndingTogetherHandTheLeadOnce(t *testing.T) {
	l := newTestLedger(t, false)
	g := l.d.group
	waitQueued, _ := holdGroups(t, g)
	done := claimLater(t.Context(), l, 1)
	waitQueued(1)
	for range groupsInFlight {
		g.handOn()
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inFlight != 0 || len(g.queue) != 0 {
		t.Fatalf("%d groups under way and %d writes queued after the last ended, want none", g.inFlight, len(g.queue))
	}
}

// TestAWriteHandedTheLeadAndAnsweredByAnotherGroupStillLeads hands a
// waiting write the lead while a second group takes it and answers it:
// whichever comes first, the write takes the lead up and ends its group,
// so no group stays counted under way.
func TestAWriteHandedTheLeadAndAnsweredByAnotherGroupStillLeads(t *testing.T) {
	l := newTestLedger(t, false)
	g := l.d.group
	for i := range 20 {
		waitQueued, _ := holdGroups(t, g)
		done := claimLater(t.Context(), l, i)
		waitQueued(1)
		g.handOn()     // the first group ends: the write is handed the lead
		g.commitNext() // the second takes the write, answers it, and ends
		for range groupsInFlight - 2 {
			g.handOn() // the others held end with nothing queued
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		g.mu.Lock()
		inFlight := g.inFlight
		g.mu.Unlock()
		if inFlight != 0 {
			t.Fatalf("round %d: %d groups counted under way once every write is answered, want none", i, inFlight)
		}
	}
}

func TestOnlyAnErrorTheSessionOutlivesRunsTheGroupAgainAlone(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"check violation", &pgconn.PgError{Severity: "ERROR", Code: "23514"}, true},
		{"check violation, on a server set to German", &pgconn.PgError{Severity: "FEHLER", SeverityUnlocalized: "ERROR", Code: "23514"}, true},
		{"terminated, on a server set to French", &pgconn.PgError{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "57P01"}, false},
		{"serialization failure at commit", fmt.Errorf("commit: %w", &pgconn.PgError{Severity: "ERROR", Code: "40001"}), true},
		{"terminated, perhaps after the commit", &pgconn.PgError{Severity: "FATAL", Code: "57P01"}, false},
		{"connection lost", errors.New("unexpected EOF"), false},
		{"no error", nil, false},
	} {
		if got := refused(c.err); got != c.want {
			t.Errorf("%s: refused %v, want %v", c.name, got, c.want)
		}
	}
}

// panicky is a destination whose scan panics, as a defect would.
type panicky struct{}

func (panicky) Scan(any) error { panic("a defect") }

// TestAGroupThatPanicsLeavesTheGrouperWorking puts a write whose scan
// panics into a group of claims: every write is answered
// ledger.ErrUnavailable (the group's COMMIT was sent with it, so whether
// it was kept is unknown), the panic goes on up the leader's goroutine,
// the connection goes back to the pool, and the next write runs.
func TestAGroupThatPanicsLeavesTheGrouperWorking(t *testing.T) {
	l := newTestLedger(t, false)
	g := l.d.group
	ctx := t.Context()
	errs := inOneGroup(t, g, 3, func(i int) error {
		if i == 1 {
			return g.row(ctx, groupKey(i), `SELECT 'x'::text`, nil, &panicky{})
		}
		return takeClaim(ctx, l, i)
	}, func(release func()) {
		defer func() {
			if r := recover(); r != "a defect" {
				t.Errorf("the leader recovered %v, want the scan's panic", r)
			}
			g.mu.Lock()
			g.inFlight -= groupsInFlight - 1 // the other groups held, which release would have ended
			g.mu.Unlock()
		}()
		release()
	})
	for i, err := range errs {
		if !errors.Is(err, ledger.ErrUnavailable) {
			t.Errorf("write %d answered %v, want ledger.ErrUnavailable", i, err)
		}
	}
	if acquired := l.d.pool.Stat().AcquiredConns(); acquired != 0 {
		t.Errorf("%d connections still taken from the pool, want none", acquired)
	}
	g.mu.Lock()
	inFlight, queued := g.inFlight, len(g.queue)
	g.mu.Unlock()
	if inFlight != 0 || queued != 0 {
		t.Fatalf("%d groups under way and %d writes queued after the panic, want none", inFlight, queued)
	}
	if _, o, err := l.Claim(ctx, ledger.ClaimParams{Key: groupKey(9), Now: groupT0, RetakeAfter: time.Minute}); err != nil || o != ledger.Fresh {
		t.Fatalf("the next claim answered %v, %v: want it taken", o, err)
	}
}

// TestWritesStartingTogetherShareOneBound: the writes that start within a
// thirtieth of the bound share its deadline, a later one gets a fresh
// one, and each bound ends when its deadline passes; the spent ones are
// let go.
func TestWritesStartingTogetherShareOneBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := &grouper{bound: 30 * time.Second}
		first := g.sharedBound()
		time.Sleep(900 * time.Millisecond)
		if g.sharedBound() != first {
			t.Fatal("a write 0.9 s later got a bound of its own")
		}
		time.Sleep(200 * time.Millisecond)
		second := g.sharedBound()
		if second == first {
			t.Fatal("a write 1.1 s later shares a bound that ends 28.9 s on")
		}
		until, _ := second.Deadline()
		if want := time.Now().Add(30 * time.Second); !until.Equal(want) {
			t.Fatalf("the bound ends at %v, want %v", until, want)
		}
		time.Sleep(29 * time.Second)
		synctest.Wait()
		if first.Err() == nil || second.Err() != nil {
			t.Fatalf("after 30.1 s the first bound answers %v, the second %v", first.Err(), second.Err())
		}
		time.Sleep(2 * time.Second)
		g.sharedBound()
		if len(g.spent) != 1 {
			t.Fatalf("%d bounds kept, want the one handed out", len(g.spent))
		}
		// A shorter bound holds at once, not when the shared one lapses.
		g.bound = time.Second
		until, _ = g.sharedBound().Deadline()
		if want := time.Now().Add(time.Second); until.After(want) {
			t.Fatalf("with a bound of 1 s the bound ends at %v, past %v", until, want)
		}
	})
}

// TestAClaimAndARecordAnswerTheRowAsStored: the claim and the record
// return only what their parameters leave open (takenColumns) and build
// the rest, alone and in a group: each answers the claim a later lookup
// reads, for a key with blanks and a non-ASCII letter, times with
// nanoseconds in a zone of their own, values set between the claim and
// its retake, and every field of the item.
func TestAClaimAndARecordAnswerTheRowAsStored(t *testing.T) {
	zone := time.FixedZone("IST", 5*3600+1800)
	for _, mode := range pgtest.Modes {
		for _, grouped := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/grouped=%v", mode.Name, grouped), func(t *testing.T) {
				l := newTestLedger(t, mode.RLS)
				ctx := t.Context()
				d := l.d
				others := 0
				write := func(f func() error) {
					t.Helper()
					if !grouped {
						if err := f(); err != nil {
							t.Fatal(err)
						}
						return
					}
					first := 100 + others
					others += 2
					errs := inOneGroup(t, d.group, 3, func(i int) error {
						if i == 0 {
							return f()
						}
						// Two other keys' claims share the group.
						_, _, err := d.TakeClaim(ctx, ledger.ClaimParams{Key: groupKey(first + i), Now: groupT0, RetakeAfter: time.Minute}, ledger.NewNonce())
						return err
					}, endAtOnce)
					if errs[0] != nil {
						t.Fatal(errs[0])
					}
				}
				asStored := func(what string, c ledger.Claim) {
					t.Helper()
					stored, err := d.LookupClaim(ctx, c.Key)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(c, stored) {
						t.Errorf("the %s answered\n%#v\nwhere the row holds\n%#v", what, c, stored)
					}
				}
				k := ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindComment, Key: "k é\t x"}
				now := groupT0.Add(123456789 * time.Nanosecond).In(zone)
				var (
					c ledger.Claim
					o ledger.Outcome
				)
				write(func() (err error) {
					c, o, err = d.TakeClaim(ctx, ledger.ClaimParams{Key: k, Correlation: "first", Now: now, RetakeAfter: time.Minute}, ledger.NewNonce())
					return err
				})
				if o != ledger.Fresh {
					t.Fatalf("the first claim found %v", o)
				}
				asStored("fresh claim", c)
				if err := d.ChangeValues(ctx, k, func(vs map[string]string) { vs["state"] = `["open"]` }); err != nil {
					t.Fatal(err)
				}
				write(func() (err error) {
					c, o, err = d.TakeClaim(ctx, ledger.ClaimParams{Key: k, Correlation: "second", Now: now.Add(2*time.Minute + 999), RetakeAfter: time.Minute}, ledger.NewNonce())
					return err
				})
				if o != ledger.Retaken || c.Correlation != "first" {
					t.Fatalf("the retake found %v, correlation %q", o, c.Correlation)
				}
				asStored("retaken claim", c)
				var recorded bool
				write(func() (err error) {
					c, recorded, err = d.RecordClaim(ctx, ledger.RecordParams{Key: k, Nonce: c.Nonce,
						Ref: tracker.ItemRef{ID: "id-1", Number: 1 << 40, Name: "OPS", Link: "http://127.0.0.1/1", Key: "item-1"}, Now: now.Add(3*time.Minute + 1)}, ledger.NewNonce())
					return err
				})
				if !recorded {
					t.Fatal("the record recorded nothing")
				}
				asStored("record", c)
			})
		}
	}
}

// TestAWriteRunsUntilItsCallerOrTheBoundEnds: within answers a context
// that ends with the bound and keeps the values of a caller that is never
// done, the caller's own context when its deadline comes first, and
// otherwise a context that ends with either.
func TestAWriteRunsUntilItsCallerOrTheBoundEnds(t *testing.T) {
	bound, endBound := context.WithDeadline(context.Background(), groupT0)
	defer endBound()
	type key struct{}
	valued := context.WithValue(context.Background(), key{}, "tracer")
	ctx, stop := within(valued, bound)
	if ctx.Value(key{}) != "tracer" {
		t.Error("a caller never done lost its context's values")
	}
	endBound()
	<-ctx.Done() // hangs if the bound's end is not passed on
	stop()
	bound, endBound = context.WithDeadline(context.Background(), groupT0)
	defer endBound()
	sooner, cancel := context.WithDeadline(context.Background(), groupT0.Add(-time.Second))
	defer cancel()
	if ctx, stop := within(sooner, bound); ctx != sooner {
		t.Error("a caller whose deadline comes first runs on something other than its own context")
	} else {
		stop()
	}
	for _, end := range []string{"caller", "bound"} {
		caller, endCaller := context.WithCancel(context.Background())
		bound, endBound := context.WithCancel(context.Background())
		ctx, stop := within(caller, bound)
		if ctx.Err() != nil {
			t.Fatalf("%s: the write's context ended before either", end)
		}
		if end == "caller" {
			endCaller()
		} else {
			endBound()
		}
		<-ctx.Done() // hangs if the end is not passed on
		stop()
		endCaller()
		endBound()
	}
}
