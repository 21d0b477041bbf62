package tracker_test

import (
	"context"
	"errors"
	"fmt"
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
	// A request that never left relayr: unavailable (a retry can
	// succeed), certainly not taken, its cause kept, marked once.
	cause := context.DeadlineExceeded
	unsent := tracker.NotSent(fmt.Errorf("waiting for the write slot: %w", cause))
	if !errors.Is(unsent, tracker.ErrNotSent) || !errors.Is(unsent, tracker.ErrUnavailable) || !errors.Is(unsent, cause) || !tracker.CertainlyNotTaken(unsent) {
		t.Errorf("NotSent: %v does not match ErrNotSent, ErrUnavailable and its cause, or may have been taken", unsent)
	}
	if again := tracker.NotSent(unsent); strings.Count(again.Error(), "never sent") != 1 {
		t.Errorf("NotSent of a never-sent error wrapped it again: %v", again)
	}
	if tracker.NotSent(nil) != nil {
		t.Error("NotSent(nil) is not nil")
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

// A refusal quotes a short value whole, and a long one as its first
// MaxQuoted bytes (cut at a character's start) with its length.
func TestQuoteKeepsAShortPrefixAndTheLength(t *testing.T) {
	long := strings.Repeat("é", 100) // 200 bytes, two a character
	for _, c := range []struct{ in, want string }{
		{"ok", `"ok"`},
		{strings.Repeat("s", 64), `"` + strings.Repeat("s", 64) + `"`},
		{strings.Repeat("s", 65), `"` + strings.Repeat("s", 64) + `"… (65 bytes)`},
		{long, `"` + strings.Repeat("é", 32) + `"… (200 bytes)`},
		{"a" + long, `"a` + strings.Repeat("é", 31) + `"… (201 bytes)`},
	} {
		if got := tracker.Quote(c.in); got != c.want {
			t.Errorf("Quote(%.20q…) = %s, want %s", c.in, got, c.want)
		}
	}
}

// Titles, descriptions and labels are checked as sent: not UTF-8, NUL and
// control characters are refused, never rewritten; a description keeps
// its tabs and line breaks.
func TestTextIsRefusedWhereItIsNotUTF8OrHoldsControlCharacters(t *testing.T) {
	for _, c := range []struct {
		name  string
		draft tracker.Draft
		field string
	}{
		{"TitleNotUTF8", tracker.Draft{Title: "a\xffb"}, "title"},
		{"TitleNUL", tracker.Draft{Title: "a\x00b"}, "title"},
		{"TitleNewline", tracker.Draft{Title: "a\nb"}, "title"},
		{"DescriptionNotUTF8", tracker.Draft{Title: "t", Description: "a\xfeb"}, "description"},
		{"DescriptionNUL", tracker.Draft{Title: "t", Description: "a\x00b"}, "description"},
		{"LabelNUL", tracker.Draft{Title: "t", Labels: []string{"a\x00"}}, "labels"},
		{"LabelNotUTF8", tracker.Draft{Title: "t", Labels: []string{"\xff"}}, "labels"},
		{"StateLong", tracker.Draft{Title: "t", State: tracker.State(strings.Repeat("s", 1000))}, "state"},
	} {
		err := tracker.ValidateDraft(c.draft)
		var ie *tracker.InvalidError
		if !errors.As(err, &ie) || ie.Field != c.field {
			t.Errorf("%s: %v, want invalid %s", c.name, err, c.field)
		}
		if len(err.Error()) > 200 {
			t.Errorf("%s: the refusal is %d bytes", c.name, len(err.Error()))
		}
	}
	if err := tracker.ValidateDraft(tracker.Draft{Title: "t", Description: "line one\n\tline two\r\n"}); err != nil {
		t.Errorf("a description with tabs and line breaks: %v", err)
	}
	title := "a\x00"
	if err := tracker.ValidatePatch(tracker.Patch{Title: &title}); !errors.Is(err, tracker.ErrInvalid) {
		t.Errorf("a patch's title with NUL: %v", err)
	}
}

func TestSameLabelsIsSetEquality(t *testing.T) {
	for _, c := range []struct {
		a, b []string
		want bool
	}{
		{nil, []string{}, true},
		{[]string{"ci", "flaky"}, []string{"flaky", "ci"}, true},
		{[]string{"ci"}, []string{"ci", "flaky"}, false},
		{[]string{"ci", "ci"}, []string{"ci"}, true},
		{[]string{"CI"}, []string{"ci"}, false},
	} {
		if got := tracker.SameLabels(c.a, c.b); got != c.want || tracker.SameLabels(c.b, c.a) != c.want {
			t.Errorf("SameLabels(%q, %q) = %v, want %v both ways", c.a, c.b, got, c.want)
		}
	}
	a := []string{"b", "a"}
	tracker.SameLabels(a, []string{"a", "b"})
	if a[0] != "b" {
		t.Error("SameLabels sorted its caller's slice")
	}
}
