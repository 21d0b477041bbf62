package follow

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"maps"
	"net/http/httptrace"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relayr-go/relayr/core/budget"
	"github.com/relayr-go/relayr/core/deliver"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/metrics"
	"github.com/relayr-go/relayr/core/tracker"
)

// errOutOfBudget: the poll found no request left in the minute.
var errOutOfBudget = errors.New("follow: no request left in the budget this minute")

// snapshot is an item as relayr last knew it, as a snapshot row keeps it
// (ledger.ItemSnapshot): a follower's last read of it, or the filing's
// answer for an item relayr filed that no follower has read yet.
type snapshot = ledger.ItemSnapshot

// isNew reports whether a comment was not read before s.
func isNew(s *snapshot, c tracker.Comment) bool {
	switch {
	case c.CreatedAt.After(s.CommentsUntil):
		return true
	case c.CreatedAt.Equal(s.CommentsUntil):
		return !s.Through && !slices.Contains(s.SeenAt, c.ID)
	}
	return false
}

// saw notes a comment read in s.
func saw(s *snapshot, c tracker.Comment) {
	switch {
	case c.CreatedAt.After(s.CommentsUntil):
		s.CommentsUntil, s.SeenAt, s.Through = c.CreatedAt, []string{c.ID}, false
	case c.CreatedAt.Equal(s.CommentsUntil) && !slices.Contains(s.SeenAt, c.ID):
		s.SeenAt = append(s.SeenAt, c.ID)
	}
}

// sweep is a read of the whole project (ADR-0036: "A sweep reads the whole
// project once a day, and on the first read"), or the binding's first read.
type sweep struct {
	start time.Time
	first bool
	// pos is how far the read got; the next page starts there, less the
	// lookback.
	pos tracker.Cursor
	// seen holds a 64-bit hash of every item id listed, to find the
	// snapshots of items no longer listed; nil when there were no
	// snapshots to lose, or the read did not start at the beginning.
	seen map[uint64]struct{}
	// listed: the read reached the last page; what is left is to find
	// the removed items.
	listed bool
	// hold is where the cursor stops at the sweep's end when the sweep
	// left an item for the next poll (reader.held): before that item.
	hold *tracker.Cursor
	// requests counts what the sweep sent, over every poll it took.
	requests int64
}

func hashID(id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}

// access is how a follower request draws on its key's budget.
type access int

const (
	// accessFloor: a poll, scheduled or nudged, which writes never hold
	// back; its first request waits only for the key's pacer
	// (budget.Floor), the rest for the minute's room (budget.Continue).
	accessFloor access = iota + 1
	// accessSpare: a first read's or an overdue sweep's further pages:
	// only what is left (budget.Spare).
	accessSpare
	// accessIdle: a sweep ahead of its day, only while the key is mostly
	// idle (budget.Idle).
	accessIdle
)

func (a access) String() string {
	switch a {
	case accessFloor:
		return "scheduled"
	case accessSpare:
		return "spare"
	case accessIdle:
		return "idle"
	}
	return "unknown"
}

// pollRun is one poll's tally, for its debug line and the status.
type pollRun struct {
	use       access
	announced bool
	requests  atomic.Int64
	published int
	// waited is how long the poll's requests waited for the key's budget
	// (its first for the pacer, the rest for the minute's room): a poll
	// the budget deferred.
	waited time.Duration
	asked  bool
	// unannounced counts the changes the poll published that no nudge
	// had announced when it began. The follower's loop holds them until
	// its next poll: a nudge that comes meanwhile announced them (its
	// webhook was sent as the poll read), and only the rest are counted
	// unnudged. A poll run alone (PollOnce) counts them at once.
	unannounced int
	deferred    bool
}

// poll reads what changed and publishes it. It answers how long to wait
// when the tracker asked for a wait, and a stop's error.
func (f *follower) poll(ctx context.Context, announced bool) (time.Duration, error) {
	fs := f.fs
	pr := &pollRun{use: accessFloor, announced: announced, deferred: true}
	start := fs.clock.Now()
	err := f.checkThenRead(ctx, pr)
	if pr.unannounced > 0 {
		f.update(func(s *state) { s.unannounced += int64(pr.unannounced) })
	}
	took := fs.clock.Now().Sub(start)
	var rl *tracker.RateLimitedError
	var stop *stopError
	switch {
	case err == nil, errors.Is(err, errOutOfBudget):
		// A read that runs out of what it may spend stops at that item;
		// its cursor moved only past what it read (ADR-0036's budget).
		f.completed(ctx, pr, took)
		return 0, nil
	case errors.As(err, &stop):
		f.update(func(s *state) { s.lastError = err.Error() })
		return 0, err
	case errors.As(err, &rl):
		f.update(func(s *state) { s.lastError = err.Error() })
		fs.logger.Debug("tracker poll rate-limited", "binding", f.b.Name(), "retry_after", rl.RetryAfter)
		return max(rl.RetryAfter, 0), nil
	case ctx.Err() != nil:
		return 0, nil
	default:
		f.update(func(s *state) { s.lastError = err.Error() })
		fs.logger.Warn("tracker follower poll failed", "binding", f.b.Name(), "err", err)
		return 0, nil
	}
}

