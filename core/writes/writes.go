// Package writes makes runs' writes to a tracker happen once per key
// (ADR-0033): EnsureItem files an item, Update edits it, Comment comments on
// it, each by key, however often a run is retried and in whatever order.
//
// The guarantee rests on the ledger, not on the tracker: every key is claimed
// before anything is sent, what was made is recorded, and an attempt that
// takes a claim an earlier attempt left behind asks the tracker for the item
// before it files one.
package writes

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptrace"
	"slices"
	"sync"
	"time"

	"github.com/relayr-go/relayr/core/binding"
	"github.com/relayr-go/relayr/core/budget"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/integrations"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/metrics"
	"github.com/relayr-go/relayr/core/tracker"
)

// Timings of ADR-0033 and ADR-0036, the defaults of Options.
const (
	// DefaultRetakeAfter: a claim that recorded nothing is taken again
	// after 30 s.
	DefaultRetakeAfter = 30 * time.Second
	// DefaultWriteBound: all writes under one claim end within 20 s, well
	// inside the claim.
	DefaultWriteBound = 20 * time.Second
	// DefaultCapWindow and DefaultCapLimit: at most 20 writes by relayr to
	// one item an hour.
	DefaultCapWindow = time.Hour
	DefaultCapLimit  = 20
	// DefaultSettle: a write that ended in doubt (its answer lost, or
	// given up mid-request) is taken to be no longer acting at the tracker
	// 2 s after its request ended; relayr then looks the item up itself
	// (doubt.go).
	DefaultSettle = 2 * time.Second
)

// Options tune a Writer; a zero field takes the default. WriteBound
// plus Settle must be shorter than RetakeAfter: an attempt still creating
// when its claim is retaken could see a second attempt file the key
// again, and a filing in doubt is looked up before a retake could (the
// relayr binary's configuration refuses it).
type Options struct {
	RetakeAfter time.Duration
	WriteBound  time.Duration
	CapWindow   time.Duration
	CapLimit    int
	// Settle is how long after a write in doubt ended relayr takes the
	// tracker to be done with it, before it looks the item up
	// (DefaultSettle).
	Settle time.Duration
}

func (o Options) withDefaults() Options {
	if o.RetakeAfter <= 0 {
		o.RetakeAfter = DefaultRetakeAfter
	}
	if o.WriteBound <= 0 {
		o.WriteBound = DefaultWriteBound
	}
	if o.CapWindow <= 0 {
		o.CapWindow = DefaultCapWindow
	}
	if o.CapLimit <= 0 {
		o.CapLimit = DefaultCapLimit
	}
	if o.Settle <= 0 {
		o.Settle = DefaultSettle
	}
	return o
}

// Ledger is what a Writer keeps in the ledger: the claims (with the first
// snapshot of each item it files), and the followers' snapshots it answers
// recorded items from.
type Ledger interface {
	ledger.Claims
	Snapshot(ctx context.Context, tenant, workspace, itemID string) (ledger.SnapshotRow, error)
}

// Config is what a Writer needs.
type Config struct {
	Ledger       Ledger
	Connections  *binding.Connections
	Integrations integrations.Integrations // Always when nil
	Clock        clock.Clock               // System when nil
	Budget       *budget.Budget            // none when nil
	Metrics      metrics.Metrics           // Discard when nil
	// Log is the event log the followers publish to. With it, an edit
	// relayr's own answered write already made is answered without a
	// request (certain.go); without it every edit reads the item first.
	Log eventlog.Log

	Options Options
}

// Writer files, edits and comments once per key. It is safe for concurrent
// use.
type Writer struct {
	log    eventlog.Log
	ledger Ledger
	conns  *binding.Connections
	integ  integrations.Integrations
	clock  clock.Clock
	budget *budget.Budget
	m      metrics.Metrics
	opts   Options

	// flights are the attempts of this process on a key, each from
	// before its claim is taken until what the tracker did is known
	// (wait.go); filings are how long the recent ones took.
	mu      sync.Mutex
	flights map[ledger.Key]*flight
	filings []time.Duration
	// landed is what the tracker answered relayr's own writes with, by
	// key, the oldest key first in landedKeys (certain.go).
	landed     map[ledger.Key]*landing
	landedKeys []ledger.Key
	// heads is how far this Writer read each workspace's log.
	heads map[string]int64
	// lookups are the batches of look-ups of filings in doubt gathering
	// now, by binding (doubt.go).
	lookups map[string]*keyBatch
}

