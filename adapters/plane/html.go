package plane

import (
	"net/url"
	"sort"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/relayr-go/relayr/adapters/plane/planehtml"
)

// Plane stores description_html rewritten: lxml parses and re-serializes
// it, then nh3 sanitizes it (api/serializers/issue.py:L83-99,
// utils/content_validator.py:L71-243). relayr records the description in
// Plane's answer to a create or an edit, which is what Plane holds; for a
// write whose answer never came only what relayr sent is recorded, and
// SameDescription tells the follower whether a description read back is
// that one as Plane's rewriting leaves it.

// emptyDescription is what Plane holds for an empty description: its
// column default, and what relayr sends for "" since "" is refused (§10).
const emptyDescription = "<p></p>"

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

// SameDescription implements tracker.DescriptionComparer: set, a
// description relayr sent, and held, one read back, are the same once both
// are read as Plane's sanitizer leaves them (CanonicalDescription).
func (t *Driver) SameDescription(set, held string) bool { return SameDescription(set, held) }

// SameDescription reports whether two descriptions are the same as Plane
// holds them: equal, or with the same CanonicalDescription.
func SameDescription(a, b string) bool {
	return a == b || CanonicalDescription(a) == CanonicalDescription(b)
}

// wrappers are the elements lxml wraps a fragment in (<p> around text, <div>
// or <span> around several nodes) or closes early; without attributes
// they compare as nothing, <p> and <div> as a break between blocks.
var wrappers = map[string]bool{"p": true, "div": true, "span": false}

// CanonicalDescription is a description as Plane's rewriting cannot tell
// apart from another: parsed as HTML, comments, scripts and styles dropped,
// tags outside nh3's allow-list (planehtml) unwrapped, attributes filtered
// to the allow-list and sorted, rel dropped (nh3 sets its own), URLs unescaped,
// attribute-less <p>, <div> and <span> wrappers dropped (a <p> or <div>
// leaves a break), whitespace collapsed. Text and the structure of
// everything else must match.
func CanonicalDescription(d string) string {
	d = readDescription(d)
	ctx := &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div}
	nodes, err := html.ParseFragment(strings.NewReader(d), ctx)
	if err != nil {
		return d
	}
	var toks []string
	for _, n := range nodes {
		canon(&toks, n)
	}
	// Collapse breaks and blanks; no blank beside a break, none at the
	// ends.
	var out []string
	for _, t := range toks {
		switch t {
		case "|":
			for len(out) > 0 && out[len(out)-1] == " " {
				out = out[:len(out)-1]
			}
			if len(out) == 0 || out[len(out)-1] == "|" {
				continue
			}
		case " ":
			if len(out) == 0 || out[len(out)-1] == "|" || out[len(out)-1] == " " {
				continue
			}
		}
		out = append(out, t)
	}
	for len(out) > 0 && (out[len(out)-1] == "|" || out[len(out)-1] == " ") {
		out = out[:len(out)-1]
	}
	return strings.Join(out, "")
}

func canon(toks *[]string, n *html.Node) {
	switch n.Type {
	case html.TextNode:
		words := strings.Fields(n.Data)
		if len(words) == 0 {
			if n.Data != "" {
				*toks = append(*toks, " ")
			}
			return
		}
		if first, _ := utf8First(n.Data); isSpace(first) {
			*toks = append(*toks, " ")
		}
		for i, w := range words {
			if i > 0 {
				*toks = append(*toks, " ")
			}
			*toks = append(*toks, escape(w))
		}
		if last := n.Data[len(n.Data)-1]; isSpace(rune(last)) {
			*toks = append(*toks, " ")
		}
		return
	case html.ElementNode:
	default:
		return
	}
	name := n.Data
	if n.Namespace != "" {
		name = ""
	}
	if name == "script" || name == "style" {
		return
	}
	var attrs []string
	for _, a := range n.Attr {
		if a.Namespace != "" || !planehtml.AllowsAttr(name, a.Key) {
			continue
		}
		v := a.Val
		if a.Key == "href" || a.Key == "src" {
			if !planehtml.AllowsURL(v) {
				continue
			}
			if u, err := url.PathUnescape(strings.TrimSpace(v)); err == nil {
				v = u
			}
		}
		attrs = append(attrs, a.Key+"="+escape(v))
	}
	block, isWrapper := wrappers[name]
	switch {
	case !planehtml.AllowsTag(name) || isWrapper && len(attrs) == 0:
		if block {
			*toks = append(*toks, "|")
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			canon(toks, c)
		}
		if block {
			*toks = append(*toks, "|")
		}
		return
	}
	sort.Strings(attrs)
	*toks = append(*toks, "<"+name+" "+strings.Join(attrs, " ")+">")
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		canon(toks, c)
	}
	*toks = append(*toks, "</"+name+">")
}

func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "|", "&#124;", `"`, "&quot;").Replace(s)
}

func isSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' }

func utf8First(s string) (rune, bool) {
	for _, r := range s {
		return r, true
	}
	return 0, false
}
