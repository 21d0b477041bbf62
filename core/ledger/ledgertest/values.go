package ledgertest

import (
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/ledger"
)

// valueCases are the rules of a row's pending values: what relayr wrote to
// each field, kept in order until the follower reads it back (IsPending)
// and consumes it.
var valueCases = []testCase{
	{"SetValuesAnswersThePreviousValues", setValues},
	{"ValuesSetBeforeTheRecordSurviveIt", valuesSurviveRecord},
	{"RestoreValuesPutsBackTheEarlierValues", restoreValues},
	{"ConsumeValuesClearsTheFields", consumeValues},
	{"ConsumeValuesKeepsAValueRecordedSinceTheRead", consumeKeepsLater},
	{"ConsumingALaterValueConsumesTheEarlierOnes", consumeLater},
	{"AValueWithANewlineIsRefused", newlineValue},
	{"ValuesOfAKeyWithoutARowAreNotFound", valuesWithoutRow},
	{"AValueALaterReadSupersededLeavesTheField", supersedeLanded},
	{"AValueNotLandedBeforeTheReadStays", supersedeKeepsUnlanded},
}

func setValues(t *testing.T, l ledger.Ledger) {
	claim(t, l, key("k"), "", t0)
	prev, err := l.SetValues(t.Context(), key("k"), map[string]string{"title": `"One"`, "state": `"todo"`})
	mustNil(t, err)
	if len(prev) != 0 {
		t.Fatalf("previous %v, want none", prev)
	}
	prev, err = l.SetValues(t.Context(), key("k"), map[string]string{"title": `"Two"`, "labels": `["a"]`})
	mustNil(t, err)
	if !maps.Equal(prev, map[string]string{"title": `"One"`}) {
		t.Fatalf("previous %v", prev)
	}
	// A field keeps its values in order until one is read back: two edits
	// between polls are both relayr's.
	want := map[string]string{"title": "\"One\"\n\"Two\"", "state": `"todo"`, "labels": `["a"]`}
	if got := lookup(t, l, key("k")).Values; !maps.Equal(got, want) {
		t.Fatalf("values %v, want %v", got, want)
	}
	if !ledger.IsPending(want["title"], `"One"`) || !ledger.IsPending(want["title"], `"Two"`) {
		t.Fatal("both edits' values are not pending")
	}
}

func valuesSurviveRecord(t *testing.T, l ledger.Ledger) {
	c, _ := claim(t, l, key("k"), "", t0)
	_, err := l.SetValues(t.Context(), key("k"), map[string]string{"title": `"Filed"`})
	mustNil(t, err)
	r := record(t, l, c, ref("1"), t0)
	if r.Values["title"] != `"Filed"` {
		t.Fatalf("values %v after record", r.Values)
	}
}

func restoreValues(t *testing.T, l ledger.Ledger) {
	claim(t, l, key("k"), "", t0)
	_, err := l.SetValues(t.Context(), key("k"), map[string]string{"title": `"Old"`})
	mustNil(t, err)
	refused := map[string]string{"title": `"New"`, "state": `"done"`}
	_, err = l.SetValues(t.Context(), key("k"), refused)
	mustNil(t, err)
	mustNil(t, l.RestoreValues(t.Context(), key("k"), refused))
	want := map[string]string{"title": `"Old"`}
	if got := lookup(t, l, key("k")).Values; !maps.Equal(got, want) {
		t.Fatalf("values %v after restore, want %v", got, want)
	}
}

func consumeValues(t *testing.T, l ledger.Ledger) {
	claim(t, l, key("k"), "", t0)
	_, err := l.SetValues(t.Context(), key("k"), map[string]string{"title": `"T"`, "state": `"done"`})
	mustNil(t, err)
	mustNil(t, l.ConsumeValues(t.Context(), key("k"), map[string]string{"title": `"T"`, "absent": `"x"`}))
	want := map[string]string{"state": `"done"`}
	if got := lookup(t, l, key("k")).Values; !maps.Equal(got, want) {
		t.Fatalf("values %v after consume, want %v", got, want)
	}
	mustNil(t, l.ConsumeValues(t.Context(), key("k"), map[string]string{"state": `"done"`}))
	if got := lookup(t, l, key("k")).Values; len(got) != 0 {
		t.Fatalf("values %v after consuming all", got)
	}
}

// The follower reads an echo of one edit while the next edit records its
// value: consuming the first must not clear the second, or its read-back
// would be published as a person's change.
func consumeKeepsLater(t *testing.T, l ledger.Ledger) {
	claim(t, l, key("k"), "", t0)
	_, err := l.SetValues(t.Context(), key("k"), map[string]string{"title": `"Filed"`})
	mustNil(t, err)
	_, err = l.SetValues(t.Context(), key("k"), map[string]string{"title": `"Edited"`})
	mustNil(t, err)
	mustNil(t, l.ConsumeValues(t.Context(), key("k"), map[string]string{"title": `"Filed"`}))
	want := map[string]string{"title": `"Edited"`}
	if got := lookup(t, l, key("k")).Values; !maps.Equal(got, want) {
		t.Fatalf("values %v after consuming the earlier echo, want %v", got, want)
	}
}