// New returns a Writer.
func New(c Config) *Writer {
	w := &Writer{
		log: c.Log, ledger: c.Ledger, conns: c.Connections, integ: c.Integrations, clock: c.Clock, budget: c.Budget, m: c.Metrics,
		opts: c.Options.withDefaults(), flights: map[ledger.Key]*flight{}, landed: map[ledger.Key]*landing{}, heads: map[string]int64{},
		lookups: map[string]*keyBatch{},
	}
	if w.integ == nil {
		w.integ = integrations.Always
	}
	if w.clock == nil {
		w.clock = clock.System{}
	}
	if w.m == nil {
		w.m = metrics.Discard{}
	}
	return w
}

// EnsureParams asks for the item filed under a key.
type EnsureParams struct {
	Tenant      string
	Workspace   string
	Key         string
	Draft       tracker.Draft
	Correlation string
	// Live reads a recorded key's item from the tracker before answering
	// it (one request), as ADR-0033 has it. Without it a recorded key is
	// answered from the ledger with no request at all (Known): a retried
	// filing costs the tracker nothing (ADR-0033's departures: a recorded
	// key is answered from the ledger).
	Live bool
}

// How an item came to be answered.
const (
	// Created: this attempt filed the item.
	Created = "created"
	// Found: the item was filed by an earlier attempt and found in the
	// tracker under a retaken claim (or by Plane's 409).
	Found = "found"
	// Existing: the key's item was already recorded.
	Existing = "existing"
)

// Result is an item and how this attempt came to it.
type Result struct {
	Item tracker.Item
	How  string
}

// session is one write's binding and its bounded tracker calls.
type session struct {
	w *Writer
	b binding.Binding
}

// call makes a write's tracker calls: every request they send (a
// connection's reads, a lookup, labels) spends the key's budget, and none is
// held back (ADR-0036: "writes spend it and are never held back").
// A call whose tracker could not be had (the credentials, the connection)
// sent nothing of fn's: its failure is marked never sent
// (tracker.NotSent), so a claim it was made under is released.
func (s session) call(ctx context.Context, fn func(ctx context.Context, t *tracker.Tracker) error) error {
	called := false
	err := s.w.conns.Do(s.metered(ctx), s.b, func(ctx context.Context, t *tracker.Tracker) error {
		called = true
		return fn(ctx, t)
	})
	if err != nil && !called {
		return tracker.NotSent(err)
	}
	return err
}

// metered is ctx with the write's requests counted: in the key's budget,
// and as writes sent to the tracker (metrics.Writes).
func (s session) metered(ctx context.Context) context.Context {
	labels := metrics.Labels{"tenant": s.b.Tenant, "workspace": s.b.Workspace, "tracker": s.b.Kind()}
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { s.w.m.Add(metrics.Writes, 1, labels) },
	})
	if s.w.budget == nil {
		return ctx
	}
	return s.w.budget.Writing(ctx, s.b.BudgetKey())
}

// begin checks input and the switch, in that order, before anything touches
// the ledger or a tracker.
func (w *Writer) begin(ctx context.Context, tenant, workspace, key string) (session, error) {
	if err := CheckName("tenant", tenant); err != nil {
		return session{}, err
	}
	if err := CheckName("workspace", workspace); err != nil {
		return session{}, err
	}
	if err := tracker.ValidateKey(key); err != nil {
		return session{}, wrap(CodeInvalid, err)
	}
	b, err := w.conns.Binding(tenant, workspace)
	if err != nil {
		return session{}, wrap(CodeNotAllowed, err)
	}
	// Integrations are asked before anything touches the ledger or a tracker.
	if !w.integ.Enabled(ctx, tenant, workspace, b.Integration()) {
		return session{}, wrap(CodeNotAllowed, fmt.Errorf("%s is switched off in %s", b.Integration(), b.Name()))
	}
	return session{w: w, b: b}, nil
}

