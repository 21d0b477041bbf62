package linear

import (
	"regexp"
	"strings"
)

// Linear keeps a description as ProseMirror and renders it back as
// Markdown (Issue.description, "derived" from descriptionData; §0.7): runs
// of blank lines collapse, "*" and "+" bullets become "-", trailing
// whitespace goes, and an HTML comment may not survive. SameDescription
// takes two descriptions as the same where they differ by no more.

var (
	blankRuns   = regexp.MustCompile(`\n{3,}`)
	bullet      = regexp.MustCompile(`(?m)^(\s*)[*+](\s+)`)
	htmlComment = regexp.MustCompile(`(?s)<!--.*?-->`)
	trailing    = regexp.MustCompile(`(?m)[ \t]+$`)
)

// normalize is a description as Linear's round trip leaves it.
func normalize(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = htmlComment.ReplaceAllString(s, "")
	s = trailing.ReplaceAllString(s, "")
	s = bullet.ReplaceAllString(s, "$1-$2")
	s = blankRuns.ReplaceAllString(s, "\n\n")
	return strings.Trim(s, "\n")
}

// SameDescription implements tracker.DescriptionComparer.
func (d *Driver) SameDescription(set, held string) bool {
	return set == held || normalize(set) == normalize(held)
}
