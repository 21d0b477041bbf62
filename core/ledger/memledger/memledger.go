// Package memledger is the in-memory Ledger and EventLog: the portable
// ledger.Store over a driver that keeps its rows in maps behind one mutex,
// for tests and for a relayr that needs to remember nothing across
// restarts.
//
// Store owns the ports' rules (the checks, the claim's outcomes, the
// pending values, the cursor's order); the driver runs the same conformance
// suite (drivertest) as the SQL drivers, and the ledger the same contract
// suites (ledgertest, eventlogtest).
package memledger

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/ledger"
)

var (
	_ ledger.Ledger   = (*Ledger)(nil)
	_ ledger.Operator = (*Ledger)(nil)
	_ eventlog.Log    = (*Ledger)(nil)
	_ ledger.Driver   = (*driver)(nil)
)

// Ledger is the in-memory ledger: the portable ledger.Store over the
// memory driver, safe for concurrent use. The zero value is not ready; use
// New.
type Ledger struct {
	*ledger.Store
}

// New returns an empty ledger.
func New() *Ledger { return &Ledger{Store: ledger.NewStore(newDriver())} }

// driver keeps every row in maps behind one mutex: each of its methods is
// one critical section, as each of a SQL store's is one statement or
// transaction.
type driver struct {
	mu        sync.Mutex
	claims    map[ledger.Key]*ledger.Claim
	writes    map[itemKey][]time.Time
	snapshots map[workspaceKey]map[string]ledger.SnapshotRow
	followers map[ledger.Follower]*followerRow
	dead      map[ledger.Follower]*deadLetters
	logs      map[workspaceKey]*workspaceLog
	holders   Holders
}

type workspaceKey struct{ tenant, workspace string }

type itemKey struct{ tenant, workspace, itemID string }

type followerRow struct {
	holder  string
	nonce   string
	expires time.Time
	cursor  ledger.Cursor
}

type deadLetters struct {
	ids  map[string]bool
	list []ledger.DeadLetter
}

type workspaceLog struct {
	events []eventlog.Event
	seqs   map[string]int64
}

func newDriver() *driver {
	return &driver{
		claims:    map[ledger.Key]*ledger.Claim{},
		writes:    map[itemKey][]time.Time{},
		snapshots: map[workspaceKey]map[string]ledger.SnapshotRow{},
		followers: map[ledger.Follower]*followerRow{},
		dead:      map[ledger.Follower]*deadLetters{},
		logs:      map[workspaceKey]*workspaceLog{},
	}
}

// Name implements ledger.Driver.
func (l *driver) Name() string { return "memledger" }

// MapError implements ledger.Driver: memory fails in no way of its own.
func (l *driver) MapError(err error) error { return err }

// Close implements ledger.Driver: memory holds nothing to release.
func (l *driver) Close() error { return nil }

func copyClaim(c *ledger.Claim) ledger.Claim {
	out := *c
	if len(c.Values) > 0 {
		out.Values = maps.Clone(c.Values)
	} else {
		out.Values = nil
	}
	return out
}

// TakeClaim implements ledger.Driver.
func (l *driver) TakeClaim(_ context.Context, p ledger.ClaimParams, nonce string) (ledger.Claim, ledger.Outcome, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.claims[p.Key]
	if !ok {
		c = &ledger.Claim{Key: p.Key, Nonce: nonce, ClaimedAt: p.Now, Correlation: p.Correlation}
		l.claims[p.Key] = c
		return copyClaim(c), ledger.Fresh, nil
	}
	if !c.Deleted && !c.Recorded && c.ClaimedAt.Before(p.Now.Add(-p.RetakeAfter)) {
		c.Nonce = nonce
		c.ClaimedAt = p.Now
		return copyClaim(c), ledger.Retaken, nil
	}
	return copyClaim(c), 0, nil
}