// CheckName checks a tenant, workspace or subscription name as every part
// of relayr keeps it: a key's rules (tracker.ValidateName), and at most
// ledger.MaxName bytes, which the ledger and the event log hold. The
// configuration checks its names with it too.
func CheckName(field, v string) error {
	if err := tracker.ValidateName(field, v); err != nil {
		return wrap(CodeInvalid, err)
	}
	if len(v) > ledger.MaxName {
		return wrap(CodeInvalid, &tracker.InvalidError{Field: field, Reason: fmt.Sprintf("is %d bytes, over %d", len(v), ledger.MaxName)})
	}
	return nil
}

// checkCorrelation refuses a correlation longer than any store keeps: the
// claim's is copied onto every event of its item.
func checkCorrelation(v string) error {
	if len(v) > ledger.MaxCorrelation {
		return wrap(CodeInvalid, &tracker.InvalidError{Field: "correlation", Reason: fmt.Sprintf("is %d bytes, over %d", len(v), ledger.MaxCorrelation)})
	}
	return nil
}

// maxRounds bounds how often one EnsureItem claims its key: each round
// ends in an answer, or in errAgain when what it waited for ended.
const maxRounds = 8

// EnsureItem files the key's item once and answers it (ADR-0033's
// ensure_item). A caller whose key another attempt holds waits for it and
// is answered its item once recorded, up to the write bound from its
// arrival (wait.go). The filing itself runs on a context of its own,
// bounded by the write bound: a caller that gives up leaves it to finish
// and record what it made, and its retry is answered from the ledger.
func (w *Writer) EnsureItem(ctx context.Context, p EnsureParams) (Result, error) {
	if err := tracker.ValidateDraft(p.Draft); err != nil {
		return Result{}, wrap(CodeInvalid, err)
	}
	if err := checkCorrelation(p.Correlation); err != nil {
		return Result{}, err
	}
	s, err := w.begin(ctx, p.Tenant, p.Workspace, p.Key)
	if err != nil {
		return Result{}, err
	}
	draft := withDefaults(p.Draft, s.b.Defaults)
	k := ledger.Key{Tenant: p.Tenant, Workspace: p.Workspace, Kind: ledger.KindItem, Key: p.Key}
	deadline := w.answerBy(ctx, w.clock.Now().Add(w.opts.WriteBound))
	for range maxRounds {
		res, err := s.ensure(ctx, k, p, draft, deadline)
		if !errors.Is(err, errAgain) {
			return res, err
		}
		// What this caller waited for ended: the key is claimed again.
	}
	return Result{}, &Error{Code: CodeClaimed, RetryAfter: time.Second, Err: fmt.Errorf("key %s was claimed and given up again and again", tracker.Quote(p.Key))}
}