func consumeLater(t *testing.T, l ledger.Ledger) {
	claim(t, l, key("k"), "", t0)
	for _, v := range []string{`"A"`, `"B"`, `"C"`} {
		_, err := l.SetValues(t.Context(), key("k"), map[string]string{"title": v})
		mustNil(t, err)
	}
	mustNil(t, l.ConsumeValues(t.Context(), key("k"), map[string]string{"title": `"B"`}))
	want := map[string]string{"title": `"C"`}
	if got := lookup(t, l, key("k")).Values; !maps.Equal(got, want) {
		t.Fatalf("values %v, want %v", got, want)
	}
}

func newlineValue(t *testing.T, l ledger.Ledger) {
	claim(t, l, key("k"), "", t0)
	_, err := l.SetValues(t.Context(), key("k"), map[string]string{"title": "\"a\"\n\"b\""})
	mustIs(t, err, ledger.ErrInvalid)
}

func valuesWithoutRow(t *testing.T, l ledger.Ledger) {
	_, err := l.SetValues(t.Context(), key("none"), map[string]string{"title": `"x"`})
	mustIs(t, err, ledger.ErrNotFound)
	mustIs(t, l.RestoreValues(t.Context(), key("none"), map[string]string{"title": `"x"`}), ledger.ErrNotFound)
	mustIs(t, l.ConsumeValues(t.Context(), key("none"), map[string]string{"title": `"x"`}), ledger.ErrNotFound)
}

// A person overwrote relayr's value before any poll read it: the read that
// finds the person's value, sent after relayr's write was answered, drops
// it, so the person setting it again later is published, not dropped as
// an echo.
func supersedeLanded(t *testing.T, l ledger.Ledger) {
	claim(t, l, key("k"), "", t0)
	_, err := l.SetValues(t.Context(), key("k"), map[string]string{"title": `"X"`, "state": `"done"`})
	mustNil(t, err)
	mustNil(t, l.LandValues(t.Context(), ledger.LandParams{Key: key("k"), Sent: map[string]string{"title": `"X"`, "state": `"done"`}, Held: map[string]string{"title": `"X "`}, At: t0.Add(time.Second), Version: t0}))
	c := lookup(t, l, key("k"))
	if got := ledger.Pending(c.Values["title"]); len(got) != 2 || got[0] != `"X"` || got[1] != `"X "` {
		t.Fatalf("landed title values %q, want the sent value then the held one", got)
	}
	mustNil(t, l.SupersedeValues(t.Context(), key("k"), []string{"title"}, t0.Add(2*time.Second)))
	c = lookup(t, l, key("k"))
	if _, ok := c.Values["title"]; ok {
		t.Fatalf("title values %q left after a later read superseded them", c.Values["title"])
	}
	if !ledger.IsPending(c.Values["state"], `"done"`) {
		t.Fatalf("state values %q: a field the read did not supersede keeps its values", c.Values["state"])
	}
}

// A value whose write was not answered before the read was sent (in
// flight, or its answer lost), or was answered at or after it, may still
// be read back: it stays.
func supersedeKeepsUnlanded(t *testing.T, l ledger.Ledger) {
	claim(t, l, key("k"), "", t0)
	_, err := l.SetValues(t.Context(), key("k"), map[string]string{"title": `"A"`})
	mustNil(t, err)
	mustNil(t, l.LandValues(t.Context(), ledger.LandParams{Key: key("k"), Sent: map[string]string{"title": `"A"`}, At: t0.Add(3 * time.Second)}))
	_, err = l.SetValues(t.Context(), key("k"), map[string]string{"title": `"B"`})
	mustNil(t, err)
	mustNil(t, l.SupersedeValues(t.Context(), key("k"), []string{"title"}, t0.Add(3*time.Second)))
	if got := ledger.Pending(lookup(t, l, key("k")).Values["title"]); len(got) != 2 || got[0] != `"A"` || got[1] != `"B"` {
		t.Fatalf("title values %q, want A (landed as the read was sent) and B (in flight) kept", got)
	}
	if err := l.SupersedeValues(t.Context(), key("none"), []string{"title"}, t0); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("SupersedeValues of a key with no row: %v, want ErrNotFound", err)
	}
	if err := l.LandValues(t.Context(), ledger.LandParams{Key: key("none"), Sent: map[string]string{"title": `"A"`}, At: t0}); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("LandValues of a key with no row: %v, want ErrNotFound", err)
	}
}
