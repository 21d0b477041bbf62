package github

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/forge"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// wireIssue is the part of GitHub's issue object the driver reads
// (components.schemas.issue).
type wireIssue struct {
	ID          int64            `json:"id"`
	Number      int64            `json:"number"`
	Title       string           `json:"title"`
	Body        *string          `json:"body"`
	State       string           `json:"state"`
	StateReason *string          `json:"state_reason"`
	Labels      []wireLabel      `json:"labels"`
	HTMLURL     string           `json:"html_url"`
	RepoURL     string           `json:"repository_url"`
	UpdatedAt   time.Time        `json:"updated_at"`
	CreatedAt   time.Time        `json:"created_at"`
	PullRequest *json.RawMessage `json:"pull_request"`
}

type wireLabel struct {
	Name string `json:"name"`
}

type wireComment struct {
	ID        int64                   `json:"id"`
	Body      string                  `json:"body"`
	User      *struct{ Login string } `json:"user"`
	CreatedAt time.Time               `json:"created_at"`
	// IssueURL is the API URL of the issue or pull request it is on
	// (".../issues/7"); HTMLURL its page, ".../pull/7#..." on a pull
	// request (components.schemas.issue-comment).
	IssueURL string `json:"issue_url"`
	HTMLURL  string `json:"html_url"`
}

// issueNumber answers the number of the issue a comment of the
// repository-wide list is on, and false for a pull request's.
func (w wireComment) issueNumber() (int64, bool) {
	if strings.Contains(w.HTMLURL, "/pull/") {
		return 0, false
	}
	return forge.IssueNumber(w.IssueURL)
}

var errNoID = errors.New("a comment without an id")

func decodeIssue(b []byte) (wireIssue, error) { return trackerhttp.Decode(b, wireIssue.valid) }

func decodeIssues(b []byte) ([]wireIssue, error) { return trackerhttp.DecodeAll(b, wireIssue.valid) }

// valid: an issue has an id and a number.
func (w wireIssue) valid() bool { return w.ID > 0 && w.Number > 0 }

// pull reports a pull request: every issues list holds them, with a
// pull_request key (paths./repos/{owner}/{repo}/issues.get).
func (w wireIssue) pull() bool { return w.PullRequest != nil && string(*w.PullRequest) != "null" }

func (w wireIssue) body() string {
	if w.Body == nil {
		return ""
	}
	return *w.Body
}

// state maps open and closed with its reason onto the port: a closing as
// not planned (or as a duplicate) is cancelled, any other closing done.
func (w wireIssue) state() tracker.State {
	if w.State != "closed" {
		return tracker.Todo
	}
	if w.StateReason != nil && (*w.StateReason == "not_planned" || *w.StateReason == "duplicate") {
		return tracker.Cancelled
	}
	return tracker.Done
}

// closing is the state and reason an item set to s is sent as.
func closing(s tracker.State) (state, reason string) {
	switch s {
	case tracker.Done:
		return "closed", "completed"
	case tracker.Cancelled:
		return "closed", "not_planned"
	}
	return "open", ""
}

// item maps an issue onto the port's item; id is the number relayr knows
// it by (a transferred issue keeps it, and its new link).
func (d *Driver) item(w wireIssue, id string) tracker.Item {
	key, desc := d.marker.Unmark(w.body())
	n, _ := strconv.ParseInt(id, 10, 64)
	ref := tracker.ItemRef{ID: id, Number: n, Name: "#" + id, Key: key}
	ref.Link = d.Link(ref)
	if d.moved(w) && w.HTMLURL != "" {
		// Transferred: the same item, now linked where it went.
		ref.Link = w.HTMLURL
	}
	labels := make([]string, 0, len(w.Labels))
	for _, l := range w.Labels {
		labels = append(labels, l.Name)
	}
	sort.Strings(labels)
	return tracker.Item{Ref: ref, Title: w.Title, Description: desc, State: w.state(), Labels: labels, UpdatedAt: w.UpdatedAt.UTC(), CreatedAt: w.CreatedAt.UTC()}
}

// moved reports an issue read in another repository than the driver's:
// one transferred, read through its 301.
func (d *Driver) moved(w wireIssue) bool {
	return w.RepoURL != "" && !strings.HasSuffix(strings.ToLower(w.RepoURL), strings.ToLower("/repos/"+d.repo.String()))
}

