package follow

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relayr-go/relayr/core/budget"
	"github.com/relayr-go/relayr/core/ledger"
)

// share is this replica's part of the bindings' leases (ADR-1002): the
// replicas see each other through the ledger's heartbeats (ledger.Holders),
// and each aims at its fair share, ceil(bindings / live holders).
//
//   - A follower tries to take its lease only while the replica holds
//     fewer than its share, counting it before it tries (reserve), so a
//     start, or a takeover after a kill, spreads over the replicas instead
//     of going to whichever asks first, and no replica takes past its
//     share.
//   - At renewal, a replica over its share gives the lease up instead of
//     renewing it (giveUp), one lease at a time, so a replica that started
//     or came back takes its share from the others within about a lease.
//     The lease is released, not left to lapse: another replica under its
//     share takes it at its next try, within a third of a lease.
//
// Until the first beat is answered the share is every binding, as it was
// before replicas saw each other: a ledger that can't be reached never
// leaves a binding unheld for want of a count.
type share struct {
	bindings int64
	// held is the tracker leases this replica holds, pending the places
	// reserved for takes under way; both change under cmu (held is read
	// without it).
	cmu     sync.Mutex
	held    atomic.Int64
	pending int64
	fair    atomic.Int64 // ceil(bindings / live holders)
	live    atomic.Int64 // live holders at the last beat
	beaten  atomic.Bool  // a beat was sent: Stop leaves

	mu      sync.Mutex
	holders []ledger.Holder // the last beat's answer
	at      time.Time       // when it was answered

	fmu  sync.Mutex
	free chan struct{} // closed when a place is given back (freed)
}

func newShare(bindings int) *share {
	s := &share{bindings: int64(bindings)}
	s.fair.Store(int64(bindings))
	s.live.Store(1)
	return s
}

// set takes a beat's answer: the holders alive at now count.
func (s *share) set(hs []ledger.Holder, now time.Time) {
	live := 0
	for _, h := range hs {
		if h.Alive(now) {
			live++
		}
	}
	n := int64(max(1, live))
	s.live.Store(n)
	if fair := (s.bindings + n - 1) / n; s.fair.Swap(fair) < fair {
		s.wake() // a larger share has places for the followers refused one
	}
	s.mu.Lock()
	s.holders, s.at = hs, now
	s.mu.Unlock()
}

// reserve counts a place for a lease about to be taken, if the replica's
// leases and the places reserved leave room in its share, and answers
// whether it did: only then does a follower try to take its lease, and it
// then calls took or, when the take fails, unreserve. Counted before the
// take, followers trying at once never take past the share: after a kill,
// the survivors each take their new share and no more, instead of the
// first to ask taking most of the dead replica's (182 of 300 where the
// fair share was 150).
func (s *share) reserve() bool {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	if s.held.Load()+s.pending >= s.fair.Load() {
		return false
	}
	s.pending++
	return true
}

// took turns a reserved place into a lease held.
func (s *share) took() {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	s.pending--
	s.held.Add(1)
}

// unreserve gives back a place reserved for a take that failed.
func (s *share) unreserve() {
	s.cmu.Lock()
	s.pending--
	s.cmu.Unlock()
	s.wake()
}

// freed answers a channel closed the next time a place in the share is
// given back (a take that failed, a lease lost, released or given up, a
// larger share): a
// follower refused a place only because others were trying theirs tries
// again then, not a third of a lease later.
func (s *share) freed() <-chan struct{} {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	if s.free == nil {
		s.free = make(chan struct{})
	}
	return s.free
}

// wake closes the channel freed answered.
func (s *share) wake() {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	if s.free != nil {
		close(s.free)
		s.free = nil
	}
}

// giveUp uncounts a held lease if the replica holds more than its share,
// and answers whether it did: the caller then releases the lease instead
// of renewing it.
func (s *share) giveUp() bool {
	s.cmu.Lock()
	if s.held.Load() <= s.fair.Load() {
		s.cmu.Unlock()
		return false
	}
	s.held.Add(-1)
	s.cmu.Unlock()
	s.wake()
	return true
}

// release uncounts a lease lost or released, and wakes the followers
// waiting for a place.
func (s *share) release() {
	s.cmu.Lock()
	s.held.Add(-1)
	s.cmu.Unlock()
	s.wake()
}

