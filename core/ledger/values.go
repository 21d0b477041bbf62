package ledger

import (
	"fmt"
	"strings"
)

// MaxPending is how many of relayr's values one field keeps while none has
// been read back: enough for a burst of edits between two polls.
const MaxPending = 8

// A field's recorded values are kept oldest first, joined by newlines, which
// canonical JSON never holds. Every store applies SetPending, RestorePending
// and ConsumePending to a row's values in one transaction, so all of them
// keep this rule alike.
const pendingSep = "\n"

// Pending splits a field's recorded values, oldest first.
func Pending(recorded string) []string {
	if recorded == "" {
		return nil
	}
	return strings.Split(recorded, pendingSep)
}

// IsPending reports whether value is among a field's recorded values: read
// back, it is relayr's own write, an echo (ADR-0036: echoes dropped by value).
func IsPending(recorded, value string) bool {
	for _, v := range Pending(recorded) {
		if v == value {
			return true
		}
	}
	return false
}

// CheckValues refuses a value that would break a field's list: one holding a
// newline (canonical JSON holds none), besides what CheckText refuses.
func CheckValues(values map[string]string) error {
	for f, v := range values {
		if f == "" {
			return fmt.Errorf("%w: a value needs a field", ErrInvalid)
		}
		if strings.Contains(v, pendingSep) {
			return fmt.Errorf("%w: the value of %s holds a newline (values are canonical JSON)", ErrInvalid, f)
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
		list := Pending(vs[f])
		if n := len(list); n > 0 {
			previous[f] = list[n-1]
			if list[n-1] == v {
				continue
			}
		}
		list = append(list, v)
		if len(list) > MaxPending {
			list = list[len(list)-MaxPending:]
		}
		vs[f] = strings.Join(list, pendingSep)
	}
	return previous
}

// RestorePending takes refused values back off a row's values: the change
// never landed, so the value relayr set before it is again the last it set
// (ADR-0033: a refused edit puts back the value recorded before it).
func RestorePending(vs, refused map[string]string) {
	for f, v := range refused {
		list := Pending(vs[f])
		for i := len(list) - 1; i >= 0; i-- {
			if list[i] == v {
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
		list := Pending(vs[f])
		for i := len(list) - 1; i >= 0; i-- {
			if list[i] == v {
				put(vs, f, list[i+1:])
				break
			}
		}
	}
}

func put(vs map[string]string, f string, list []string) {
	if len(list) == 0 {
		delete(vs, f)
		return
	}
	vs[f] = strings.Join(list, pendingSep)
}

// Last answers the value relayr set on a field last, of its recorded values
// ("" when none is recorded).
func Last(recorded string) string {
	list := Pending(recorded)
	if len(list) == 0 {
		return ""
	}
	return list[len(list)-1]
}
