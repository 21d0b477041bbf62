package vikunja

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// DefaultConcurrentWrites is how many write requests the adapters of one
// process send at once to a Vikunja server that does not say it takes
// writes at once: one. Vikunja's default database is SQLite, on which two
// writes that meet fail, the second answering 500 ("database is locked"),
// and a person's edit that meets relayr's write fails the same way
// (vikunja.md §11). Reads are not held back: SQLite serves them beside a
// write.
//
// Unless WithConcurrentWrites says how many, the server is asked: Vikunja
// answers GET /api/v1/info with concurrent_writes, false on SQLite
// (v2.5.0, pkg/routes/api/shared/info.go: "clients should serialize
// batched writes when this is false"). A server that says true (PostgreSQL,
// MySQL) takes its writes unserialized; one that says false, says nothing
// (before v2.5.0) or cannot be asked, one at a time. A server that said
// true and answers 500 to a write sent beside another is taken at its
// word's opposite: it locks, and takes its writes one at a time, each held
// until answered, for strictFor.
const DefaultConcurrentWrites = 1

// How long a write without an answer holds its server's slot
// (WithWriteHold). A write the server is still working on holds its
// database; one whose answer is late elsewhere (a proxy in front of an
// overloaded server, a network that dropped it) holds nothing, and every
// write behind it waited the whole request for nothing: 29 of 50 keys went
// unfiled live, behind creates a proxy answered 12 s late. A write
// unanswered past its hold lets the next one go; its own request goes on,
// and what it did is resolved as any write in doubt is. The hold is eight
// times the 90th percentile of the server's recent writes, within these
// bounds (DefaultWriteHold before any was answered).
const (
	DefaultWriteHold = time.Second
	minWriteHold     = 100 * time.Millisecond
	maxWriteHold     = 2 * time.Second
	// strictFor is how long a server that answered 500 to a write sent
	// beside one let go early is taken to need its writes one at a time
	// whatever they take: it failed a write that met another (its SQLite
	// locked), so the early one was still at work.
	strictFor = 10 * time.Minute
	// recentWrites is how many answered writes' times the hold is learned
	// from.
	recentWrites = 32
	// askEvery is how long the server's answer of whether it takes writes
	// at once stands; askAgain how long a failed ask (the server
	// unreachable, the write's caller gone) does, the server taken to
	// want its writes one at a time meanwhile.
	askEvery = time.Hour
	askAgain = time.Minute
)

// unlimited is the slots of a server that takes its writes at once.
const unlimited = math.MaxInt

// WriteGates holds one gate per Vikunja server (per base URL), shared by
// every Tracker made with it, whatever its tenant, workspace or project, so
// the process never sends one server more writes at once than the server's
// setting. The zero value is not usable; see NewWriteGates. Trackers share
// the process's gates unless WithWriteGates gives them others.
type WriteGates struct {
	mu    sync.Mutex
	gates map[string]*writeGate
}

// NewWriteGates makes an empty set of gates: a test that wants its servers'
// gates apart from the process's makes its own.
func NewWriteGates() *WriteGates { return &WriteGates{gates: map[string]*writeGate{}} }

// processGates are the gates of every Tracker not given others.
var processGates = NewWriteGates()

type writeGate struct {
	// n is the configured slots; 0: the server says (DefaultConcurrentWrites).
	n int
	// hold is the configured hold (0: learned; negative: writes hold their
	// slot until answered, always).
	hold time.Duration

	mu sync.Mutex
	// busy is how many slots writes hold; waiting, the writes waiting for
	// one by party (a tenant: tracker.PartyOf), and turns the parties with
	// waiting writes, in the order they came. A free slot goes to the
	// party served longest ago (served: the turn each was last given a
	// slot at), so one tenant's burst or stalled writes do not stall
	// another's: its write goes next.
	busy    int
	waiting map[string][]*waiter
	turns   []string
	served  map[string]uint64
	turn    uint64
	// early counts the writes let go early and not answered yet.
	early int
	// strictUntil: until then, writes hold their slot until answered.
	strictUntil time.Time
	// took is how long the recent answered writes took.
	took []time.Duration
	// lockedMet counts the 500s answered to writes sent beside an early
	// one (what a test reads).
	lockedMet int
	// concurrent is what the server last said of its writes (n == 0),
	// at askedAt, standing for askFor; asking says an ask is under way.
	concurrent bool
	askedAt    time.Time
	askFor     time.Duration
	asking     bool
	now        func() time.Time
}

// ServerKey names the server a base URL reaches, as the gates key it:
// scheme and host lowercased, the path without its trailing slashes.
func ServerKey(baseURL string) string {
	u, err := url.Parse(baseURL)
	if err != nil {
		return strings.TrimRight(baseURL, "/")
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) + strings.TrimRight(u.Path, "/")
}