// ShareStatus is this replica's part of the leases as the status route
// shows it.
type ShareStatus struct {
	// Holder is this replica; Replicas the live holders it saw at its
	// last heartbeat, itself included.
	Holder   string   `json:"holder"`
	Replicas []string `json:"replicas"`
	// Bindings is how many bindings the replicas share; Fair this
	// replica's share of them, ceil(bindings / replicas); Held how many
	// leases it holds.
	Bindings int `json:"bindings"`
	Fair     int `json:"fair"`
	Held     int `json:"held"`
}

// Share answers this replica's part of the bindings' leases.
func (fs *Followers) Share() ShareStatus {
	s := fs.share
	s.mu.Lock()
	names := make([]string, 0, len(s.holders))
	for _, h := range s.holders {
		if h.Alive(s.at) {
			names = append(names, h.Name)
		}
	}
	s.mu.Unlock()
	if len(names) == 0 {
		names = []string{fs.holder}
	}
	return ShareStatus{Holder: fs.holder, Replicas: names, Bindings: int(s.bindings), Fair: int(s.fair.Load()), Held: int(s.held.Load())}
}

// Holders answers the holders this replica saw at its last heartbeat,
// those alive and those gone within a minute, with what each spent of
// each key in its last minute.
func (fs *Followers) Holders() []ledger.Holder {
	fs.share.mu.Lock()
	defer fs.share.mu.Unlock()
	return append([]ledger.Holder(nil), fs.share.holders...)
}

// beat records this replica alive for two beats and counts the live ones.
// A beat that fails keeps the last count: the leases themselves still keep
// a binding to one replica.
func (fs *Followers) beat(ctx context.Context) {
	var spent map[string]int
	if fs.budget != nil {
		spent = map[string]int{}
		for _, k := range fs.budget.Status() {
			spent[k.Key] = k.Spent
		}
	}
	fs.share.beaten.Store(true)
	now := fs.clock.Now()
	hs, err := fs.ledger.Beat(ctx, ledger.BeatParams{Holder: fs.holder, Now: now, TTL: fs.opts.beatTTL(), Spent: spent})
	if err != nil {
		if ctx.Err() == nil {
			fs.logger.Warn("replica heartbeat failed", "holder", fs.holder, "err", err)
		}
		return
	}
	before := fs.share.live.Load()
	fs.share.mu.Lock()
	first := fs.share.at.IsZero()
	fs.share.mu.Unlock()
	fs.share.set(hs, now)
	if fs.budget != nil {
		// One budget per key across replicas: each spends its part.
		fs.budget.SetReplicas(int(fs.share.live.Load()))
		if first {
			// What replicas gone within the minute spent is still in the
			// tracker's minute: a replica that starts leaves room for it.
			// So is what the live ones spent before they see this one: it
			// joins them with that counted (budget.Join), and spends what
			// its share leaves beside it.
			gone, live := map[string]int{}, map[string]int{}
			for _, h := range hs {
				if h.Name == fs.holder {
					continue
				}
				into := gone
				if h.Alive(now) {
					into = live
				}
				for k, n := range h.Spent {
					into[k] += n
				}
			}
			for k, n := range gone {
				fs.budget.Inherit(k, n)
			}
			for k, n := range live {
				fs.budget.Join(k, n)
			}
		}
	}
	if n := fs.share.live.Load(); n != before {
		fs.logger.Info("replicas changed", "holder", fs.holder, "replicas", n, "fair_share", fs.share.fair.Load(), "held", fs.share.held.Load())
	}
}

// BudgetStatus answers every key's budget as the status route shows it:
// this replica's, with what every live replica spent of the key in its
// last minute as their heartbeats last told (ADR-1001: the key's budget
// across replicas). It answers nil without a budget.
func (fs *Followers) BudgetStatus() []budget.KeyStatus {
	if fs.budget == nil {
		return nil
	}
	out := fs.budget.Status()
	others := map[string]int{}
	for _, h := range fs.Holders() {
		if h.Name == fs.holder {
			continue
		}
		for k, n := range h.Spent {
			others[k] += n
		}
	}
	for i := range out {
		out[i].SpentAcrossReplicas = out[i].Spent + others[out[i].Key]
	}
	return out
}