// ensure is one round of EnsureItem: the caller boards the key, or waits
// for the attempt of this process on it, then claims it.
func (s session) ensure(ctx context.Context, k ledger.Key, p EnsureParams, draft tracker.Draft, deadline time.Time) (Result, error) {
	w := s.w
	f, leads := w.board(k)
	if !leads {
		return Result{}, w.await(ctx, k, f, deadline)
	}
	filing := false
	defer func() {
		if !filing {
			w.unboard(k, f)
		}
	}()
	// The ledger claims every key before anything is sent.
	row, outcome, err := w.ledger.Claim(ctx, ledger.ClaimParams{
		Key: k, Correlation: p.Correlation, Now: w.clock.Now(), RetakeAfter: w.opts.RetakeAfter,
	})
	if err != nil {
		return Result{}, ledgerFailed(err)
	}
	switch outcome {
	case ledger.Deleted:
		// A deleted item marks its key; nothing is asked of the tracker.
		return Result{}, wrap(CodeDeleted, fmt.Errorf("the item filed under %s was deleted", tracker.Quote(p.Key)))
	case ledger.Held:
		// A fresh claim held by an attempt of another process: waited
		// for (wait.go), and failed as tracker_claimed, to be retried,
		// only at the caller's bound.
		row, err = w.awaitHolder(ctx, k, row, deadline)
		if err != nil {
			return Result{}, err
		}
		fallthrough
	case ledger.Recorded:
		// A wait for another attempt's record does not spend the bound.
		wctx, cancel := w.clock.WithTimeout(ctx, w.opts.WriteBound)
		defer cancel()
		return s.answerRecorded(ctx, wctx, k, row, p.Live)
	}
	// Fresh or Retaken: this attempt files, on a context its caller's end
	// does not cancel, and stays on the board until what the tracker did
	// is known.
	filing = true
	began := w.clock.Now()
	answer := make(chan filed, 1)
	go s.fly(context.WithoutCancel(ctx), k, f, row, outcome, p, draft, answer)
	// The caller hears its filing's answer within the filing's bound (a
	// doubt resolved soon after a lost answer among them), or is told at
	// the bound that it goes on.
	until := began.Add(w.opts.WriteBound)
	if deadline.After(until) {
		until = deadline
	}
	until = w.answerBy(ctx, until)
	wait, cancel := w.clock.WithTimeout(ctx, until.Sub(w.clock.Now()))
	defer cancel()
	select {
	case a := <-answer:
		if !a.inDoubt || !w.waitsForLookUp(ctx, until) {
			return a.res, a.err
		}
		// In doubt, and the caller said it waits past relayr's look-up
		// (Prefer: wait): it is answered what the look-up finds, or
		// told to come back at its own deadline, not before.
		select {
		case <-f.done:
			return Result{}, errAgain
		case <-wait.Done():
			return Result{}, a.err
		}
	case <-wait.Done():
		if ctx.Err() != nil {
			return Result{}, wrap(CodeUnavailable, fmt.Errorf("the caller gave up; the filing of %s goes on: %w", tracker.Quote(k.Key), ctx.Err()))
		}
		return Result{}, &Error{Code: CodeUnavailable, RetryAfter: w.likelyDone(row.ClaimedAt),
			Err: fmt.Errorf("key %s is still being filed; its filing goes on", tracker.Quote(k.Key))}
	}
}

// waitsForLookUp reports whether a caller told of a filing in doubt waits
// for relayr's look-up of it: one whose context says how long it waits
// (an HTTP client's Prefer: wait), past the look-up's Settle, where until
// is when it is answered at the latest. A caller that said nothing is
// told at once, with when to come back.
func (w *Writer) waitsForLookUp(ctx context.Context, until time.Time) bool {
	_, ok := ctx.Deadline()
	return ok && until.Sub(w.clock.Now()) > w.opts.Settle
}

// fly runs a filing to its end and answers it: what it made, or how it
// failed; in doubt, that it is in doubt, and it then resolves the doubt
// (doubt.go) while its callers wait on the board. The attempt leaves the
// board before an answer that ends it, so that a caller told to claim
// again never waits for its own attempt.
func (s session) fly(ctx context.Context, k ledger.Key, f *flight, row ledger.Claim, outcome ledger.Outcome, p EnsureParams, draft tracker.Draft, answer chan<- filed) {
	w := s.w
	res, err := s.file(ctx, k, row, outcome, p, draft)
	var d *doubt
	if !errors.As(err, &d) {
		if err == nil {
			w.noteFiling(w.clock.Now().Sub(row.ClaimedAt))
		}
		w.unboard(k, f)
		answer <- filed{res: res, err: err}
		return
	}
	// In doubt: the caller hears so at once, told to come back once the
	// look-up can have answered (or, one that waits, waits for it on the
	// board), and relayr looks the item up.
	answer <- filed{Result{}, withRetry(d.err, w.opts.Settle+time.Second), true}
	if s.resolve(ctx, k, row.Nonce, row.ClaimedAt, draft) {
		w.noteFiling(w.clock.Now().Sub(row.ClaimedAt))
	}
	w.unboard(k, f)
}

// filed is a filing's answer.
type filed struct {
	res Result
	err error
	// inDoubt: the filing's fate is not known; relayr looks it up.
	inDoubt bool
}

