// Package planehtml is the allow-list Plane's sanitizer keeps of
// description_html: nh3.clean(html, tags=ALLOWED_TAGS,
// attributes=ATTRIBUTES, url_schemes=SAFE_PROTOCOLS)
// (utils/content_validator.py:L71-159, L224-229). It lives once, for the
// Plane adapter, which compares descriptions as the sanitizer leaves them,
// and for the emulation, which sanitizes as Plane does.
package planehtml

import (
	"net/url"
	"slices"
	"strings"
)

// tags is nh3.ALLOWED_TAGS (ammonia's default tags, ammonia src/lib.rs
// Builder::default) with Plane's CUSTOM_TAGS (content_validator.py:L71-79).
var tags = []string{"a", "abbr", "acronym", "area", "article", "aside", "b", "bdi",
	"bdo", "blockquote", "br", "caption", "center", "cite", "code",
	"col", "colgroup", "data", "dd", "del", "details", "dfn", "div",
	"dl", "dt", "em", "figcaption", "figure", "footer", "h1", "h2",
	"h3", "h4", "h5", "h6", "header", "hgroup", "hr", "i", "img",
	"ins", "kbd", "li", "map", "mark", "nav", "ol", "p", "pre",
	"q", "rp", "rt", "rtc", "ruby", "s", "samp", "small", "span",
	"strike", "strong", "sub", "summary", "sup", "table", "tbody",
	"td", "th", "thead", "time", "tr", "tt", "u", "ul", "var", "wbr",
	"mention-component", "label", "input", "image-component"}

// generic is ATTRIBUTES["*"] (content_validator.py:L82-113): nh3 makes it
// ammonia's generic attributes, replacing ammonia's lang and title.
var generic = []string{"class", "id", "title", "role", "aria-label", "aria-hidden", "style", "start", "type", "xmlns",
	"data-tight", "data-node-type", "data-type", "data-checked", "data-background-color", "data-text-color",
	"data-name", "data-id", "data-icon-name", "data-icon-color", "data-background", "data-emoji-unicode",
	"data-emoji-url", "data-logo-in-use", "data-block-type"}

// perTag is the rest of ATTRIBUTES (content_validator.py:L114-156), which
// replaces ammonia's own per-tag lists.
var perTag = map[string][]string{
	"a":                 {"href", "target"},
	"image-component":   {"id", "width", "height", "aspectratio", "src", "alignment", "status"},
	"img":               {"width", "height", "aspectratio", "alignment", "src", "alt", "title"},
	"mention-component": {"id", "entity_identifier", "entity_name"},
	"th":                {"colspan", "rowspan", "colwidth", "background", "style"},
	"td":                {"colspan", "rowspan", "colwidth", "background", "textcolor", "style"},
	"tr":                {"background", "textcolor", "style"},
	"pre":               {"language"},
	"code":              {"language", "spellcheck"},
	"input":             {"type", "checked"},
}

// schemes is SAFE_PROTOCOLS (content_validator.py:L159).
var schemes = []string{"http", "https", "mailto", "tel"}

// AllowsTag reports whether the sanitizer keeps an element named tag;
// nh3 unwraps any other, keeping its content.
func AllowsTag(tag string) bool { return slices.Contains(tags, tag) }

// AllowsAttr reports whether the sanitizer keeps attribute key on an
// element named tag: one every tag may carry, or one of the tag's own.
func AllowsAttr(tag, key string) bool {
	return slices.Contains(generic, key) || slices.Contains(perTag[tag], key)
}

// AllowsURL is ammonia's check of an href or src: a relative URL (its
// url_relative passes them through), or an absolute one whose scheme is
// one of SAFE_PROTOCOLS. The sanitizer drops the attribute otherwise.
func AllowsURL(v string) bool {
	u, err := url.Parse(strings.TrimSpace(v))
	if err != nil {
		return false
	}
	return u.Scheme == "" || slices.Contains(schemes, strings.ToLower(u.Scheme))
}
