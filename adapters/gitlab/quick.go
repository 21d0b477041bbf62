package gitlab

import "strings"

// GitLab executes a quick action on a line of a description or a note that
// starts with "/" and names a command ("/close", "/label ~x"), and strips
// the line from what it keeps (app/services/issuable_base_service.rb
// handle_quick_actions, lib/api/notes.rb; docs/trackers/gitlab.md §0.9).
// Text relayr sends must reach GitLab as it was written, never run: each
// line starting with "/" is sent with a backslash before it, which
// Markdown renders as nothing ("\/" is an escaped slash), and which no
// quick action reads. To read every text back as it was sent, a line that
// starts with a backslash before "/" or "\" is escaped too; reading drops
// the one backslash from each line starting so. A person's own "\/" reads
// as "/", as GitLab renders it.

// escapeQuick escapes the lines of s that GitLab would take for a quick
// action, and those that would read back as one.
func escapeQuick(s string) string {
	if !strings.Contains(s, "/") && !strings.Contains(s, `\`) {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "/") || strings.HasPrefix(l, `\/`) || strings.HasPrefix(l, `\\`) {
			lines[i] = `\` + l
		}
	}
	return strings.Join(lines, "\n")
}

// unescapeQuick undoes escapeQuick.
func unescapeQuick(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, `\/`) || strings.HasPrefix(l, `\\`) {
			lines[i] = l[1:]
		}
	}
	return strings.Join(lines, "\n")
}