func (d *Driver) listed(w wireIssue) tracker.Item { return d.item(w, strconv.FormatInt(w.Number, 10)) }

// checkBody refuses a body GitHub would refuse for its length, the marker
// counted, before anything is sent.
func checkBody(field, body string) error {
	if n := utf8.RuneCountInString(body); n > MaxBody {
		return &tracker.InvalidError{Field: field, Reason: fmt.Sprintf("is %d characters with relayr's marker; GitHub keeps %d", n, MaxBody)}
	}
	return nil
}

// Find implements tracker.Driver: the issues the token's account created,
// newest first (creator=&sort=created&direction=desc&state=all), matched
// by their marker; the first page holding the key answers. GitHub's search
// lags a new issue and would answer a retaken claim "none" for an item
// just filed (docs/trackers/github.md §4). A key never filed reads every
// page of the account's issues, 100 a request.
func (d *Driver) Find(ctx context.Context, key string) (tracker.Item, error) {
	q := url.Values{"creator": {d.login}, "state": {"all"}, "sort": {"created"}, "direction": {"desc"}, "per_page": {strconv.Itoa(PerPage)}}
	req := trackerhttp.Request{Method: http.MethodGet, Path: d.repoPath("issues"), Query: q}
	var found *wireIssue
	for {
		a, err := d.do(ctx, req)
		if err != nil {
			return tracker.Item{}, err
		}
		ws, err := decodeIssues(a.Body)
		if err != nil {
			return tracker.Item{}, trackerhttp.Garbled("github", "issue list", err)
		}
		for i := range ws {
			if k, _ := d.marker.Unmark(ws[i].body()); k == key && !ws[i].pull() {
				found = &ws[i] // newest first: the last match is the first filed
			}
		}
		next := nextLink(a.Header)
		if found != nil || next == "" {
			break
		}
		req = trackerhttp.Request{Method: http.MethodGet, URL: next}
	}
	if found == nil {
		return tracker.Item{}, fmt.Errorf("github: no issue is marked with key %s: %w", tracker.Quote(key), tracker.ErrNotFound)
	}
	return d.listed(*found), nil
}

// Create implements tracker.Driver: one POST with the marked body and the
// labels by name (GitHub makes the missing ones); a done or cancelled
// draft is then closed with its reason, since a create takes no state.
// GitHub drops labels silently for a token without push access, so such a
// draft is refused before anything is filed.
func (d *Driver) Create(ctx context.Context, key string, dr tracker.Draft) (tracker.Item, error) {
	if len(dr.Labels) > 0 && !d.push {
		return tracker.Item{}, fmt.Errorf("github: the token has no push access to %s, so labels %q would be dropped: %w", d.Project(), dr.Labels, tracker.ErrRefused)
	}
	body := d.marker.Mark(dr.Description, key)
	if err := checkBody("description", body); err != nil {
		return tracker.Item{}, err
	}
	req := map[string]any{"title": dr.Title, "body": body}
	if len(dr.Labels) > 0 {
		req["labels"] = dr.Labels
	}
	a, err := d.do(ctx, trackerhttp.Request{Method: http.MethodPost, Path: d.repoPath("issues"), Body: req})
	if err != nil {
		return tracker.Item{}, err
	}
	w, err := decodeIssue(a.Body)
	if err != nil {
		return tracker.Item{}, trackerhttp.Garbled("github", "created issue", err)
	}
	id := strconv.FormatInt(w.Number, 10)
	if state, reason := closing(dr.State); state == "closed" {
		if w, err = d.patch(ctx, id, map[string]any{"state": state, "state_reason": reason}); err != nil {
			return tracker.Item{}, trackerhttp.Landed("github", "issue #"+id, "closing it", err)
		}
	}
	it := d.item(w, id)
	for _, l := range dr.Labels {
		if !slices.Contains(it.Labels, l) {
			return tracker.Item{}, trackerhttp.Landed("github", "issue #"+id, "GitHub dropped its label "+tracker.Quote(l), errors.New("labels not kept"))
		}
	}
	return it, nil
}

func (d *Driver) patch(ctx context.Context, id string, body map[string]any) (wireIssue, error) {
	a, err := d.do(ctx, trackerhttp.Request{Method: http.MethodPatch, Path: d.repoPath("issues/" + id), Body: body})
	if err != nil {
		return wireIssue{}, err
	}
	w, err := decodeIssue(a.Body)
	if err != nil {
		return wireIssue{}, trackerhttp.Garbled("github", "edited issue", err)
	}
	return w, nil
}