// file files the key under the claim this attempt holds (Fresh or
// Retaken) and records what it made. All its writes are bounded together
// (ADR-0033). A filing that ends in doubt answers a *doubt, which relayr
// resolves itself (doubt.go).
func (s session) file(ctx context.Context, k ledger.Key, row ledger.Claim, outcome ledger.Outcome, p EnsureParams, draft tracker.Draft) (Result, error) {
	wctx, cancel := s.w.clock.WithTimeout(ctx, s.w.opts.WriteBound)
	defer cancel()
	if outcome == ledger.Retaken {
		if s.guardsKeys(wctx) {
			// The tracker's create is itself the lookup (Plane's 409):
			// ADR-0033's departures, one request where ADR-0033 has two. Until
			// it answers, an earlier attempt's item may exist.
			return s.create(ctx, wctx, k, row.Nonce, draft, true)
		}
		// The lookup before the create: an earlier attempt may have made
		// the item and died before recording it.
		found, err := s.find(wctx, p.Key)
		switch {
		case err == nil:
			return s.adopt(ctx, wctx, k, row.Nonce, found, draft)
		case !errors.Is(err, tracker.ErrNotFound):
			// The lookup failed: an earlier attempt's item may exist, so
			// the claim holds (never released) until a lookup answers.
			return Result{}, s.holdClaim(err)
		}
	}
	// A fresh claim, which no attempt held before, goes straight to the
	// create (ADR-0033's departures: the lookup serves retaken claims only).
	return s.create(ctx, wctx, k, row.Nonce, draft, false)
}

// find asks the tracker for the item filed under key (a write's
// request: it spends the key's budget).
func (s session) find(ctx context.Context, key string) (tracker.Item, error) {
	var found tracker.Item
	err := s.call(ctx, func(ctx context.Context, t *tracker.Tracker) error {
		var err error
		found, err = t.Find(ctx, key)
		return err
	})
	return found, err
}

// gone reports whether the tracker answers the item of id (an
// *ExistsError's; "" names none) not found: on a tracker whose Item tells
// deleted from archived (NudgesDeletions), that it was deleted.
func (s session) gone(ctx context.Context, id string) bool {
	if id == "" {
		return false
	}
	var deletes bool
	err := s.call(ctx, func(ctx context.Context, t *tracker.Tracker) error {
		if deletes = t.Capabilities().NudgesDeletions; !deletes {
			return nil
		}
		_, err := t.Item(ctx, id)
		return err
	})
	return deletes && errors.Is(err, tracker.ErrNotFound)
}

// guardsKeys asks the binding's tracker whether its create refuses a second
// item under a key (tracker.Capabilities.KeysEnforced).
func (s session) guardsKeys(ctx context.Context) bool {
	tr, err := s.w.conns.Tracker(s.metered(ctx), s.b)
	if err != nil {
		return false
	}
	return tr.Capabilities().KeysEnforced
}

// create files the draft under the claim and records it. mayExist says
// that an earlier attempt under the key may have made the item and no
// lookup has said otherwise: a failed create then holds the claim, even
// when the tracker certainly did not take it, since releasing would drop
// the ledger's record of a key whose item may stand in the tracker (and a
// follower would publish relayr's own creation as a person's).
func (s session) create(ctx, wctx context.Context, k ledger.Key, nonce string, d tracker.Draft, mayExist bool) (Result, error) {
	var made tracker.Item
	var predicted map[string]string
	err := s.call(wctx, func(wctx context.Context, t *tracker.Tracker) error {
		// Filing records the values it files, as the tracker will hold
		// them, before it creates the item (ADR-0036: echoes by value).
		predicted = heldValues(t, d)
		if _, err := s.w.ledger.SetValues(ctx, k, predicted); err != nil {
			return fmt.Errorf("%w: %w", errLedger, err)
		}
		var err error
		made, err = t.Create(wctx, k.Key, d)
		return err
	})
	var exists *tracker.ExistsError
	switch {
	case errors.As(err, &exists):
		// Plane's 409 is the second guard: read the existing item by the
		// external-id lookup, which also finds archived items.
		found, err := s.find(wctx, k.Key)
		if err != nil {
			if errors.Is(err, tracker.ErrNotFound) && s.gone(wctx, exists.ID) {
				// The tracker holds an id under the key that neither the
				// key's look-up nor a read of the id finds: the item was
				// deleted, its id still taken (Linear's trash keeps it 30
				// days). Filing again would be refused the same way.
				if merr := s.w.ledger.MarkDeleted(ctx, k); merr != nil {
					return Result{}, ledgerFailed(merr)
				}
				return Result{}, wrap(CodeDeleted, fmt.Errorf("the item filed under %s was deleted", tracker.Quote(k.Key)))
			}
			// The tracker holds an item under the key: the claim holds
			// until a lookup answers.
			return Result{}, s.holdClaim(err)
		}
		return s.adopt(ctx, wctx, k, nonce, found, d)
	case err != nil && mayExist:
		return Result{}, s.holdClaim(err)
	case err != nil:
		return Result{}, s.failed(ctx, k, nonce, err)
	}
	// The item stands in the tracker: it is recorded whatever its caller
	// does from here.
	answeredAt, moment := s.w.clock.Now(), ledger.Now()
	ctx, cancel := s.landed(ctx)
	defer cancel()
	// What the tracker answered it holds is recorded beside the
	// prediction, and the answer is the item's first snapshot.
	snap, err := s.recordFiled(ctx, k, predicted, made, made, answeredAt, moment)
	if err != nil {
		return Result{}, ledgerFailed(err)
	}
	res, err := s.record(ctx, wctx, k, nonce, made, Created, snap)
	if err == nil {
		s.countWrite(ctx, made.Ref.ID)
		if res.Item.Ref.ID == made.Ref.ID {
			s.w.land(ctx, k, made.Ref.ID, answered(predicted, made))
		}
	}
	return res, err
}

