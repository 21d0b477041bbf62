// Package scheduletest is the property test of relayr's headline guarantee:
// every change a person makes in a tracker is published once, and nothing
// relayr writes comes back (ADR-0036, and its departures: a baseline for
// every field).
//
// A guarantee shown by examples is not shown. Run plays seeded random
// schedules against one tracker: relayr's writes (filings, edits, a close
// through an edit, comments) from two replicas, a person's changes to every
// field, comments and deletions, polls of either replica, webhook nudges and
// lost answers, interleaved at every point the code can be preempted:
// before a create or an edit reaches the tracker, between the tracker
// taking it and relayr hearing the answer, between the answer and its
// record, between the record and the first read, and between polls. Each
// schedule ends by draining (every in-doubt filing resolved, every item
// read, a sweep) and checks the whole feed against what happened in the
// tracker:
//
//   - every change a person made that a read could see is published, once,
//     in the order made; nothing relayr wrote is published as a change;
//   - a person's item is published as created once, relayr's never;
//   - a person's comment is published once, relayr's never;
//   - an item the person deleted is published as removed once;
//   - a read the followers left unread is one they may leave (it may show
//     relayr's filing half made, or nothing changed since the last read),
//     and every item's last state is read by the end.
//
// The exceptions are level-triggered, and named where the check allows
// them (exception): a change undone before any read (two changes between
// reads are one, one undone is none), a person's value equal to one of
// relayr's not yet read back (an echo, dropped by value), and a person's
// change to a field the draft left unset made while the filing's answer
// was lost, before relayr found the item again (nothing tells it from what
// the tracker made of the draft).
//
// Every schedule runs in a testing/synctest bubble: time is virtual, so
// thousands of schedules take seconds. A failure names its seed; set
// RELAYR_SCHEDULE_SEED to play that one schedule again (the goroutines of
// one instant may interleave otherwise, which is why the check reads what
// happened rather than predicting it).
package scheduletest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/core/binding"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/follow"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/ledger/memledger"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
)

// Person acts in the tracker as a person would, outside relayr.
type Person interface {
	// Edit changes the fields p names. A field the harness cannot change
	// answers an error wrapping errors.ErrUnsupported.
	Edit(ctx context.Context, id string, p tracker.Patch) error
	// Comment posts a comment on the item.
	Comment(ctx context.Context, id, body string) error
	// Delete deletes the item (errors.ErrUnsupported when the harness
	// cannot).
	Delete(ctx context.Context, id string) error
	// Create files an item of the person's own and answers its id.
	Create(ctx context.Context, title string) (string, error)
}

// Tracker is one tracker under test, made inside the schedule's bubble.
type Tracker struct {
	// Connect answers a driver onto the tracker: one for each replica,
	// and one the check reads the truth with. A fake answers itself each
	// time.
	Connect func() tracker.Driver
	// Person acts in it.
	Person Person
	// Fields are those the person changes (follow.Fields when nil); Labels
	// the label names relayr and the person draw from (none: no labels
	// are set); Deletes says the person can delete an item.
	Fields  []string
	Labels  []string
	Deletes bool
	// Nudge answers a delivery the tracker sends about the item (deleted:
	// about its deletion), signed with secret; ok false when it sends
	// none. Nil: the tracker sends no webhooks, and no schedule nudges.
	Nudge func(itemID string, deleted bool, secret string) (h http.Header, body []byte, ok bool)
}

// Options tune Run.
type Options struct {
	// Schedules is how many schedules run (200 when zero).
	Schedules int
	// Seed is the first schedule's seed; the rest follow it. Zero takes
	// 1. RELAYR_SCHEDULE_SEED, when set, plays that one seed alone.
	Seed uint64
	// Steps is each schedule's length (24 when zero).
	Steps int
}

// SeedVar names the variable that plays one schedule again; LogVar, set,
// adds the followers' debug log to a failure's steps.
const (
	SeedVar = "RELAYR_SCHEDULE_SEED"
	LogVar  = "RELAYR_SCHEDULE_LOG"
)

// stepWriter adds a follower's log lines to the schedule's steps.
type stepWriter struct {
	w    *world
	name string
}

func (s stepWriter) Write(p []byte) (int, error) {
	s.w.note("%s log: %s", s.name, strings.TrimSpace(string(p)))
	return len(p), nil
}

const (
	tenant    = "acme"
	workspace = "ops"
	secret    = "whsec"
)

