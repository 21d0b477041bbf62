package tracker_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
)

func TestCursorOrder(t *testing.T) {
	t1 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		a, b tracker.Cursor
		want bool
	}{
		{"EarlierTimeFirst", tracker.Cursor{UpdatedAt: t1, ID: "9"}, tracker.Cursor{UpdatedAt: t1.Add(time.Second), ID: "1"}, true},
		{"NumericIDsCompareAsNumbers", tracker.Cursor{UpdatedAt: t1, ID: "9"}, tracker.Cursor{UpdatedAt: t1, ID: "10"}, true},
		{"NumericIDsCompareAsNumbersTheOtherWay", tracker.Cursor{UpdatedAt: t1, ID: "10"}, tracker.Cursor{UpdatedAt: t1, ID: "9"}, false},
		{"UUIDsCompareAsText", tracker.Cursor{UpdatedAt: t1, ID: "0a"}, tracker.Cursor{UpdatedAt: t1, ID: "0b"}, true},
		{"EqualIsNotBefore", tracker.Cursor{UpdatedAt: t1, ID: "5"}, tracker.Cursor{UpdatedAt: t1, ID: "5"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.a.Before(c.b); got != c.want {
				t.Fatalf("%+v before %+v = %v", c.a, c.b, got)
			}
		})
	}
}

func TestValidateKey(t *testing.T) {
	for _, c := range []struct {
		name string
		key  string
		ok   bool
	}{
		{"Plain", "ci/build-1", true},
		{"Unicode", "ключ/ü/🙂", true},
		{"Empty", "", false},
		{"Exactly1024Bytes", strings.Repeat("k", 1024), true},
		{"Over1024Bytes", strings.Repeat("k", 1025), false},
		{"NUL", "a\x00b", false},
		{"Newline", "a\nb", false},
		{"Delete", "a\x7fb", false},
		{"C1Control", "a\u0085b", false},
		{"NotUTF8", "a\xffb", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := tracker.ValidateKey(c.key)
			if (err == nil) != c.ok {
				t.Fatalf("ValidateKey: %v, want ok=%v", err, c.ok)
			}
			if err != nil && !errors.Is(err, tracker.ErrInvalid) {
				t.Fatalf("%v does not match ErrInvalid", err)
			}
		})
	}
}

func TestErrorsMatchTheirSentinels(t *testing.T) {
	if !errors.Is(tracker.RateLimited(time.Second), tracker.ErrRateLimited) {
		t.Fatal("RateLimitedError does not match ErrRateLimited")
	}
	if !errors.Is(&tracker.ExistsError{ID: "x"}, tracker.ErrExists) {
		t.Fatal("ExistsError does not match ErrExists")
	}
	for _, err := range []error{tracker.ErrRefused, tracker.ErrNotFound, tracker.RateLimited(time.Second), tracker.ErrUnauthorized} {
		if !tracker.CertainlyNotTaken(err) {
			t.Errorf("%v: the tracker certainly didn't take it", err)
		}
	}
	if tracker.CertainlyNotTaken(tracker.ErrUnavailable) {
		t.Error("an unavailable tracker may have taken the write")
	}
}

// A label a tracker can't keep is refused with the draft or the patch, so
// that no claim is taken for a write the tracker would refuse.
func TestALabelATrackerCantKeepIsInvalid(t *testing.T) {
	for _, c := range []struct {
		name   string
		labels []string
		ok     bool
	}{
		{"None", nil, true},
		{"Plain", []string{"ci", "flaky test"}, true},
		{"Empty", []string{"ci", ""}, false},
		{"Blank", []string{"  "}, false},
		{"NUL", []string{"a\x00b"}, false},
		{"Over1024Bytes", []string{strings.Repeat("l", 1025)}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			labels := c.labels
			for what, err := range map[string]error{
				"draft": tracker.ValidateDraft(tracker.Draft{Title: "t", Labels: labels}),
				"patch": tracker.ValidatePatch(tracker.Patch{Labels: &labels}),
			} {
				if (err == nil) != c.ok || (err != nil && !errors.Is(err, tracker.ErrInvalid)) {
					t.Fatalf("the %s answered %v, want ok=%v", what, err, c.ok)
				}
			}
		})
	}
}

// What a tracker rewrites on the way back is never found again.
func TestValidateKeyKept(t *testing.T) {
	for _, c := range []struct {
		name, key, rewritten string
		ok                   bool
	}{
		{"Plain", "ci/build-1", "<>&", true},
		{"SpaceInside", "disk full/host 1", "<>&", true},
		{"TrailingSpace", "k1 ", "", false},
		{"LeadingSpace", " k1", "", false},
		{"TrailingNoBreakSpace", "a\u00a0", "", false},
		{"Markup", "x<b>y", "<>&", false},
		{"CharacterReference", "a&amp;b", "<>&", false},
		{"AmpersandWhereKept", "R&D", "", true},
		{"AmpersandWhereRewritten", "R&D", "<>&", false},
		{"WhatValidateKeyRefuses", "a\x00b", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := tracker.ValidateKeyKept(c.key, c.rewritten)
			if (err == nil) != c.ok {
				t.Fatalf("ValidateKeyKept: %v, want ok=%v", err, c.ok)
			}
			if err != nil && !errors.Is(err, tracker.ErrInvalid) {
				t.Fatalf("%v does not match ErrInvalid", err)
			}
		})
	}
}
