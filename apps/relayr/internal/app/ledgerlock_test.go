//go:build unix

package app

import (
	"path/filepath"
	"strings"
	"testing"
)

// A second relayr on one SQLite ledger is refused while the first holds it.
func TestOneProcessServesASQLiteLedger(t *testing.T) {
	path := filepath.Join(t.TempDir(), "relayr.db")
	unlock, err := lockLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockLedger(path); err == nil || !strings.Contains(err.Error(), "another relayr serves this SQLite ledger") {
		t.Fatalf("a second lock: %v, want it refused", err)
	}
	unlock()
	again, err := lockLedger(path)
	if err != nil {
		t.Fatalf("the lock once given back: %v", err)
	}
	again()
}
