// Package eventlog is relayr's event log (reflexr's publish, made ours): a
// workspace's events in sequence, each id appended once.
//
// Ids are derived (ADR-0036, and Ratus: one id namespace across types), so a
// page read twice, by another replica or after a restart, appends nothing new.
package eventlog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"
	"unicode/utf8"
)

// Event is one entry of a workspace's log.
type Event struct {
	// ID names the event whatever its type; a second append of it is a no-op.
	ID string `json:"id"`
	// Seq is the event's place in its workspace's log, from 1, given by
	// Append.
	Seq       int64  `json:"seq"`
	Tenant    string `json:"tenant"`
	Workspace string `json:"workspace"`
	// Type is "<namespace>:<name>", e.g. tracker:item_changed.
	Type string `json:"type"`
	// Correlation is the chain the event belongs to ("" starts its own).
	Correlation string          `json:"correlation,omitempty"`
	Data        json.RawMessage `json:"data"`
	At          time.Time       `json:"at"`
}

// Namespace is the part of Type before the colon.
func (e Event) Namespace() string {
	ns, _, ok := strings.Cut(e.Type, ":")
	if !ok {
		return ""
	}
	return ns
}

// TrackerNamespace is reserved to the tracker followers (ADR-0036's
// PUBLISHERS): no other publisher may append a tracker: event.
const TrackerNamespace = "tracker"

// TrackerPublisher is the publisher name the tracker followers append as.
const TrackerPublisher = "tracker"

// AppendParams appends one event.
type AppendParams struct {
	// Publisher names who appends; only TrackerPublisher may append a
	// tracker: type.
	Publisher string
	Event     Event
}

// Errors the log answers.
var (
	// ErrReserved: a publisher appended a type of a namespace reserved to
	// another publisher.
	ErrReserved = errors.New("eventlog: namespace reserved to another publisher")
	// ErrInvalid: an event without id, type, tenant or workspace, or with a
	// value the store can't keep.
	ErrInvalid = errors.New("eventlog: invalid event")
)

// Log is the EventLog port. Implementations are safe for concurrent use
// and honour ctx.
type Log interface {
	// Append appends an event to its workspace's log and answers its
	// sequence number. An id already in the workspace's log appends nothing
	// and answers the first append's sequence number, with appended false.
	Append(ctx context.Context, p AppendParams) (seq int64, appended bool, err error)
	// Read answers up to limit events of a workspace after afterSeq, in
	// sequence order; a limit below 1 answers none.
	Read(ctx context.Context, tenant, workspace string, afterSeq int64, limit int) ([]Event, error)
	// Head answers the sequence number of a workspace's last event, 0 for
	// a log nothing was appended to: how far a follower's cursor is behind.
	Head(ctx context.Context, tenant, workspace string) (int64, error)
}

// The longest id, and tenant, workspace or type, every log keeps. MaxName
// is the one limit of a name in relayr: the ledger's MaxName and the write
// path's checks refer to it.
const (
	MaxID   = 1024
	MaxName = 256
)

// CheckAppend applies the rules every Log shares before storing: the event
// names an id, a type, a tenant and a workspace, none too long, its text holds no NUL byte
// and is UTF-8 (ErrInvalid), and a tracker: type comes from the tracker
// publisher (ErrReserved).
func CheckAppend(p AppendParams) error {
	e := p.Event
	if e.ID == "" || e.Type == "" || e.Tenant == "" || e.Workspace == "" {
		return ErrInvalid
	}
	if len(e.ID) > MaxID || len(e.Tenant) > MaxName || len(e.Workspace) > MaxName || len(e.Type) > MaxName {
		return ErrInvalid
	}
	for _, s := range []string{e.ID, e.Type, e.Tenant, e.Workspace, e.Correlation} {
		if strings.ContainsRune(s, 0) || !utf8.ValidString(s) {
			return ErrInvalid
		}
	}
	if e.Namespace() == TrackerNamespace && p.Publisher != TrackerPublisher {
		return ErrReserved
	}
	return nil
}

// DeriveID derives an event id: "trk_" and 16 hex digits of a SHA-256 over
// the parts joined by NUL bytes (ADR-0036: "Ids are derived").
func DeriveID(parts ...string) string {
	h := sha256.New()
	for i, p := range parts {
		if i > 0 {
			h.Write([]byte{0})
		}
		h.Write([]byte(p))
	}
	return "trk_" + hex.EncodeToString(h.Sum(nil))[:16]
}
