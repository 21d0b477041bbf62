// Package memledger is the in-memory Ledger and EventLog: every rule of both
// ports, kept in maps behind one mutex, for tests and for a relayr that needs
// to remember nothing across restarts.
//
// It passes the same contract suites as the SQL stores (ledgertest,
// eventlogtest), refuses the same values they refuse (package validate), and
// honours ctx: a cancelled context fails a call and changes nothing.
package memledger

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/ledger/validate"
)

var (
	_ ledger.Ledger = (*Ledger)(nil)
	_ eventlog.Log  = (*Ledger)(nil)
)

// Ledger is an in-memory ledger.Ledger and eventlog.Log, safe for
// concurrent use. The zero value is not ready; use New.
type Ledger struct {
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

// New returns an empty ledger.
func New() *Ledger {
	return &Ledger{
		claims:    map[ledger.Key]*ledger.Claim{},
		writes:    map[itemKey][]time.Time{},
		snapshots: map[workspaceKey]map[string]ledger.SnapshotRow{},
		followers: map[ledger.Follower]*followerRow{},
		dead:      map[ledger.Follower]*deadLetters{},
		logs:      map[workspaceKey]*workspaceLog{},
	}
}

// begin checks ctx and takes the lock; the caller defers l.mu.Unlock.
func (l *Ledger) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memledger: %w", err)
	}
	l.mu.Lock()
	return nil
}

func copyClaim(c *ledger.Claim) ledger.Claim {
	out := *c
	if len(c.Values) > 0 {
		out.Values = maps.Clone(c.Values)
	} else {
		out.Values = nil
	}
	return out
}

// Claim implements ledger.Claims.
func (l *Ledger) Claim(ctx context.Context, p ledger.ClaimParams) (ledger.Claim, ledger.Outcome, error) {
	if err := validate.Claim(p); err != nil {
		return ledger.Claim{}, 0, err
	}
	if err := l.begin(ctx); err != nil {
		return ledger.Claim{}, 0, err
	}
	defer l.mu.Unlock()
	c, ok := l.claims[p.Key]
	if !ok {
		c = &ledger.Claim{Key: p.Key, Nonce: ledger.NewNonce(), ClaimedAt: p.Now, Correlation: p.Correlation}
		l.claims[p.Key] = c
		return copyClaim(c), ledger.Fresh, nil
	}
	switch {
	case c.Deleted:
		return copyClaim(c), ledger.Deleted, nil
	case c.Recorded:
		return copyClaim(c), ledger.Recorded, nil
	case c.ClaimedAt.Before(p.Now.Add(-p.RetakeAfter)):
		// ADR-0033: a claim more than 30 s old that never recorded is
		// taken again; the first claimer's correlation stays.
		c.Nonce = ledger.NewNonce()
		c.ClaimedAt = p.Now
		return copyClaim(c), ledger.Retaken, nil
	}
	return copyClaim(c), ledger.Held, nil
}

// Record implements ledger.Claims.
func (l *Ledger) Record(ctx context.Context, p ledger.RecordParams) (ledger.Claim, error) {
	if err := validate.Record(p); err != nil {
		return ledger.Claim{}, err
	}
	if err := l.begin(ctx); err != nil {
		return ledger.Claim{}, err
	}
	defer l.mu.Unlock()
	c, ok := l.claims[p.Key]
	if !ok {
		return ledger.Claim{}, ledger.ErrNonce
	}
	if c.Recorded {
		// ADR-0033: record_tracked keeps the first record.
		return copyClaim(c), nil
	}
	if c.Nonce != p.Nonce {
		return ledger.Claim{}, ledger.ErrNonce
	}
	c.Recorded = true
	c.Ref = p.Ref
	c.RecordedAt = p.Now
	c.Nonce = ledger.NewNonce()
	return copyClaim(c), nil
}

