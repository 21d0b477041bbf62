package ledgersqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/eventlog/eventlogtest"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/ledger/ledgertest"
	"github.com/relayr-go/relayr/core/tracker"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

var t0 = time.Date(2026, 10, 17, 9, 30, 0, 0, time.UTC)

func open(t *testing.T, path string) *Ledger {
	t.Helper()
	l, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func newLedger(t *testing.T) *Ledger {
	return open(t, filepath.Join(t.TempDir(), "relayr.db"))
}

func TestContract(t *testing.T) {
	t.Run("SQLite", func(t *testing.T) {
		t.Run("Ledger", func(t *testing.T) {
			ledgertest.Run(t, func(t *testing.T) ledger.Ledger { return newLedger(t) })
		})
		t.Run("EventLog", func(t *testing.T) {
			eventlogtest.Run(t, func(t *testing.T) eventlog.Log { return newLedger(t) })
		})
		t.Run("Operator", func(t *testing.T) {
			ledgertest.RunOperator(t, func(t *testing.T) ledgertest.OperatorStore { return newLedger(t) })
		})
	})
}

func key(k string) ledger.Key {
	return ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindItem, Key: k}
}

func TestFileLedgerKeepsEverythingAcrossCloseAndReopen(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "relayr.db")
	l, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := l.Claim(ctx, ledger.ClaimParams{Key: key("k"), Correlation: "run-1", Now: t0, RetakeAfter: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ref := tracker.ItemRef{ID: "i-1", Number: 1, Name: "OPS-1", Link: "https://x/OPS-1", Key: "k"}
	must(t, func() error {
		_, err := l.Record(ctx, ledger.RecordParams{Key: key("k"), Nonce: c.Nonce, Ref: ref, Now: t0})
		return err
	}())
	_, err = l.SetValues(ctx, key("k"), map[string]string{"title": `"T"`})
	must(t, err)
	must(t, l.SaveSnapshots(ctx, []ledger.SnapshotRow{{Tenant: "acme", Workspace: "ops", ItemID: "i-1", Item: []byte(`{}`), UpdatedAt: t0}}))
	f := ledger.Follower{Kind: ledger.LogFollower, Tenant: "acme", Workspace: "ops", Name: "hook"}
	lease, err := l.TakeLease(ctx, ledger.LeaseParams{Follower: f, Holder: "r1", Now: t0, TTL: time.Minute})
	must(t, err)
	must(t, l.SaveCursor(ctx, f, ledger.Cursor{Seq: 3}))
	_, err = l.DeadLetter(ctx, ledger.DeadLetter{Follower: f, ID: "2", Seq: 2, Reason: "bad", At: t0})
	must(t, err)
	_, err = l.CountWrite(ctx, ledger.WriteParams{Tenant: "acme", Workspace: "ops", ItemID: "i-1", Now: t0, Window: time.Hour, Limit: 1})
	must(t, err)
	_, _, err = l.Append(ctx, eventlog.AppendParams{Publisher: "rules", Event: eventlog.Event{ID: "e1", Tenant: "acme", Workspace: "ops", Type: "app:x", At: t0}})
	must(t, err)
	must(t, l.Close())

	l = open(t, path)
	got, err := l.Lookup(ctx, key("k"))
	must(t, err)
	if !got.Recorded || got.Ref != ref || got.Correlation != "run-1" || got.Values["title"] != `"T"` {
		t.Fatalf("claim after reopen %+v", got)
	}
	if _, err := l.Snapshot(ctx, "acme", "ops", "i-1"); err != nil {
		t.Fatalf("snapshot after reopen: %v", err)
	}
	if _, err := l.RenewLease(ctx, ledger.LeaseParams{Follower: f, Holder: "r1", Nonce: lease.Nonce, Now: t0, TTL: time.Minute}); err != nil {
		t.Fatalf("lease after reopen: %v", err)
	}
	if cur, err := l.Cursor(ctx, f); err != nil || cur.Seq != 3 {
		t.Fatalf("cursor after reopen %+v %v", cur, err)
	}
	if dl, err := l.DeadLetters(ctx, f); err != nil || len(dl) != 1 {
		t.Fatalf("dead letters after reopen %+v %v", dl, err)
	}
	if _, err := l.CountWrite(ctx, ledger.WriteParams{Tenant: "acme", Workspace: "ops", ItemID: "i-1", Now: t0, Window: time.Hour, Limit: 1}); !errors.Is(err, ledger.ErrLoop) {
		t.Fatalf("write count after reopen: %v", err)
	}
	if es, err := l.Read(ctx, "acme", "ops", 0, 10); err != nil || len(es) != 1 || es[0].ID != "e1" {
		t.Fatalf("events after reopen %+v %v", es, err)
	}
	if fs, err := l.Followed(ctx); err != nil || len(fs) != 1 {
		t.Fatalf("followed after reopen %+v %v", fs, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestClosedLedgerAnswersErrClosed(t *testing.T) {
	l := newLedger(t)
	must(t, l.Close())
	must(t, l.Close())
	ctx := t.Context()
	f := ledger.Follower{Kind: ledger.LogFollower, Tenant: "acme", Workspace: "ops", Name: "hook"}
	calls := map[string]func() error{
		"Claim": func() error {
			_, _, err := l.Claim(ctx, ledger.ClaimParams{Key: key("k"), Now: t0, RetakeAfter: time.Second})
			return err
		},
		"Lookup":   func() error { _, err := l.Lookup(ctx, key("k")); return err },
		"Cursor":   func() error { _, err := l.Cursor(ctx, f); return err },
		"Followed": func() error { _, err := l.Followed(ctx); return err },
		"Ping":     func() error { return l.Ping(ctx) },
		"Append": func() error {
			_, _, err := l.Append(ctx, eventlog.AppendParams{Event: eventlog.Event{ID: "e", Tenant: "a", Workspace: "w", Type: "app:x"}})
			return err
		},
		"Read": func() error { _, err := l.Read(ctx, "a", "w", 0, 1); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, ledger.ErrClosed) {
			t.Errorf("%s on a closed ledger: %v, want ErrClosed", name, err)
		}
	}
}

func TestConcurrentWritersNeverSeeBusy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "relayr.db")
	// Two ledgers on one file, as two processes would have, and many
	// goroutines on each.
	ls := []*Ledger{open(t, path), open(t, path)}
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for g := range 16 {
		l := ls[g%2]
		wg.Go(func() {
			for i := range 20 {
				k := key(fmt.Sprintf("k-%d-%d", g, i))
				c, _, err := l.Claim(t.Context(), ledger.ClaimParams{Key: k, Now: t0, RetakeAfter: time.Second})
				if err != nil {
					errs <- err
					continue
				}
				if _, err := l.Record(t.Context(), ledger.RecordParams{Key: k, Nonce: c.Nonce, Ref: tracker.ItemRef{ID: k.Key}, Now: t0}); err != nil {
					errs <- err
				}
				if _, _, err := l.Append(t.Context(), eventlog.AppendParams{Publisher: "rules", Event: eventlog.Event{ID: k.Key, Tenant: "acme", Workspace: "ops", Type: "app:x"}}); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	es, err := ls[0].Read(t.Context(), "acme", "ops", 0, 1000)
	must(t, err)
	if len(es) != 320 || es[319].Seq != 320 {
		t.Fatalf("%d events", len(es))
	}
}

func TestMigrationsAreIdempotent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "relayr.db")
	open(t, path).Close()
	l := open(t, path)
	var n int
	must(t, l.d.r.QueryRowContext(t.Context(), `SELECT count(*) FROM relayr_migrations`).Scan(&n))
	ms, err := loadMigrations(migrationFS, "migration")
	must(t, err)
	if n != len(ms) {
		t.Fatalf("%d migration rows after opening twice, want %d", n, len(ms))
	}
	// The statements themselves are safe to run again.
	_, err = l.d.w.ExecContext(t.Context(), ms[0].SQL)
	must(t, err)
	must(t, l.Ping(t.Context()))
}

// Another relayr, newer, migrates the file while this one serves: this one
// stays ready; a file behind is not.
func TestPingIsReadyOnAFileANewerRelayrMigrated(t *testing.T) {
	l := open(t, filepath.Join(t.TempDir(), "relayr.db"))
	var top int
	must(t, l.d.r.QueryRowContext(t.Context(), `SELECT max(version) FROM relayr_migrations`).Scan(&top))
	_, err := l.d.w.ExecContext(t.Context(), `INSERT INTO relayr_migrations (version, name, applied_at) VALUES (?, 'a_newer_relayrs', 0)`, top+1)
	must(t, err)
	must(t, l.Ping(t.Context()))
	_, err = l.d.w.ExecContext(t.Context(), `DELETE FROM relayr_migrations WHERE version >= ?`, top)
	must(t, err)
	if err := l.Ping(t.Context()); err == nil {
		t.Fatal("a file one migration behind: Ping passed")
	}
}

// A file whose migrations another build named its own way (or a newer
// relayr's) is refused at Open, naming the migration, with nothing
// applied on top of it.
func TestOpenRefusesAFileMigratedByAnotherBuild(t *testing.T) {
	for _, c := range []struct{ name, change, want string }{
		{"renamed", `UPDATE relayr_migrations SET name = 'someone_elses' WHERE version = 2`, "applied migration 002_someone_elses where this relayr has 002_"},
		{"newer", `INSERT INTO relayr_migrations (version, name, applied_at) VALUES (99, 'a_newer_relayrs', 0)`, "has migration 099_a_newer_relayrs, newer than this relayr's"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "relayr.db")
			l := open(t, path)
			_, err := l.d.w.ExecContext(t.Context(), c.change)
			must(t, err)
			l.Close()
			l, err = Open(t.Context(), path)
			if err == nil {
				l.Close()
				t.Fatal("Open passed")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Open answered %v, want it to say %q", err, c.want)
			}
		})
	}
}

func TestMapError(t *testing.T) {
	d := &driver{}
	cases := []struct {
		name string
		err  error
		want error
	}{
		{"closed", errors.New("sql: database is closed"), ledger.ErrClosed},
		{"conn done", sql.ErrConnDone, ledger.ErrClosed},
		{"plain", errors.New("boom"), nil},
	}
	for _, c := range cases {
		got := d.MapError(c.err)
		if c.want == nil {
			if !errors.Is(got, c.err) || got.Error() != c.err.Error() {
				t.Errorf("%s: %v mapped to %v", c.name, c.err, got)
			}
			continue
		}
		if !errors.Is(got, c.want) {
			t.Errorf("%s: %v mapped to %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

// A done context is the Store's to answer: the call fails with the
// context's error, prefixed with the driver's name.
func TestDoneContextAnswersItsError(t *testing.T) {
	l := newLedger(t)
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	_, _, err := l.Claim(cancelled, ledger.ClaimParams{Key: key("k"), Now: t0, RetakeAfter: time.Second})
	if !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "ledgersqlite: ") {
		t.Fatalf("a claim on a cancelled context: %v", err)
	}
}

func TestBusyFileIsUnavailable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "relayr.db")
	l := open(t, path)
	// Another process with no patience at all: it meets SQLITE_BUSY at once.
	other, err := openLedger(t.Context(), path, 0)
	must(t, err)
	t.Cleanup(func() { other.Close() })
	tx, err := l.d.w.BeginTx(t.Context(), nil)
	must(t, err)
	defer func() { _ = tx.Rollback() }()
	_, _, err = other.Claim(t.Context(), ledger.ClaimParams{Key: key("k"), Now: t0, RetakeAfter: time.Second})
	var se *sqlite.Error
	if !errors.Is(err, ledger.ErrUnavailable) || !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY {
		t.Fatalf("a write behind another's write lock: %v, want ErrUnavailable from SQLITE_BUSY", err)
	}
	must(t, tx.Rollback())
	if _, _, err := other.Claim(t.Context(), ledger.ClaimParams{Key: key("k"), Now: t0, RetakeAfter: time.Second}); err != nil {
		t.Fatalf("the retry: %v", err)
	}
}

// TestTheWALStaysBoundedUnderFilings files claims and records and appends
// events, every one a write answered with its RETURNING row, and checks
// that SQLite's auto-checkpoint keeps the WAL near its 1000 pages. A
// write reset after its first row, as sql.Row does, never runs the
// checkpoint: the WAL grew by about 32 KB a filing and its event (19 MB here).
func TestTheWALStaysBoundedUnderFilings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "relayr.db")
	l := open(t, path)
	ctx := t.Context()
	for i := range 600 {
		k := ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindItem, Key: fmt.Sprintf("wal/%04d", i)}
		c, _, err := l.Claim(ctx, ledger.ClaimParams{Key: k, Now: t0, RetakeAfter: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Record(ctx, ledger.RecordParams{Key: k, Nonce: c.Nonce, Ref: tracker.ItemRef{ID: fmt.Sprint(i), Number: int64(i)}, Now: t0}); err != nil {
			t.Fatal(err)
		}
		e := eventlog.Event{ID: fmt.Sprintf("wal-%04d", i), Type: "rules:fired", Tenant: "acme", Workspace: "ops", At: t0}
		if _, _, err := l.Append(ctx, eventlog.AppendParams{Publisher: "rules", Event: e}); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	// 1000 pages of 4096 bytes and a frame header each, and one batch's
	// pages past the checkpoint's threshold.
	const bound = 1100 * (4096 + 24)
	if fi.Size() > bound {
		t.Fatalf("the WAL holds %d bytes after 600 filings, want at most %d: the auto-checkpoint did not run", fi.Size(), bound)
	}
}

// plan answers SQLite's query plan of query with args, its steps joined.
func plan(t *testing.T, l *Ledger, query string, args ...any) string {
	t.Helper()
	rows, err := l.d.r.QueryContext(t.Context(), `EXPLAIN QUERY PLAN `+query, args...)
	must(t, err)
	defer rows.Close()
	var steps []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		must(t, rows.Scan(&id, &parent, &unused, &detail))
		steps = append(steps, detail)
	}
	must(t, rows.Err())
	return strings.Join(steps, "; ")
}

// The items at the loop cap are read through the recent writes' index:
// the writes within the window, not every write the tenant's items keep.
func TestItemsAtTheCapReadTheRecentWrites(t *testing.T) {
	l := open(t, filepath.Join(t.TempDir(), "relayr.db"))
	if all := plan(t, l, atCap, "acme", int64(0), 20, 50); !strings.Contains(all, "INDEX relayr_tracker_writes_recent (tenant=? AND at>?)") {
		t.Fatalf("plan %q, want the recent writes' index on tenant and time", all)
	}
}

// A follower's latest dead letters are read through their index, newest
// first, with no sort of the whole backlog.
func TestRecentDeadLettersReadTheirIndex(t *testing.T) {
	l := open(t, filepath.Join(t.TempDir(), "relayr.db"))
	for _, q := range []followerQueries{trackerQueries, logQueries} {
		if all := plan(t, l, q.recentDeadLetters, "acme", "ops", "f", 50); !strings.Contains(all, "dead_letters_recent") || strings.Contains(all, "TEMP B-TREE") {
			t.Fatalf("plan %q, want the recent index and no sort", all)
		}
	}
}