// completed records a completed poll: in the ledger (PolledAt, so every
// replica's status sees it), in the follower's state, the counters and the
// log.
func (f *follower) completed(ctx context.Context, pr *pollRun, took time.Duration) {
	fs := f.fs
	now := fs.clock.Now()
	if err := fs.ledger.SaveCursor(ctx, f.id, ledger.Cursor{PolledAt: now}); err != nil && ctx.Err() == nil {
		fs.logger.Warn("tracker follower could not save when it polled", "binding", f.b.Name(), "err", err)
	}
	wasLate := false
	f.update(func(s *state) {
		wasLate = s.late
		s.polls++
		s.polled, s.late, s.lastError = now, false, ""
		s.lastCount, s.lastPublic = int(pr.requests.Load()), pr.published
		if pr.waited > 0 {
			s.deferred++
		}
	})
	fs.m.Add(metrics.Polls, 1, f.labels())
	if pr.waited > 0 {
		// The key's budget made the poll wait: counted, so an operator
		// sees a key whose polls queue.
		fs.m.Add(metrics.PollsDeferred, 1, f.labels())
	}
	if wasLate {
		fs.logger.Info("tracker follower polls again", "binding", f.b.Name())
	}
	fs.logger.Debug("tracker poll", "binding", f.b.Name(), "nudged", pr.announced, "requests", pr.requests.Load(),
		"published", pr.published, "waited", pr.waited, "took", took)
}

// request makes one tracker call with the budget's leave, counting each
// of its requests in metrics.Reads: a floor call
// waits for the key's pacer, a spare or idle one goes only when the key has
// a request to spare and answers errOutOfBudget when not. Every request
// the call sends (a connection's reads among them) is counted in the key's
// budget and in the poll's tally.
func (f *follower) request(ctx context.Context, use access, pr *pollRun, fn func(ctx context.Context, tr *tracker.Tracker) error) error {
	if bud := f.fs.budget; bud != nil {
		key := f.b.BudgetKey()
		var done func()
		// A poll's first request waits for the key's pacer, which spreads
		// the starts of polls; the rest of the poll goes at the tracker's
		// speed within the minute's room.
		going := pr != nil && pr.asked
		switch {
		case use == accessFloor && going:
			var err error
			if ctx, done, err = bud.Continue(ctx, key); err != nil {
				return err
			}
			pr.waited += budget.Waited(ctx) // its comment reads, its next pages
		case use == accessFloor:
			var err error
			if ctx, done, err = bud.Floor(ctx, key); err != nil {
				return err
			}
			if pr != nil {
				pr.asked, pr.waited = true, budget.Waited(ctx)
			}
		case going:
			var ok bool
			if ctx, done, ok = bud.ContinueSpare(ctx, key, use == accessIdle); !ok {
				return errOutOfBudget
			}
		case use == accessIdle:
			var ok bool
			if ctx, done, ok = bud.Idle(ctx, key); !ok {
				return errOutOfBudget
			}
			if pr != nil {
				pr.asked = true
			}
		default:
			var ok bool
			if ctx, done, ok = bud.Spare(ctx, key); !ok {
				return errOutOfBudget
			}
			if pr != nil {
				pr.asked = true
			}
		}
		defer done()
	}
	labels := f.labels()
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) {
			if pr != nil {
				pr.requests.Add(1)
			}
			f.fs.m.Add(metrics.Reads, 1, labels)
		},
	})
	return f.fs.conns.Do(ctx, f.b, func(ctx context.Context, tr *tracker.Tracker) error {
		f.setTracker(tr)
		return fn(ctx, tr)
	})
}

// read is one poll: first what changed since two minutes before the
// cursor, then the sweep under way, as far as the budget lets it go. A
// binding's first read is a sweep of its own, which seeds it.
func (f *follower) read(ctx context.Context, pr *pollRun) error {
	fs := f.fs
	cur, err := fs.ledger.Cursor(ctx, f.id)
	if err != nil {
		return err
	}
	now := fs.clock.Now()
	if !cur.Seeded {
		// The first read goes on where its cursor is (a restart, a lost
		// lease): its first page with the poll, the rest as the budget
		// spares them.
		if f.sweep == nil {
			if f.sweep, err = f.startSweep(ctx, cur, now); err != nil {
				return err
			}
		}
		return f.readSweep(ctx, pr, pr.use, accessSpare)
	}
	// Each poll reads what changed since two minutes before its cursor.
	r := &reader{f: f, pr: pr, acc: pr.use, announced: pr.announced}
	pos := tracker.Cursor{UpdatedAt: cur.UpdatedAt, ID: cur.ItemID}
	if err := f.readFrom(ctx, r, pos, pr.use, pr.use); err != nil {
		return err
	}
	since := now.Sub(cur.SweptAt)
	overdue := since >= fs.opts.SweepEvery
	first, rest := accessIdle, accessIdle
	if overdue {
		// A sweep past its day goes on whatever writes spend: a page a
		// poll, more as the budget spares them.
		first, rest = accessFloor, accessSpare
	}
	if f.sweep == nil {
		// A sweep reads the whole project once a day at the least, and
		// sooner on what the budget leaves idle (ADR-0036's departures).
		early := fs.opts.SweepMin > 0 && since >= f.sweepGap()
		if !overdue && !early {
			return nil
		}
		if f.sweep, err = f.startSweep(ctx, cur, now); err != nil {
			return err
		}
	}
	err = f.readSweep(ctx, pr, first, rest)
	if errors.Is(err, errOutOfBudget) {
		return nil // the sweep goes on at the next poll
	}
	return err
}