// Item implements tracker.Driver: one read, conditional, so an unchanged
// issue read again costs nothing of the hour. A transferred issue (301) is
// followed and stays the same item; a deleted one answers 410, not found.
func (d *Driver) Item(ctx context.Context, id string) (tracker.Item, error) {
	w, err := d.issue(ctx, id)
	if err != nil {
		return tracker.Item{}, err
	}
	return d.item(w, id), nil
}

func (d *Driver) issue(ctx context.Context, id string) (wireIssue, error) {
	a, err := d.do(ctx, trackerhttp.Request{Method: http.MethodGet, Path: d.repoPath("issues/" + id), Conditional: true})
	if err != nil {
		return wireIssue{}, err
	}
	w, err := decodeIssue(a.Body)
	if err != nil {
		return wireIssue{}, trackerhttp.Garbled("github", "issue", err)
	}
	if w.pull() {
		return wireIssue{}, fmt.Errorf("github: #%s is a pull request: %w", id, tracker.ErrNotFound)
	}
	return w, nil
}

// Update implements tracker.Driver: the issue is read and only what
// differs is sent, in one PATCH (labels replace the set). GitHub ignores
// a state_reason unless the state changes, so moving a closed issue
// between done and cancelled reopens it and closes it again with the
// other reason.
func (d *Driver) Update(ctx context.Context, id string, p tracker.Patch) (tracker.Item, error) {
	cur, err := d.issue(ctx, id)
	if err != nil {
		return tracker.Item{}, err
	}
	it := d.item(cur, id)
	edit := map[string]any{}
	if p.Title != nil && *p.Title != it.Title {
		edit["title"] = *p.Title
	}
	if p.Description != nil && *p.Description != it.Description {
		body := *p.Description
		if it.Ref.Key != "" {
			body = d.marker.Mark(body, it.Ref.Key)
		}
		if err := checkBody("description", body); err != nil {
			return tracker.Item{}, err
		}
		edit["body"] = body
	}
	if p.Labels != nil && !tracker.SameLabels(*p.Labels, it.Labels) {
		if !d.push {
			return tracker.Item{}, fmt.Errorf("github: the token has no push access to %s to set labels: %w", d.Project(), tracker.ErrRefused)
		}
		edit["labels"] = *p.Labels
	}
	reopen := false
	if p.State != nil && d.Capabilities().Holds(*p.State) != it.State {
		state, reason := closing(*p.State)
		edit["state"] = state
		if reason != "" {
			edit["state_reason"] = reason
		}
		reopen = state == "closed" && cur.State == "closed"
	}
	if len(edit) == 0 {
		return it, nil
	}
	if reopen {
		if _, err := d.patch(ctx, id, map[string]any{"state": "open"}); err != nil {
			return tracker.Item{}, err
		}
	}
	w, err := d.patch(ctx, id, edit)
	if err != nil {
		if reopen {
			return tracker.Item{}, trackerhttp.Landed("github", "issue #"+id+"'s reopening", "its edit", err)
		}
		return tracker.Item{}, err
	}
	return d.item(w, id), nil
}

// Comment implements tracker.Driver: the body with the key's marker on
// its last line.
func (d *Driver) Comment(ctx context.Context, id, key, body string) (tracker.Comment, error) {
	marked := d.marker.Mark(body, key)
	if err := checkBody("body", marked); err != nil {
		return tracker.Comment{}, err
	}
	a, err := d.do(ctx, trackerhttp.Request{Method: http.MethodPost, Path: d.repoPath("issues/" + id + "/comments"), Body: map[string]string{"body": marked}})
	if err != nil {
		return tracker.Comment{}, err
	}
	var w wireComment
	if err := json.Unmarshal(a.Body, &w); err != nil || w.ID <= 0 {
		return tracker.Comment{}, trackerhttp.Garbled("github", "comment", err)
	}
	return d.comment(id, w), nil
}

func (d *Driver) comment(id string, w wireComment) tracker.Comment {
	key, body := d.marker.Unmark(w.Body)
	c := tracker.Comment{ID: strconv.FormatInt(w.ID, 10), ItemID: id, Body: body, Key: key, CreatedAt: w.CreatedAt.UTC()}
	if w.User != nil {
		c.Author = w.User.Login
	}
	return c
}