// gate answers the server's gate, made with n slots and hold by its first
// Tracker. A Tracker asking another n or hold for the same server is
// refused: one server has one setting, or the smaller one would not hold.
func (g *WriteGates) gate(baseURL string, n int, hold time.Duration) (*writeGate, error) {
	key := ServerKey(baseURL)
	g.mu.Lock()
	defer g.mu.Unlock()
	if w, ok := g.gates[key]; ok {
		if w.n != n {
			return nil, &tracker.InvalidError{Field: "concurrent writes",
				Reason: fmt.Sprintf("%s already takes %d writes at once in this process, not %d", key, w.n, n)}
		}
		if w.hold != hold {
			return nil, &tracker.InvalidError{Field: "write hold",
				Reason: fmt.Sprintf("%s already holds a write's slot %v in this process, not %v", key, w.hold, hold)}
		}
		return w, nil
	}
	w := &writeGate{n: n, hold: hold, waiting: map[string][]*waiter{}, served: map[string]uint64{}, now: time.Now}
	g.gates[key] = w
	return w, nil
}

// writeSlots is one Tracker's way through its server's write gate, the
// trackerhttp.Gate of its requests: a write waits for a slot and holds it
// until the server is done with it, or until its hold passes. Reads go at
// once: SQLite serves them beside a write.
type writeSlots struct {
	gate *writeGate
	// ask asks the server whether it takes writes at once.
	ask func(ctx context.Context) (bool, error)
	// settle is how long a write given up mid-request keeps its slot after
	// its connection closed (WithWriteSettle).
	settle time.Duration
	now    func() time.Time
}

// Enter implements trackerhttp.Gate. A write that waits for a slot and
// gives up first takes none, and says it was never sent
// (tracker.NotSent): its claim is released at once. The slot is the
// server's until the server is done with the write: at once when its
// answer was read whole, or when it never reached the server; else (given
// up mid-request, or its answer cut) settle after its connection was
// closed, since Vikunja goes on with a request whose client left, and a
// write sent meanwhile would meet it (vikunja.md §11). But no write holds
// the slot past its hold without an answer: the next write goes then,
// unless the server showed it needs its writes one at a time (strictFor).
func (s *writeSlots) Enter(ctx context.Context, method string) (func(reached bool, status int), error) {
	if method == http.MethodGet {
		return func(bool, int) {}, nil
	}
	g := s.gate
	g.learn(s.ask)
	if !g.take(ctx, tracker.PartyOf(ctx)) {
		return nil, tracker.NotSent(fmt.Errorf("vikunja: waiting for the server's other writes: %w", context.Cause(ctx)))
	}
	start := s.now()
	var once sync.Once
	free := func() { once.Do(g.leave) }
	// beside: this write was sent while one let go early had no answer,
	// or, to a server that said it takes writes at once, beside another.
	g.mu.Lock()
	beside := g.early > 0 || (g.n == 0 && g.busy > 1)
	hold := g.holdLocked(start)
	g.mu.Unlock()
	var (
		early, left bool
		earlyMu     sync.Mutex
		timer       *time.Timer
	)
	if hold > 0 {
		timer = time.AfterFunc(hold, func() {
			earlyMu.Lock()
			defer earlyMu.Unlock()
			if left {
				return // answered as the hold passed
			}
			g.mu.Lock()
			g.early++
			g.mu.Unlock()
			early = true
			free()
		})
	}
	return func(reached bool, status int) {
		if timer != nil {
			timer.Stop()
		}
		earlyMu.Lock()
		wasEarly := early
		left = true
		earlyMu.Unlock()
		g.mu.Lock()
		if wasEarly {
			g.early--
		}
		if status == http.StatusInternalServerError && (beside || g.early > 0) {
			// Two writes met and one failed: the server locks (SQLite),
			// and the one let go was still at work.
			g.strictUntil = s.now().Add(strictFor)
			g.lockedMet++
		}
		if status != 0 && !wasEarly {
			g.noteLocked(s.now().Sub(start))
		}
		g.mu.Unlock()
		switch {
		case wasEarly:
		case status != 0 || !reached:
			free()
		case timer == nil:
			time.AfterFunc(s.settle, free)
		default:
			// Cut or given up: the server may be at it for the settle,
			// but the slot is held no longer than the write's hold,
			// and it counts as let go early until the settle passes.
			wait := max(hold-s.now().Sub(start), 0)
			if wait >= s.settle {
				time.AfterFunc(s.settle, free)
				break
			}
			g.mu.Lock()
			g.early++
			g.mu.Unlock()
			time.AfterFunc(wait, free)
			time.AfterFunc(s.settle, func() {
				g.mu.Lock()
				g.early--
				g.mu.Unlock()
			})
		}
	}, nil
}

// waiter is a write waiting for a slot.
type waiter struct{ granted chan struct{} }