// RecordClaim implements ledger.Driver.
func (l *driver) RecordClaim(_ context.Context, p ledger.RecordParams, nonce string) (ledger.Claim, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.claims[p.Key]
	if !ok {
		return ledger.Claim{}, false, ledger.ErrNotFound
	}
	if c.Recorded || c.Nonce != p.Nonce {
		return copyClaim(c), false, nil
	}
	c.Recorded = true
	c.Ref = p.Ref
	c.RecordedAt = p.Now
	c.Nonce = nonce
	if r := p.Snapshot; r != nil {
		w := workspaceKey{r.Tenant, r.Workspace}
		if _, ok := l.snapshots[w][r.ItemID]; !ok {
			if l.snapshots[w] == nil {
				l.snapshots[w] = map[string]ledger.SnapshotRow{}
			}
			l.snapshots[w][r.ItemID] = copySnapshot(*r)
		}
	}
	return copyClaim(c), true, nil
}

// ReleaseClaim implements ledger.Driver.
func (l *driver) ReleaseClaim(_ context.Context, k ledger.Key, nonce string) (ledger.Claim, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.claims[k]
	if !ok {
		return ledger.Claim{}, false, ledger.ErrNotFound
	}
	if c.Recorded || c.Deleted || c.Nonce != nonce {
		return copyClaim(c), false, nil
	}
	delete(l.claims, k)
	return ledger.Claim{}, true, nil
}

// MarkDeleted implements ledger.Driver.
func (l *driver) MarkDeleted(_ context.Context, k ledger.Key, nonce string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.claims[k]
	if !ok {
		c = &ledger.Claim{Key: k}
		l.claims[k] = c
	}
	c.Deleted = true
	c.Nonce = nonce
	return nil
}

// LookupClaim implements ledger.Driver.
func (l *driver) LookupClaim(_ context.Context, k ledger.Key) (ledger.Claim, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.claims[k]
	if !ok {
		return ledger.Claim{}, ledger.ErrNotFound
	}
	return copyClaim(c), nil
}

// LookupItem implements ledger.Driver. Of two keys recorded for one item,
// the first in byte order answers.
func (l *driver) LookupItem(_ context.Context, tenant, workspace, itemID string) (ledger.Claim, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var found *ledger.Claim
	for k, c := range l.claims {
		if k.Tenant != tenant || k.Workspace != workspace || k.Kind != ledger.KindItem || !c.Recorded || c.Ref.ID != itemID {
			continue
		}
		if found == nil || k.Key < found.Key.Key {
			found = c
		}
	}
	if found == nil {
		return ledger.Claim{}, ledger.ErrNotFound
	}
	return copyClaim(found), nil
}

// ChangeValues implements ledger.Driver: change runs under the lock, as
// the SQL drivers run it in one transaction.
func (l *driver) ChangeValues(_ context.Context, k ledger.Key, change func(map[string]string)) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.claims[k]
	if !ok {
		return ledger.ErrNotFound
	}
	if c.Values == nil {
		c.Values = map[string]string{}
	}
	change(c.Values)
	return nil
}

// CountWrite implements ledger.Driver.
func (l *driver) CountWrite(_ context.Context, p ledger.WriteParams) (int, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := itemKey{p.Tenant, p.Workspace, p.ItemID}
	since := p.Now.Add(-p.Window)
	// ADR-0036: at most 20 writes to one item an hour; older writes leave
	// the window and are forgotten.
	kept := l.writes[k][:0]
	for _, w := range l.writes[k] {
		if w.After(since) {
			kept = append(kept, w)
		}
	}
	if len(kept) >= p.Limit {
		l.writes[k] = kept
		return len(kept), false, nil
	}
	kept = append(kept, p.Now)
	l.writes[k] = kept
	return len(kept), true, nil
}

// UncountWrite implements ledger.Driver.
func (l *driver) UncountWrite(_ context.Context, p ledger.WriteParams) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := itemKey{p.Tenant, p.Workspace, p.ItemID}
	ws := l.writes[k]
	if i := slices.IndexFunc(ws, p.Now.Equal); i >= 0 {
		l.writes[k] = slices.Delete(ws, i, i+1)
	}
	return nil
}