// Run plays the schedules, each in a synctest bubble of its own with a
// tracker newTracker makes inside it.
func Run(t *testing.T, newTracker func(t *testing.T) Tracker, o Options) {
	t.Helper()
	if o.Schedules <= 0 {
		o.Schedules = 200
	}
	if o.Steps <= 0 {
		o.Steps = 24
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	seeds := make([]uint64, o.Schedules)
	for i := range seeds {
		seeds[i] = o.Seed + uint64(i)
	}
	if v := os.Getenv(SeedVar); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q is not a seed", SeedVar, v)
		}
		seeds = []uint64{n}
	}
	var tally tallies
	for _, seed := range seeds {
		t.Run("seed="+strconv.FormatUint(seed, 10), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld(t, newTracker(t), seed)
				w.play(o.Steps)
				w.drain()
				w.check()
				tally.add(w.tally)
			})
		})
	}
	t.Logf("%d schedules: %s", len(seeds), tally.String())
}

// tallies counts what the checks covered, so a run says how much of what
// it checked was required rather than allowed.
type tallies struct {
	mu                                          sync.Mutex
	required, ambiguous, published, unreadReads int
	comments, removals, creations, lostAnswers  int
}

func (t *tallies) add(o *tallies) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.required += o.required
	t.ambiguous += o.ambiguous
	t.published += o.published
	t.unreadReads += o.unreadReads
	t.comments += o.comments
	t.removals += o.removals
	t.creations += o.creations
	t.lostAnswers += o.lostAnswers
}

func (t *tallies) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return fmt.Sprintf("%d changes required and published, %d allowed either way (level-triggered), %d changes published; "+
		"%d comments, %d removals, %d creations checked; %d reads left for a later poll; %d answers lost",
		t.required, t.ambiguous, t.published, t.comments, t.removals, t.creations, t.unreadReads, t.lostAnswers)
}

// world is one schedule: a tracker, one ledger and log, two replicas, and
// the record of what happened.
type world struct {
	t     *testing.T
	tr    Tracker
	seed  uint64
	ctx   context.Context
	mem   *memledger.Ledger
	truth tracker.Driver
	reps  [2]*replica
	// nudging: replica 1 runs its followers in the background and is
	// nudged by webhooks; otherwise both are polled by the schedule.
	nudging bool
	tally   *tallies

	rmu sync.Mutex // the schedule's random choices
	rng *rand.Rand

	// mu orders everything that happens in the tracker and what relayr
	// records, by seq.
	mu       sync.Mutex
	seq      int
	items    map[string]*itemLog // by the tracker's id
	order    []string
	keys     map[string]*keyLog
	steps    []string
	inflight sync.WaitGroup
	counter  int
}

// replica is one relayr process over the shared ledger and log.
type replica struct {
	name  string
	conns *binding.Connections
	w     *writes.Writer
	fs    *follow.Followers
	b     binding.Binding
}

// keyLog is what relayr did under one key.
type keyLog struct {
	key   string
	draft tracker.Draft
	item  string // the item filed, once known
	// answered: a create of the key's whose answer reached relayr; lost:
	// one whose answer was lost.
	answered, lost bool
	// created is the truth right after the create; found the truth at
	// the last find of the key (the item an in-doubt filing adopts).
	created, found *tracker.Item
	createdSeq     int
	done           bool // an ensure was answered the item (or deleted)
	comments       int
	// early are values recorded before the key's item existed (the
	// filing's), by field.
	early map[string][]recorded
}

// itemLog is what happened to one item.
type itemLog struct {
	id      string
	key     string // relayr's, "" for a person's
	born    int
	deleted int
	// sets are the changes of each field, as the truth read them.
	sets map[string][]change
	// reads are the followers' reads listing the item.
	reads []*read
	// recorded are the values relayr recorded for each field, with when.
	recorded map[string][]recorded
	landings []landing
	// filed is the snapshot the filing left (nil: none saved).
	filed        *read
	personBodies []string
	relayrBodies []string
	last         tracker.Item
}

type change struct {
	seq    int
	value  string
	person bool
}

type read struct {
	seq       int
	version   time.Time
	values    map[string]string
	processed bool
	baseline  bool
}

type recorded struct {
	seq   int
	value string
}

type landing struct {
	seq     int
	version time.Time
	values  map[string]string
}

