package follow

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/relayr-go/relayr/core/binding"
	"github.com/relayr-go/relayr/core/tracker"
)

// MaxPendingDeletions bounds the items one follower keeps to check after
// deliveries reported them deleted. A flood of verified deliveries costs no
// more memory than this; an id past it waits for the sweep.
const MaxPendingDeletions = 1024

// Wake wakes b's follower, when this process runs it and it follows the
// project a verified delivery names, debounced (ADR-0036: "A verified nudge
// wakes the followers this process runs of the project it names, debounced
// by 2 s"), and hands it the items the delivery reports deleted. At its
// debounced poll a follower reads each such item once, through its budget,
// and publishes tracker:item_removed with deleted: true only when the
// tracker answers that the item is gone; an item that still reads back, or
// that the binding never read (another project's, or removed already),
// publishes nothing. A delivery only nudges: nothing is believed without
// that read.
//
// Wake asks no switch: its caller asked it once, after the signature
// (ADR-0036: "only then the switch"), as the webhook route does, and wakes
// no switched-off workspace. It answers whether it woke the follower.
func (fs *Followers) Wake(b binding.Binding, n tracker.Nudged) bool {
	fs.mu.Lock()
	f, ok := fs.running[b.Name()]
	fs.mu.Unlock()
	if !ok || f.projectName() != n.Project {
		return false
	}
	f.deleted.add(n.Deleted)
	select {
	case f.nudges <- struct{}{}:
	default: // a nudge is already pending; they are debounced anyway
	}
	return true
}

// wakeSwitchedOn wakes the followers this process runs of a tenant's
// project on a tracker kind whose workspaces have the tracker switched on,
// asking each one's switch once. It answers how many it woke.
func (fs *Followers) wakeSwitchedOn(ctx context.Context, tenant, kind string, n tracker.Nudged) int {
	woken := 0
	for _, f := range fs.followersOf(tenant, kind) {
		if f.projectName() == n.Project && f.enabled(ctx) && fs.Wake(f.b, n) {
			woken++
		}
	}
	return woken
}

// pendingDeletions is the ids a follower was told are deleted and has not
// checked yet, in the order told, each once. The zero value is empty.
type pendingDeletions struct {
	mu  sync.Mutex
	ids []string
}

func (p *pendingDeletions) add(ids []string) {
	if len(ids) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range ids {
		if id != "" && len(p.ids) < MaxPendingDeletions && !slices.Contains(p.ids, id) {
			p.ids = append(p.ids, id)
		}
	}
}

// empty reports whether no deletion waits to be checked.
func (p *pendingDeletions) empty() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ids) == 0
}

func (p *pendingDeletions) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := p.ids
	p.ids = nil
	return ids
}

// checkThenRead is a poll: the reported deletions first, one request each,
// then the read of what changed. A check the budget couldn't pay for
// doesn't hold the read back (it waits for the next poll itself); a stop,
// a rate limit or a tracker that doesn't answer ends the poll as a failed
// read would.
func (f *follower) checkThenRead(ctx context.Context, pr *pollRun) error {
	err := f.checkDeleted(ctx, pr)
	if err != nil && !errors.Is(err, errOutOfBudget) {
		return err
	}
	if rerr := f.read(ctx, pr); rerr != nil {
		return rerr
	}
	return err
}

// checkDeleted reads each item a delivery reported deleted, one request
// each through the follower's budget as the poll draws on it (within the
// minute's room once the pacer admitted the poll), and removes those the tracker no
// longer has, as the sweep removes them (sweep.go), with deleted: true.
// What a failure (the budget spent, the tracker unavailable) leaves
// unchecked is kept for the next poll.
func (f *follower) checkDeleted(ctx context.Context, pr *pollRun) error {
	ids := f.deleted.take()
	r := &reader{f: f, pr: pr, acc: pr.use, announced: true}
	for i, id := range ids {
		if err := r.remove(ctx, id, true); err != nil {
			f.deleted.add(ids[i:])
			return err
		}
		f.fs.logger.Debug("tracker follower checked a reported deletion", "binding", f.b.Name(), "item", id)
	}
	return nil
}
