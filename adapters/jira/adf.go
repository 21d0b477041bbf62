package jira

import (
	"encoding/json"
	"strings"
)

// node is one node of an Atlassian Document Format document: the shape of
// every description and comment body in REST v3 (the description's
// x-atlassian-narrative.version; docs/trackers/jira.md §0.6). Attributes
// and marks are kept as read, so a document read back can be inspected,
// never rewritten by relayr.
type node struct {
	Type    string          `json:"type"`
	Version int             `json:"version,omitempty"`
	Text    string          `json:"text,omitempty"`
	Attrs   json.RawMessage `json:"attrs,omitempty"`
	Marks   json.RawMessage `json:"marks,omitempty"`
	Content []node          `json:"content,omitempty"`
}

// MarshalJSON writes a paragraph's and the document's content even when
// empty: ADF wants "content" on every block node.
func (n node) MarshalJSON() ([]byte, error) {
	type plain node
	if n.Content == nil && (n.Type == "doc" || n.Type == "paragraph") {
		return json.Marshal(struct {
			plain
			Content []node `json:"content"`
		}{plain(n), []node{}})
	}
	return json.Marshal(plain(n))
}

// document renders text as an ADF document relayr reads back as the same
// text: blocks split on blank lines become paragraphs, a line end within
// one a hardBreak. An empty text is a document with no content.
func document(text string) node {
	doc := node{Type: "doc", Version: 1, Content: []node{}}
	if text == "" {
		return doc
	}
	for _, block := range strings.Split(text, "\n\n") {
		doc.Content = append(doc.Content, paragraph(block))
	}
	return doc
}

// paragraph is one block of text: its lines joined by hardBreaks.
func paragraph(block string) node {
	p := node{Type: "paragraph"}
	for i, line := range strings.Split(block, "\n") {
		if i > 0 {
			p.Content = append(p.Content, node{Type: "hardBreak"})
		}
		if line != "" {
			p.Content = append(p.Content, node{Type: "text", Text: line})
		}
	}
	return p
}

// plainText reads an ADF document back as text: blocks separated by a
// blank line, a hardBreak a line end, list items a line each, mentions,
// emoji, dates and cards by the text a person sees. It reads any
// document a person's editor makes without failing; what it cannot show
// as text (media, a table's layout) it leaves out.
func plainText(doc node) string {
	var blocks []string
	for _, n := range doc.Content {
		blocks = append(blocks, blockText(n))
	}
	return strings.Join(blocks, "\n\n")
}

// blockText is one block node's text.
func blockText(n node) string {
	switch n.Type {
	case "bulletList", "orderedList", "taskList", "decisionList":
		var lines []string
		for _, item := range n.Content {
			lines = append(lines, "- "+strings.ReplaceAll(childrenText(item), "\n\n", "\n"))
		}
		return strings.Join(lines, "\n")
	case "table", "tableRow", "blockquote", "panel", "expand", "nestedExpand", "layoutSection", "layoutColumn", "bodiedExtension":
		var parts []string
		for _, c := range n.Content {
			if t := blockText(c); t != "" {
				parts = append(parts, t)
			}
		}
		return strings.Join(parts, "\n\n")
	}
	return inlineText(n)
}

// childrenText is the text of a node's block children.
func childrenText(n node) string {
	var parts []string
	for _, c := range n.Content {
		parts = append(parts, blockText(c))
	}
	return strings.Join(parts, "\n\n")
}

// inlineText is the text of a node holding inline content (a paragraph,
// a heading, a code block) or of one inline node.
func inlineText(n node) string {
	switch n.Type {
	case "text":
		return n.Text
	case "hardBreak":
		return "\n"
	case "mention", "emoji", "date", "status", "inlineCard", "placeholder":
		var a struct {
			Text      string `json:"text"`
			ShortName string `json:"shortName"`
			URL       string `json:"url"`
		}
		_ = json.Unmarshal(n.Attrs, &a) // an attribute missing or odd reads as none
		switch {
		case a.Text != "":
			return a.Text
		case a.ShortName != "":
			return a.ShortName
		}
		return a.URL
	}
	var b strings.Builder
	for _, c := range n.Content {
		if isBlock(c.Type) {
			if b.Len() > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString(blockText(c))
			continue
		}
		b.WriteString(inlineText(c))
	}
	return b.String()
}

func isBlock(t string) bool {
	switch t {
	case "paragraph", "heading", "codeBlock", "bulletList", "orderedList", "blockquote", "panel", "table", "rule", "mediaSingle", "mediaGroup", "taskList", "decisionList", "expand":
		return true
	}
	return false
}

// parseDocument reads an ADF field as Jira answers it: a document, null
// for none (""), and, from a tracker answering REST v2's strings, the
// string itself.
func parseDocument(raw json.RawMessage) (node, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return node{Type: "doc"}, true
	}
	var doc node
	if err := json.Unmarshal(raw, &doc); err == nil {
		return doc, doc.Type == "doc" || doc.Type == ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return document(s), true
	}
	return node{}, false
}

// markerPrefix starts the paragraph that names the key an issue or a
// comment was filed under (ADR-0033): visible to a person, the last
// paragraph of the body.
const markerPrefix = "lattice-key: "

// withMarker appends the marker paragraph of tag to doc.
func withMarker(doc node, tag string) node {
	doc.Content = append(doc.Content, node{Type: "paragraph", Content: []node{{Type: "text", Text: markerPrefix + tag}}})
	return doc
}

// cutMarker answers the tag of the document's last paragraph, when it is
// a marker, and the document without it.
func cutMarker(doc node) (string, node) {
	n := len(doc.Content)
	if n == 0 || doc.Content[n-1].Type != "paragraph" {
		return "", doc
	}
	tag, ok := strings.CutPrefix(strings.TrimSpace(inlineText(doc.Content[n-1])), markerPrefix)
	if !ok {
		return "", doc
	}
	rest := doc
	rest.Content = doc.Content[:n-1]
	return tag, rest
}