func newWorld(t *testing.T, tr Tracker, seed uint64) *world {
	if tr.Fields == nil {
		tr.Fields = follow.Fields
	}
	mem := memledger.New()
	t.Cleanup(func() { _ = mem.Close() })
	w := &world{
		t: t, tr: tr, seed: seed, ctx: t.Context(), mem: mem, truth: tr.Connect(),
		rng:   rand.New(rand.NewPCG(seed, 0x5eed)), //nolint:gosec // a schedule's seeded choices, not a secret
		items: map[string]*itemLog{}, keys: map[string]*keyLog{}, tally: &tallies{},
	}
	w.nudging = tr.Nudge != nil && w.chance(0.5)
	led := &hookedLedger{Ledger: mem, w: w}
	for i := range w.reps {
		name := []string{"replica-a", "replica-b"}[i]
		b := binding.Binding{Tenant: tenant, Workspace: workspace, Connector: connector{w: w, d: tr.Connect()}}
		creds := tracker.StaticCredentials{tenant + "/" + b.Kind(): {Token: "tk", WebhookSecret: secret}}
		conns := binding.NewConnections(clock.System{}, creds, b)
		r := &replica{name: name, b: b, conns: conns}
		r.w = writes.New(writes.Config{Ledger: led, Log: mem, Connections: conns})
		logger := slog.New(slog.DiscardHandler)
		if os.Getenv(LogVar) != "" {
			logger = slog.New(slog.NewTextHandler(stepWriter{w: w, name: name}, &slog.HandlerOptions{Level: slog.LevelDebug}))
		}
		r.fs = follow.New(follow.Config{
			Ledger: led, Log: mem, Connections: conns, Holder: name, Logger: logger,
			Options: follow.Options{SweepMin: -1},
		})
		t.Cleanup(r.fs.Stop)
		w.reps[i] = r
	}
	// The binding was read before: its first read (the seeding) is done.
	if err := w.reps[0].fs.PollOnce(w.ctx, tenant, workspace); err != nil {
		t.Fatalf("seed %d: the seeding read: %v", seed, err)
	}
	if w.nudging {
		w.reps[1].fs.Start(w.ctx)
	}
	return w
}

// --- the schedule's random choices ---

func (w *world) chance(p float64) bool {
	w.rmu.Lock()
	defer w.rmu.Unlock()
	return w.rng.Float64() < p
}

func (w *world) intn(n int) int {
	w.rmu.Lock()
	defer w.rmu.Unlock()
	return w.rng.IntN(n)
}

func (w *world) note(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.steps = append(w.steps, fmt.Sprintf("%s %s", time.Now().UTC().Format("15:04:05.000000"), fmt.Sprintf(format, args...)))
}

func (w *world) next() int {
	w.counter++
	return w.counter
}

// --- the schedule ---

// play runs steps random steps: relayr's writes, a person's acts, polls,
// nudges and time passing.
func (w *world) play(steps int) {
	for range steps {
		switch n := w.intn(100); {
		case n < 16:
			w.file()
		case n < 30:
			w.edit()
		case n < 36:
			w.comment()
		case n < 58:
			w.personAct(w.ctx)
		case n < 62:
			w.personCreate()
		case n < 80:
			w.poll(w.ctx)
		case n < 86 && w.nudging:
			w.nudge(false)
		default:
			w.wait()
		}
	}
	w.inflight.Wait()
}

// wait lets virtual time pass: a moment, or past a poll interval.
func (w *world) wait() {
	d := []time.Duration{time.Millisecond, time.Second, 3 * time.Second, follow.DefaultPollEvery + time.Second}[w.intn(4)]
	w.note("wait %v", d)
	time.Sleep(d)
	synctest.Wait()
}

// keyNames are the keys a schedule files under: few, so that retries and
// edits meet.
var keyNames = []string{"build-1", "build-2", "build-3"}

func (w *world) pickKey() *keyLog {
	name := keyNames[w.intn(len(keyNames))]
	w.mu.Lock()
	defer w.mu.Unlock()
	k, ok := w.keys[name]
	if !ok {
		k = &keyLog{key: name, draft: w.draftFor(name)}
		w.keys[name] = k
	}
	return k
}

// draftFor is a key's draft: a title always, the rest at random, so that
// many fields are left to the tracker's defaults.
func (w *world) draftFor(key string) tracker.Draft {
	d := tracker.Draft{Title: "R " + key + " failed"}
	if w.chance(0.3) {
		d.Description = "relayr's log of " + key
	}
	if w.chance(0.3) {
		d.State = tracker.Todo
	}
	if len(w.tr.Labels) > 0 && w.chance(0.3) {
		d.Labels = []string{w.tr.Labels[0]}
	}
	return d
}

func (w *world) replica() *replica { return w.reps[w.intn(len(w.reps))] }

