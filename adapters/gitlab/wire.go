package gitlab

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
)

// wireAuthor is a user as GitLab's entities name one (author, closed_by,
// a note's author; GET /user).
type wireAuthor struct {
	ID       int64  `json:"id"`
	Username string `json:"username"`
}

// wireProject is the part of GET /projects/:id the driver reads.
type wireProject struct {
	ID                int64  `json:"id"`
	PathWithNamespace string `json:"path_with_namespace"`
	WebURL            string `json:"web_url"`
}

// wireIssue is the part of GitLab's issue entity the driver reads
// (doc/api/issues.md). Times come to the millisecond, in Z or a local
// offset (§7); encoding/json reads both.
type wireIssue struct {
	ID          int64       `json:"id"`
	IID         int64       `json:"iid"`
	ProjectID   int64       `json:"project_id"`
	Title       string      `json:"title"`
	Description *string     `json:"description"` // null when none
	State       string      `json:"state"`
	Labels      []string    `json:"labels"`
	Author      *wireAuthor `json:"author"`
	ClosedBy    *wireAuthor `json:"closed_by"`
	CreatedAt   time.Time   `json:"created_at"`
	UpdatedAt   time.Time   `json:"updated_at"`
	ClosedAt    *time.Time  `json:"closed_at"`
	MovedToID   *int64      `json:"moved_to_id"`
	IssueType   string      `json:"issue_type"`
	WebURL      string      `json:"web_url"`
}

// valid: an issue has ids, a state GitLab has, and an update time.
func (w wireIssue) valid() bool {
	return w.ID > 0 && w.IID > 0 && (w.State == "opened" || w.State == "closed") && !w.UpdatedAt.IsZero()
}

// wireNote is the part of a note the driver reads (doc/api/notes.md).
type wireNote struct {
	ID        int64       `json:"id"`
	Body      string      `json:"body"`
	Author    *wireAuthor `json:"author"`
	CreatedAt time.Time   `json:"created_at"`
	System    bool        `json:"system"`
}

func decode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

// item maps an issue onto the port's item: its iid is its id, its marker
// (under this workspace's source) its key, taken out of its description
// with the escapes of quick actions; the state labels are its state, not
// its labels.
func (d *Driver) item(w wireIssue) tracker.Item {
	text := ""
	if w.Description != nil {
		text = *w.Description
	}
	key, desc := d.marker.Unmark(text)
	if key == "" {
		// A marker of another workspace (an issue moved here from a
		// project another binding files into) is no part of the text.
		_, desc = foreignMarker(desc)
	}
	iid := strconv.FormatInt(w.IID, 10)
	ref := tracker.ItemRef{ID: iid, Number: w.IID, Name: "#" + iid, Key: key}
	ref.Link = d.Link(ref)
	labels := make([]string, 0, len(w.Labels))
	for _, l := range w.Labels {
		if !d.cfg.Labels.isState(l) {
			labels = append(labels, l)
		}
	}
	it := tracker.Item{Ref: ref, Title: w.Title, Description: unescapeQuick(desc), State: d.cfg.Labels.stateOf(w.State, w.Labels),
		Labels: labels, UpdatedAt: w.UpdatedAt.UTC(), CreatedAt: w.CreatedAt.UTC()}
	// GitLab's issue names no last updater (the hooks' updated_by_id
	// alone does, §10): where its last change was its closing, or its
	// making, the one who did it is named.
	switch {
	case w.ClosedAt != nil && w.ClosedBy != nil && w.ClosedAt.Equal(w.UpdatedAt):
		it.UpdatedBy = w.ClosedBy.Username
	case w.Author != nil && w.CreatedAt.Equal(w.UpdatedAt):
		it.UpdatedBy = w.Author.Username
	}
	return it
}

// markerLine is a relayr marker line of any source (tracker.HiddenMarker).
var markerLine = regexp.MustCompile(`^<!-- lattice-key: [^\s<>]+ -->$`)

// foreignMarker splits a description whose last line is a relayr marker
// (of another source than the driver's, which Unmark took already) into
// that line and the text before it, without the blank line Mark puts
// before it; line is "" for any other description.
func foreignMarker(desc string) (line, rest string) {
	last, before := desc, ""
	if i := strings.LastIndexByte(desc, '\n'); i >= 0 {
		last, before = desc[i+1:], desc[:i+1]
	}
	if !markerLine.MatchString(strings.TrimSpace(last)) {
		return "", desc
	}
	for _, sep := range []string{"\r\n\r\n", "\n\n", "\r\n", "\n"} {
		if r, cut := strings.CutSuffix(before, sep); cut {
			return strings.TrimSpace(last), r
		}
	}
	return strings.TrimSpace(last), before
}

// comment maps a note onto the port's comment.
func (d *Driver) comment(iid string, w wireNote) tracker.Comment {
	key, body := d.marker.Unmark(w.Body)
	c := tracker.Comment{ID: strconv.FormatInt(w.ID, 10), ItemID: iid, Body: unescapeQuick(body), Key: key, CreatedAt: w.CreatedAt.UTC()}
	if w.Author != nil {
		c.Author = w.Author.Username
	}
	return c
}
