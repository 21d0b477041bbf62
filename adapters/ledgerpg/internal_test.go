package ledgerpg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"

	"github.com/relayr-go/relayr/core/ledger"
)

// The rules of a migration set are ledger.LoadMigrations' (and its tests');
// here, only that the embedded set keeps them.
func TestTheEmbeddedMigrationsLoad(t *testing.T) {
	ms, err := loadMigrations(migrationFS, "migration")
	if err != nil || len(ms) == 0 || ms[0].Version != 1 {
		t.Fatalf("the embedded set: %+v %v", ms, err)
	}
}

func TestMapError(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	bg := context.Background()
	cases := []struct {
		name string
		ctx  context.Context
		err  error
		want error
	}{
		{"cancelled call", cancelled, errors.New("conn closed"), context.Canceled},
		{"deadline", bg, fmt.Errorf("query: %w", context.DeadlineExceeded), context.DeadlineExceeded},
		{"closed pool", bg, puddle.ErrClosedPool, ledger.ErrClosed},
		{"terminated backend", bg, &pgconn.PgError{Code: "57P01"}, ledger.ErrUnavailable},
		{"connection failure", bg, &pgconn.PgError{Code: "08006"}, ledger.ErrUnavailable},
		{"serialization failure", bg, &pgconn.PgError{Code: "40001"}, ledger.ErrUnavailable},
		{"deadlock", bg, &pgconn.PgError{Code: "40P01"}, ledger.ErrUnavailable},
		{"unexpected EOF", bg, fmt.Errorf("read: %w", io.ErrUnexpectedEOF), ledger.ErrUnavailable},
		{"bad encoding", bg, &pgconn.PgError{Code: "22021"}, ledger.ErrInvalid},
		{"syntax error", bg, &pgconn.PgError{Code: "42601"}, nil},
	}
	for _, c := range cases {
		got := mapError(c.ctx, c.err)
		if c.want == nil {
			for _, s := range []error{ledger.ErrUnavailable, ledger.ErrClosed, ledger.ErrInvalid} {
				if errors.Is(got, s) {
					t.Errorf("%s mapped to %v", c.name, got)
				}
			}
			continue
		}
		if !errors.Is(got, c.want) {
			t.Errorf("%s: %v mapped to %v, want %v", c.name, c.err, got, c.want)
		}
	}
	if mapError(bg, nil) != nil {
		t.Error("nil mapped to an error")
	}
}
