package eventlog

import (
	"context"
	"sync"
)

// Notifying wraps a Log and tells waiters when a workspace's log grows, so a
// feed can long-poll without reading in a loop. It sees only the appends made
// through it: another process's appends reach a waiter on its next read, so
// waiters also read again on a timer of their own.
type Notifying struct {
	Log
	mu      sync.Mutex
	changed map[[2]string]chan struct{}
}

// NewNotifying wraps log.
func NewNotifying(log Log) *Notifying {
	return &Notifying{Log: log, changed: map[[2]string]chan struct{}{}}
}

// Append implements Log and wakes the workspace's waiters after an append.
func (n *Notifying) Append(ctx context.Context, p AppendParams) (int64, bool, error) {
	seq, appended, err := n.Log.Append(ctx, p)
	if err == nil && appended {
		k := [2]string{p.Event.Tenant, p.Event.Workspace}
		n.mu.Lock()
		if ch, ok := n.changed[k]; ok {
			close(ch)
			delete(n.changed, k)
		}
		n.mu.Unlock()
	}
	return seq, appended, err
}

// Changed answers a channel closed at the workspace's next append. Take it
// before reading, so an append between the read and the wait is not missed.
func (n *Notifying) Changed(tenant, workspace string) <-chan struct{} {
	k := [2]string{tenant, workspace}
	n.mu.Lock()
	defer n.mu.Unlock()
	ch, ok := n.changed[k]
	if !ok {
		ch = make(chan struct{})
		n.changed[k] = ch
	}
	return ch
}
