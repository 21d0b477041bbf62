package ledger

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MaxPending is how many of relayr's values one field keeps while none has
// been read back: enough for a burst of edits between two polls.
const MaxPending = 8

// A field's recorded values are kept oldest first, joined by newlines, which
// canonical JSON never holds. A value whose write the tracker answered is
// marked landed: a tab, which canonical JSON never holds raw either, and
// the time of the answer in Unix nanoseconds, then, where the tracker said,
// another tab and the item's version in its answer. Every store applies
// SetPending, RestorePending, ConsumePending, LandPending and
// SupersedePending to a row's values in one transaction (Store, through
// Driver.ChangeValues), so all of them keep this rule alike.
const (
	pendingSep = "\n"
	landedSep  = "\t"
)

// entry is one recorded value, when its write landed (zero while it has
// not, or nobody knows), and the item's version the tracker answered that
// write with (zero when unknown).
type entry struct {
	value   string
	landed  time.Time
	version time.Time
}

func entries(recorded string) []entry {
	if recorded == "" {
		return nil
	}
	list := strings.Split(recorded, pendingSep)
	out := make([]entry, len(list))
	for i, e := range list {
		v, marks, ok := strings.Cut(e, landedSep)
		out[i].value = v
		if !ok {
			continue
		}
		at, version, _ := strings.Cut(marks, landedSep)
		if n, err := strconv.ParseInt(at, 10, 64); err == nil {
			out[i].landed = time.Unix(0, n).UTC()
		}
		if n, err := strconv.ParseInt(version, 10, 64); err == nil {
			out[i].version = time.Unix(0, n).UTC()
		}
	}
	return out
}

func put(vs map[string]string, f string, list []entry) {
	if len(list) == 0 {
		delete(vs, f)
		return
	}
	parts := make([]string, len(list))
	for i, e := range list {
		parts[i] = e.value
		if !e.landed.IsZero() {
			parts[i] += landedSep + strconv.FormatInt(e.landed.UnixNano(), 10)
			if !e.version.IsZero() {
				parts[i] += landedSep + strconv.FormatInt(e.version.UnixNano(), 10)
			}
		}
	}
	vs[f] = strings.Join(parts, pendingSep)
}

// Pending splits a field's recorded values, oldest first.
func Pending(recorded string) []string {
	list := entries(recorded)
	if list == nil {
		return nil
	}
	out := make([]string, len(list))
	for i, e := range list {
		out[i] = e.value
	}
	return out
}

// IsPending reports whether value is among a field's recorded values: read
// back, it is relayr's own write, an echo (ADR-0036: echoes dropped by value).
func IsPending(recorded, value string) bool {
	for _, e := range entries(recorded) {
		if e.value == value {
			return true
		}
	}
	return false
}

// CheckValues refuses a value that would break a field's list: one holding a
// newline or a tab (canonical JSON holds neither raw), besides what
// CheckText refuses.
func CheckValues(values map[string]string) error {
	for f, v := range values {
		if f == "" {
			return fmt.Errorf("%w: a value needs a field", ErrInvalid)
		}
		if strings.Contains(v, pendingSep) || strings.Contains(v, landedSep) {
			return fmt.Errorf("%w: the value of %s holds a newline or a tab (values are canonical JSON)", ErrInvalid, f)
		}
		if err := CheckText(f, v); err != nil {
			return err
		}
	}
	return nil
}

// SetPending records values on a row's values vs, each after the field's
// earlier ones (the newest MaxPending kept), and answers the value each
// field held last before, for fields that held one.
func SetPending(vs, values map[string]string) (previous map[string]string) {
	previous = map[string]string{}
	for f, v := range values {
		list := entries(vs[f])
		if n := len(list); n > 0 {
			previous[f] = list[n-1].value
			if list[n-1].value == v {
				continue
			}
		}
		list = append(list, entry{value: v})
		if len(list) > MaxPending {
			list = list[len(list)-MaxPending:]
		}
		put(vs, f, list)
	}
	return previous
}

// RestorePending takes refused values back off a row's values: the change
// never landed, so the value relayr set before it is again the last it set
// (ADR-0033: a refused edit puts back the value recorded before it).
func RestorePending(vs, refused map[string]string) {
	for f, v := range refused {
		list := entries(vs[f])
		for i := len(list) - 1; i >= 0; i-- {
			if list[i].value == v {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		put(vs, f, list)
	}
}

// ConsumePending consumes values read back as echoes: each, and every value
// of its field recorded before it (the tracker holds a later one), leaves
// the list; values recorded since (an edit still on its way) stay, or their
// read back would pass for a person's change.
func ConsumePending(vs, values map[string]string) {
	for f, v := range values {
		list := entries(vs[f])
		for i := len(list) - 1; i >= 0; i-- {
			if list[i].value == v {
				put(vs, f, list[i+1:])
				break
			}
		}
	}
}

// LandPending marks the values of a write the tracker answered as landed
// at at, with the item's version in the answer (zero when unknown): the
// newest of each field's recorded values equal to it, or, for a value the
// write did not record (the tracker answered it holds another: Plane trims
// a title), the value recorded after the others.
func LandPending(vs, values map[string]string, at, version time.Time) {
	for f, v := range values {
		list := entries(vs[f])
		i := len(list) - 1
		for i >= 0 && list[i].value != v {
			i--
		}
		if i < 0 {
			list = append(list, entry{value: v})
			if len(list) > MaxPending {
				list = list[len(list)-MaxPending:]
			}
			i = len(list) - 1
		}
		list[i].landed, list[i].version = at, version
		put(vs, f, list)
	}
}

// SupersedePending drops the fields' values whose writes landed before
// before: the follower read a person's value for the field with a request
// sent after those writes were answered, so the tracker holds a later value
// than theirs and they will never be read back. Kept, one would drop a
// person's later change to it as an echo (ADR-0036: "kept, it would drop a
// person's later change to it"). A value not known to have landed, or
// landed since, may still be read back and stays.
func SupersedePending(vs map[string]string, fields []string, before time.Time) {
	for _, f := range fields {
		list := entries(vs[f])
		kept := list[:0]
		for _, e := range list {
			if e.landed.IsZero() || !e.landed.Before(before) {
				kept = append(kept, e)
			}
		}
		put(vs, f, kept)
	}
}

// Last answers the value relayr set on a field last, of its recorded values
// ("" when none is recorded).
func Last(recorded string) string {
	list := entries(recorded)
	if len(list) == 0 {
		return ""
	}
	return list[len(list)-1].value
}

// HeldBetween answers the newest of a field's recorded values whose write
// the tracker answered with a version strictly after after and strictly
// before before: the tracker held that value after the version a
// follower last read and before the one it reads now. A follower that
// reads a value that is none of relayr's then knows the field changed
// from it, though no read showed it (ADR-0036's departures: relayr moved
// an item to started, a person moved it back to todo before any read). A
// version equal to either bound (a tracker keeping time to the second)
// tells nothing, and counts for none.
func HeldBetween(recorded string, after, before time.Time) (string, bool) {
	list := entries(recorded)
	for i := len(list) - 1; i >= 0; i-- {
		if e := list[i]; !e.landed.IsZero() && !e.version.IsZero() && e.version.After(after) && e.version.Before(before) {
			return e.value, true
		}
	}
	return "", false
}