// file ensures a key's item from one replica, or from both at once (a CI
// job and its re-run).
func (w *world) file() {
	k := w.pickKey()
	callers := 1
	if w.chance(0.3) {
		callers = 2
	}
	for i := range callers {
		r := w.reps[(i+w.intn(2))%2]
		w.note("%s ensures %s", r.name, k.key)
		w.inflight.Go(func() {
			res, err := r.w.EnsureItem(w.ctx, writes.EnsureParams{Tenant: tenant, Workspace: workspace, Key: k.key, Draft: k.draft, Correlation: "run-" + k.key})
			w.mu.Lock()
			defer w.mu.Unlock()
			switch {
			case err == nil:
				k.done = true
				if w.refiledLocked(k) {
					k.item = res.Item.Ref.ID
				}
			case writes.CodeOf(err) == writes.CodeDeleted:
				k.done = true
			}
			w.steps = append(w.steps, fmt.Sprintf("%s ensure %s: %s %v", r.name, k.key, res.Item.Ref.ID, err))
		})
	}
	if w.chance(0.5) {
		w.inflight.Wait()
	}
}

// relayrStates are the states relayr's edits set.
var relayrStates = []tracker.State{tracker.Started, tracker.Done, tracker.Cancelled, tracker.Todo}

// edit changes a filed key's item from one replica: a title, a
// description, a state (a close among them), labels.
func (w *world) edit() {
	k := w.pickKey()
	var p tracker.Patch
	switch w.intn(4) {
	case 0:
		p.Title = ptr(fmt.Sprintf("R %s retitled %d", k.key, w.intn(1000)))
	case 1:
		p.Description = ptr(fmt.Sprintf("relayr's note %d", w.intn(1000)))
	case 2:
		p.State = ptr(relayrStates[w.intn(len(relayrStates))])
	default:
		if len(w.tr.Labels) == 0 {
			p.State = ptr(tracker.Done)
			break
		}
		p.Labels = &[]string{w.tr.Labels[w.intn(len(w.tr.Labels))]}
	}
	r := w.replica()
	w.note("%s edits %s: %s", r.name, k.key, patchText(p))
	_, err := r.w.Update(w.ctx, writes.UpdateParams{Tenant: tenant, Workspace: workspace, Key: k.key, Patch: p, Correlation: "run-" + k.key})
	w.note("%s edit %s: %v", r.name, k.key, err)
}

// comment posts relayr's comment on a filed key's item.
func (w *world) comment() {
	k := w.pickKey()
	w.mu.Lock()
	k.comments++
	ck := fmt.Sprintf("%s/comment-%d", k.key, k.comments)
	w.mu.Unlock()
	r := w.replica()
	w.note("%s comments on %s", r.name, k.key)
	_, err := r.w.Comment(w.ctx, writes.CommentParams{Tenant: tenant, Workspace: workspace, ItemKey: k.key, Key: ck,
		Body: "R comment " + ck, Correlation: "run-" + k.key})
	w.note("%s comment %s: %v", r.name, ck, err)
}

// poll reads the project from a replica whose followers the schedule
// polls, or nudges the one that runs in the background.
func (w *world) poll(ctx context.Context) {
	if w.nudging {
		w.nudge(false)
		return
	}
	r := w.replica()
	err := r.fs.PollOnce(ctx, tenant, workspace)
	w.note("%s polls: %v", r.name, err)
	if err != nil && !errors.Is(err, ledger.ErrLeaseHeld) {
		w.t.Errorf("seed %d: %s's poll: %v", w.seed, r.name, err)
	}
}

// nudge sends the background replica a webhook delivery about an item, as
// the webhook route takes it (verified, then the followers woken), and
// lets a moment pass.
func (w *world) nudge(deleted bool) {
	id := w.pickItem(false)
	if id == "" {
		return
	}
	h, body, ok := w.tr.Nudge(id, deleted, secret)
	if !ok {
		return
	}
	r := w.reps[1]
	tr, err := r.conns.Tracker(w.ctx, r.b)
	if err != nil {
		w.t.Fatalf("seed %d: %v", w.seed, err)
	}
	n, err := tr.Nudge(secret, h, body)
	if err != nil {
		w.t.Fatalf("seed %d: a delivery about %s did not verify: %v", w.seed, id, err)
	}
	r.fs.Wake(r.b, n)
	w.note("nudge about %s (deleted %v)", id, deleted)
	if !w.chance(0.3) {
		time.Sleep(time.Duration(w.intn(3000)) * time.Millisecond)
	}
}

