//go:build unix

package app

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockLedger takes the lock file beside a SQLite ledger for this process,
// without waiting, and answers the func that gives it back. A SQLite ledger
// serves one process: a second relayr on the same file would count itself
// the only replica (heartbeats are kept in memory) and spend each tracker
// key's whole budget again. The lock goes with the process, however it
// ends.
func lockLedger(path string) (func(), error) {
	lock := path + ".lock"
	f, err := os.OpenFile(lock, os.O_CREATE|os.O_RDWR, 0o600) //nolint:gosec // G304: the operator names the ledger
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another relayr serves this SQLite ledger (%s is locked): a SQLite ledger serves one process; run replicas on PostgreSQL", lock)
		}
		return nil, fmt.Errorf("locking %s: %w", lock, err)
	}
	return func() { _ = f.Close() }, nil
}
