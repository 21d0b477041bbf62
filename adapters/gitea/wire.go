package gitea

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/forge"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// wireIssue is the part of Gitea's api.Issue the driver reads
// (modules/structs/issue.go:L46-L85). Missing and null fields read as zero
// values.
type wireIssue struct {
	ID          int64            `json:"id"`
	Number      int64            `json:"number"`
	Title       string           `json:"title"`
	Body        string           `json:"body"`
	State       string           `json:"state"`
	Labels      []wireLabel      `json:"labels"`
	User        *wireUser        `json:"user"`
	HTMLURL     string           `json:"html_url"`
	CreatedAt   time.Time        `json:"created_at"`
	UpdatedAt   time.Time        `json:"updated_at"`
	PullRequest *json.RawMessage `json:"pull_request"`
}

type wireLabel struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

type wireUser struct {
	Login string `json:"login"`
}

type wireComment struct {
	ID        int64     `json:"id"`
	Body      string    `json:"body"`
	User      *wireUser `json:"user"`
	CreatedAt time.Time `json:"created_at"`
	// IssueURL is the issue's page, "" on a pull request's comment
	// (models/issues/comment.go:L470-L487).
	IssueURL string `json:"issue_url"`
}

// issueNumber answers the number of the issue a comment of the
// repository-wide list is on, from the end of its issue_url
// ("…/owner/repo/issues/7"), and false for a pull request's comment.
func (w wireComment) issueNumber() (int64, bool) { return forge.IssueNumber(w.IssueURL) }

var errNoID = errors.New("a comment without an id")

// decodeIssue reads one issue. A 2xx answer of id 0 is an error: Gitea's
// converter answers an empty issue when loading its parts failed
// (services/convert/issue.go:L35-L50).
func decodeIssue(b []byte) (wireIssue, error) { return trackerhttp.Decode(b, wireIssue.valid) }

func decodeIssues(b []byte) ([]wireIssue, error) { return trackerhttp.DecodeAll(b, wireIssue.valid) }

// valid: an issue has an id and a number.
func (w wireIssue) valid() bool { return w.ID > 0 && w.Number > 0 }

// pull reports whether an issue of the list is a pull request: it has a
// pull_request object (services/convert/issue.go:L105-L120).
func (w wireIssue) pull() bool {
	return w.PullRequest != nil && strings.TrimSpace(string(*w.PullRequest)) != "null"
}

// item maps an issue onto the port's item: its number is its id, its
// marker (under this workspace's source) its key, and the marker is taken
// out of its description.
func (d *Driver) item(w wireIssue) tracker.Item {
	key, desc := d.marker.Unmark(w.Body)
	ref := tracker.ItemRef{ID: strconv.FormatInt(w.Number, 10), Number: w.Number, Name: "#" + strconv.FormatInt(w.Number, 10), Key: key}
	ref.Link = d.Link(ref)
	state := tracker.Todo
	if w.State == "closed" {
		state = tracker.Done
	}
	labels := make([]string, 0, len(w.Labels))
	for _, l := range w.Labels {
		labels = append(labels, l.Name)
		d.know(l)
	}
	return tracker.Item{Ref: ref, Title: w.Title, Description: desc, State: state, Labels: labels, UpdatedAt: w.UpdatedAt.UTC(), CreatedAt: w.CreatedAt.UTC()}
}

func (d *Driver) comment(issue int64, w wireComment) tracker.Comment {
	key, body := d.marker.Unmark(w.Body)
	c := tracker.Comment{ID: strconv.FormatInt(w.ID, 10), ItemID: strconv.FormatInt(issue, 10), Body: body, Key: key, CreatedAt: w.CreatedAt.UTC()}
	if w.User != nil {
		c.Author = w.User.Login
	}
	return c
}