// Comments implements tracker.Driver: the issue's comments, ascending by
// id, every page (since filters on a comment's updated_at, so those
// created before since are left out here).
func (d *Driver) Comments(ctx context.Context, id string, since time.Time) ([]tracker.Comment, error) {
	q := url.Values{"per_page": {strconv.Itoa(PerPage)}}
	if !since.IsZero() {
		q.Set("since", since.UTC().Truncate(time.Second).Format(time.RFC3339))
	}
	req := trackerhttp.Request{Method: http.MethodGet, Path: d.repoPath("issues/" + id + "/comments"), Query: q}
	var out []tracker.Comment
	for {
		a, err := d.do(ctx, req)
		if err != nil {
			return nil, err
		}
		var ws []wireComment
		if err := json.Unmarshal(a.Body, &ws); err != nil {
			return nil, trackerhttp.Garbled("github", "comment list", err)
		}
		for _, w := range ws {
			if w.ID <= 0 {
				return nil, trackerhttp.Garbled("github", "comment list", errNoID)
			}
			if c := d.comment(id, w); !c.CreatedAt.Before(since) {
				out = append(out, c)
			}
		}
		next := nextLink(a.Header)
		if next == "" {
			break
		}
		req = trackerhttp.Request{Method: http.MethodGet, URL: next}
	}
	tracker.SortComments(out)
	return out, nil
}

// ProjectComments implements tracker.ProjectCommenter over the
// repository's comment list (paths./repos/{owner}/{repo}/issues/comments.get):
// issue and pull request comments, sorted by creation, ascending, since on
// updated_at, 100 a page, Link paging. The first page's rel="last" says
// how many pages the rest take; more than reads and nothing more is read.
// Pull requests' comments are left out.
func (d *Driver) ProjectComments(ctx context.Context, since time.Time, reads int) ([]tracker.Comment, bool, error) {
	q := url.Values{"sort": {"created"}, "direction": {"asc"}, "per_page": {strconv.Itoa(PerPage)},
		"since": {since.UTC().Truncate(time.Second).Format(time.RFC3339)}}
	req := trackerhttp.Request{Method: http.MethodGet, Path: d.repoPath("issues/comments"), Query: q}
	var out []tracker.Comment
	for page := 1; ; page++ {
		a, err := d.do(ctx, req)
		if err != nil {
			return nil, false, err
		}
		if n := pages(a.Header); page == 1 && (n < 1 || n > reads) {
			return nil, false, nil
		}
		var ws []wireComment
		if err := json.Unmarshal(a.Body, &ws); err != nil {
			return nil, false, trackerhttp.Garbled("github", "repository comment list", err)
		}
		for _, w := range ws {
			if w.ID <= 0 {
				return nil, false, trackerhttp.Garbled("github", "repository comment list", errNoID)
			}
			if n, ok := w.issueNumber(); ok {
				out = append(out, d.comment(strconv.FormatInt(n, 10), w))
			}
		}
		next := nextLink(a.Header)
		if next == "" {
			break
		}
		if page >= reads {
			return nil, false, nil // more pages than the last said
		}
		req = trackerhttp.Request{Method: http.MethodGet, URL: next}
	}
	tracker.SortComments(out)
	return out, true, nil
}

// Nudge implements tracker.Driver: X-Hub-Signature-256 must be "sha256="
// and the hex HMAC-SHA256 of the raw body under secret; the project is the
// payload's repository.full_name. An issues/deleted or issues/transferred
// delivery about an issue names its number, for the follower to confirm
// by a read (a transferred issue reads as itself, followed). GitHub never
// retries a delivery; a redelivery carries the same body (and the same
// X-GitHub-Delivery), which relayr's webhook route drops as a replay.
func (d *Driver) Nudge(secret string, header http.Header, body []byte) (tracker.Nudged, error) {
	dl, err := forge.Verify(Kind, secret, "sha256=", header.Get(SignatureHeader), body)
	if err != nil {
		return tracker.Nudged{}, err
	}
	n := tracker.Nudged{Project: dl.Repo}
	if header.Get("X-Github-Event") == "issues" && (dl.Action == "deleted" || dl.Action == "transferred") && dl.Issue > 0 && !dl.Pull {
		n.Deleted = []string{strconv.FormatInt(dl.Issue, 10)}
	}
	return n, nil
}
