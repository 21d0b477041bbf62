package tracker

import (
	"sync"
	"time"
)

// Misses notes when a look-up first found each key missing, for a tracker
// whose reads lag its writes (Jira's search, GitLab's lists): "nothing
// was filed under the key" is concluded only from two reads at least the
// lag apart (ADR-1011). Its zero value is ready; it is safe for concurrent
// use.
type Misses struct {
	mu    sync.Mutex
	first map[string]time.Time // source and key → the first miss
}

// Wait notes the keys missing at now (those not missing before) and
// answers how long until the lag has passed since the first miss of each:
// zero or less once a read now settles them all.
func (m *Misses) Wait(source Source, keys []string, now time.Time, lag time.Duration) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.first == nil {
		m.first = map[string]time.Time{}
	}
	if len(m.first) > 10000 {
		for k, t := range m.first {
			if now.Sub(t) > 10*lag {
				delete(m.first, k)
			}
		}
	}
	var wait time.Duration
	for _, k := range keys {
		id := source.String() + "\x00" + k
		first, ok := m.first[id]
		if !ok {
			first = now
			m.first[id] = now
		}
		wait = max(wait, first.Add(lag).Sub(now))
	}
	return wait
}

// Forget drops the keys' first misses: a key found missing twice a lag
// apart is settled.
func (m *Misses) Forget(source Source, keys []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		delete(m.first, source.String()+"\x00"+k)
	}
}