// readSweep reads the sweep under way from where it got: its first
// request with first, the rest with rest, and then tells what became of the
// items it no longer lists.
func (f *follower) readSweep(ctx context.Context, pr *pollRun, first, rest access) error {
	sw := f.sweep
	before := pr.requests.Load()
	defer func() { sw.requests += pr.requests.Load() - before }()
	r := &reader{f: f, pr: pr, acc: rest, announced: pr.announced, sweep: sw}
	if !sw.listed {
		if err := f.readFrom(ctx, r, sw.pos, first, rest); err != nil {
			return err
		}
		sw.listed = true
	} else {
		r.acc = first
	}
	return f.finishSweep(ctx, r)
}

// sweepGap is how soon after the last a sweep may come on an idle budget:
// SweepMin, or longer for a project whose last sweep took many requests,
// so sweeps ahead of their day take at most a tenth of the key's budget on
// average (a Plane project of a thousand items, one page, every minute; a
// Vikunja project of 5,000, a hundred pages, every 25 minutes; Vikunja's
// deletions are announced by webhook besides).
func (f *follower) sweepGap() time.Duration {
	gap := f.fs.opts.SweepMin
	if f.fs.budget != nil && f.lastSweep > 0 {
		share := float64(f.fs.budget.ReplicaLimit()) / 10
		gap = max(gap, time.Duration(float64(f.lastSweep)*float64(budget.Window)/share))
	}
	return gap
}

// readFrom pages through the items changed since two minutes before pos:
// the first page with first, the next ones with rest. A sweep's reader
// marks what its pages list.
func (f *follower) readFrom(ctx context.Context, r *reader, pos tracker.Cursor, first, rest access) error {
	var since time.Time
	page, use := "", first
	for {
		var pg tracker.Page
		err := f.request(ctx, use, r.pr, func(ctx context.Context, tr *tracker.Tracker) error {
			r.with(tr)
			if page == "" && !pos.UpdatedAt.IsZero() {
				// The tracker's own quiet span is known once it is had.
				since = pos.UpdatedAt.Add(-lookback(f.fs.opts.Lookback, tr))
			}
			r.since = since
			// What relayr wrote and the tracker answered before this
			// request is sent, the page shows, or a later value: the
			// time is taken as the request goes out (a wait for a
			// connection is not the tracker's).
			var mu sync.Mutex
			at, moment, wrote := f.fs.clock.Now(), ledger.Now(), false
			ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) {
				// The trace may run on the transport's goroutine.
				mu.Lock()
				defer mu.Unlock()
				if !wrote {
					wrote, at, moment = true, f.fs.clock.Now(), ledger.Now()
				}
			}})
			var err error
			pg, err = tr.Items(ctx, tracker.Query{Since: since, Page: page})
			mu.Lock()
			r.sentAt, r.sent = at, moment
			mu.Unlock()
			return err
		})
		if err != nil {
			return err
		}
		if err := r.page(ctx, pg.Items); err != nil {
			return err
		}
		if pg.Next == "" {
			return nil
		}
		page, use = pg.Next, rest
	}
}

func (f *follower) startSweep(ctx context.Context, cur ledger.Cursor, now time.Time) (*sweep, error) {
	sw := &sweep{start: now, first: !cur.Seeded}
	if sw.first {
		// A first read that stopped (a restart, a lost lease) goes on
		// where its cursor is.
		sw.pos = tracker.Cursor{UpdatedAt: cur.UpdatedAt, ID: cur.ItemID}
	}
	if !sw.pos.UpdatedAt.IsZero() {
		return sw, nil
	}
	any := false
	err := f.fs.ledger.SnapshotIDs(ctx, f.b.Tenant, f.b.Workspace, func(string) bool { any = true; return false })
	if err != nil {
		return nil, err
	}
	if any {
		sw.seen = map[uint64]struct{}{}
	}
	return sw, nil
}

// reader is one poll's state.
type reader struct {
	f  *follower
	pr *pollRun
	// acc is how the reader's item-level requests (comments, removal
	// checks) draw on the budget.
	acc       access
	tr        *tracker.Tracker
	scope     Scope
	announced bool
	sweep     *sweep
	// sentAt is when the request for the page being read was sent
	// (SupersedePending's before), and sent that moment in this process.
	sentAt time.Time
	sent   ledger.Moment
	// since is the time the read lists changes from (zero: the whole
	// project).
	since time.Time
	// held is set once the read left an item for the next poll: the
	// cursor stays before it for the rest of the read.
	held *tracker.Cursor
	// known holds the page's snapshots read ahead of its items, for the
	// comments read once for the page (pageComments), by item id.
	known map[string]snapRead
	// comments is the page's comments read in one request, nil when
	// each item's are read on their own.
	comments *pageComments
	// gone holds the items a sweep's read by ids (tracker.ItemsFetcher)
	// did not answer: their removal reads nothing more.
	gone map[string]bool
}

// snapRead is readSnapshot's answer for one item.
type snapRead struct {
	snap, tomb *snapshot
	v          verdict
}

// pageComments is a page's comments read in one request of the project's
// (tracker.ProjectComments): every comment created at or after since, for
// the items in covered, whose new comments are all at or after it.
type pageComments struct {
	since   time.Time
	covered map[string]bool
	byItem  map[string][]tracker.Comment
}

// with notes the tracker a request used, for the scope of what it
// publishes.
func (r *reader) with(tr *tracker.Tracker) {
	r.tr = tr
	r.scope = Scope{Tenant: r.f.b.Tenant, Workspace: r.f.b.Workspace, Project: tr.Project(), Tracker: r.f.b.Kind()}
}

