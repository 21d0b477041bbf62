package ledgersqlite

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/ledger"
)

// takeOp is a write that takes k with nonce, answering into c.
func takeOp(ctx context.Context, k ledger.Key, c *ledger.Claim) *op {
	return &op{ctx: ctx, err: make(chan error, 1), fn: func(x on) error {
		var err error
		*c, _, err = takeClaim(x, ledger.ClaimParams{Key: k, Now: t0, RetakeAfter: time.Minute}, "n-"+k.Key)
		return err
	}}
}

// A batch shares one transaction, and a write that fails in it is undone
// alone: the writes beside it commit, and each caller hears its own answer.
func TestAWriteThatFailsInABatchIsUndoneAlone(t *testing.T) {
	l := newLedger(t)
	ctx := t.Context()
	refused := errors.New("refused")
	var c1, c2, c3 ledger.Claim
	failing := takeOp(ctx, key("k2"), &c2)
	take := failing.fn
	failing.fn = func(x on) error {
		if err := take(x); err != nil {
			return err
		}
		return refused // after its row is written: the savepoint undoes it
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	var c4 ledger.Claim
	batch := []*op{takeOp(ctx, key("k1"), &c1), failing, takeOp(ctx, key("k3"), &c3), takeOp(cancelled, key("k4"), &c4)}
	l.d.wr.commit(batch)
	want := []error{nil, refused, nil, context.Canceled}
	for i, o := range batch {
		if err := <-o.err; !errors.Is(err, want[i]) || (want[i] == nil && err != nil) {
			t.Errorf("write %d answered %v, want %v", i+1, err, want[i])
		}
	}
	for _, k := range []string{"k1", "k3"} {
		if c, err := l.Lookup(ctx, key(k)); err != nil || c.Nonce != "n-"+k {
			t.Errorf("%s after the batch: %+v, %v", k, c, err)
		}
	}
	for _, k := range []string{"k2", "k4"} {
		if _, err := l.Lookup(ctx, key(k)); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("%s after the batch: %v, want ErrNotFound", k, err)
		}
	}
}

// A write whose failure SQLite answers by rolling the whole transaction
// back (a full disk) takes its batch's savepoints with it: the writes
// beside it are answered ledger.ErrUnavailable, since nothing of the
// batch is kept and each may be tried again, not the missing savepoint.
func TestAWriteThatLosesTheBatchsTransactionLeavesTheOthersUnavailable(t *testing.T) {
	l := newLedger(t)
	ctx := t.Context()
	var pages int
	if err := l.d.w.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := l.d.w.ExecContext(ctx, fmt.Sprint("PRAGMA max_page_count = ", pages+20)); err != nil {
		t.Fatal(err)
	}
	var c1, c3 ledger.Claim
	tooBig := &op{ctx: ctx, err: make(chan error, 1), fn: func(x on) error {
		_, err := x.exec(saveSnapshot, "acme", "ops", "7", []byte(strings.Repeat("z", 4<<20)), nil, nil, 0)
		return err
	}}
	batch := []*op{takeOp(ctx, key("k1"), &c1), tooBig, takeOp(ctx, key("k3"), &c3)}
	l.d.wr.commit(batch)
	for i, o := range batch {
		err := <-o.err
		if i == 1 {
			err = l.d.MapError(err)
		}
		if !errors.Is(err, ledger.ErrUnavailable) {
			t.Errorf("write %d answered %v, want ledger.ErrUnavailable", i+1, err)
		}
	}
	for _, k := range []string{"k1", "k3"} {
		if _, err := l.Lookup(ctx, key(k)); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("%s after the lost batch: %v, want ErrNotFound", k, err)
		}
	}
}

// Writes that arrive while one commits are answered after the commit that
// carries them, each with its own row.
func TestConcurrentWritesAreEachAnsweredWithTheirOwnRow(t *testing.T) {
	l := newLedger(t)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 25 {
				k := key(string(rune('a'+g)) + "/" + string(rune('a'+i)))
				c, o, err := l.Claim(t.Context(), ledger.ClaimParams{Key: k, Correlation: k.Key, Now: t0, RetakeAfter: time.Minute})
				if err != nil || o != ledger.Fresh || c.Key != k || c.Correlation != k.Key {
					t.Errorf("claim of %s: %+v, %v, %v", k.Key, c, o, err)
					return
				}
				if r, err := l.Record(t.Context(), ledger.RecordParams{Key: k, Nonce: c.Nonce, Now: t0}); err != nil || !r.Recorded || r.Key != k {
					t.Errorf("record of %s: %+v, %v", k.Key, r, err)
					return
				}
			}
		})
	}
	wg.Wait()
	rows, err := l.Unrecorded(t.Context(), "acme", 500)
	if err != nil || len(rows) != 0 {
		t.Fatalf("%d unrecorded after every record, %v", len(rows), err)
	}
}