// ForgetWrites implements ledger.Driver.
func (l *driver) ForgetWrites(_ context.Context, tenant, workspace, itemID string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.writes, itemKey{tenant, workspace, itemID})
	return nil
}

func copySnapshot(r ledger.SnapshotRow) ledger.SnapshotRow {
	r.Item = bytes.Clone(r.Item)
	return r
}

// Snapshot implements ledger.Driver.
func (l *driver) Snapshot(_ context.Context, tenant, workspace, itemID string) (ledger.SnapshotRow, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.snapshots[workspaceKey{tenant, workspace}][itemID]
	if !ok {
		return ledger.SnapshotRow{}, ledger.ErrNotFound
	}
	return copySnapshot(r), nil
}

// SaveSnapshots implements ledger.Driver.
func (l *driver) SaveSnapshots(_ context.Context, rows []ledger.SnapshotRow) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range rows {
		w := workspaceKey{r.Tenant, r.Workspace}
		if l.snapshots[w] == nil {
			l.snapshots[w] = map[string]ledger.SnapshotRow{}
		}
		l.snapshots[w][r.ItemID] = copySnapshot(r)
	}
	return nil
}

// DeleteSnapshot implements ledger.Driver.
func (l *driver) DeleteSnapshot(_ context.Context, tenant, workspace, itemID string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.snapshots[workspaceKey{tenant, workspace}], itemID)
	return nil
}

// SnapshotIDs implements ledger.Driver.
func (l *driver) SnapshotIDs(_ context.Context, tenant, workspace, after string, limit int) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ids []string
	for id, r := range l.snapshots[workspaceKey{tenant, workspace}] {
		if id > after && !r.Removed {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	if len(ids) > limit {
		ids = ids[:limit]
	}
	return ids, nil
}

// TakeLease implements ledger.Driver (ADR-0015: a lease is taken when
// nobody holds it or it lapsed).
func (l *driver) TakeLease(_ context.Context, p ledger.LeaseParams, nonce string) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	row := l.followers[p.Follower]
	if row == nil {
		row = &followerRow{}
		l.followers[p.Follower] = row
	}
	if row.holder != "" && p.Now.Before(row.expires) {
		return false, nil
	}
	row.holder, row.nonce, row.expires = p.Holder, nonce, p.Now.Add(p.TTL)
	return true, nil
}

// RenewLease implements ledger.Driver.
func (l *driver) RenewLease(_ context.Context, p ledger.LeaseParams, nonce string) (string, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	row := l.followers[p.Follower]
	if row == nil || row.holder == "" || row.nonce != p.Nonce {
		return "", false, nil
	}
	row.nonce, row.expires = nonce, p.Now.Add(p.TTL)
	return row.holder, true, nil
}

// ReleaseLease implements ledger.Driver.
func (l *driver) ReleaseLease(_ context.Context, f ledger.Follower, nonce string) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	row := l.followers[f]
	if row == nil || row.holder == "" || row.nonce != nonce {
		return false, nil
	}
	row.holder, row.nonce, row.expires = "", "", time.Time{}
	return true, nil
}

// Lease implements ledger.Driver.
func (l *driver) Lease(_ context.Context, f ledger.Follower) (ledger.Lease, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := ledger.Lease{Follower: f}
	if row := l.followers[f]; row != nil {
		out.Holder, out.Expires = row.holder, row.expires
	}
	return out, nil
}

// Cursor implements ledger.Driver.
func (l *driver) Cursor(_ context.Context, f ledger.Follower) (ledger.Cursor, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if row := l.followers[f]; row != nil {
		return row.cursor, nil
	}
	return ledger.Cursor{}, nil
}

// ChangeCursor implements ledger.Driver.
func (l *driver) ChangeCursor(_ context.Context, f ledger.Follower, change func(ledger.Cursor) ledger.Cursor) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	row := l.followers[f]
	if row == nil {
		row = &followerRow{}
		l.followers[f] = row
	}
	row.cursor = change(row.cursor)
	return nil
}

