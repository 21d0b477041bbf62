package ledger_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/ledger"
)

func TestCheckKeyRefusesWhatNoStoreKeeps(t *testing.T) {
	ok := ledger.Key{Tenant: "acme", Workspace: "ops", Kind: ledger.KindItem, Key: "k"}
	cases := map[string]func(k *ledger.Key){
		"empty tenant":  func(k *ledger.Key) { k.Tenant = "" },
		"empty key":     func(k *ledger.Key) { k.Key = "" },
		"unknown kind":  func(k *ledger.Key) { k.Kind = "task" },
		"NUL":           func(k *ledger.Key) { k.Key = "a\x00" },
		"not UTF-8":     func(k *ledger.Key) { k.Workspace = "\xc3" },
		"key too long":  func(k *ledger.Key) { k.Key = strings.Repeat("k", ledger.MaxKey+1) },
		"name too long": func(k *ledger.Key) { k.Tenant = strings.Repeat("t", ledger.MaxName+1) },
	}
	for name, mut := range cases {
		k := ok
		mut(&k)
		if err := ledger.CheckKey(k); !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if err := ledger.CheckKey(ok); err != nil {
		t.Errorf("a good key: %v", err)
	}
}

func TestForwardMovesEachPartOnlyForward(t *testing.T) {
	t0 := time.Date(2026, 10, 17, 9, 0, 0, 0, time.UTC)
	saved := ledger.Cursor{UpdatedAt: t0, ItemID: "m", Seq: 5, Seeded: true, SweptAt: t0}
	got := ledger.Forward(saved, ledger.Cursor{UpdatedAt: t0, ItemID: "a", Seq: 9, SweptAt: t0.Add(-time.Hour)})
	if got.ItemID != "m" || got.Seq != 9 || !got.Seeded || !got.SweptAt.Equal(t0) {
		t.Fatalf("Forward answered %+v", got)
	}
	got = ledger.Forward(saved, ledger.Cursor{UpdatedAt: t0.Add(time.Second), ItemID: "a"})
	if got.ItemID != "a" || !got.UpdatedAt.Equal(t0.Add(time.Second)) || got.Seq != 5 {
		t.Fatalf("Forward answered %+v", got)
	}
}

func TestNonceIsRandomHex(t *testing.T) {
	a, b := ledger.NewNonce(), ledger.NewNonce()
	if len(a) != 32 || a == b || strings.Trim(a, "0123456789abcdef") != "" {
		t.Fatalf("nonces %q and %q", a, b)
	}
}