// pickItem answers one of the live items at random ("" when none),
// relayr's or a person's (personsOnly: a person's).
func (w *world) pickItem(personsOnly bool) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var live []string
	for _, id := range w.order {
		if it := w.items[id]; it.deleted == 0 && (!personsOnly || it.key == "") {
			live = append(live, id)
		}
	}
	if len(live) == 0 {
		return ""
	}
	w.rmu.Lock()
	defer w.rmu.Unlock()
	return live[w.rng.IntN(len(live))]
}

// personStates are the states a person sets.
var personStates = []tracker.State{tracker.Backlog, tracker.Todo, tracker.Started, tracker.Done, tracker.Cancelled}

// personAct is one act of a person's on an item: a field changed, a
// comment, now and then a deletion.
func (w *world) personAct(ctx context.Context) {
	id := w.pickItem(false)
	if id == "" {
		return
	}
	switch n := w.intn(10); {
	case n < 7:
		field := w.tr.Fields[w.intn(len(w.tr.Fields))]
		var p tracker.Patch
		switch field {
		case tracker.FieldTitle:
			p.Title = ptr(fmt.Sprintf("P title %d", w.intn(5)))
		case tracker.FieldDescription:
			p.Description = ptr(fmt.Sprintf("P words %d", w.intn(5)))
		case tracker.FieldState:
			p.State = ptr(personStates[w.intn(len(personStates))])
		case tracker.FieldLabels:
			if len(w.tr.Labels) == 0 {
				return
			}
			var ls []string
			for _, l := range w.tr.Labels {
				if w.chance(0.5) {
					ls = append(ls, l)
				}
			}
			p.Labels = &ls
		}
		w.personEdit(ctx, id, p)
	case n < 9:
		w.mu.Lock()
		body := fmt.Sprintf("P comment %d", w.next())
		w.mu.Unlock()
		w.act(ctx, id, "comments "+body, func() error { return w.tr.Person.Comment(ctx, id, body) }, func(it *itemLog) {
			it.personBodies = append(it.personBodies, body)
		})
	default:
		if !w.tr.Deletes || !w.chance(0.5) {
			return
		}
		w.act(ctx, id, "deletes it", func() error { return w.tr.Person.Delete(ctx, id) }, nil)
		if w.nudging && w.chance(0.7) {
			w.nudgeDeleted(id)
		}
	}
}

// nudgeDeleted sends the deletion's delivery to the background replica.
func (w *world) nudgeDeleted(id string) {
	h, body, ok := w.tr.Nudge(id, true, secret)
	if !ok {
		return
	}
	r := w.reps[1]
	tr, err := r.conns.Tracker(w.ctx, r.b)
	if err != nil {
		return
	}
	if n, err := tr.Nudge(secret, h, body); err == nil {
		r.fs.Wake(r.b, n)
		w.note("nudge: %s deleted", id)
	}
}

func (w *world) personEdit(ctx context.Context, id string, p tracker.Patch) {
	w.act(ctx, id, "edits "+patchText(p), func() error { return w.tr.Person.Edit(ctx, id, p) }, nil)
}

// act runs a person's act on an item and reads the truth after it, in one
// step of the tracker's order.
func (w *world) act(ctx context.Context, id, what string, do func() error, after func(it *itemLog)) {
	w.takesTime()
	w.mu.Lock()
	defer w.mu.Unlock()
	err := do()
	w.steps = append(w.steps, fmt.Sprintf("%s person %s on %s: %v", time.Now().UTC().Format("15:04:05.000000"), what, id, err))
	if errors.Is(err, errors.ErrUnsupported) {
		return
	}
	it := w.items[id]
	if it == nil {
		return
	}
	if err == nil && after != nil {
		after(it)
	}
	w.observe(ctx, it, true)
}

func (w *world) personCreate() {
	w.mu.Lock()
	defer w.mu.Unlock()
	title := fmt.Sprintf("P item %d", w.next())
	id, err := w.tr.Person.Create(w.ctx, title)
	w.steps = append(w.steps, fmt.Sprintf("person creates %s: %s %v", title, id, err))
	if err != nil {
		return
	}
	it := w.itemLocked(id, "")
	w.observe(w.ctx, it, true)
}

