package vikunja

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"

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

// enter waits for a slot; it fails, taking none, when ctx ends first,
// with an error that says the write was never sent (tracker.NotSent): its
// claim is released at once.
func (w *writeGate) enter(ctx context.Context) error {
	select {
	case w.slot <- struct{}{}:
		return nil
	case <-ctx.Done():
		return tracker.NotSent(fmt.Errorf("waiting for the server's other writes: %w", ctx.Err()))
	}
}

func (w *writeGate) leave() { <-w.slot }