// Release implements ledger.Claims.
func (l *Ledger) Release(ctx context.Context, k ledger.Key, nonce string) error {
	if err := ledger.CheckKey(k); err != nil {
		return err
	}
	if err := l.begin(ctx); err != nil {
		return err
	}
	defer l.mu.Unlock()
	c, ok := l.claims[k]
	if !ok {
		return ledger.ErrNonce
	}
	if c.Recorded || c.Deleted {
		return nil
	}
	if c.Nonce != nonce {
		return ledger.ErrNonce
	}
	delete(l.claims, k)
	return nil
}

// MarkDeleted implements ledger.Claims.
func (l *Ledger) MarkDeleted(ctx context.Context, k ledger.Key) error {
	if err := ledger.CheckKey(k); err != nil {
		return err
	}
	if err := l.begin(ctx); err != nil {
		return err
	}
	defer l.mu.Unlock()
	c, ok := l.claims[k]
	if !ok {
		c = &ledger.Claim{Key: k}
		l.claims[k] = c
	}
	c.Deleted = true
	c.Nonce = ledger.NewNonce()
	return nil
}

// Lookup implements ledger.Claims.
func (l *Ledger) Lookup(ctx context.Context, k ledger.Key) (ledger.Claim, error) {
	if err := ledger.CheckKey(k); err != nil {
		return ledger.Claim{}, err
	}
	if err := l.begin(ctx); err != nil {
		return ledger.Claim{}, err
	}
	defer l.mu.Unlock()
	c, ok := l.claims[k]
	if !ok {
		return ledger.Claim{}, ledger.ErrNotFound
	}
	return copyClaim(c), nil
}

