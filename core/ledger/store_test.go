package ledger_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/ledger"
)

// untouched is a driver no call may reach: it embeds a nil Driver, so any
// method Store passes on panics, and the test fails. Only its own three
// answer.
type untouched struct {
	ledger.Driver
	closed int
}

func (untouched) Name() string             { return "spy" }
func (untouched) MapError(err error) error { return err }
func (u *untouched) Close() error          { u.closed++; return nil }

var (
	t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	k  = ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindItem, Key: "k"}
	f  = ledger.Follower{Kind: ledger.TrackerFollower, Tenant: "acme", Workspace: "ops", Name: "plane"}
)

// calls are one of each method on the ports, with valid inputs unless bad
// is set, when each gets an input the port refuses.
func calls(s *ledger.Store, bad bool) map[string]func(ctx context.Context) error {
	key, fol, item, tenant := k, f, "5", "acme"
	if bad {
		key.Key, fol.Name, item, tenant = "", "", "\x00", ""
	}
	return map[string]func(context.Context) error{
		"Claim": func(ctx context.Context) error {
			_, _, err := s.Claim(ctx, ledger.ClaimParams{Key: key, Now: t0, RetakeAfter: time.Second})
			return err
		},
		"Record": func(ctx context.Context) error {
			_, err := s.Record(ctx, ledger.RecordParams{Key: key, Nonce: "n", Now: t0})
			return err
		},
		"Release":     func(ctx context.Context) error { return s.Release(ctx, key, "n") },
		"MarkDeleted": func(ctx context.Context) error { return s.MarkDeleted(ctx, key) },
		"Lookup":      func(ctx context.Context) error { _, err := s.Lookup(ctx, key); return err },
		"LookupItem":  func(ctx context.Context) error { _, err := s.LookupItem(ctx, "acme", "ops", item); return err },
		"SetValues": func(ctx context.Context) error {
			_, err := s.SetValues(ctx, key, map[string]string{"title": `"x"`})
			return err
		},
		"RestoreValues": func(ctx context.Context) error { return s.RestoreValues(ctx, key, map[string]string{"title": `"x"`}) },
		"ConsumeValues": func(ctx context.Context) error { return s.ConsumeValues(ctx, key, map[string]string{"title": `"x"`}) },
		"LandValues": func(ctx context.Context) error {
			return s.LandValues(ctx, ledger.LandParams{Key: key, Sent: map[string]string{"title": `"x"`}, At: t0})
		},
		"SupersedeValues": func(ctx context.Context) error { return s.SupersedeValues(ctx, key, []string{"title"}, t0) },
		"CountWrite": func(ctx context.Context) error {
			_, err := s.CountWrite(ctx, ledger.WriteParams{Tenant: "acme", Workspace: "ops", ItemID: item, Now: t0, Window: time.Hour, Limit: 20})
			return err
		},
		"UncountWrite": func(ctx context.Context) error {
			return s.UncountWrite(ctx, ledger.WriteParams{Tenant: "acme", Workspace: "ops", ItemID: item, Now: t0})
		},
		"ForgetWrites":   func(ctx context.Context) error { return s.ForgetWrites(ctx, "acme", "ops", item) },
		"Snapshot":       func(ctx context.Context) error { _, err := s.Snapshot(ctx, "acme", "ops", item); return err },
		"DeleteSnapshot": func(ctx context.Context) error { return s.DeleteSnapshot(ctx, "acme", "ops", item) },
		"SaveSnapshots": func(ctx context.Context) error {
			return s.SaveSnapshots(ctx, []ledger.SnapshotRow{{Tenant: "acme", Workspace: "ops", ItemID: item}})
		},
		"SnapshotIDs": func(ctx context.Context) error {
			return s.SnapshotIDs(ctx, tenant, "ops", func(string) bool { return true })
		},
		"TakeLease": func(ctx context.Context) error {
			_, err := s.TakeLease(ctx, ledger.LeaseParams{Follower: fol, Holder: "a", Now: t0, TTL: time.Minute})
			return err
		},
		"RenewLease": func(ctx context.Context) error {
			_, err := s.RenewLease(ctx, ledger.LeaseParams{Follower: fol, Holder: "a", Nonce: "n", Now: t0, TTL: time.Minute})
			return err
		},
		"ReleaseLease": func(ctx context.Context) error { return s.ReleaseLease(ctx, fol, "n") },
		"Lease":        func(ctx context.Context) error { _, err := s.Lease(ctx, fol); return err },
		"Cursor":       func(ctx context.Context) error { _, err := s.Cursor(ctx, fol); return err },
		"SaveCursor":   func(ctx context.Context) error { return s.SaveCursor(ctx, fol, ledger.Cursor{Seq: 1}) },
		"DeadLetter": func(ctx context.Context) error {
			_, err := s.DeadLetter(ctx, ledger.DeadLetter{Follower: fol, ID: "e", At: t0})
			return err
		},
		"DeadLetters": func(ctx context.Context) error { _, err := s.DeadLetters(ctx, fol); return err },
		"Beat": func(ctx context.Context) error {
			_, err := s.Beat(ctx, ledger.BeatParams{Holder: tenant, Now: t0, TTL: time.Minute})
			return err
		},
		"LatestEvents": func(ctx context.Context) error {
			_, err := s.LatestEvents(ctx, ledger.EventQuery{Tenant: tenant, Workspace: "ops", Limit: 10})
			return err
		},
		"Unrecorded":  func(ctx context.Context) error { _, err := s.Unrecorded(ctx, tenant, 10); return err },
		"DeletedKeys": func(ctx context.Context) error { _, err := s.DeletedKeys(ctx, tenant, 10); return err },
		"AtCap": func(ctx context.Context) error {
			_, err := s.AtCap(ctx, ledger.CapQuery{Tenant: tenant, Now: t0, Window: time.Hour, Limit: 20, Rows: 10})
			return err
		},
		"ResolveDeadLetter": func(ctx context.Context) error {
			_, _, err := s.ResolveDeadLetter(ctx, fol, "e", ledger.Skipped, t0)
			return err
		},
		"RecentDeadLetters": func(ctx context.Context) error { _, err := s.RecentDeadLetters(ctx, fol, 10); return err },
		"LookupDeadLetter":  func(ctx context.Context) error { _, err := s.LookupDeadLetter(ctx, fol, "e"); return err },
		"Append": func(ctx context.Context) error {
			e := eventlog.Event{ID: "e", Type: "ops:x", Tenant: tenant, Workspace: "ops", At: t0}
			_, _, err := s.Append(ctx, eventlog.AppendParams{Publisher: "ops", Event: e})
			return err
		},
		"Head": func(ctx context.Context) error { _, err := s.Head(ctx, tenant, "ops"); return err },
		"Read": func(ctx context.Context) error { _, err := s.Read(ctx, tenant, "ops", 0, 10); return err },
	}
}