// itemLocked answers the item's log, made when new; w.mu is held.
func (w *world) itemLocked(id, key string) *itemLog {
	it, ok := w.items[id]
	if !ok {
		w.seq++
		it = &itemLog{id: id, key: key, born: w.seq, sets: map[string][]change{}, recorded: map[string][]recorded{}}
		w.items[id] = it
		w.order = append(w.order, id)
	}
	if it.key == "" {
		it.key = key
	}
	return it
}

// observe reads the item's truth after an act and notes each field that
// changed, as the person's or relayr's; w.mu is held.
func (w *world) observe(ctx context.Context, it *itemLog, person bool) {
	got, err := w.truth.Item(context.WithoutCancel(ctx), it.id)
	w.seq++
	if errors.Is(err, tracker.ErrNotFound) {
		if it.deleted == 0 {
			it.deleted = w.seq
		}
		return
	}
	if err != nil {
		w.t.Errorf("seed %d: reading the truth of %s: %v", w.seed, it.id, err)
		return
	}
	for _, f := range follow.Fields {
		v := ledger.Canonical(f, got)
		sets := it.sets[f]
		if len(sets) == 0 || sets[len(sets)-1].value != v {
			it.sets[f] = append(sets, change{seq: w.seq, value: v, person: person})
		}
	}
	it.last = got
}

// takesTime lets a request's time pass, a millisecond or so: two acts are
// never at one instant, as on a real tracker (one that keeps time to the
// second still stamps them alike).
func (w *world) takesTime() { time.Sleep(time.Duration(500+w.intn(1000)) * time.Microsecond) }

// interject is what may happen at a point inside relayr's writes: a
// person's act, another replica's poll, a nudge, time passing.
func (w *world) interject(ctx context.Context, point string) {
	if ctx.Value(quiet{}) != nil || !w.chance(0.35) {
		return
	}
	ctx = context.WithValue(ctx, quiet{}, true)
	switch n := w.intn(10); {
	case n < 5:
		w.note("at %s:", point)
		w.personAct(ctx)
	case n < 8:
		w.note("at %s:", point)
		w.poll(ctx)
	default:
		d := time.Duration(1+w.intn(2500)) * time.Millisecond
		w.note("at %s: %v pass", point, d)
		time.Sleep(d)
	}
}

// quiet marks a context whose calls interject nothing: what an
// interjection does itself.
type quiet struct{}

// --- relayr's side, seen through its driver and its ledger ---

type connector struct {
	w *world
	d tracker.Driver
}

func (c connector) Kind() string { return "fake" }

func (c connector) Connect(context.Context, tracker.Credentials, tracker.Source) (*tracker.Tracker, error) {
	return tracker.New(wrap(c.w, c.d)), nil
}

// hooked is a replica's driver: it interjects at relayr's writes, loses
// answers now and then, and notes what relayr did and read.
type hooked struct {
	w     *world
	inner tracker.Driver
}

// wrap answers d hooked, with the optional interfaces d implements.
func wrap(w *world, d tracker.Driver) tracker.Driver {
	h := &hooked{w: w, inner: d}
	pc, isPC := d.(tracker.ProjectCommenter)
	dc, isDC := d.(tracker.DescriptionComparer)
	switch {
	case isPC && isDC:
		return struct {
			*hooked
			tracker.ProjectCommenter
			tracker.DescriptionComparer
		}{h, pc, dc}
	case isPC:
		return struct {
			*hooked
			tracker.ProjectCommenter
		}{h, pc}
	case isDC:
		return struct {
			*hooked
			tracker.DescriptionComparer
		}{h, dc}
	}
	return h
}

func (h *hooked) Capabilities() tracker.Capabilities { return h.inner.Capabilities() }
func (h *hooked) Project() string                    { return h.inner.Project() }
func (h *hooked) Link(ref tracker.ItemRef) string    { return h.inner.Link(ref) }

func (h *hooked) Nudge(s string, hd http.Header, body []byte) (tracker.Nudged, error) {
	return h.inner.Nudge(s, hd, body)
}

func (h *hooked) Item(ctx context.Context, id string) (tracker.Item, error) {
	return h.inner.Item(ctx, id)
}

func (h *hooked) Comments(ctx context.Context, id string, since time.Time) ([]tracker.Comment, error) {
	return h.inner.Comments(ctx, id, since)
}

// errLost is an answer the network lost after the tracker took the write.
var errLost = fmt.Errorf("%w: the answer was lost on its way back", tracker.ErrUnavailable)

