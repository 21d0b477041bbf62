package eventlog_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/relayr-go/relayr/core/eventlog"
)

func TestDeriveID(t *testing.T) {
	for _, c := range []struct {
		name  string
		parts []string
		want  string
	}{
		// sha256("a\x00b") = 2a6ae4ea…; the id keeps 16 hex digits.
		{"TwoPartsJoinedByNUL", []string{"a", "b"}, "trk_" + sha16("a\x00b")},
		{"OnePart", []string{"abc"}, "trk_ba7816bf8f01cfea"},
		{"NoParts", nil, "trk_e3b0c44298fc1c14"},
		{"AnEmptyPartStillCounts", []string{"a", "", "b"}, "trk_" + sha16("a\x00\x00b")},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := eventlog.DeriveID(c.parts...); got != c.want {
				t.Fatalf("DeriveID(%q) = %s, want %s", c.parts, got, c.want)
			}
		})
	}
	if eventlog.DeriveID("ab", "c") == eventlog.DeriveID("a", "bc") {
		t.Fatal("parts that concatenate alike derive the same id: the NUL join is missing")
	}
}

func TestCheckAppend(t *testing.T) {
	ok := eventlog.Event{ID: "e1", Type: "tracker:item_changed", Tenant: "t", Workspace: "w"}
	for _, c := range []struct {
		name      string
		publisher string
		mutate    func(*eventlog.Event)
		want      error
	}{
		{"TheTrackerPublishesTrackerTypes", eventlog.TrackerPublisher, func(*eventlog.Event) {}, nil},
		{"AnotherPublisherIsRefusedTheTrackerNamespace", "rules", func(*eventlog.Event) {}, eventlog.ErrReserved},
		{"AnotherPublisherAppendsItsOwnTypes", "rules", func(e *eventlog.Event) { e.Type = "rules:fired" }, nil},
		{"AnEventWithoutAnIDIsInvalid", eventlog.TrackerPublisher, func(e *eventlog.Event) { e.ID = "" }, eventlog.ErrInvalid},
		{"ANULByteIsInvalid", eventlog.TrackerPublisher, func(e *eventlog.Event) { e.Workspace = "w\x00" }, eventlog.ErrInvalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := ok
			c.mutate(&e)
			if err := eventlog.CheckAppend(eventlog.AppendParams{Publisher: c.publisher, Event: e}); !errors.Is(err, c.want) {
				t.Fatalf("err %v, want %v", err, c.want)
			}
		})
	}
}
func sha16(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:16]
}
