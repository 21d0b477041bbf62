package tracker

import "strconv"

// PositiveID reports whether id is a positive decimal number as the
// tracker writes it (no sign, no leading zero): the shape of an issue's
// number, or a task's id.
func PositiveID(id string) bool {
	n, err := strconv.ParseInt(id, 10, 64)
	return err == nil && n > 0 && strconv.FormatInt(n, 10) == id
}