// consumption is the echoes one item's read consumes: by field, the value
// read back, which is cleared only if still the one recorded (an edit
// recorded since the read keeps its value); and the fields it read a
// person's value of, whose values relayr wrote and the tracker answered
// before the page's request was sent are superseded (ledger.SupersedePending).
type consumption struct {
	key       ledger.Key
	values    map[string]string
	supersede []string
	before    time.Time
}

// page reads one page's items: each is compared with its snapshot and
// what differs is published; then the snapshots are saved, the echoes
// consumed, and the cursor moved past what was read (ADR-0036: "It saves
// the snapshots, then its cursor"). A poll whose comments run out of budget
// stops at that item; what it read before is kept. An item left for the
// next poll (deferred) holds the cursor before it for the rest of the
// read, so the next poll lists it again however late it comes.
func (r *reader) page(ctx context.Context, items []tracker.Item) error {
	var rows []ledger.SnapshotRow
	var consumed []consumption
	var last, swept *tracker.Cursor
	if err := r.readPageComments(ctx, items); err != nil {
		return err
	}
	var failed error
	for _, it := range items {
		if it.Archived {
			continue // not listed: the sweep tells what became of it
		}
		if r.sweep != nil && r.sweep.seen != nil {
			r.sweep.seen[hashID(it.Ref.ID)] = struct{}{}
		}
		row, use, deferred, err := r.item(ctx, it)
		if err != nil {
			failed = err
			break
		}
		if row != nil {
			rows = append(rows, *row)
		}
		if use != nil {
			consumed = append(consumed, *use)
		}
		c := tracker.Of(it)
		swept = &c
		if deferred && r.held == nil {
			// Everything before the item was read: the cursor may come
			// up to it, not past.
			h := tracker.Cursor{UpdatedAt: it.UpdatedAt}
			r.held = &h
			if last == nil || last.Before(h) {
				last = &h
			}
		}
		if r.held == nil {
			last = &c
		}
	}
	if err := r.save(ctx, rows, consumed, last, swept); err != nil {
		return errors.Join(failed, err)
	}
	return failed
}

func (r *reader) save(ctx context.Context, rows []ledger.SnapshotRow, consumed []consumption, last, swept *tracker.Cursor) error {
	l := r.f.fs.ledger
	if len(rows) > 0 {
		if err := l.SaveSnapshots(ctx, rows); err != nil {
			return err
		}
	}
	// Echoes are consumed after the snapshots are saved: the other order
	// would publish relayr's own writes after a crash between the two
	// (ADR-0036's consequences).
	for _, c := range consumed {
		if len(c.values) > 0 {
			if err := l.ConsumeValues(ctx, c.key, c.values); err != nil && !errors.Is(err, ledger.ErrNotFound) {
				return err
			}
		}
		if len(c.supersede) > 0 {
			if err := l.SupersedeValues(ctx, c.key, c.supersede, c.before); err != nil && !errors.Is(err, ledger.ErrNotFound) {
				return err
			}
		}
	}
	// A sweep goes on past an item left for the next poll, and the
	// cursor it saves at its end stays before that item.
	if sw := r.sweep; sw != nil {
		if swept != nil && sw.pos.Before(*swept) {
			sw.pos = *swept
		}
		if r.held != nil && (sw.hold == nil || r.held.Before(*sw.hold)) {
			sw.hold = r.held
		}
	}
	if last == nil {
		return nil
	}
	// The cursor only moves forward; the ledger ignores a position before
	// the saved one.
	return l.SaveCursor(ctx, r.f.id, ledger.Cursor{UpdatedAt: last.UpdatedAt, ItemID: last.ID})
}

// readAfterFiling reports whether the page being read was asked for after
// the filing that left snap was answered, so it shows the item as the
// filing left it or later: in this process, by the order of its moments;
// filed by another, by the clocks, by recordSkew at the least.
func (r *reader) readAfterFiling(snap *snapshot) bool {
	if filedFirst, known := snap.FiledAt.Before(r.sent); known {
		return filedFirst
	}
	return !r.sentAt.IsZero() && r.sentAt.After(snap.Filed.Add(recordSkew))
}

// recordSkew is how far after a filing's answer, on the clock of the
// replica that filed, a read's request must have been sent, on its own
// replica's clock, to show the item as the filing left it: a margin for
// the replicas' clocks to differ.
const recordSkew = time.Second

// keyRow answers the claim row of the key the item was filed under, and
// the item's key: by the key the tracker reads back, else by the item's
// id. A claimed but not yet recorded key counts: its values are recorded
// before the create. A key read back that is not the item's own is no key
// (a person's marker on Vikunja): one the ledger refuses, too long or not
// text, which would otherwise fail every read of the item and hold the
// cursor before it for good; or one recorded for another item, a marker
// copied with another item's description, which would otherwise take the
// copy for relayr's creation and check its edits against the original's
// values.
func (r *reader) keyRow(ctx context.Context, it tracker.Item) (*ledger.Claim, string, error) {
	l := r.f.fs.ledger
	key := it.Ref.Key
	if key != "" {
		row, err := l.Lookup(ctx, ledger.Key{Tenant: r.f.b.Tenant, Workspace: r.f.b.Workspace, Kind: ledger.KindItem, Key: key})
		switch {
		case err == nil && row.Recorded && row.Ref.ID != it.Ref.ID:
			key = "" // another item's key
		case err == nil:
			return &row, key, nil
		case errors.Is(err, ledger.ErrInvalid):
			key = "" // no key relayr could have filed under
		case !errors.Is(err, ledger.ErrNotFound):
			return nil, "", err
		}
	}
	row, err := l.LookupItem(ctx, r.f.b.Tenant, r.f.b.Workspace, it.Ref.ID)
	switch {
	case err == nil:
		return &row, row.Key.Key, nil
	case errors.Is(err, ledger.ErrNotFound):
		return nil, key, nil
	}
	return nil, "", err
}