func (h *hooked) Find(ctx context.Context, key string) (tracker.Item, error) {
	w := h.w
	// Not under the world's lock: a look-up may wait out a tracker's lag
	// (GitLab's lists, Jira's search), and a goroutine waiting for the
	// lock meanwhile would stop the bubble's clock.
	it, err := h.inner.Find(ctx, key)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil {
		if k := w.keys[key]; k != nil {
			found, terr := w.truth.Item(context.WithoutCancel(ctx), it.Ref.ID)
			if terr == nil {
				k.found = &found
			}
		}
	}
	return it, err
}

func (h *hooked) Create(ctx context.Context, key string, d tracker.Draft) (tracker.Item, error) {
	w := h.w
	w.interject(ctx, "before a create")
	w.takesTime()
	lose := ctx.Value(quiet{}) == nil && w.chance(0.12)
	w.mu.Lock()
	it, err := h.inner.Create(ctx, key, d)
	if err == nil {
		li := w.itemLocked(it.Ref.ID, key)
		w.observe(ctx, li, false)
		if k := w.keys[key]; k != nil {
			created := li.last
			k.created, k.createdSeq = &created, w.seq
			if w.refiledLocked(k) {
				k.item = it.Ref.ID
			}
			if lose {
				k.lost = true
				w.tally.lostAnswers++
			} else {
				k.answered = true
			}
		}
	}
	w.steps = append(w.steps, fmt.Sprintf("%s create %s: %s %v (answer lost: %v)", time.Now().UTC().Format("15:04:05.000000"), key, it.Ref.ID, err, lose && err == nil))
	w.mu.Unlock()
	w.interject(ctx, "after a create, before its answer")
	if lose && err == nil {
		return tracker.Item{}, errLost
	}
	return it, err
}

func (h *hooked) Update(ctx context.Context, id string, p tracker.Patch) (tracker.Item, error) {
	w := h.w
	w.interject(ctx, "before an edit")
	w.takesTime()
	lose := ctx.Value(quiet{}) == nil && w.chance(0.08)
	w.mu.Lock()
	it, err := h.inner.Update(ctx, id, p)
	if li := w.items[id]; li != nil {
		w.observe(ctx, li, false)
	}
	w.steps = append(w.steps, fmt.Sprintf("%s update %s %s: %v (answer lost: %v)", time.Now().UTC().Format("15:04:05.000000"), id, patchText(p), err, lose && err == nil))
	if lose && err == nil {
		w.tally.lostAnswers++
	}
	w.mu.Unlock()
	w.interject(ctx, "after an edit, before its answer")
	if lose && err == nil {
		return tracker.Item{}, errLost
	}
	return it, err
}

func (h *hooked) Comment(ctx context.Context, id, key, body string) (tracker.Comment, error) {
	w := h.w
	w.interject(ctx, "before a comment")
	w.mu.Lock()
	defer w.mu.Unlock()
	c, err := h.inner.Comment(ctx, id, key, body)
	if li := w.items[id]; li != nil && err == nil {
		li.relayrBodies = append(li.relayrBodies, body)
		w.observe(ctx, li, false)
	}
	return c, err
}

func (h *hooked) Items(ctx context.Context, q tracker.Query) (tracker.Page, error) {
	w := h.w
	w.takesTime()
	w.mu.Lock()
	defer w.mu.Unlock()
	pg, err := h.inner.Items(ctx, q)
	if err != nil {
		return pg, err
	}
	w.seq++
	for _, it := range pg.Items {
		li := w.items[it.Ref.ID]
		if li == nil || it.Archived {
			continue
		}
		vals := map[string]string{}
		for _, f := range follow.Fields {
			vals[f] = ledger.Canonical(f, it)
		}
		li.reads = append(li.reads, &read{seq: w.seq, version: it.UpdatedAt, values: vals})
	}
	return pg, nil
}

// hookedLedger is the shared ledger, interjecting at a filing's and an
// edit's records and noting what relayr recorded and the followers saved.
type hookedLedger struct {
	ledger.Ledger
	w *world
}

func (l *hookedLedger) SetValues(ctx context.Context, k ledger.Key, values map[string]string) (map[string]string, error) {
	l.w.noteRecorded(k.Key, values)
	return l.Ledger.SetValues(ctx, k, values)
}

func (l *hookedLedger) LandValues(ctx context.Context, p ledger.LandParams) error {
	l.w.interject(ctx, "after an answer, before its record")
	l.w.noteRecorded(p.Key.Key, p.Held)
	err := l.Ledger.LandValues(ctx, p)
	if err == nil {
		w := l.w
		w.mu.Lock()
		if k := w.keys[p.Key.Key]; k != nil && k.item != "" {
			if it := w.items[k.item]; it != nil {
				w.seq++
				vals := map[string]string{}
				for f, v := range p.Sent {
					vals[f] = v
				}
				for f, v := range p.Held {
					vals[f] = v
				}
				it.landings = append(it.landings, landing{seq: w.seq, version: p.Version, values: vals})
			}
		}
		w.mu.Unlock()
	}
	return err
}

