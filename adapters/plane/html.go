package plane

import (
	"errors"
	"html"
	"strings"
)

// errEmptyHTML is lxml's "Document is empty", which Plane answers with 400
// {"non_field_errors": ["Invalid HTML passed"]}.
var errEmptyHTML = errors.New("document is empty")

// normalizeHTML rewrites description_html as Plane stores it.
//
// Plane parses the value with lxml.html.fromstring and serializes it again
// (api/serializers/issue.py:L82-99, utils/content_validator.py:L211-241):
// bare text becomes <p>text</p>, a single element is kept as it is, several
// top-level elements are wrapped in one <div> when any holds a block-level
// tag and in one <span> otherwise, and "" or whitespace fails as "Document
// is empty". Text is re-escaped as lxml prints it (&, < and >). nh3's
// allow-list is not applied: tags and attributes are kept.
//
// The emulation holds the same function (fixtures/planeemu/html.go); a test
// checks that what this predicts is what the emulation stores.
func normalizeHTML(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", errEmptyHTML
	}
	nodes := topLevel(s)
	// Text before the first element opens an implied <p> that takes every
	// node up to the first block-level element (libxml2's htmlCheckParagraph).
	if len(nodes) > 0 && !nodes[0].element {
		end := len(nodes)
		for i, n := range nodes {
			if n.element && blockTags[n.tag] {
				end = i
				break
			}
		}
		var b strings.Builder
		b.WriteString("<p>")
		for _, n := range nodes[:end] {
			b.WriteString(n.raw)
		}
		b.WriteString("</p>")
		p := node{element: true, tag: "p", raw: b.String()}
		nodes = append([]node{p}, nodes[end:]...)
	}
	if len(nodes) == 0 {
		return "", errEmptyHTML
	}
	elements, texty := 0, false
	for _, n := range nodes {
		if n.element {
			elements++
		} else if strings.TrimSpace(n.raw) != "" {
			texty = true
		}
	}
	if elements == 1 && !texty {
		for _, n := range nodes {
			if n.element {
				return n.raw, nil
			}
		}
	}
	var inner strings.Builder
	block := false
	for _, n := range nodes {
		inner.WriteString(n.raw)
		if n.element && containsBlock(n.raw) {
			block = true
		}
	}
	if block {
		return "<div>" + inner.String() + "</div>", nil
	}
	return "<span>" + inner.String() + "</span>", nil
}

type node struct {
	element bool
	tag     string
	raw     string
}

// blockTags is lxml.html.defs.block_tags.
var blockTags = map[string]bool{
	"address": true, "blockquote": true, "center": true, "dir": true, "div": true,
	"dl": true, "fieldset": true, "form": true, "h1": true, "h2": true, "h3": true,
	"h4": true, "h5": true, "h6": true, "hr": true, "isindex": true, "menu": true,
	"noframes": true, "noscript": true, "ol": true, "p": true, "pre": true,
	"table": true, "ul": true,
}

// voidTags never have content or a closing tag.
var voidTags = map[string]bool{
	"area": true, "base": true, "br": true, "col": true, "embed": true, "hr": true,
	"img": true, "input": true, "link": true, "meta": true, "source": true,
	"track": true, "wbr": true,
}

func containsBlock(raw string) bool {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '<' {
			continue
		}
		name, _, _ := tagAt(raw, i)
		if blockTags[name] {
			return true
		}
	}
	return false
}

// tagAt reads the tag starting at s[i] == '<': its lower-case name, whether
// it closes, and the index just past its '>' (len(s) when unterminated).
func tagAt(s string, i int) (name string, closing bool, end int) {
	j := i + 1
	if j < len(s) && s[j] == '/' {
		closing = true
		j++
	}
	k := j
	for k < len(s) && (s[k] >= 'a' && s[k] <= 'z' || s[k] >= 'A' && s[k] <= 'Z' || s[k] >= '0' && s[k] <= '9') {
		k++
	}
	name = strings.ToLower(s[j:k])
	var quote byte
	for k < len(s) {
		c := s[k]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '>':
			return name, closing, k + 1
		}
		k++
	}
	return name, closing, len(s)
}

// topLevel splits s into its top-level nodes: runs of text (re-escaped) and
// whole elements with their content (closing tags lxml would add appended).
// Comments and stray closing tags are dropped, as the parser drops them.
func topLevel(s string) []node {
	var nodes []node
	i := 0
	for i < len(s) {
		if s[i] != '<' {
			j := strings.IndexByte(s[i:], '<')
			if j < 0 {
				j = len(s) - i
			}
			nodes = append(nodes, node{raw: escapeText(s[i : i+j])})
			i += j
			continue
		}
		if strings.HasPrefix(s[i:], "<!--") {
			j := strings.Index(s[i+4:], "-->")
			if j < 0 {
				break
			}
			i += 4 + j + 3
			continue
		}
		name, closing, end := tagAt(s, i)
		if name == "" {
			// "<" not starting a tag is text to the parser.
			nodes = append(nodes, node{raw: "&lt;"})
			i++
			continue
		}
		if closing {
			i = end
			continue
		}
		if voidTags[name] || strings.HasSuffix(s[i:end], "/>") {
			nodes = append(nodes, node{element: true, tag: name, raw: s[i:end]})
			i = end
			continue
		}
		raw, next := element(s, i)
		nodes = append(nodes, node{element: true, tag: name, raw: raw})
		i = next
	}
	return nodes
}

// element reads the element opening at s[i] through its matching close,
// re-escaping text inside and closing what the input left open.
func element(s string, i int) (string, int) {
	var b strings.Builder
	var stack []string
	for i < len(s) {
		if s[i] != '<' {
			j := strings.IndexByte(s[i:], '<')
			if j < 0 {
				j = len(s) - i
			}
			b.WriteString(escapeText(s[i : i+j]))
			i += j
			continue
		}
		name, closing, end := tagAt(s, i)
		switch {
		case name == "":
			b.WriteString("&lt;")
			i++
			continue
		case closing:
			b.WriteString(s[i:end])
			for len(stack) > 0 {
				top := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if top == name {
					break
				}
			}
		default:
			b.WriteString(s[i:end])
			if !voidTags[name] && !strings.HasSuffix(s[i:end], "/>") {
				stack = append(stack, name)
			}
		}
		i = end
		if len(stack) == 0 {
			return b.String(), i
		}
	}
	for len(stack) > 0 {
		b.WriteString("</" + stack[len(stack)-1] + ">")
		stack = stack[:len(stack)-1]
	}
	return b.String(), i
}

// escapeText prints text as lxml does: entities decoded, then &, < and >
// escaped.
func escapeText(t string) string {
	t = html.UnescapeString(t)
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(t)
}

// emptyDescription is what Plane holds for an empty description: its
// column default, and what relayr sends for "" since "" is refused (§10).
const emptyDescription = "<p></p>"

// Description is the description an item filed or patched with d reads back
// as: Plane's rewrite of d, and "" for an empty one. Record this value, not
// d, so the echo filter compares like with like (ADR-0036).
func Description(d string) string {
	n, err := normalizeHTML(d)
	if err != nil || n == emptyDescription {
		return ""
	}
	return n
}

// sendDescription is the description_html sent for d: "<p></p>" for an
// empty one, which Plane would otherwise refuse.
func sendDescription(d string) string {
	if strings.TrimSpace(d) == "" {
		return emptyDescription
	}
	return d
}

// readDescription maps a held description_html back to the port's value.
func readDescription(h string) string {
	if strings.TrimSpace(h) == emptyDescription {
		return ""
	}
	return h
}