func decodeSnapshot(row ledger.SnapshotRow) (*snapshot, error) {
	s, err := ledger.DecodeSnapshot(row)
	if err != nil {
		return nil, err
	}
	return &s, nil
}

func sameFields(a, b tracker.Item) bool {
	for _, field := range Fields {
		if ledger.Canonical(field, a) != ledger.Canonical(field, b) {
			return false
		}
	}
	return true
}

// item compares one item with its snapshot and publishes what differs. It
// answers the snapshot to save (nil when nothing changed), the echoes to
// consume, and deferred when the item is left for the next poll. Its
// steps: the snapshot and whether the item moved past it (readSnapshot),
// the item's new comments (newComments), the events of a read since the
// snapshot (sinceSnapshot) or of a first read (firstRead), the comments'
// events, then the snapshot to save.
func (r *reader) item(ctx context.Context, it tracker.Item) (*ledger.SnapshotRow, *consumption, bool, error) {
	fs := r.f.fs
	snap, tomb, v, err := r.snapshotOf(ctx, it)
	if err != nil || v != readIt {
		return nil, nil, v == deferIt, err
	}
	row, key, err := r.keyRow(ctx, it)
	if err != nil {
		return nil, nil, false, err
	}
	it.Ref.Key = key
	// Seeding is silent: a new binding's first read snapshots every item
	// and publishes nothing, unless the binding names a since.
	seeding := snap == nil && tomb == nil && r.sweep != nil && r.sweep.first
	if snap == nil && tomb == nil && !seeding && row != nil && r.filing(row) {
		// relayr's item whose filing has not left its snapshot yet: its
		// create's answer is the item's first snapshot, which every read
		// of it is diffed against (ADR-0036's departures). Snapshotted as
		// it stands, a person's change in this moment would be taken for
		// the filing (live: a person closed an issue a second after relayr
		// filed it). It is left for the next poll, whose read the cursor,
		// held before it, lists again.
		return nil, nil, true, nil
	}
	comments, gone, err := r.newComments(ctx, it, snap, tomb, seeding)
	if err != nil || gone {
		return nil, nil, false, err
	}
	d := &itemDiff{r: r, it: it, key: key, row: row, snap: snap, tomb: tomb, seeding: seeding,
		now: fs.clock.Now(), consume: map[string]string{}}
	if row != nil {
		d.correlation, d.values = row.Correlation, row.Values
	}
	d.next = snapshot{Item: it, Settled: d.now.Sub(it.UpdatedAt) >= settleAfter(fs.opts.SettleAfter, r.tr)}
	if snap == nil {
		d.firstRead()
	} else {
		d.sinceSnapshot(comments)
	}
	d.commentEvents(comments)
	for _, e := range d.events {
		if err := r.publish(ctx, e); err != nil {
			return nil, nil, false, err
		}
	}
	out, err := d.next.Row(r.f.b.Tenant, r.f.b.Workspace)
	if err != nil {
		return nil, nil, false, err
	}
	supersede := d.supersede
	if r.sentAt.IsZero() {
		supersede = nil // read by a request of unknown time
	}
	var use *consumption
	if (len(d.consume) > 0 || len(supersede) > 0) && row != nil {
		use = &consumption{key: row.Key, values: d.consume, supersede: supersede, before: r.sentAt}
	}
	return &out, use, false, nil
}

// filing reports whether a claim with no snapshot is still in the hands of
// its filing, which leaves the item's first snapshot before its record: a
// claim not yet recorded and younger than FilingBound (its create may be
// on its way, its answer lost and being looked up, or its claim retaken).
// A recorded claim with none (filed by an older relayr, or its snapshot
// lost) or a claim left unrecorded past the bound is read as it stands.
func (r *reader) filing(row *ledger.Claim) bool {
	return !row.Recorded && !row.Deleted && r.f.fs.clock.Now().Sub(row.ClaimedAt) < r.f.fs.opts.FilingBound
}

// verdict is what readSnapshot makes of an item read.
type verdict int

const (
	// readIt: diff the item against its snapshot, or read it first.
	readIt verdict = iota
	// skipIt: nothing to read (an older version, or unchanged and
	// settled); the cursor moves past it.
	skipIt
	// deferIt: not to be judged by this read (it may show relayr's
	// filing half made); the cursor stays before it.
	deferIt
)