// take waits for a slot, in its party's turn among the parties waiting,
// and answers false, holding none, when ctx ends first.
func (w *writeGate) take(ctx context.Context, party string) bool {
	w.mu.Lock()
	if w.busy < w.limitLocked() && len(w.turns) == 0 {
		w.busy++
		w.serveLocked(party)
		w.mu.Unlock()
		return true
	}
	wt := &waiter{granted: make(chan struct{})}
	if len(w.waiting[party]) == 0 {
		w.turns = append(w.turns, party)
	}
	w.waiting[party] = append(w.waiting[party], wt)
	w.mu.Unlock()
	select {
	case <-wt.granted:
		return true
	case <-ctx.Done():
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-wt.granted:
		w.releaseLocked() // granted as its caller gave up: handed on
		return false
	default:
	}
	q := w.waiting[party]
	if i := slices.Index(q, wt); i >= 0 {
		q = slices.Delete(q, i, i+1)
	}
	if len(q) > 0 {
		w.waiting[party] = q
	} else {
		delete(w.waiting, party)
		w.turns = slices.DeleteFunc(w.turns, func(p string) bool { return p == party })
	}
	return false
}

// leave frees a slot.
func (w *writeGate) leave() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.releaseLocked()
}

// releaseLocked frees a slot and gives the free slots to the writes whose
// turn it is; w.mu is held.
func (w *writeGate) releaseLocked() {
	w.busy--
	w.grantLocked()
}

// grantLocked gives the free slots to the writes whose turn it is; w.mu is
// held.
func (w *writeGate) grantLocked() {
	for len(w.turns) > 0 && w.busy < w.limitLocked() {
		next := 0
		for i, p := range w.turns {
			if w.served[p] < w.served[w.turns[next]] {
				next = i
			}
		}
		party := w.turns[next]
		q := w.waiting[party]
		wt := q[0]
		if q = q[1:]; len(q) > 0 {
			w.waiting[party] = q
		} else {
			delete(w.waiting, party)
			w.turns = slices.Delete(w.turns, next, next+1)
		}
		w.busy++
		w.serveLocked(party)
		close(wt.granted)
	}
}

// serveLocked notes that party was given a slot now; w.mu is held. The
// notes of parties not waiting are forgotten past a thousand.
func (w *writeGate) serveLocked(party string) {
	w.turn++
	w.served[party] = w.turn
	if len(w.served) > 1000 {
		for p := range w.served {
			if _, ok := w.waiting[p]; !ok && p != party {
				delete(w.served, p)
			}
		}
	}
}

// limitLocked is how many writes the server takes at once now: the
// configured number, else unlimited while the server says it takes writes
// at once and has not locked since, else one; w.mu is held.
func (w *writeGate) limitLocked() int {
	switch {
	case w.n > 0:
		return w.n
	case w.concurrent && !w.now().Before(w.strictUntil):
		return unlimited
	}
	return 1
}

// learn asks the server whether it takes writes at once, unless the
// configuration says how many it takes, its last answer stands, or an ask
// is under way. The ask goes apart from the write, which goes meanwhile as
// to a server taking one write at a time: a server slow to answer /info
// holds no write up. A failed ask (the server unreachable, timed out) leaves
// it so, and is asked again after askAgain.
func (w *writeGate) learn(ask func(context.Context) (bool, error)) {
	if w.n > 0 || ask == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.asking || (!w.askedAt.IsZero() && w.now().Sub(w.askedAt) < w.askFor) {
		return
	}
	w.asking = true
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), askTimeout)
		defer cancel()
		concurrent, err := ask(ctx)
		w.mu.Lock()
		defer w.mu.Unlock()
		w.asking = false
		w.concurrent = err == nil && concurrent
		w.askedAt, w.askFor = w.now(), askEvery
		if err != nil {
			w.askFor = askAgain
		}
		w.grantLocked()
	}()
}

// holdLocked is how long a write sent at now holds its slot without an
// answer: for ever (0) while the server needs its writes one at a time,
// else the configured hold or the learned one; w.mu is held.
func (w *writeGate) holdLocked(now time.Time) time.Duration {
	switch {
	case w.hold < 0, now.Before(w.strictUntil):
		return 0
	case w.hold > 0:
		return w.hold
	case len(w.took) == 0:
		return DefaultWriteHold
	}
	sorted := slices.Clone(w.took)
	slices.Sort(sorted)
	return min(max(8*sorted[len(sorted)*9/10], minWriteHold), maxWriteHold)
}

// noteLocked keeps how long an answered write took; w.mu is held.
func (w *writeGate) noteLocked(d time.Duration) {
	if len(w.took) == recentWrites {
		w.took = w.took[1:]
	}
	w.took = append(w.took, d)
}

// askTimeout bounds the ask of whether the server takes writes at once.
const askTimeout = 10 * time.Second

// concurrentWrites asks the server whether it takes writes at once: its
// GET /api/v1/info (no token needed) answers concurrent_writes, false on
// SQLite (v2.5.0). A server that answers no such field, or no /info (404),
// says no.
func concurrentWrites(ctx context.Context, c *trackerhttp.Client) (bool, error) {
	a, err := c.Do(ctx, trackerhttp.Request{Method: http.MethodGet, Path: "/api/v1/info"})
	if errors.Is(err, tracker.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var info struct {
		ConcurrentWrites bool `json:"concurrent_writes"`
	}
	if err := json.Unmarshal(a.Body, &info); err != nil {
		return false, fmt.Errorf("vikunja: reading /api/v1/info: %w", err)
	}
	return info.ConcurrentWrites, nil
}