// holdBatch makes the writer behave as if a batch were in flight, so that
// the writes sent next queue; waitQueued waits until n have.
func holdBatch(w *writer) (waitQueued func(n int)) {
	w.mu.Lock()
	w.leading = true
	w.mu.Unlock()
	return func(n int) {
		for {
			w.mu.Lock()
			queued := len(w.queue)
			w.mu.Unlock()
			if queued >= n {
				return
			}
			runtime.Gosched()
		}
	}
}

// claimLater claims k through the ledger on a goroutine of its own, and
// answers its error on the channel answered.
func claimLater(ctx context.Context, l *Ledger, k ledger.Key) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, _, err := l.Claim(ctx, ledger.ClaimParams{Key: k, Now: t0, RetakeAfter: time.Minute})
		done <- err
	}()
	return done
}

// A caller that gives up while its write waits in the queue, and no batch
// ends, is answered its context's error at once, and its write leaves the
// queue unrun.
func TestAWriteWhoseCallerGivesUpInTheQueueIsAnsweredAtOnce(t *testing.T) {
	l := newLedger(t)
	w := l.d.wr
	waitQueued := holdBatch(w)
	gaveUp, cancel := context.WithCancel(t.Context())
	done := claimLater(gaveUp, l, key("k1"))
	waitQueued(1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the claim answered %v, want its context's error", err)
	}
	w.mu.Lock()
	queued := len(w.queue)
	w.leading = false
	w.mu.Unlock()
	if queued != 0 {
		t.Fatalf("%d writes queued after the only one gave up, want none", queued)
	}
	if _, err := l.Lookup(t.Context(), key("k1")); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("the claim's key: %v, want no row", err)
	}
}

// A write handed the lead whose caller has given up hands it on: it is
// answered its context's error at once, without waiting on the write
// queued behind it, which leads its own batch.
func TestAWriteHandedTheLeadHandsItOnWhenItsCallerGaveUp(t *testing.T) {
	l := newLedger(t)
	w := l.d.wr
	waitQueued := holdBatch(w)
	gaveUp, cancel := context.WithCancel(t.Context())
	first := claimLater(gaveUp, l, key("k0"))
	waitQueued(1)
	letGo := make(chan struct{})
	second := make(chan error, 1)
	go func() {
		second <- w.do(t.Context(), false, func(on) error { <-letGo; return nil })
	}()
	waitQueued(2)
	// As handOn hands the lead to the first write queued, with its caller
	// gone already: under the lock, so that it cannot leave first.
	w.mu.Lock()
	cancel()
	w.queue[0].lead <- struct{}{}
	w.mu.Unlock()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("the first write answered %v, want its context's error", err)
	}
	close(letGo)
	if err := <-second; err != nil {
		t.Fatalf("the second write answered %v, want it run", err)
	}
	w.mu.Lock()
	leading, queued := w.leading, len(w.queue)
	w.mu.Unlock()
	if leading || queued != 0 {
		t.Fatalf("a batch still in flight (%v) and %d writes queued at the end, want neither", leading, queued)
	}
	if _, err := l.Lookup(t.Context(), key("k0")); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("the first write's key: %v, want no row", err)
	}
}

// A write whose function panics (a defect) rolls its batch back: every
// write in it is answered that it panicked, the panic goes on up the
// leader's goroutine, and the writer still takes the next write.
func TestAWriteThatPanicsLeavesTheWriterWorking(t *testing.T) {
	l := newLedger(t)
	w := l.d.wr
	ctx := t.Context()
	var c1, c3 ledger.Claim
	panicking := &op{ctx: ctx, err: make(chan error, 1), fn: func(on) error { panic("a defect") }}
	batch := []*op{takeOp(ctx, key("k1"), &c1), panicking, takeOp(ctx, key("k3"), &c3)}
	w.mu.Lock()
	w.leading = true
	w.queue = append(w.queue, batch...)
	w.mu.Unlock()
	func() {
		defer func() {
			if r := recover(); r != "a defect" {
				t.Errorf("the leader recovered %v, want the write's panic", r)
			}
		}()
		w.commitNext()
	}()
	for i, o := range batch {
		if err := <-o.err; err == nil || !strings.Contains(err.Error(), "panicked") {
			t.Errorf("write %d answered %v, want that a write panicked", i+1, err)
		}
	}
	for _, k := range []string{"k1", "k3"} {
		if _, err := l.Lookup(ctx, key(k)); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("%s after the batch rolled back: %v, want ErrNotFound", k, err)
		}
	}
	if _, o, err := l.Claim(ctx, ledger.ClaimParams{Key: key("k4"), Now: t0, RetakeAfter: time.Minute}); err != nil || o != ledger.Fresh {
		t.Fatalf("the next claim answered %v, %v: want it taken", o, err)
	}
}