// Store refuses bad input itself, with the port's error, before any
// driver sees it: the checks have one home.
func TestStoreRefusesBadInputBeforeTheDriver(t *testing.T) {
	s := ledger.NewStore(&untouched{})
	for name, call := range calls(s, true) {
		err := call(t.Context())
		if !errors.Is(err, ledger.ErrInvalid) && !errors.Is(err, eventlog.ErrInvalid) {
			t.Errorf("%s with bad input: %v, want ErrInvalid", name, err)
		}
	}
}

// A done context and a closed store are answered by Store, with nothing
// asked of the driver, and the driver is closed once.
func TestStoreAnswersADoneContextAndAClosedStoreItself(t *testing.T) {
	d := &untouched{}
	s := ledger.NewStore(d)
	done, cancel := context.WithCancel(t.Context())
	cancel()
	for name, call := range calls(s, false) {
		if err := call(done); !errors.Is(err, context.Canceled) {
			t.Errorf("%s on a cancelled context: %v, want context.Canceled", name, err)
		}
	}
	for range 2 {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if d.closed != 1 {
		t.Fatalf("driver closed %d times, want once", d.closed)
	}
	for name, call := range calls(s, false) {
		if err := call(t.Context()); !errors.Is(err, ledger.ErrClosed) {
			t.Errorf("%s on a closed store: %v, want ErrClosed", name, err)
		}
	}
	if _, err := s.Followed(t.Context()); !errors.Is(err, ledger.ErrClosed) {
		t.Errorf("Followed on a closed store: %v", err)
	}
	if err := s.Ping(t.Context()); !errors.Is(err, ledger.ErrClosed) {
		t.Errorf("Ping on a closed store: %v", err)
	}
}

// failing answers every lookup with a failure of its own store, which its
// MapError says may be retried.
type failing struct {
	untouched
	err error
}

var errDropped = errors.New("connection dropped")

func (failing) MapError(err error) error {
	if errors.Is(err, errDropped) {
		return errors.Join(ledger.ErrUnavailable, err)
	}
	return err
}

func (d failing) LookupClaim(context.Context, ledger.Key) (ledger.Claim, error) {
	return ledger.Claim{}, d.err
}

func (d failing) TakeClaim(context.Context, ledger.ClaimParams, string) (ledger.Claim, ledger.Outcome, error) {
	return ledger.Claim{}, 0, ledger.ErrNotFound
}

// A driver's own failures reach the caller through its MapError, named
// after the driver; the port's sentinels pass as they are; a row that keeps
// going between a claim's statements ends in ErrUnavailable, not a loop.
func TestStoreMapsTheDriversFailures(t *testing.T) {
	s := ledger.NewStore(&failing{err: errDropped})
	_, err := s.Lookup(t.Context(), k)
	if !errors.Is(err, ledger.ErrUnavailable) || !errors.Is(err, errDropped) || !strings.HasPrefix(err.Error(), "spy: ") {
		t.Fatalf("Lookup = %v, want spy: ... wrapping ErrUnavailable and the driver's error", err)
	}
	s = ledger.NewStore(&failing{err: ledger.ErrNotFound})
	if _, err := s.Lookup(t.Context(), k); !errors.Is(err, ledger.ErrNotFound) || err.Error() != ledger.ErrNotFound.Error() {
		t.Fatalf("Lookup = %v, want ErrNotFound itself", err)
	}
	if _, _, err := s.Claim(t.Context(), ledger.ClaimParams{Key: k, Now: t0, RetakeAfter: time.Second}); !errors.Is(err, ledger.ErrUnavailable) {
		t.Fatalf("Claim of a row that keeps going = %v, want ErrUnavailable", err)
	}
}
