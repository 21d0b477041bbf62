// Package lease is a follower's lease on its ledger row, taken, renewed and
// released by whichever follower holds one (ADR-0015: a follower runs
// under a lease, so one process at a time reads or relays it; ADR-1002:
// leases that spread). The tracker followers (core/follow) and the log
// followers (core/deliver) both hold theirs through it.
package lease

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"time"

	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/ledger"
)

// DefaultTTL is a lease's default time to live: a follower renews it every
// third of it.
const DefaultTTL = 30 * time.Second

// RenewEvery is how often a lease of ttl is renewed: every third of it, so
// two renewals may fail before it lapses.
func RenewEvery(ttl time.Duration) time.Duration { return ttl / 3 }

// NewHolder names a process in the leases it takes, at random.
func NewHolder() string {
	var b [8]byte
	_, _ = crand.Read(b[:])
	return "relayr-" + hex.EncodeToString(b[:])
}

// Lease is a follower's hold on its row in the ledger: taken, renewed with
// the nonce the last change answered, released at once (Ratus: a holder
// whose lease was taken cannot renew it). It is not safe for concurrent
// use: one follower's loop takes, renews and releases it.
type Lease struct {
	Ledger   ledger.Followers
	Clock    clock.Clock
	Follower ledger.Follower
	Holder   string
	TTL      time.Duration

	nonce   string
	expires time.Time
}

// Take takes the lease, within its TTL: a take the ledger has not answered
// by then took a lease already lapsed, and the follower tries again.
func (x *Lease) Take(ctx context.Context) error {
	tctx, cancel := x.Clock.WithTimeout(ctx, x.TTL)
	defer cancel()
	l, err := x.Ledger.TakeLease(tctx, ledger.LeaseParams{Follower: x.Follower, Holder: x.Holder, Now: x.Clock.Now(), TTL: x.TTL})
	if err != nil {
		return err
	}
	x.nonce, x.expires = l.Nonce, l.Expires
	return nil
}

// Renew renews the lease, within what is left of it: past its expiry
// another replica may take the follower, so a renewal the ledger has not
// answered by then (a connection that hangs rather than fails) is a lease
// lost, and the follower stops (ADR-0015: one reader a binding, one relay
// a log).
func (x *Lease) Renew(ctx context.Context) error {
	rctx, cancel := x.Clock.WithTimeout(ctx, x.expires.Sub(x.Clock.Now()))
	defer cancel()
	l, err := x.Ledger.RenewLease(rctx, ledger.LeaseParams{Follower: x.Follower, Holder: x.Holder, Nonce: x.nonce, Now: x.Clock.Now(), TTL: x.TTL})
	if err != nil {
		x.nonce = ""
		return err
	}
	x.nonce, x.expires = l.Nonce, l.Expires
	return nil
}

// Held reports whether the lease is held, as far as this holder knows.
func (x *Lease) Held() bool { return x.nonce != "" }

// Drop forgets a lease found lost, without asking the ledger.
func (x *Lease) Drop() { x.nonce = "" }

// Expires is when the lease held lapses unless renewed.
func (x *Lease) Expires() time.Time { return x.expires }

// Release gives the lease up at once, even when ctx has ended (a stopping
// process gives its leases up so another replica takes over without
// waiting for them to lapse).
func (x *Lease) Release(ctx context.Context) {
	if x.nonce == "" {
		return
	}
	rctx, cancel := x.Clock.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = x.Ledger.ReleaseLease(rctx, x.Follower, x.nonce)
	x.nonce = ""
}
