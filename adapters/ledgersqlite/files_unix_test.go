//go:build unix

package ledgersqlite

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/ledger"
)

// The ledger holds titles, descriptions and events: its file, its WAL and
// its shared memory are the owner's alone, whatever the umask lets others
// read.
func TestTheLedgersFilesAreTheOwnersAlone(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "relayr.db")
	l := open(t, path)
	// A write, so the WAL holds something while the ledger is open.
	if _, _, err := l.Claim(t.Context(), ledger.ClaimParams{
		Key: ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindItem, Key: "k"}, Now: t0, RetakeAfter: time.Minute,
	}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if mode := st.Mode().Perm(); mode != 0o600 {
			t.Errorf("%s is %#o, want 0600", filepath.Base(f), mode)
		}
	}
}