// landed answers the context a write's records run on once the tracker has
// taken it. Its caller may give up now, but what stands in the tracker is
// recorded all the same (ADR-0033): an item left unrecorded holds its key
// until the claim is retaken, and a follower would read relayr's own
// creation as a person's. It has a write bound of its own.
func (s session) landed(ctx context.Context) (context.Context, context.CancelFunc) {
	return s.w.clock.WithTimeout(context.WithoutCancel(ctx), s.w.opts.WriteBound)
}

// adopt records an item an earlier attempt made, giving it the draft's
// labels (ADR-0033: Vikunja labels a task after it makes it, so an attempt
// that died in between left it without).
func (s session) adopt(ctx, wctx context.Context, k ledger.Key, nonce string, found tracker.Item, d tracker.Draft) (Result, error) {
	// The item as found is what the filing left, a person's changes
	// since its create among it; the labels' edit below answers the item
	// with whatever a person changed since the find too, and only its
	// labels are relayr's.
	asFound := found
	if missing := missingLabels(found.Labels, d.Labels); len(missing) > 0 {
		labels := append(slices.Clone(found.Labels), missing...)
		err := s.call(wctx, func(wctx context.Context, t *tracker.Tracker) error {
			if _, err := s.w.ledger.SetValues(ctx, k, map[string]string{tracker.FieldLabels: ledger.Canonical(tracker.FieldLabels, tracker.Item{Labels: labels})}); err != nil {
				return fmt.Errorf("%w: %w", errLedger, err)
			}
			updated, err := t.Update(wctx, found.Ref.ID, tracker.Patch{Labels: &labels})
			if err == nil {
				found = updated
			}
			return err
		})
		if err != nil {
			// The item exists unrecorded: releasing would let a fresh
			// claim file it again.
			return Result{}, s.holdClaim(err)
		}
		s.countWrite(ctx, found.Ref.ID)
	}
	// What the tracker holds is recorded beside what the draft predicted,
	// as a create's answer is (recordFiled): an item found, not made,
	// answered nothing of its own, and a follower's first read would take
	// the difference (Plane's trimmed title) for a person's change; a
	// person's change made before the item was found is not (foundBaseline).
	foundAt, moment := s.w.clock.Now(), ledger.Now()
	tr, err := s.w.conns.Tracker(s.metered(ctx), s.b)
	if err != nil {
		return Result{}, s.holdClaim(err)
	}
	predicted := heldValues(tr, d)
	asFound.Labels = found.Labels
	baseline, got := foundBaseline(tr, predicted, asFound)
	got.UpdatedAt = found.UpdatedAt
	snap, err := s.recordFiled(ctx, k, predicted, got, baseline, foundAt, moment)
	if err != nil {
		return Result{}, ledgerFailed(err)
	}
	return s.record(ctx, wctx, k, nonce, found, Found, snap)
}

