package faketracker

import "strings"

// Sanitizing makes the fake hold descriptions as a sanitizer rewrites them,
// the way Plane's does: text outside any tag is wrapped in <p>…</p>, "<br/>"
// is written "<br>", and a link is given rel="noopener noreferrer". The fake
// then answers the rewritten description, and compares descriptions as such
// a tracker does (tracker.DescriptionComparer).
func Sanitizing() Option { return func(t *Tracker) { t.sanitize = true } }

var linkRel = strings.NewReplacer("<br/>", "<br>", "<a ", `<a rel="noopener noreferrer" `)

// held is a description as the fake holds it.
func (t *Tracker) held(d string) string {
	if !t.sanitize || strings.TrimSpace(d) == "" {
		return d
	}
	d = linkRel.Replace(strings.TrimSpace(d))
	if !strings.HasPrefix(d, "<") {
		d = "<p>" + d + "</p>"
	}
	return d
}

// SameDescription implements tracker.DescriptionComparer: set and held are
// the same once both are rewritten as the fake rewrites them and a rel
// attribute is dropped. A fake that doesn't sanitize compares them equal.
func (t *Tracker) SameDescription(set, held string) bool {
	if !t.sanitize {
		return set == held
	}
	norm := func(d string) string {
		d = strings.ReplaceAll(t.held(d), ` rel="noopener noreferrer"`, "")
		return strings.TrimSuffix(strings.TrimPrefix(d, "<p>"), "</p>")
	}
	return norm(set) == norm(held)
}
