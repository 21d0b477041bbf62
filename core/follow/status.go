package follow

import (
	"context"
	"errors"
	"sort"
	"time"
)

// BindingStatus is one binding's follower as an operator sees it: who holds
// its lease, where its cursor is, when it last completed a poll and how far
// behind that is, and whether it is stopped and why. What the ledger keeps
// (the lease, the cursor, the last poll) is every replica's; what this
// process counts (deferred polls, unnudged changes, its last poll's tally)
// is its own.
type BindingStatus struct {
	Tenant    string `json:"tenant"`
	Workspace string `json:"workspace"`
	Tracker   string `json:"tracker"`
	// Project is the tracker project, once this process connected.
	Project   string `json:"project,omitempty"`
	BudgetKey string `json:"budget_key"`

	// Holder holds the follower's lease until LeaseExpires ("" when
	// nobody does); HeldHere is true when this process is the holder.
	Holder       string    `json:"holder"`
	LeaseExpires time.Time `json:"lease_expires,omitzero"`
	HeldHere     bool      `json:"held_here"`

	// CursorUpdatedAt and CursorItemID are how far the follower read.
	CursorUpdatedAt time.Time `json:"cursor_updated_at,omitzero"`
	CursorItemID    string    `json:"cursor_item_id,omitempty"`
	Seeded          bool      `json:"seeded"`
	SweptAt         time.Time `json:"swept_at,omitzero"`

	// PolledAt is the last completed poll, whichever replica made it;
	// LagSeconds how long ago that was (since the lease was taken here,
	// for a follower that never polled). Late is true past
	// DefaultLateAfter intervals.
	PolledAt   time.Time `json:"polled_at,omitzero"`
	LagSeconds float64   `json:"lag_seconds"`
	Late       bool      `json:"late"`
	// IntervalSeconds is how often the binding polls on its floor;
	// Stretched is true when its key has more bindings than its budget
	// can poll once every poll interval, so polls come less often.
	IntervalSeconds float64 `json:"interval_seconds"`
	Stretched       bool    `json:"stretched"`

	// Stopped says why the follower stopped ("" while it runs);
	// SwitchedOff is true when its integration is off in the workspace.
	Stopped     string `json:"stopped,omitempty"`
	SwitchedOff bool   `json:"switched_off"`

	// This process's counts: polls the key's pacer made wait, changes
	// published that no nudge announced (a silent webhook shows here),
	// and its last poll's requests, events published and failure.
	PollsDeferred     int64  `json:"polls_deferred"`
	Unnudged          int64  `json:"unnudged"`
	LastPollRequests  int    `json:"last_poll_requests"`
	LastPollPublished int    `json:"last_poll_published"`
	LastError         string `json:"last_error,omitempty"`
}

// Status answers every binding's follower, ordered by tenant and
// workspace. It reads the ledger (each lease and cursor) and never the
// tracker.
func (fs *Followers) Status(ctx context.Context) ([]BindingStatus, error) {
	now := fs.clock.Now()
	bindings := fs.conns.Bindings()
	sort.Slice(bindings, func(i, j int) bool { return bindings[i].Name() < bindings[j].Name() })
	fs.mu.Lock()
	running := make(map[string]*follower, len(fs.running))
	for k, f := range fs.running {
		running[k] = f
	}
	stopped := make(map[string]error, len(fs.stopped))
	for k, err := range fs.stopped {
		stopped[k] = err
	}
	fs.mu.Unlock()

	out := make([]BindingStatus, 0, len(bindings))
	var errs []error
	for _, b := range bindings {
		f := running[b.Name()]
		if f == nil {
			f = newFollower(fs, b) // for its id and interval alone
		}
		st := BindingStatus{
			Tenant: b.Tenant, Workspace: b.Workspace, Tracker: b.Kind(), Project: f.projectName(), BudgetKey: b.BudgetKey(),
			SwitchedOff: !f.enabled(ctx),
		}
		interval := f.interval()
		st.IntervalSeconds, st.Stretched = interval.Seconds(), interval > fs.opts.PollEvery
		lease, err := fs.ledger.Lease(ctx, f.id)
		if err != nil {
			errs = append(errs, err)
		}
		st.Holder, st.LeaseExpires, st.HeldHere = lease.Holder, lease.Expires, lease.Holder == fs.holder && now.Before(lease.Expires)
		cur, err := fs.ledger.Cursor(ctx, f.id)
		if err != nil {
			errs = append(errs, err)
		}
		st.CursorUpdatedAt, st.CursorItemID, st.Seeded, st.SweptAt, st.PolledAt = cur.UpdatedAt, cur.ItemID, cur.Seeded, cur.SweptAt, cur.PolledAt
		mine := f.state()
		since := cur.PolledAt
		if since.IsZero() {
			since = mine.heldSince
		}
		if !since.IsZero() {
			st.LagSeconds = now.Sub(since).Seconds()
			st.Late = now.Sub(since) > DefaultLateAfter*interval
		}
		if err := stopped[b.Name()]; err != nil {
			st.Stopped = err.Error()
		}
		st.PollsDeferred, st.Unnudged = mine.deferred, mine.unnudged
		st.LastPollRequests, st.LastPollPublished, st.LastError = mine.lastCount, mine.lastPublic, mine.lastError
		out = append(out, st)
	}
	return out, errors.Join(errs...)
}

// Local answers the followers this process runs and holds the lease of,
// from what it keeps in memory alone (no ledger read): for a scrape of
// metrics, which must stay cheap however many bindings there are.
func (fs *Followers) Local() []BindingStatus {
	now := fs.clock.Now()
	var out []BindingStatus
	for _, f := range fs.runningFollowers() {
		mine := f.state()
		if !mine.held {
			continue
		}
		interval := f.interval()
		since := mine.polled
		if since.Before(mine.heldSince) {
			since = mine.heldSince
		}
		out = append(out, BindingStatus{
			Tenant: f.b.Tenant, Workspace: f.b.Workspace, Tracker: f.b.Kind(), Project: f.projectName(), BudgetKey: f.b.BudgetKey(),
			Holder: fs.holder, HeldHere: true, PolledAt: mine.polled,
			LagSeconds: now.Sub(since).Seconds(), Late: now.Sub(since) > DefaultLateAfter*interval,
			IntervalSeconds: interval.Seconds(), Stretched: interval > fs.opts.PollEvery,
			PollsDeferred: mine.deferred, Unnudged: mine.unnudged,
			LastPollRequests: mine.lastCount, LastPollPublished: mine.lastPublic, LastError: mine.lastError,
		})
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Tenant+"/"+out[i].Workspace < out[j].Tenant+"/"+out[j].Workspace
	})
	return out
}