// LookupItem implements ledger.Claims. Of two keys recorded for one item,
// the first in byte order answers.
func (l *Ledger) LookupItem(ctx context.Context, tenant, workspace, itemID string) (ledger.Claim, error) {
	if err := validate.Item(tenant, workspace, itemID); err != nil {
		return ledger.Claim{}, err
	}
	if err := l.begin(ctx); err != nil {
		return ledger.Claim{}, err
	}
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

// SetValues implements ledger.Claims.
func (l *Ledger) SetValues(ctx context.Context, k ledger.Key, values map[string]string) (map[string]string, error) {
	var previous map[string]string
	err := l.changeValues(ctx, k, values, func(vs map[string]string) { previous = ledger.SetPending(vs, values) })
	if err != nil {
		return nil, err
	}
	return previous, nil
}

// RestoreValues implements ledger.Claims.
func (l *Ledger) RestoreValues(ctx context.Context, k ledger.Key, refused map[string]string) error {
	return l.changeValues(ctx, k, refused, func(vs map[string]string) { ledger.RestorePending(vs, refused) })
}

// ConsumeValues implements ledger.Claims.
func (l *Ledger) ConsumeValues(ctx context.Context, k ledger.Key, values map[string]string) error {
	return l.changeValues(ctx, k, values, func(vs map[string]string) { ledger.ConsumePending(vs, values) })
}

// changeValues applies change to the key's recorded values under the lock,
// as the SQL stores do in one transaction.
func (l *Ledger) changeValues(ctx context.Context, k ledger.Key, values map[string]string, change func(map[string]string)) error {
	if err := ledger.CheckKey(k); err != nil {
		return err
	}
	if err := validate.Values(values); err != nil {
		return err
	}
	if err := l.begin(ctx); err != nil {
		return err
	}
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

// CountWrite implements ledger.Claims.
func (l *Ledger) CountWrite(ctx context.Context, p ledger.WriteParams) (int, error) {
	if err := validate.Write(p); err != nil {
		return 0, err
	}
	if err := l.begin(ctx); err != nil {
		return 0, err
	}
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
		return len(kept), ledger.ErrLoop
	}
	kept = append(kept, p.Now)
	l.writes[k] = kept
	return len(kept), nil
}

// ForgetWrites implements ledger.Claims.
func (l *Ledger) ForgetWrites(ctx context.Context, tenant, workspace, itemID string) error {
	if err := validate.Item(tenant, workspace, itemID); err != nil {
		return err
	}
	if err := l.begin(ctx); err != nil {
		return err
	}
	defer l.mu.Unlock()
	delete(l.writes, itemKey{tenant, workspace, itemID})
	return nil
}

func copySnapshot(r ledger.SnapshotRow) ledger.SnapshotRow {
	r.Item = bytes.Clone(r.Item)
	return r
}

// Snapshot implements ledger.Snapshots.
func (l *Ledger) Snapshot(ctx context.Context, tenant, workspace, itemID string) (ledger.SnapshotRow, error) {
	if err := validate.Item(tenant, workspace, itemID); err != nil {
		return ledger.SnapshotRow{}, err
	}
	if err := l.begin(ctx); err != nil {
		return ledger.SnapshotRow{}, err
	}
	defer l.mu.Unlock()
	r, ok := l.snapshots[workspaceKey{tenant, workspace}][itemID]
	if !ok {
		return ledger.SnapshotRow{}, ledger.ErrNotFound
	}
	return copySnapshot(r), nil
}

// SaveSnapshots implements ledger.Snapshots.
func (l *Ledger) SaveSnapshots(ctx context.Context, rows []ledger.SnapshotRow) error {
	if err := validate.Snapshots(rows); err != nil {
		return err
	}
	if err := l.begin(ctx); err != nil {
		return err
	}
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

// DeleteSnapshot implements ledger.Snapshots.
func (l *Ledger) DeleteSnapshot(ctx context.Context, tenant, workspace, itemID string) error {
	if err := validate.Item(tenant, workspace, itemID); err != nil {
		return err
	}
	if err := l.begin(ctx); err != nil {
		return err
	}
	defer l.mu.Unlock()
	delete(l.snapshots[workspaceKey{tenant, workspace}], itemID)
	return nil
}

// SnapshotIDs implements ledger.Snapshots. It calls fn without the lock
// held, so fn may call the ledger.
func (l *Ledger) SnapshotIDs(ctx context.Context, tenant, workspace string, fn func(itemID string) bool) error {
	if err := validate.Workspace(tenant, workspace); err != nil {
		return err
	}
	if err := l.begin(ctx); err != nil {
		return err
	}
	ids := slices.Sorted(maps.Keys(l.snapshots[workspaceKey{tenant, workspace}]))
	l.mu.Unlock()
	for _, id := range ids {
		if !fn(id) {
			return nil
		}
	}
	return nil
}

// TakeLease implements ledger.Followers.
func (l *Ledger) TakeLease(ctx context.Context, p ledger.LeaseParams) (ledger.Lease, error) {
	if err := validate.Lease(p); err != nil {
		return ledger.Lease{}, err
	}
	if err := l.begin(ctx); err != nil {
		return ledger.Lease{}, err
	}
	defer l.mu.Unlock()
	row := l.followers[p.Follower]
	if row == nil {
		row = &followerRow{}
		l.followers[p.Follower] = row
	}
	// ADR-0015: a lease is taken when nobody holds it or it lapsed.
	if row.holder != "" && p.Now.Before(row.expires) {
		return ledger.Lease{}, ledger.ErrLeaseHeld
	}
	row.holder, row.nonce, row.expires = p.Holder, ledger.NewNonce(), p.Now.Add(p.TTL)
	return ledger.Lease{Follower: p.Follower, Holder: row.holder, Nonce: row.nonce, Expires: row.expires}, nil
}

// RenewLease implements ledger.Followers.
func (l *Ledger) RenewLease(ctx context.Context, p ledger.LeaseParams) (ledger.Lease, error) {
	if err := validate.Lease(p); err != nil {
		return ledger.Lease{}, err
	}
	if err := l.begin(ctx); err != nil {
		return ledger.Lease{}, err
	}
	defer l.mu.Unlock()
	row := l.followers[p.Follower]
	if row == nil || row.holder == "" || p.Nonce == "" || row.nonce != p.Nonce {
		return ledger.Lease{}, ledger.ErrNonce
	}
	row.nonce, row.expires = ledger.NewNonce(), p.Now.Add(p.TTL)
	return ledger.Lease{Follower: p.Follower, Holder: row.holder, Nonce: row.nonce, Expires: row.expires}, nil
}

// ReleaseLease implements ledger.Followers.
func (l *Ledger) ReleaseLease(ctx context.Context, f ledger.Follower, nonce string) error {
	if err := validate.Nonce(f, nonce); err != nil {
		return err
	}
	if err := l.begin(ctx); err != nil {
		return err
	}
	defer l.mu.Unlock()
	row := l.followers[f]
	if row == nil || row.holder == "" || nonce == "" || row.nonce != nonce {
		return ledger.ErrNonce
	}
	row.holder, row.nonce, row.expires = "", "", time.Time{}
	return nil
}

// Lease implements ledger.Followers.
func (l *Ledger) Lease(ctx context.Context, f ledger.Follower) (ledger.Lease, error) {
	if err := ledger.CheckFollower(f); err != nil {
		return ledger.Lease{}, err
	}
	if err := l.begin(ctx); err != nil {
		return ledger.Lease{}, err
	}
	defer l.mu.Unlock()
	out := ledger.Lease{Follower: f}
	if row := l.followers[f]; row != nil {
		out.Holder, out.Expires = row.holder, row.expires
	}
	return out, nil
}

// Cursor implements ledger.Followers.
func (l *Ledger) Cursor(ctx context.Context, f ledger.Follower) (ledger.Cursor, error) {
	if err := ledger.CheckFollower(f); err != nil {
		return ledger.Cursor{}, err
	}
	if err := l.begin(ctx); err != nil {
		return ledger.Cursor{}, err
	}
	defer l.mu.Unlock()
	if row := l.followers[f]; row != nil {
		return row.cursor, nil
	}
	return ledger.Cursor{}, nil
}

// SaveCursor implements ledger.Followers.
func (l *Ledger) SaveCursor(ctx context.Context, f ledger.Follower, c ledger.Cursor) error {
	if err := validate.Cursor(f, c); err != nil {
		return err
	}
	if err := l.begin(ctx); err != nil {
		return err
	}
	defer l.mu.Unlock()
	row := l.followers[f]
	if row == nil {
		row = &followerRow{}
		l.followers[f] = row
	}
	row.cursor = ledger.Forward(row.cursor, c)
	return nil
}

// DeadLetter implements ledger.Followers.
func (l *Ledger) DeadLetter(ctx context.Context, d ledger.DeadLetter) (bool, error) {
	if err := validate.DeadLetter(d); err != nil {
		return false, err
	}
	if err := l.begin(ctx); err != nil {
		return false, err
	}
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

// DeadLetters implements ledger.Followers.
func (l *Ledger) DeadLetters(ctx context.Context, f ledger.Follower) ([]ledger.DeadLetter, error) {
	if err := ledger.CheckFollower(f); err != nil {
		return nil, err
	}
	if err := l.begin(ctx); err != nil {
		return nil, err
	}
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

// Followed implements ledger.Followers.
func (l *Ledger) Followed(ctx context.Context) ([]ledger.Follower, error) {
	if err := l.begin(ctx); err != nil {
		return nil, err
	}
	defer l.mu.Unlock()
	var out []ledger.Follower
	for f := range l.followers {
		if f.Kind == ledger.LogFollower {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b ledger.Follower) int {
		if a.Tenant != b.Tenant {
			return cmpString(a.Tenant, b.Tenant)
		}
		if a.Workspace != b.Workspace {
			return cmpString(a.Workspace, b.Workspace)
		}
		return cmpString(a.Name, b.Name)
	})
	return out, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Ping implements ledger.Ledger: memory always answers.
func (l *Ledger) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memledger: %w", err)
	}
	return nil
}

// Append implements eventlog.Log.
func (l *Ledger) Append(ctx context.Context, p eventlog.AppendParams) (int64, bool, error) {
	if err := eventlog.CheckAppend(p); err != nil {
		return 0, false, err
	}
	if err := l.begin(ctx); err != nil {
		return 0, false, err
	}
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

// Head implements eventlog.Log.
func (l *Ledger) Head(ctx context.Context, tenant, workspace string) (int64, error) {
	if validate.Workspace(tenant, workspace) != nil {
		return 0, eventlog.ErrInvalid
	}
	if err := l.begin(ctx); err != nil {
		return 0, err
	}
	defer l.mu.Unlock()
	if wl := l.logs[workspaceKey{tenant, workspace}]; wl != nil {
		return int64(len(wl.events)), nil
	}
	return 0, nil
}

// Read implements eventlog.Log.
func (l *Ledger) Read(ctx context.Context, tenant, workspace string, afterSeq int64, limit int) ([]eventlog.Event, error) {
	if validate.Workspace(tenant, workspace) != nil {
		return nil, eventlog.ErrInvalid
	}
	if err := l.begin(ctx); err != nil {
		return nil, err
	}
	defer l.mu.Unlock()
	wl := l.logs[workspaceKey{tenant, workspace}]
	if wl == nil || limit < 1 || afterSeq >= int64(len(wl.events)) {
		return nil, nil
	}
	if afterSeq < 0 {
		afterSeq = 0
	}
	end := min(int64(len(wl.events)), afterSeq+int64(limit))
	out := make([]eventlog.Event, 0, end-afterSeq)
	for _, e := range wl.events[afterSeq:end] {
		e.Data = bytes.Clone(e.Data)
		out = append(out, e)
	}
	return out, nil
}

var _ ledger.Operator = (*Ledger)(nil)

// LatestEvents implements ledger.Operator.
func (l *Ledger) LatestEvents(ctx context.Context, q ledger.EventQuery) ([]eventlog.Event, error) {
	if err := ledger.CheckEventQuery(q); err != nil {
		return nil, err
	}
	if err := l.begin(ctx); err != nil {
		return nil, err
	}
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
func (l *Ledger) claimsWhere(ctx context.Context, tenant string, rows int, keep func(*ledger.Claim) bool, cmp func(a, b ledger.Claim) int) ([]ledger.Claim, error) {
	if err := ledger.CheckTenant(tenant); err != nil {
		return nil, err
	}
	if err := ledger.CheckRows(rows); err != nil {
		return nil, err
	}
	if err := l.begin(ctx); err != nil {
		return nil, err
	}
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
	if c := cmpString(a.Workspace, b.Workspace); c != 0 {
		return c
	}
	if c := cmpString(string(a.Kind), string(b.Kind)); c != 0 {
		return c
	}
	return cmpString(a.Key.Key, b.Key.Key)
}

// Unrecorded implements ledger.Operator.
func (l *Ledger) Unrecorded(ctx context.Context, tenant string, rows int) ([]ledger.Claim, error) {
	return l.claimsWhere(ctx, tenant, rows, func(c *ledger.Claim) bool { return !c.Recorded && !c.Deleted },
		func(a, b ledger.Claim) int {
			if c := a.ClaimedAt.Compare(b.ClaimedAt); c != 0 {
				return c
			}
			return byKey(a, b)
		})
}

// DeletedKeys implements ledger.Operator.
func (l *Ledger) DeletedKeys(ctx context.Context, tenant string, rows int) ([]ledger.Claim, error) {
	return l.claimsWhere(ctx, tenant, rows, func(c *ledger.Claim) bool { return c.Deleted }, byKey)
}

// AtCap implements ledger.Operator.
func (l *Ledger) AtCap(ctx context.Context, q ledger.CapQuery) ([]ledger.CapItem, error) {
	if err := ledger.CheckCapQuery(q); err != nil {
		return nil, err
	}
	if err := l.begin(ctx); err != nil {
		return nil, err
	}
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
		if c := cmpString(a.Workspace, b.Workspace); c != 0 {
			return c
		}
		return cmpString(a.ItemID, b.ItemID)
	})
	if len(out) > q.Rows {
		out = out[:q.Rows]
	}
	return out, nil
}

// ResolveDeadLetter implements ledger.Operator.
func (l *Ledger) ResolveDeadLetter(ctx context.Context, f ledger.Follower, id string, r ledger.Resolution, now time.Time) (ledger.DeadLetter, bool, error) {
	if err := ledger.CheckResolution(f, id, r, now); err != nil {
		return ledger.DeadLetter{}, false, err
	}
	if err := l.begin(ctx); err != nil {
		return ledger.DeadLetter{}, false, err
	}
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
