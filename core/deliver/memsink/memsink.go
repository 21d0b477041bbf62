// Package memsink is the in-memory deliver.Sink: it holds what it takes,
// each event once by its id, in the order it first took each, and refuses
// for now on demand, as a broker down or a subscriber answering 503 would.
// It is the first sink the sink suite (sinktest) runs; a test or a user
// composing relayr without a broker delivers into it.
package memsink

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/relayr-go/relayr/core/deliver"
	"github.com/relayr-go/relayr/core/eventlog"
)

// ErrRefused is the failure of a publish while the sink refuses; it is a
// failure that passes (deliver.ErrRetry).
var ErrRefused = errors.New("memsink: refusing for now")

// Sink holds the events it took. The zero value is ready to use; it is
// safe for concurrent use.
type Sink struct {
	mu       sync.Mutex
	taken    []eventlog.Event
	ids      map[string]bool
	refusing bool
	attempts int
	// grew is closed, and replaced, when the sink takes an event.
	grew chan struct{}
}

var (
	_ deliver.Sink      = (*Sink)(nil)
	_ deliver.BatchSink = (*Sink)(nil)
)

// Publish implements deliver.Sink: an id taken before takes nothing new.
func (s *Sink) Publish(ctx context.Context, e eventlog.Event) error {
	_, err := s.PublishBatch(ctx, []eventlog.Event{e})
	return err
}

// PublishBatch implements deliver.BatchSink: every event of es in order,
// or none while the sink refuses.
func (s *Sink) PublishBatch(ctx context.Context, es []eventlog.Event) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts++
	if s.refusing {
		return 0, deliver.Retry("refused", ErrRefused)
	}
	if s.ids == nil {
		s.ids = map[string]bool{}
	}
	took := false
	for _, e := range es {
		if !s.ids[e.ID] {
			s.ids[e.ID] = true
			s.taken = append(s.taken, e)
			took = true
		}
	}
	if took && s.grew != nil {
		close(s.grew)
		s.grew = nil
	}
	return len(es), nil
}

// Refuse makes every publish fail for now (deliver.ErrRetry), until
// called with false.
func (s *Sink) Refuse(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refusing = on
}

// Taken answers the events taken, in the order the sink first took each.
func (s *Sink) Taken() []eventlog.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.taken)
}

// Wait waits until the sink holds at least n events, or ctx ends.
func (s *Sink) Wait(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		if len(s.taken) >= n {
			s.mu.Unlock()
			return nil
		}
		if s.grew == nil {
			s.grew = make(chan struct{})
		}
		grew := s.grew
		s.mu.Unlock()
		select {
		case <-grew:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Attempts answers how many publishes and batches were attempted, refused
// ones included.
func (s *Sink) Attempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts
}