// readSnapshot reads the item's snapshot (or its tombstone) and answers
// skipIt when the item is no later than it (an older version, or one read
// before, settled and unchanged), and deferIt when the snapshot is the one
// relayr's filing left and the page was asked for before the filing was
// answered: what the read shows may be the item half made (Vikunja labels
// a task after it makes it).
func (r *reader) readSnapshot(ctx context.Context, it tracker.Item) (snap, tomb *snapshot, v verdict, err error) {
	fs := r.f.fs
	srow, err := fs.ledger.Snapshot(ctx, r.f.b.Tenant, r.f.b.Workspace, it.Ref.ID)
	switch {
	case err == nil:
		if snap, err = decodeSnapshot(srow); err != nil {
			snap = nil // a snapshot that can't be read reads as lost
		}
	case !errors.Is(err, ledger.ErrNotFound):
		return nil, nil, readIt, err
	}
	// A tombstone is the snapshot of an item published as removed, not
	// known deleted (archived on Plane): listed again, it is published as
	// created again, its comments read before still read (ADR-1005).
	if snap != nil && srow.Removed {
		tomb, snap = snap, nil
	}
	if snap != nil && !snap.Filed.IsZero() && !r.readAfterFiling(snap) {
		return nil, nil, deferIt, nil
	}
	if snap != nil && it.UpdatedAt.Before(snap.Item.UpdatedAt) {
		// An older version than the one read before: a page read while the
		// item moved (Plane's offset pages) answers it late. Diffing it
		// would publish the item going back, relayr's own values included.
		return nil, nil, skipIt, nil
	}
	if snap != nil && snap.Settled && snap.Item.UpdatedAt.Equal(it.UpdatedAt) && sameFields(snap.Item, it) {
		return nil, nil, skipIt, nil // read before, settled and unchanged: nothing to ask
	}
	return snap, tomb, readIt, nil
}

// newComments answers the item's comments to diff, when it moved or is not
// settled (none while seeding), and gone when the item was deleted since
// its page listed it.
func (r *reader) newComments(ctx context.Context, it tracker.Item, snap, tomb *snapshot, seeding bool) ([]tracker.Comment, bool, error) {
	since, want := commentsWanted(it, snap, tomb, seeding)
	switch {
	case !want:
		return nil, false, nil
	case it.Comments != nil:
		// The tracker answered the item's comments with it: no request.
		return it.Comments, false, nil
	case r.comments != nil && r.comments.covered[it.Ref.ID]:
		// Read with the page's, in one request.
		var cs []tracker.Comment
		for _, c := range r.comments.byItem[it.Ref.ID] {
			if !c.CreatedAt.Before(since) {
				cs = append(cs, c)
			}
		}
		return cs, false, nil
	}
	var comments []tracker.Comment
	err := r.f.request(ctx, r.acc, r.pr, func(ctx context.Context, tr *tracker.Tracker) error {
		var err error
		comments, err = tr.Comments(ctx, it.Ref.ID, since)
		return err
	})
	if errors.Is(err, tracker.ErrNotFound) {
		// Deleted since the page listed it: nothing of it is read
		// this poll. A reported deletion or the sweep tells what
		// became of an item the follower knew; one made and deleted
		// between two reads was never there (level-triggered).
		return nil, true, nil
	}
	return comments, false, err
}

// commentsWanted answers whether the item's comments are to be read, and
// from when: when it moved or is not settled, never while seeding.
// quietMargin is what a tracker's QuietTouch is widened by where the
// followers wait it out: room for relayr's clock and the tracker's to
// differ, and for a list that shows a change late.
const quietMargin = 30 * time.Second

// settleAfter is how long after an item's last change a read finds it
// settled on tr: SettleAfter, or, on a tracker where a comment or a
// label-only edit made soon after a change leaves the item's UpdatedAt as
// it was (Capabilities.QuietTouch), past that span, so that the item is
// read again, comments and labels, once the span is over.
func settleAfter(settle time.Duration, tr *tracker.Tracker) time.Duration {
	if tr != nil {
		if q := tr.Capabilities().QuietTouch; q > 0 {
			settle = max(settle, q+quietMargin)
		}
	}
	return settle
}

// lookback is how far before its cursor a poll on tr reads: Lookback, and
// on a tracker with a QuietTouch at least past it, so that an item whose
// quiet change left its UpdatedAt behind the cursor is listed again.
func lookback(lb time.Duration, tr *tracker.Tracker) time.Duration {
	if tr != nil {
		if q := tr.Capabilities().QuietTouch; q > 0 {
			lb = max(lb, q+2*quietMargin)
		}
	}
	return lb
}

func commentsWanted(it tracker.Item, snap, tomb *snapshot, seeding bool) (since time.Time, want bool) {
	moved := snap == nil || it.UpdatedAt.After(snap.Item.UpdatedAt)
	// A comment in the same second as the item's last change doesn't move
	// it on a tracker that keeps time to the second; until a read comes
	// SettleAfter past that change, its comments are read again (ADR-0036's
	// consequence that such a comment "waits for the item's next change"
	// no longer holds: ADR-0036's departures).
	// A seeded item's comments until its last change are old whatever
	// their second (Through): while that change is still its last,
	// reading them again finds nothing new.
	seededThrough := snap != nil && snap.Through && !snap.CommentsUntil.Before(it.UpdatedAt)
	unsettled := snap != nil && !snap.Settled && !seededThrough && it.UpdatedAt.Equal(snap.Item.UpdatedAt)
	if (!moved && !unsettled) || seeding {
		return time.Time{}, false
	}
	if prev := cmp.Or(snap, tomb); prev != nil {
		since = prev.CommentsUntil
	}
	return since, true
}

// snapshotOf answers the item's snapshot, as read ahead for its page or
// now.
func (r *reader) snapshotOf(ctx context.Context, it tracker.Item) (snap, tomb *snapshot, v verdict, err error) {
	if k, ok := r.known[it.Ref.ID]; ok {
		return k.snap, k.tomb, k.v, nil
	}
	return r.readSnapshot(ctx, it)
}

