package vikunja

import (
	"html"
	"regexp"
	"strings"

	"github.com/relayr-go/relayr/core/tracker"
)

// MarkerLabel starts the line that names the key an item or a comment was
// filed under (ADR-0033): "lattice-key: <namespace>:<tenant>/<workspace>/<key>".
const MarkerLabel = "lattice-key:"

// Marker renders the marker line for key under source.
func Marker(source tracker.Source, key string) string {
	return MarkerLabel + " " + source.String() + "/" + key
}

// htmlTag ends a marker's value where the web editor wrapped it in markup.
var htmlTag = regexp.MustCompile(`(?i)</?(p|br|div|span|strong|em|code|b|i|u|li|ul|ol)\b[^>]*>`)

// ParseMarkers answers the value of every marker in text ("lattice:t/w/k"),
// in order: plain text or HTML as Vikunja's web editor writes it, a marker
// typed twice answering twice. It never fails; text without a marker
// answers nil.
func ParseMarkers(text string) []string {
	var out []string
	rest := text
	for {
		i := strings.Index(rest, MarkerLabel)
		if i < 0 {
			return out
		}
		rest = rest[i+len(MarkerLabel):]
		v := rest
		if j := strings.IndexAny(v, "\r\n"); j >= 0 {
			v = v[:j]
		}
		if loc := htmlTag.FindStringIndex(v); loc != nil {
			v = v[:loc[0]]
		}
		v = strings.TrimSpace(html.UnescapeString(strings.ReplaceAll(v, "&nbsp;", " ")))
		if v != "" {
			out = append(out, v)
		}
	}
}

// KeyOf answers the key text was filed under by source: the first marker
// naming source. Markers of other sources (another workspace binding the
// same project) don't count.
func KeyOf(text string, source tracker.Source) (string, bool) {
	prefix := source.String() + "/"
	for _, v := range ParseMarkers(text) {
		if k, ok := strings.CutPrefix(v, prefix); ok && k != "" {
			return k, true
		}
	}
	return "", false
}

// withMarker appends key's marker to body, on a line of its own.
func withMarker(body string, source tracker.Source, key string) string {
	m := Marker(source, key)
	if strings.TrimSpace(body) == "" {
		return m
	}
	return strings.TrimRight(body, "\n") + "\n\n" + m
}

// stripMarker takes key's marker back out of text, as withMarker put it in
// or as the web editor may have rewrapped it, so a body reads back as it
// was filed.
func stripMarker(text string, source tracker.Source, key string) string {
	m := Marker(source, key)
	if rest, ok := strings.CutSuffix(text, "\n\n"+m); ok {
		return rest
	}
	if text == m {
		return ""
	}
	for _, wrapped := range []string{"<p>" + m + "</p>", "<p>" + html.EscapeString(m) + "</p>"} {
		if strings.Contains(text, wrapped) {
			return strings.TrimSpace(strings.Replace(text, wrapped, "", 1))
		}
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) == m {
			lines = append(lines[:i], lines[i+1:]...)
			return strings.TrimRight(strings.Join(lines, "\n"), "\n")
		}
	}
	return text
}