// Record records a filing, and with it the item's first snapshot where it
// has none: noted as the filing's baseline when it is the one saved.
func (l *hookedLedger) Record(ctx context.Context, p ledger.RecordParams) (ledger.Claim, error) {
	w := l.w
	w.interject(ctx, "after an answer, before its record")
	c, err := l.Ledger.Record(ctx, p)
	if err == nil && p.Snapshot != nil {
		stood, serr := l.Snapshot(context.WithoutCancel(ctx), p.Tenant, p.Workspace, p.Snapshot.ItemID)
		snap, derr := ledger.DecodeSnapshot(*p.Snapshot)
		w.mu.Lock()
		if it := w.items[p.Snapshot.ItemID]; it != nil && it.filed == nil && serr == nil && derr == nil && string(stood.Item) == string(p.Snapshot.Item) {
			w.seq++
			it.filed = &read{seq: w.seq, version: snap.Item.UpdatedAt, values: valuesOf(snap.Item), baseline: true}
		}
		w.mu.Unlock()
	}
	w.interject(ctx, "after the record, before any read")
	return c, err
}

// SaveSnapshots notes the reads the followers took in: each row saved is
// the item as a read listed it.
func (l *hookedLedger) SaveSnapshots(ctx context.Context, rows []ledger.SnapshotRow) error {
	err := l.Ledger.SaveSnapshots(ctx, rows)
	if err != nil {
		return err
	}
	w := l.w
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, row := range rows {
		if row.Removed {
			continue
		}
		it := w.items[row.ItemID]
		snap, derr := ledger.DecodeSnapshot(row)
		if it == nil || derr != nil {
			continue
		}
		vals := valuesOf(snap.Item)
		for i := len(it.reads) - 1; i >= 0; i-- {
			r := it.reads[i]
			if r.version.Equal(snap.Item.UpdatedAt) && sameValues(r.values, vals) {
				r.processed = true
				break
			}
		}
	}
	return nil
}

func (w *world) noteRecorded(key string, values map[string]string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := w.keys[key]
	if k == nil {
		return
	}
	w.seq++
	for f, v := range values {
		// Recorded under the key: the item may not exist yet.
		if k.item == "" {
			pendingByKey(k, f, v, w.seq)
			continue
		}
		if it := w.items[k.item]; it != nil {
			it.recorded[f] = append(it.recorded[f], recorded{seq: w.seq, value: v})
		}
	}
}

// refiledLocked reports whether an item made or answered under k is the
// key's item from now on: the key has none yet, or the one it had was
// deleted before relayr recorded it (a filing whose answer was lost,
// deleted by the person, and filed again once no look-up found it), so
// that what relayr records under the key from then on is the new item's.
// w.mu is held.
func (w *world) refiledLocked(k *keyLog) bool {
	if k.item == "" {
		return true
	}
	it := w.items[k.item]
	return it == nil || it.deleted > 0
}

// pendingByKey keeps values recorded before the key's item existed; they
// move to the item once it does (moveRecorded).
func pendingByKey(k *keyLog, f, v string, seq int) {
	if k.early == nil {
		k.early = map[string][]recorded{}
	}
	k.early[f] = append(k.early[f], recorded{seq: seq, value: v})
}

func valuesOf(it tracker.Item) map[string]string {
	out := map[string]string{}
	for _, f := range follow.Fields {
		out[f] = ledger.Canonical(f, it)
	}
	return out
}

func sameValues(a, b map[string]string) bool {
	for _, f := range follow.Fields {
		if a[f] != b[f] {
			return false
		}
	}
	return true
}

func ptr[T any](v T) *T { return &v }

func patchText(p tracker.Patch) string {
	var parts []string
	if p.Title != nil {
		parts = append(parts, "title="+strconv.Quote(*p.Title))
	}
	if p.Description != nil {
		parts = append(parts, "description="+strconv.Quote(*p.Description))
	}
	if p.State != nil {
		parts = append(parts, "state="+string(*p.State))
	}
	if p.Labels != nil {
		parts = append(parts, "labels="+strings.Join(*p.Labels, ","))
	}
	return strings.Join(parts, " ")
}
