package ledgertest

import (
	"maps"
	"testing"

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
