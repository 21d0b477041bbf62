package app

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// DefaultTrackerConns is how many TCP connections a replica opens to one
// tracker server at most, across every binding and tenant on it, when the
// configuration's tracker_conns says nothing.
const DefaultTrackerConns = 16

// Pools hands out one HTTP transport per tracker server (scheme and host),
// shared by every binding on that server, each bounded to a number of
// connections (ADR-1002: one HTTP transport per tracker server). A
// binding waits for a connection of its server's pool rather than opening
// one of its own, so a replica with a thousand bindings on one server holds
// that server's bound of connections and their goroutines, not a thousand.
type Pools struct {
	base     http.RoundTripper
	maxConns int

	mu    sync.Mutex
	pools map[string]http.RoundTripper
}

// NewPools makes the pools: each a clone of base bounded to maxConns
// connections (DefaultTrackerConns when 0 or less). base is
// http.DefaultTransport when nil; a base that is not an *http.Transport (a
// test's) can't be bounded and is shared as it is.
func NewPools(base http.RoundTripper, maxConns int) *Pools {
	if base == nil {
		base = http.DefaultTransport
	}
	if maxConns <= 0 {
		maxConns = DefaultTrackerConns
	}
	return &Pools{base: base, maxConns: maxConns, pools: map[string]http.RoundTripper{}}
}

// For answers the transport of the server baseURL reaches: the same one for
// every base URL of that scheme and host.
func (p *Pools) For(baseURL string) http.RoundTripper {
	key := serverOf(baseURL)
	p.mu.Lock()
	defer p.mu.Unlock()
	if rt, ok := p.pools[key]; ok {
		return rt
	}
	rt := p.base
	if t, ok := p.base.(*http.Transport); ok {
		t = t.Clone()
		t.MaxConnsPerHost = p.maxConns
		t.MaxIdleConnsPerHost = p.maxConns
		rt = t
	}
	p.pools[key] = rt
	return rt
}

// Len answers how many servers have a pool.
func (p *Pools) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pools)
}

// serverOf keys a base URL by its server: scheme and host, lowercased.
func serverOf(baseURL string) string {
	u, err := url.Parse(baseURL)
	if err != nil {
		return baseURL
	}
	return strings.ToLower(u.Scheme + "://" + u.Host)
}
