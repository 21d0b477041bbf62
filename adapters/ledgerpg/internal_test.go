package ledgerpg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"

	"github.com/relayr-go/relayr/core/ledger"
)

func TestLoadMigrationsRefusesABadSet(t *testing.T) {
	file := &fstest.MapFile{Data: []byte("SELECT 1;")}
	cases := map[string]struct {
		files fstest.MapFS
		want  string
	}{
		"gap":       {fstest.MapFS{"m/001_a.up.sql": file, "m/003_c.up.sql": file}, "gap"},
		"duplicate": {fstest.MapFS{"m/001_a.up.sql": file, "m/002_b.up.sql": file, "m/002_c.up.sql": file}, "twice"},
		"stray":     {fstest.MapFS{"m/001_a.up.sql": file, "m/001_a.down.sql": file}, "not named"},
		"first":     {fstest.MapFS{"m/002_b.up.sql": file}, "gap"},
		"none":      {fstest.MapFS{"m": &fstest.MapFile{Mode: fs.ModeDir}}, "no migrations"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := loadMigrations(c.files, "m")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
		})
	}
	ms, err := loadMigrations(fstest.MapFS{"m/002_b.up.sql": file, "m/001_a.up.sql": file}, "m")
	if err != nil || len(ms) != 2 || ms[0].name != "a" || ms[1].version != 2 {
		t.Fatalf("a good set: %+v %v", ms, err)
	}
	if _, err := loadMigrations(migrationFS, "migration"); err != nil {
		t.Fatalf("the embedded set: %v", err)
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