// readPageComments reads the comments of the page's items in one request
// of the project's comments, where the tracker lists them
// (tracker.ProjectComments) and two or more of a poll's items want theirs:
// one request, or a few pages, instead of one an item (ADR-1010).
//
// A read of the project's comments since a time holds an item's new
// comments only if none of them is older. A poll reads every change since
// the lookback before its cursor, and the polls before it read every
// change before that; a tracker that lists a project's comments moves an
// item when a comment is made on it (Capabilities.ProjectComments). So a
// comment not yet read was made no earlier than the lookback before the
// poll's start: the read starts there, and holds the new comments of every
// item read before. An item first read holds none older than its creation;
// one first read that was made earlier (a tracker that doesn't say when),
// a tombstone's (its item was not listed while removed) and the sweep's
// are read on their own. The read takes fewer requests than the items it
// covers, or is not made.
func (r *reader) readPageComments(ctx context.Context, items []tracker.Item) error {
	r.known, r.comments = nil, nil
	if r.tr == nil || !r.tr.ListsProjectComments() || r.sweep != nil {
		return nil
	}
	// A poll from the project's beginning (its cursor never moved: the
	// project was empty when first read) has no lookback to start from:
	// only items first read, from their creation, are read so.
	var floor time.Time
	if !r.since.IsZero() {
		floor = r.since.Add(-lookback(r.f.fs.opts.Lookback, r.tr))
	}
	r.known = map[string]snapRead{}
	pc := &pageComments{since: floor, covered: map[string]bool{}}
	for _, it := range items {
		if it.Archived || it.Comments != nil {
			continue
		}
		snap, tomb, v, err := r.readSnapshot(ctx, it)
		if err != nil {
			return err
		}
		r.known[it.Ref.ID] = snapRead{snap: snap, tomb: tomb, v: v}
		since, want := commentsWanted(it, snap, tomb, false)
		switch {
		case v != readIt || !want:
		case snap != nil && snap.Filed.IsZero():
			pc.covered[it.Ref.ID] = !floor.IsZero()
		case tomb != nil:
			pc.covered[it.Ref.ID] = !floor.IsZero() && !since.Before(floor)
		// An item no follower read yet (its snapshot the filing's, or
		// none) holds no comment older than its creation.
		case it.CreatedAt.IsZero():
		case floor.IsZero():
			pc.covered[it.Ref.ID] = true
			if pc.since.IsZero() || it.CreatedAt.Before(pc.since) {
				pc.since = it.CreatedAt
			}
		default:
			pc.covered[it.Ref.ID] = !it.CreatedAt.Before(floor)
		}
	}
	maps.DeleteFunc(pc.covered, func(_ string, c bool) bool { return !c })
	covered := pc.covered
	if len(covered) < 2 {
		return nil
	}
	var ok bool
	err := r.f.request(ctx, r.acc, r.pr, func(ctx context.Context, tr *tracker.Tracker) error {
		var err error
		pc.byItem, ok, err = tr.ProjectComments(ctx, pc.since, len(covered)-1)
		return err
	})
	if err != nil {
		return err
	}
	if ok {
		r.comments = pc
	}
	return nil
}

// itemDiff is one item's read against what relayr knew of it: the events
// it publishes, the echoes it consumes, the values it supersedes, and the
// snapshot it leaves.
type itemDiff struct {
	r           *reader
	it          tracker.Item
	key         string
	row         *ledger.Claim
	snap, tomb  *snapshot
	seeding     bool
	correlation string
	values      map[string]string
	now         time.Time

	events    []eventlog.Event
	consume   map[string]string
	supersede []string
	next      snapshot
}

// firstRead is the first read of a binding, of a person's item, or of one
// relayr filed whose filing left no snapshot (filed by an older relayr, its
// snapshot lost, its claim left unrecorded past FilingBound): it consumes
// the echoes it reads (ADR-0036: "The first read of a binding consumes
// them too"), and publishes the item as created unless relayr filed it or
// the read seeds. An item relayr filed is otherwise read since the
// snapshot its filing left (sinceSnapshot).
func (d *itemDiff) firstRead() {
	r, it, row := d.r, d.it, d.row
	for _, field := range Fields {
		if v, ok := echo(r.tr, field, d.values[field], ledger.Canonical(field, it)); ok {
			d.consume[field] = v
			if p := ledger.Pending(d.values[field]); len(p) > 1 && v != p[0] {
				// An edit of relayr's read back before the item's
				// first read: an echo, as one read since a snapshot
				// is (the creation's values are none).
				r.f.fs.m.Add(metrics.Echoes, 1, r.labels())
			}
		} else if d.values[field] != "" {
			// A person's value: what relayr wrote before it was read,
			// it overwrote.
			d.supersede = append(d.supersede, field)
		}
	}
	since := r.f.b.Since
	switch {
	case d.seeding && (since.IsZero() || it.UpdatedAt.Before(since)):
		// Seeded silently; its comments until its last change are old.
	case d.tomb != nil:
		// Listed again after its removal, relayr's item or a person's:
		// the item as it is now, once for each removal.
		d.events = append(d.events, r.scope.restored(it, d.tomb.Item.UpdatedAt, d.key, d.correlation, d.now))
		d.next.CommentsUntil, d.next.SeenAt, d.next.Through = d.tomb.CommentsUntil, slices.Clone(d.tomb.SeenAt), d.tomb.Through
	case row != nil:
		// An item whose key relayr claimed isn't published as
		// created: it is relayr's creation.
	default:
		d.events = append(d.events, r.scope.created(it, d.key, d.correlation, d.now))
	}
	if d.seeding {
		d.next.CommentsUntil, d.next.Through = it.UpdatedAt, true
	}
}

