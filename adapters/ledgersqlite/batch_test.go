package ledgersqlite

import (
	"context"
	"errors"
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
