package vikunja

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
)

// DefaultConcurrentWrites is how many write requests the adapters of one
// process send one Vikunja server at once: one. Vikunja's default database
// is SQLite, on which two writes that meet fail, the second answering 500
// ("database is locked"), and a person's edit that meets relayr's write
// fails the same way (vikunja.md §11). Reads are not held back: SQLite
// serves them beside a write.
const DefaultConcurrentWrites = 1

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
	n    int
	slot chan struct{}
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

// gate answers the server's gate, made with n slots by its first Tracker.
// A Tracker asking another n for the same server is refused: one server
// has one setting, or the smaller one would not hold.
func (g *WriteGates) gate(baseURL string, n int) (*writeGate, error) {
	key := ServerKey(baseURL)
	g.mu.Lock()
	defer g.mu.Unlock()
	if w, ok := g.gates[key]; ok {
		if w.n != n {
			return nil, &tracker.InvalidError{Field: "concurrent writes",
				Reason: fmt.Sprintf("%s already takes %d writes at once in this process, not %d", key, w.n, n)}
		}
		return w, nil
	}
	w := &writeGate{n: n, slot: make(chan struct{}, n)}
	g.gates[key] = w
	return w, nil
}

// writeSlots is one Tracker's way through its server's write gate, the
// trackerhttp.Gate of its requests: a write waits for a slot and holds it
// until the server is done with it. Reads go at once: SQLite serves them
// beside a write.
type writeSlots struct {
	gate *writeGate
	// settle is how long a write given up mid-request keeps its slot after
	// its connection closed (WithWriteSettle).
	settle time.Duration
}

// Enter implements trackerhttp.Gate. A write that waits for a slot and
// gives up first takes none, and says it was never sent
// (tracker.NotSent): its claim is released at once. The slot is the
// server's until the server is done with the write: at once when its
// answer was read whole, or when it never reached the server; else (given
// up mid-request, or its answer cut) settle after its connection was
// closed, since Vikunja goes on with a request whose client left, and a
// write sent meanwhile would meet it (vikunja.md §11).
func (s *writeSlots) Enter(ctx context.Context, method string) (func(reached, answered bool), error) {
	if method == http.MethodGet {
		return func(bool, bool) {}, nil
	}
	select {
	case s.gate.slot <- struct{}{}:
	case <-ctx.Done():
		return nil, tracker.NotSent(fmt.Errorf("vikunja: waiting for the server's other writes: %w", context.Cause(ctx)))
	}
	return func(reached, answered bool) {
		if answered || !reached {
			s.gate.leave()
			return
		}
		time.AfterFunc(s.settle, s.gate.leave)
	}, nil
}

func (w *writeGate) leave() { <-w.slot }