// sinceSnapshot diffs the item against its snapshot: one event per field a
// person changed, relayr's own values dropped by value and consumed.
func (d *itemDiff) sinceSnapshot(comments []tracker.Comment) {
	r, it, snap := d.r, d.it, d.snap
	d.next.CommentsUntil, d.next.SeenAt, d.next.Through = snap.CommentsUntil, slices.Clone(snap.SeenAt), snap.Through
	relayrs := false // one of relayr's values is among the changes read
	var changed []string
	olds := map[string]string{}
	for _, field := range Fields {
		old, cur := ledger.Canonical(field, snap.Item), ledger.Canonical(field, it)
		// relayr's own writes are dropped by value: a field read back
		// holding the value recorded for it is an echo, and the
		// recorded value is consumed, so a person who later sets that
		// value again is published (ADR-0036).
		if v, ok := echo(r.tr, field, d.values[field], cur); ok {
			d.consume[field] = v
			if old != cur {
				relayrs = true
				r.f.fs.m.Add(metrics.Echoes, 1, r.labels())
			}
			continue
		}
		if d.values[field] != "" {
			// A person's value, not one relayr wrote: what relayr
			// wrote before it was read, it overwrote.
			d.supersede = append(d.supersede, field)
			if held, ok := ledger.HeldBetween(d.values[field], snap.Item.UpdatedAt, it.UpdatedAt); ok {
				// The tracker held relayr's value after the version last
				// read, by its own answer, though no read showed it: the
				// person changed the field from it (relayr moved the
				// item to started, the person back to todo).
				old = held
			}
			if filed := filedValue(snap, field, d.values[field]); filed != "" {
				// The filing's value, which its answer showed held: read
				// back by that answer, and overwritten since. Consumed, so
				// the person setting it again later is heard.
				d.consume[field] = filed
			}
		}
		if old != cur {
			changed = append(changed, field)
			olds[field] = old
		}
	}
	for _, c := range comments {
		if isNew(snap, c) && c.Key != "" {
			relayrs = true
		}
	}
	// actor is the item's last updater only when nothing relayr wrote
	// is among the changes read (ADR-0036, where it departs).
	actor := it.UpdatedBy
	if relayrs {
		actor = ""
	}
	for _, field := range changed {
		d.events = append(d.events, r.scope.changed(it, *snap, d.key, field, olds[field], ledger.Canonical(field, it), actor, d.correlation, d.now))
	}
}

// filedValue answers the field's value in a filing's snapshot when it is
// the filing's own among relayr's values recorded for the field (the
// oldest, or the one after the prediction the tracker rewrote) and no
// later one equals it: the value the filing's answer showed the tracker
// held (ADR-0036's departures: a filing's answer is its item's first
// snapshot). "" for a follower's snapshot, or any other case, which
// consumes nothing.
func filedValue(snap *snapshot, field, recorded string) string {
	if snap.Filed.IsZero() {
		return ""
	}
	v := ledger.Canonical(field, snap.Item)
	list := ledger.Pending(recorded)
	i := slices.Index(list, v)
	if i < 0 || i > 1 || slices.Contains(list[i+1:], v) {
		return ""
	}
	return v
}

// commentEvents publishes the comments not read before, but relayr's own
// (read with its key: ADR-0036), and notes each seen.
func (d *itemDiff) commentEvents(comments []tracker.Comment) {
	for _, c := range comments {
		if prev := cmp.Or(d.snap, d.tomb); prev != nil && !isNew(prev, c) {
			continue
		}
		saw(&d.next, c)
		if c.Key != "" {
			continue
		}
		d.events = append(d.events, d.r.scope.commented(d.it, d.key, c, d.correlation, d.now))
	}
}

func (r *reader) labels() metrics.Labels {
	return metrics.Labels{"tenant": r.f.b.Tenant, "workspace": r.f.b.Workspace, "tracker": r.f.b.Kind()}
}

// publish publishes one event through the workspace's projection.
func (r *reader) publish(ctx context.Context, e eventlog.Event) error {
	fs := r.f.fs
	out, dead := deliver.Project(r.f.proj, e, fs.opts.Reserved)
	if dead != "" {
		raw, _ := json.Marshal(e)
		// Dead letters are kept once per event id (ADR-0036).
		added, err := fs.ledger.DeadLetter(ctx, ledger.DeadLetter{Follower: r.f.id, ID: e.ID, Event: raw, Reason: dead, At: fs.clock.Now()})
		if err != nil {
			return err
		}
		if added {
			fs.m.Add(metrics.DeadLetters, 1, r.labels())
			fs.logger.Warn("tracker event dead-lettered", "binding", r.f.b.Name(), "id", e.ID, "type", e.Type, "reason", dead)
		}
		return nil
	}
	if out == nil {
		return nil
	}
	_, appended, err := fs.log.Append(ctx, eventlog.AppendParams{Publisher: eventlog.TrackerPublisher, Event: *out})
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		// Anything but a dead letter stops the follower until its
		// workspace is opened again (ADR-0036, as ADR-0015's followers).
		return &stopError{err: err}
	}
	if appended {
		if r.pr != nil {
			r.pr.published++
		}
		fs.m.Add(metrics.Published, 1, r.labels())
		// Changes a poll published that no nudge announced are counted,
		// removals excepted: no webhook announces them (ADR-0036).
		if !r.announced && e.Type != TypeItemRemoved {
			if r.pr != nil && r.pr.deferred {
				r.pr.unannounced++
			} else {
				r.f.update(func(s *state) { s.unnudged++ })
				fs.m.Add(metrics.Unnudged, 1, r.labels())
			}
		}
	}
	return nil
}
