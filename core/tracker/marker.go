package tracker

import (
	"net/url"
	"strings"
)

// HiddenMarker marks a body with the key relayr filed it under, for a
// tracker that keeps Markdown as sent and has no field for a key (Gitea,
// GitHub): a hidden HTML comment on the body's last line,
// "<!-- lattice-key: <source>/<key> -->" (ADR-0033), which the tracker
// renders as nothing. The key is percent-escaped, every byte outside a
// small safe set, so that no key can end the comment early ("--", ">") or
// be taken for markup: a key reads back as it was filed, whatever its
// characters, and a driver using it declares no Rewrites.
type HiddenMarker struct{ Source Source }

const (
	hiddenOpen  = "<!-- lattice-key: "
	hiddenClose = " -->"
)

// escapeKey percent-escapes every byte of key but ASCII letters, digits
// and "/._:@+=,~".
func escapeKey(key string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.IndexByte("/._:@+=,~", c) >= 0:
			b.WriteByte(c)
		default:
			b.Write([]byte{'%', hex[c>>4], hex[c&0xf]})
		}
	}
	return b.String()
}

// Line is the marker line of key.
func (m HiddenMarker) Line(key string) string {
	return hiddenOpen + m.Tag(key) + hiddenClose
}

// Tag is key as a marker names it, "<source>/<escaped key>": for a driver
// that keeps the marker elsewhere than a hidden comment (Jira's visible
// paragraph), with the same escaping.
func (m HiddenMarker) Tag(key string) string {
	return m.Source.String() + "/" + escapeKey(key)
}

// Untag answers the key tag names under m's source, and false for a tag
// of another source or one no key escapes to.
func (m HiddenMarker) Untag(tag string) (string, bool) {
	v, ok := strings.CutPrefix(tag, m.Source.String()+"/")
	if !ok || v == "" {
		return "", false
	}
	k, err := url.PathUnescape(v)
	if err != nil || escapeKey(k) != v {
		return "", false
	}
	return k, true
}

// Mark appends key's marker to body, on a line of its own after a blank
// line.
func (m HiddenMarker) Mark(body, key string) string {
	if body == "" {
		return m.Line(key)
	}
	return body + "\n\n" + m.Line(key)
}

// Unmark answers the key text's last line names under m's source and text
// without that line and the blank line Mark put before it; text whose last
// line is no marker of this source answers no key and itself. A marker of
// another source (another workspace binding the same repository) is left
// in place. A body a person saved with \r\n line ends keeps them.
func (m HiddenMarker) Unmark(text string) (key, body string) {
	last, rest := text, ""
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		last, rest = text[i+1:], text[:i+1]
	}
	v, ok := strings.CutPrefix(strings.TrimSpace(last), hiddenOpen)
	if !ok {
		return "", text
	}
	v, ok = strings.CutSuffix(v, hiddenClose)
	if !ok {
		return "", text
	}
	k, ok := m.Untag(v)
	if !ok {
		return "", text
	}
	// rest ends with the marker line's own line end; the blank line
	// before it is Mark's.
	for _, sep := range []string{"\r\n\r\n", "\n\n", "\r\n", "\n"} {
		if r, cut := strings.CutSuffix(rest, sep); cut {
			return k, r
		}
	}
	return k, rest
}