// record keeps the first record, with the item's first snapshot; a
// claimer whose claim was retaken cannot record over the new claimer
// (Ratus: the nonce).
func (s session) record(ctx, wctx context.Context, k ledger.Key, nonce string, it tracker.Item, how string, snap *ledger.SnapshotRow) (Result, error) {
	ref := it.Ref
	ref.Key = k.Key
	row, err := s.w.ledger.Record(ctx, ledger.RecordParams{Key: k, Nonce: nonce, Ref: ref, Now: s.w.clock.Now(), Snapshot: snap})
	switch {
	case errors.Is(err, ledger.ErrNonce):
		// Another attempt retook the claim; it will find this item by its
		// key. Retrying this attempt answers what it records.
		return Result{}, wrap(CodeUnavailable, fmt.Errorf("the claim on %s was retaken before the record: %w", tracker.Quote(k.Key), err))
	case err != nil:
		return Result{}, ledgerFailed(err)
	}
	if row.Ref.ID != ref.ID {
		// The first record is kept: answer that item, read.
		return s.readRecorded(ctx, wctx, k, row)
	}
	it.Ref = ref
	return Result{Item: it, How: how}, nil
}

// readRecorded reads a recorded item before it is returned. One that is gone
// marks the key deleted; an archived one is answered (ADR-0033).
func (s session) readRecorded(ctx, wctx context.Context, k ledger.Key, row ledger.Claim) (Result, error) {
	var it tracker.Item
	err := s.call(wctx, func(wctx context.Context, t *tracker.Tracker) error {
		var err error
		it, err = t.Item(wctx, row.Ref.ID)
		if errors.Is(err, tracker.ErrNotFound) {
			// An archived item reads as missing on Plane; the key's
			// lookup tells archived from deleted.
			var found tracker.Item
			found, ferr := t.Find(wctx, k.Key)
			if ferr == nil && found.Ref.ID == row.Ref.ID {
				it, err = found, nil
			} else if ferr != nil && !errors.Is(ferr, tracker.ErrNotFound) {
				err = ferr
			}
		}
		return err
	})
	switch {
	case errors.Is(err, tracker.ErrNotFound):
		if merr := s.w.ledger.MarkDeleted(ctx, k); merr != nil {
			return Result{}, ledgerFailed(merr)
		}
		return Result{}, wrap(CodeDeleted, fmt.Errorf("the item filed under %s was deleted", tracker.Quote(k.Key)))
	case err != nil:
		return Result{}, classify(err)
	}
	it.Ref = mergeRef(row.Ref, it.Ref)
	return Result{Item: it, How: Existing}, nil
}

// holdClaim answers a failure under a claim that an earlier attempt may have
// filed under: releasing it would let the next attempt's fresh claim skip the
// lookup, so the claim holds, in doubt, until a look-up resolves it
// (doubt.go) or it lapses and is retaken.
func (s session) holdClaim(err error) error { return &doubt{err: classify(err)} }

// failed turns a tracker failure under a claim into the attempt's error,
// releasing the claim when the tracker certainly didn't take the write.
func (s session) failed(ctx context.Context, k ledger.Key, nonce string, err error) error {
	if errors.Is(err, errLedger) {
		// The ledger failed before the tracker was asked: nothing was sent,
		// so the claim is released, and the failure is the ledger's (a
		// value no store keeps is the caller's).
		if rerr := s.w.ledger.Release(ctx, k, nonce); rerr != nil && !errors.Is(rerr, ledger.ErrNonce) {
			return errors.Join(ledgerFailed(err), rerr)
		}
		return ledgerFailed(err)
	}
	if tracker.CertainlyNotTaken(err) {
		// A write the tracker certainly didn't take (one never sent
		// among them) releases the claim, so a run can write by the same
		// key again at once.
		if rerr := s.w.ledger.Release(ctx, k, nonce); rerr != nil && !errors.Is(rerr, ledger.ErrNonce) {
			return errors.Join(classify(err), rerr)
		}
		return classify(err)
	}
	// Anything else (the bound passed, the tracker unavailable, the answer
	// lost): the claim holds, in doubt, until relayr looks the item up
	// (doubt.go).
	return &doubt{err: classify(err)}
}

