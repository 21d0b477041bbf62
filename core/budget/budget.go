// Package budget shares a tracker key's requests between runs' writes and the
// followers' polls (ADR-0036, "The budget"): 40 requests a minute per tenant's
// key per process by default. Writes spend it and are never held back; polls
// take only what is left.
package budget

import (
	"sync"
	"time"

	"github.com/relayr-go/relayr/core/clock"
)

// Defaults of the seeds.
const (
	// DefaultLimit is the requests a key may make per Window.
	DefaultLimit = 40
	// Window is the budget's minute.
	Window = time.Minute
)

// Budget counts requests per key (a tenant's tracker key) over a sliding
// minute. It is safe for concurrent use.
type Budget struct {
	clock clock.Clock
	limit int

	mu    sync.Mutex
	spent map[string][]time.Time
}

// New returns a budget of limit requests a minute per key (DefaultLimit when
// limit is 0 or less).
func New(c clock.Clock, limit int) *Budget {
	if limit <= 0 {
		limit = DefaultLimit
	}
	return &Budget{clock: c, limit: limit, spent: map[string][]time.Time{}}
}

// Limit answers the requests a key may make per minute.
func (b *Budget) Limit() int { return b.limit }

// prune drops spends older than the window; b.mu is held.
func (b *Budget) prune(key string, now time.Time) []time.Time {
	s := b.spent[key]
	cut := 0
	for cut < len(s) && !s[cut].After(now.Add(-Window)) {
		cut++
	}
	s = s[cut:]
	if len(s) == 0 {
		delete(b.spent, key)
	} else {
		b.spent[key] = s
	}
	return s
}

// Spend counts n requests of a write. A write is never held back, so Spend
// counts them even past the limit (ADR-0036: "writes spend it and are never
// held back").
func (b *Budget) Spend(key string, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	s := b.prune(key, now)
	for range n {
		s = append(s, now)
	}
	b.spent[key] = s
}

// Take takes one request for a poll if the minute has one left, and answers
// whether it did (ADR-0036: "polls take only what is left").
func (b *Budget) Take(key string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	s := b.prune(key, now)
	if len(s) >= b.limit {
		return false
	}
	b.spent[key] = append(s, now)
	return true
}

// Left answers how many requests the key has left this minute (0 when
// writes spent past the limit).
func (b *Budget) Left(key string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return max(0, b.limit-len(b.prune(key, b.clock.Now())))
}
