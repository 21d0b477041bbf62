package gitea

import (
	"net/url"
	"strings"
)

// The marker is a hidden HTML comment on the last line of an issue's or a
// comment's body, which Gitea stores verbatim and renders as nothing
// (models/issues/issue.go:L79-L80): "<!-- lattice-key: <source>/<key> -->"
// (ADR-0033). The key is percent-escaped, every byte outside a small safe
// set, so no key can end the comment early ("--", ">") or be taken for
// markup; a key therefore reads back as it was filed, whatever its
// characters, and Capabilities.Rewrites is empty.
const (
	markerOpen  = "<!-- lattice-key: "
	markerClose = " -->"
)

// escapeKey percent-escapes every byte of key but ASCII letters, digits
// and "/._:@+=,~".
func escapeKey(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.IndexByte("/._:@+=,~", c) >= 0:
			b.WriteByte(c)
		default:
			b.WriteString("%")
			b.WriteString(strings.ToUpper(hex2(c)))
		}
	}
	return b.String()
}

func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&0xf]})
}

// marker is the marker line of key under the driver's source.
func (d *Driver) marker(key string) string {
	return markerOpen + d.source.String() + "/" + escapeKey(key) + markerClose
}

// mark appends key's marker to body, on a line of its own after a blank
// line.
func (d *Driver) mark(body, key string) string {
	m := d.marker(key)
	if body == "" {
		return m
	}
	return body + "\n\n" + m
}

// unmark answers the key text's last line names under the driver's source
// and text without that line and the blank line mark put before it; text
// whose last line is no marker of this source answers no key and itself.
// A marker of another source (another workspace binding the same
// repository) is left in place. A body a person saved with \r\n line ends
// keeps them.
func (d *Driver) unmark(text string) (key, body string) {
	last, rest := text, ""
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		last, rest = text[i+1:], text[:i+1]
	}
	v, ok := strings.CutPrefix(strings.TrimSpace(last), markerOpen+d.source.String()+"/")
	if !ok {
		return "", text
	}
	v, ok = strings.CutSuffix(v, markerClose)
	if !ok || v == "" {
		return "", text
	}
	k, err := url.PathUnescape(v)
	if err != nil || escapeKey(k) != v {
		return "", text
	}
	// rest ends with the marker line's own line end; the blank line
	// before it is mark's.
	for _, sep := range []string{"\r\n\r\n", "\n\n", "\r\n", "\n"} {
		if r, cut := strings.CutSuffix(rest, sep); cut {
			return k, r
		}
	}
	return k, rest
}
