// Package chaos holds what the chaos run of the relayr binary needs beside
// the emulations: a fault injector to put in front of an emulated tracker,
// and replicas of `relayr serve` run as child processes that a test can kill
// with SIGKILL and start again.
package chaos

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Kind is a fault the injector answers a request with.
type Kind int

// The faults, in the order Counts reports them.
const (
	// RateLimit answers 429 as the tracker does (RateLimited429).
	RateLimit Kind = iota
	// ServerError answers a 502 or 503 from a proxy in front of the
	// tracker; the tracker never saw the request.
	ServerError
	// Hang holds the request for Hang (past relayr's write bound), then
	// drops the connection; the tracker never saw the request.
	Hang
	// DropBefore drops the connection before the tracker sees the request.
	DropBefore
	// DropAfter lets the tracker take the request, then drops the
	// connection: the write happened, the answer is lost.
	DropAfter
	kinds
)

var kindNames = [...]string{"rate_limit", "5xx", "hang", "drop_before", "drop_after"}

func (k Kind) String() string { return kindNames[k] }

// weights are the share of each kind among the faults.
var weights = [kinds]int{RateLimit: 25, ServerError: 25, Hang: 10, DropBefore: 20, DropAfter: 20}

// Injector is an http.Handler in front of a tracker's emulation that answers
// a share of the requests with a fault instead. It is off until On.
type Injector struct {
	// Next is the emulation.
	Next http.Handler
	// Rate is the chance a request meets a fault while on.
	Rate float64
	// Hang is how long a hung request is held before its connection is
	// dropped.
	Hang time.Duration
	// RateLimited writes the tracker's own 429.
	RateLimited func(w http.ResponseWriter)

	on       atomic.Bool
	requests atomic.Int64
	counts   [kinds]atomic.Int64
	mu       sync.Mutex
	rnd      *rand.Rand
}

// NewInjector answers an injector in front of next, seeded for
// reproducible choices.
func NewInjector(next http.Handler, rate float64, hang time.Duration, seed uint64, rateLimited func(http.ResponseWriter)) *Injector {
	return &Injector{Next: next, Rate: rate, Hang: hang, RateLimited: rateLimited, rnd: rand.New(rand.NewPCG(seed, 0x5eed))} //nolint:gosec // G404: reproducible faults, not secrets
}

// On switches injection on or off.
func (in *Injector) On(on bool) { in.on.Store(on) }

// Requests is how many requests reached the injector.
func (in *Injector) Requests() int64 { return in.requests.Load() }

// Counts is how many faults of each kind were injected, by kind's name.
func (in *Injector) Counts() map[string]int64 {
	out := map[string]int64{}
	for k := range kinds {
		out[k.String()] = in.counts[k].Load()
	}
	return out
}

// Total is how many faults were injected.
func (in *Injector) Total() int64 {
	var n int64
	for k := range kinds {
		n += in.counts[k].Load()
	}
	return n
}

func (in *Injector) pick() (Kind, bool) {
	if !in.on.Load() {
		return 0, false
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.rnd.Float64() >= in.Rate {
		return 0, false
	}
	n := in.rnd.IntN(100)
	for k := range kinds {
		if n < weights[k] {
			return k, true
		}
		n -= weights[k]
	}
	return DropAfter, true
}

// ServeHTTP implements http.Handler.
func (in *Injector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	in.requests.Add(1)
	k, ok := in.pick()
	if !ok {
		in.Next.ServeHTTP(w, r)
		return
	}
	in.counts[k].Add(1)
	switch k {
	case RateLimit:
		in.RateLimited(w)
	case ServerError:
		status := http.StatusBadGateway
		if r.ContentLength%2 == 0 {
			status = http.StatusServiceUnavailable
		}
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(status)
		_, _ = fmt.Fprintf(w, "<html><body><h1>%d %s</h1></body></html>", status, http.StatusText(status))
	case Hang:
		t := time.NewTimer(in.Hang)
		defer t.Stop()
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
		drop(w)
	case DropBefore:
		drop(w)
	case DropAfter:
		// The tracker takes the request whole; its answer never leaves.
		rec := httptest.NewRecorder()
		in.Next.ServeHTTP(rec, r)
		drop(w)
	}
}

func drop(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			_ = c.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// PlaneRateLimited is Plane's 429: a Retry-After of one second (Plane sends
// the seconds left of its window) and its body.
func PlaneRateLimited(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = io.WriteString(w, `{"error_code": 5900, "error_message": "RATE_LIMIT_EXCEEDED"}`)
}

// VikunjaRateLimited is Vikunja's 429: no Retry-After, the window's end in
// X-Ratelimit-Reset (Unix seconds), one second away.
func VikunjaRateLimited(w http.ResponseWriter) {
	w.Header().Set("X-Ratelimit-Limit", "100")
	w.Header().Set("X-Ratelimit-Remaining", "0")
	w.Header().Set("X-Ratelimit-Reset", strconv.FormatInt(time.Now().Add(time.Second).Unix(), 10))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = io.WriteString(w, `{"message":"Too Many Requests"}`)
}
