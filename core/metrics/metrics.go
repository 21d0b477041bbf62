// Package metrics is the tiny port core counts through; the app binds it to
// Prometheus. Counter names are the ADRs' (relayr.trackers.loops, …).
package metrics

import (
	"sort"
	"strings"
	"sync"
)

// The counters ADR-0015 and ADR-0036 ask for, and the ones an operator needs
// beside them.
const (
	// Unnudged counts changes a poll published that no nudge announced
	// (removals excepted, which no webhook announces).
	Unnudged = "relayr.trackers.unnudged"
	// NudgesRefused counts webhook deliveries answered 401.
	NudgesRefused = "relayr.trackers.nudges_refused"
	// DeadLetters counts tracker events dead-lettered.
	DeadLetters = "relayr.trackers.dead_letters"
	// Loops counts writes refused at the cap (tracker_loop).
	Loops = "relayr.trackers.loops"
	// FollowersStopped counts followers stopped for anything but a lost lease.
	FollowersStopped = "relayr.followers.stopped"
	// LogDeadLetters counts log entries dead-lettered by log followers.
	LogDeadLetters = "relayr.followers.dead_letters"
	// Delivered counts events a log follower's sink took (a subscriber's
	// 2xx, a broker's ack), by tenant, workspace and subscription name.
	Delivered = "relayr.followers.delivered"
	// DeliveryFailures counts a sink's failed attempts, by tenant,
	// workspace, subscription name and reason (unreachable, timeout,
	// no_responders, stream_full, unauthorized, …).
	DeliveryFailures = "relayr.followers.delivery_failures"
	// Writes counts writes sent to trackers.
	Writes = "relayr.trackers.writes"
	// Reads counts the requests the followers sent to trackers: polls,
	// comment reads, sweeps, the checks of reported deletions.
	Reads = "relayr.trackers.reads"
	// Published counts tracker events appended to the log.
	Published = "relayr.trackers.published"
	// Echoes counts read-back values dropped as relayr's own.
	Echoes = "relayr.trackers.echoes"
	// RateLimited counts the 429s a tracker answered, per tenant's key.
	RateLimited = "relayr.trackers.rate_limited"
	// SpareRefused counts the spare requests (an early sweep, a first
	// read's further pages) the budget refused a key for want of what writes and the
	// floor left.
	SpareRefused = "relayr.budget.spare_refused"
	// PollsDeferred counts a binding's polls whose start the key's pacer
	// made wait (budget.Floor): a key whose polls queue.
	PollsDeferred = "relayr.followers.polls_deferred"
	// Polls counts a binding's completed polls.
	Polls = "relayr.followers.polls"
	// DoubtLookups counts the look-ups relayr made of filings in doubt
	// (their answer lost, their request given up): one a key, whoever
	// waits for it, unless a look-up fails.
	DoubtLookups = "relayr.writes.doubt_lookups"
	// DoubtsLeft counts the filings in doubt whose look-ups failed until
	// their claim could be retaken, left to the retake (ADR-0033).
	DoubtsLeft = "relayr.writes.doubts_left"
)

// Labels qualify a count (tenant, workspace, tracker…).
type Labels map[string]string

// Metrics counts.
type Metrics interface {
	// Add adds n to the named counter under labels.
	Add(name string, n float64, labels Labels)
}

// Discard counts nothing.
type Discard struct{}

// Add implements Metrics.
func (Discard) Add(string, float64, Labels) {}

// Memory keeps counts in memory, for tests and for a process without
// Prometheus. It is safe for concurrent use.
type Memory struct {
	mu sync.Mutex
	m  map[string]float64
}

// NewMemory returns an empty Memory.
func NewMemory() *Memory { return &Memory{m: map[string]float64{}} }

// Add implements Metrics.
func (m *Memory) Add(name string, n float64, labels Labels) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.m[name] += n
	if len(labels) > 0 {
		m.m[name+"{"+render(labels)+"}"] += n
	}
}

// Get answers a counter's total over every label set.
func (m *Memory) Get(name string) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.m[name]
}

// With answers a counter's value under exactly these labels.
func (m *Memory) With(name string, labels Labels) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.m[name+"{"+render(labels)+"}"]
}

func render(l Labels) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k + "=" + l[k])
	}
	return b.String()
}