// countWrite counts a write that was sent; it is never refused here, since
// the cap is checked before an edit is sent.
func (s session) countWrite(ctx context.Context, itemID string) {
	_, _ = s.w.ledger.CountWrite(ctx, s.writeParams(itemID, 1<<30))
}

func (s session) writeParams(itemID string, limit int) ledger.WriteParams {
	return ledger.WriteParams{
		Tenant: s.b.Tenant, Workspace: s.b.Workspace, ItemID: itemID,
		Now: s.w.clock.Now(), Window: s.w.opts.CapWindow, Limit: limit,
	}
}

// spendCap counts a write to an item under the cap of 20 an hour, counted
// in the ledger so it holds across replicas (ADR-0036: the cap on loops),
// before the write is sent. It answers the write as counted, for giveBack.
func (s session) spendCap(ctx context.Context, itemID string) (ledger.WriteParams, error) {
	p := s.writeParams(itemID, s.w.opts.CapLimit)
	_, err := s.w.ledger.CountWrite(ctx, p)
	if errors.Is(err, ledger.ErrLoop) {
		s.w.m.Add(metrics.Loops, 1, metrics.Labels{"tenant": s.b.Tenant, "workspace": s.b.Workspace})
		return p, wrap(CodeLoop, fmt.Errorf("item %s took %d writes within %s", itemID, s.w.opts.CapLimit, s.w.opts.CapWindow))
	}
	if err != nil {
		return p, ledgerFailed(err)
	}
	return p, nil
}

// giveBack gives back a write spendCap counted that never reached the
// tracker, or that the tracker certainly did not take (refused, missing,
// rate-limited, the key refused), and answers err, the write's failure:
// the cap counts the writes an item took (ADR-0036: the cap on loops), so
// a run retried under a tracker's 429s is not cut off as a loop
// (ADR-0036's departures). A write whose fate is unknown stays counted. A
// give-back that fails is joined to err: the write stays counted, and the
// cap errs toward sending less.
func (s session) giveBack(ctx context.Context, counted ledger.WriteParams, err error) error {
	// Given back whatever its caller does: a caller that gave up, which is
	// why a ledger write most likely failed, sent nothing either.
	ctx, cancel := s.landed(ctx)
	defer cancel()
	if uerr := s.w.ledger.UncountWrite(ctx, counted); uerr != nil {
		return errors.Join(err, fmt.Errorf("the write stays counted against the loop cap: %w", uerr))
	}
	return err
}

func withDefaults(d, defaults tracker.Draft) tracker.Draft {
	if d.State == "" {
		d.State = defaults.State
	}
	if d.Description == "" {
		d.Description = defaults.Description
	}
	if len(defaults.Labels) > 0 {
		d.Labels = append(slices.Clone(d.Labels), missingLabels(d.Labels, defaults.Labels)...)
	}
	return d
}

func missingLabels(have, want []string) []string {
	var out []string
	for _, l := range want {
		if !slices.Contains(have, l) && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

func mergeRef(recorded, read tracker.ItemRef) tracker.ItemRef {
	if read.Name == "" {
		read.Name = recorded.Name
	}
	if read.Number == 0 {
		read.Number = recorded.Number
	}
	if read.Link == "" {
		read.Link = recorded.Link
	}
	read.ID = recorded.ID
	read.Key = recorded.Key
	return read
}

// heldValues are a draft's values as the tracker will hold them, in
// canonical JSON by field.
func heldValues(t *tracker.Tracker, d tracker.Draft) map[string]string {
	held := tracker.Item{Title: d.Title, Description: d.Description, Labels: d.Labels}
	v := map[string]string{
		tracker.FieldTitle:       ledger.Canonical(tracker.FieldTitle, held),
		tracker.FieldDescription: ledger.Canonical(tracker.FieldDescription, held),
	}
	if d.State != "" {
		held.State = t.Holds(d.State)
		v[tracker.FieldState] = ledger.Canonical(tracker.FieldState, held)
	}
	if len(d.Labels) > 0 {
		v[tracker.FieldLabels] = ledger.Canonical(tracker.FieldLabels, held)
	}
	return v
}

var errLedger = errors.New("ledger")
