package coretest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/coretest"
	"github.com/relayr-go/relayr/core/faketracker"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
)

func TestHelpers(t *testing.T) {
	if p := coretest.Ptr("x"); *p != "x" {
		t.Fatal(*p)
	}
	c := coretest.Connector{Driver: faketracker.New(faketracker.LikePlane)}
	tr, err := c.Connect(context.Background(), tracker.Credentials{}, tracker.Source{})
	if err != nil || c.Kind() != "fake" || tr.Capabilities().Name != "fake" {
		t.Fatalf("%v %v", tr, err)
	}
	l := coretest.NewFailingRecord()
	ctx := context.Background()
	k := ledger.Key{Tenant: "t", Workspace: "w", Kind: ledger.KindItem, Key: "k"}
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	claim, _, err := l.Claim(ctx, ledger.ClaimParams{Key: k, Correlation: "c", Now: now, RetakeAfter: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	l.Arm()
	p := ledger.RecordParams{Key: k, Nonce: claim.Nonce, Ref: tracker.ItemRef{ID: "1"}, Now: now}
	if _, err := l.Record(ctx, p); !errors.Is(err, coretest.ErrDied) {
		t.Fatalf("armed: %v", err)
	}
	if _, err := l.Record(ctx, p); err != nil {
		t.Fatalf("after: %v", err)
	}
}