// DeadLetter implements ledger.Driver.
func (l *driver) DeadLetter(_ context.Context, d ledger.DeadLetter) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	dl := l.dead[d.Follower]
	if dl == nil {
		dl = &deadLetters{ids: map[string]bool{}}
		l.dead[d.Follower] = dl
	}
	// ADR-0015: dead letters, once per id (a log follower's id is its seq).
	if dl.ids[d.ID] {
		return false, nil
	}
	dl.ids[d.ID] = true
	d.Event = bytes.Clone(d.Event)
	dl.list = append(dl.list, d)
	return true, nil
}

// DeadLetters implements ledger.Driver.
func (l *driver) DeadLetters(_ context.Context, f ledger.Follower) ([]ledger.DeadLetter, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	dl := l.dead[f]
	if dl == nil {
		return nil, nil
	}
	out := make([]ledger.DeadLetter, len(dl.list))
	for i, d := range dl.list {
		d.Event = bytes.Clone(d.Event)
		out[i] = d
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out, nil
}

// RecentDeadLetters implements ledger.Driver.
func (l *driver) RecentDeadLetters(ctx context.Context, f ledger.Follower, rows int) ([]ledger.DeadLetter, error) {
	out, err := l.DeadLetters(ctx, f)
	slices.Reverse(out)
	return out[:min(rows, len(out))], err
}

// LookupDeadLetter implements ledger.Driver.
func (l *driver) LookupDeadLetter(ctx context.Context, f ledger.Follower, id string) (ledger.DeadLetter, error) {
	all, err := l.DeadLetters(ctx, f)
	if err != nil {
		return ledger.DeadLetter{}, err
	}
	for _, d := range all {
		if d.ID == id {
			return d, nil
		}
	}
	return ledger.DeadLetter{}, ledger.ErrNotFound
}

// Followed implements ledger.Driver.
func (l *driver) Followed(_ context.Context) ([]ledger.Follower, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []ledger.Follower
	for f := range l.followers {
		if f.Kind == ledger.LogFollower {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b ledger.Follower) int {
		if a.Tenant != b.Tenant {
			return strings.Compare(a.Tenant, b.Tenant)
		}
		if a.Workspace != b.Workspace {
			return strings.Compare(a.Workspace, b.Workspace)
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

// Ping implements ledger.Driver: memory always answers.
func (l *driver) Ping(context.Context) error { return nil }

// Append implements ledger.Driver.
func (l *driver) Append(_ context.Context, p eventlog.AppendParams) (int64, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := workspaceKey{p.Event.Tenant, p.Event.Workspace}
	wl := l.logs[w]
	if wl == nil {
		wl = &workspaceLog{seqs: map[string]int64{}}
		l.logs[w] = wl
	}
	if seq, ok := wl.seqs[p.Event.ID]; ok {
		return seq, false, nil
	}
	e := p.Event
	e.Seq = int64(len(wl.events)) + 1
	e.Data = bytes.Clone(e.Data)
	wl.events = append(wl.events, e)
	wl.seqs[e.ID] = e.Seq
	return e.Seq, true, nil
}

// Head implements ledger.Driver.
func (l *driver) Head(_ context.Context, tenant, workspace string) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if wl := l.logs[workspaceKey{tenant, workspace}]; wl != nil {
		return int64(len(wl.events)), nil
	}
	return 0, nil
}

// Read implements ledger.Driver.
func (l *driver) Read(_ context.Context, tenant, workspace string, afterSeq int64, limit int) ([]eventlog.Event, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	wl := l.logs[workspaceKey{tenant, workspace}]
	if wl == nil || afterSeq >= int64(len(wl.events)) {
		return nil, nil
	}
	if afterSeq < 0 {
		afterSeq = 0
	}
	end := int64(len(wl.events))
	if int64(limit) < end-afterSeq { // not afterSeq+limit, which a large limit overflows
		end = afterSeq + int64(limit)
	}
	out := make([]eventlog.Event, 0, end-afterSeq)
	for _, e := range wl.events[afterSeq:end] {
		e.Data = bytes.Clone(e.Data)
		out = append(out, e)
	}
	return out, nil
}

// LatestEvents implements ledger.Driver.
func (l *driver) LatestEvents(_ context.Context, q ledger.EventQuery) ([]eventlog.Event, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	wl := l.logs[workspaceKey{q.Tenant, q.Workspace}]
	if wl == nil {
		return nil, nil
	}
	var out []eventlog.Event
	for i := len(wl.events) - 1; i >= 0 && len(out) < q.Limit; i-- {
		e := wl.events[i]
		if q.Type != "" && e.Type != q.Type {
			continue
		}
		e.Data = bytes.Clone(e.Data)
		out = append(out, e)
	}
	return out, nil
}

// claimsWhere answers the tenant's claims keep keeps, ordered by cmp, at
// most rows.
func (l *driver) claimsWhere(tenant string, rows int, keep func(*ledger.Claim) bool, cmp func(a, b ledger.Claim) int) ([]ledger.Claim, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []ledger.Claim
	for k, c := range l.claims {
		if k.Tenant == tenant && keep(c) {
			out = append(out, copyClaim(c))
		}
	}
	slices.SortFunc(out, cmp)
	if len(out) > rows {
		out = out[:rows]
	}
	return out, nil
}

func byKey(a, b ledger.Claim) int {
	if c := strings.Compare(a.Workspace, b.Workspace); c != 0 {
		return c
	}
	if c := strings.Compare(string(a.Kind), string(b.Kind)); c != 0 {
		return c
	}
	return strings.Compare(a.Key.Key, b.Key.Key)
}

// Unrecorded implements ledger.Driver.
func (l *driver) Unrecorded(_ context.Context, tenant string, rows int) ([]ledger.Claim, error) {
	return l.claimsWhere(tenant, rows, func(c *ledger.Claim) bool { return !c.Recorded && !c.Deleted },
		func(a, b ledger.Claim) int {
			if c := a.ClaimedAt.Compare(b.ClaimedAt); c != 0 {
				return c
			}
			return byKey(a, b)
		})
}

// DeletedKeys implements ledger.Driver.
func (l *driver) DeletedKeys(_ context.Context, tenant string, rows int) ([]ledger.Claim, error) {
	return l.claimsWhere(tenant, rows, func(c *ledger.Claim) bool { return c.Deleted }, byKey)
}

// AtCap implements ledger.Driver.
func (l *driver) AtCap(_ context.Context, q ledger.CapQuery) ([]ledger.CapItem, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	since := q.Now.Add(-q.Window)
	var out []ledger.CapItem
	for k, ws := range l.writes {
		if k.tenant != q.Tenant {
			continue
		}
		it := ledger.CapItem{Tenant: k.tenant, Workspace: k.workspace, ItemID: k.itemID}
		for _, w := range ws {
			if w.After(since) {
				if it.Writes == 0 || w.Before(it.Oldest) {
					it.Oldest = w
				}
				it.Writes++
			}
		}
		if it.Writes >= q.Limit {
			out = append(out, it)
		}
	}
	slices.SortFunc(out, func(a, b ledger.CapItem) int {
		if c := strings.Compare(a.Workspace, b.Workspace); c != 0 {
			return c
		}
		return strings.Compare(a.ItemID, b.ItemID)
	})
	if len(out) > q.Rows {
		out = out[:q.Rows]
	}
	return out, nil
}

// ResolveDeadLetter implements ledger.Driver.
func (l *driver) ResolveDeadLetter(_ context.Context, f ledger.Follower, id string, r ledger.Resolution, now time.Time) (ledger.DeadLetter, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	dl := l.dead[f]
	if dl == nil {
		return ledger.DeadLetter{}, false, ledger.ErrNotFound
	}
	for i := range dl.list {
		d := &dl.list[i]
		if d.ID != id {
			continue
		}
		if d.Resolution != "" {
			out := *d
			out.Event = bytes.Clone(d.Event)
			return out, false, nil
		}
		d.Resolution, d.ResolvedAt = r, now
		out := *d
		out.Event = bytes.Clone(d.Event)
		return out, true, nil
	}
	return ledger.DeadLetter{}, false, ledger.ErrNotFound
}
