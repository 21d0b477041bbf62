package gitea

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/forge"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// Find implements tracker.Driver: the issues the token's user filed,
// newest first, from the database (type=issues&state=all&created_by=),
// matched by their marker; the first page holding the key answers. A
// search by q= would go through the issue indexer, which lags a new issue
// (modules/indexer/issues/indexer.go:L285-L296), and answer a retaken
// claim "none" for an item just filed. A key never filed reads every page
// of the user's issues, 50 a request.
func (d *Driver) Find(ctx context.Context, key string) (tracker.Item, error) {
	q := url.Values{"state": {"all"}, "type": {"issues"}, "created_by": {d.login}, "limit": {strconv.Itoa(PageLimit)}}
	var found *wireIssue
	for page := 1; ; page++ {
		q.Set("page", strconv.Itoa(page))
		ws, err := d.list(ctx, q)
		if err != nil {
			return tracker.Item{}, err
		}
		for i := range ws {
			if k, _ := d.marker.Unmark(ws[i].Body); k == key && !ws[i].pull() {
				// Newest first: the last match is the oldest item, the
				// one a retaken claim's predecessor filed first.
				found = &ws[i]
			}
		}
		if found != nil || len(ws) < PageLimit {
			break
		}
	}
	if found == nil {
		return tracker.Item{}, fmt.Errorf("gitea: no issue is marked with key %s: %w", tracker.Quote(key), tracker.ErrNotFound)
	}
	return d.item(*found), nil
}

// list reads one page of the repository's issue list.
func (d *Driver) list(ctx context.Context, q url.Values) ([]wireIssue, error) {
	a, err := d.cl.Do(ctx, trackerhttp.Request{Method: http.MethodGet, Path: d.repoPath("issues"), Query: q})
	if err != nil {
		return nil, err
	}
	ws, err := decodeIssues(a.Body)
	if err != nil {
		return nil, trackerhttp.Garbled("gitea", "issue list", err)
	}
	return ws, nil
}

// Create implements tracker.Driver: the labels resolved to ids (made when
// missing), then one POST with the marked body; a done or cancelled draft
// is filed closed (issue.go:L735-L744). Gitea drops labels silently for a
// token that may not write the repository's issues (issue.go:L719-L722),
// so a draft with labels is refused for such a token before anything is
// filed. The answer is Gitea's fresh read of the issue; labels it didn't
// keep make the filing ErrUnavailable (it landed), never a silent drop.
func (d *Driver) Create(ctx context.Context, key string, dr tracker.Draft) (tracker.Item, error) {
	if len(dr.Labels) > 0 && !d.writer {
		return tracker.Item{}, fmt.Errorf("gitea: the token may not label issues in %s (it needs write access to the repository's issues), so labels %q would be dropped: %w", d.Project(), dr.Labels, tracker.ErrRefused)
	}
	ids, err := d.labelIDs(ctx, dr.Labels)
	if err != nil {
		return tracker.Item{}, err
	}
	body := map[string]any{"title": dr.Title, "body": d.marker.Mark(dr.Description, key)}
	if len(ids) > 0 {
		body["labels"] = ids
	}
	if dr.State != "" && stateOf(dr.State) == "closed" {
		body["closed"] = true
	}
	a, err := d.cl.Do(ctx, trackerhttp.Request{Method: http.MethodPost, Path: d.repoPath("issues"), Body: body})
	if err != nil {
		return tracker.Item{}, err
	}
	w, err := decodeIssue(a.Body)
	if err != nil {
		return tracker.Item{}, trackerhttp.Garbled("gitea", "created issue", err)
	}
	it := d.item(w)
	if missing := tracker.MissingLabels(dr.Labels, it.Labels); len(missing) > 0 {
		return tracker.Item{}, trackerhttp.Landed("gitea", fmt.Sprintf("issue #%d", w.Number), "Gitea dropped its labels "+fmt.Sprint(missing), errors.New("labels not kept"))
	}
	return it, nil
}

// Item implements tracker.Driver: one read. A pull request of the same
// number is no item of relayr's (ErrNotFound).
func (d *Driver) Item(ctx context.Context, id string) (tracker.Item, error) {
	w, err := d.issue(ctx, id)
	if err != nil {
		return tracker.Item{}, err
	}
	return d.item(w), nil
}

func (d *Driver) issue(ctx context.Context, id string) (wireIssue, error) {
	w, _, err := trackerhttp.Read(ctx, d.cl, trackerhttp.Request{Method: http.MethodGet, Path: d.repoPath("issues/" + id)}, "issue", wireIssue.valid)
	if err != nil {
		return wireIssue{}, err
	}
	if w.pull() {
		return wireIssue{}, fmt.Errorf("gitea: #%s is a pull request: %w", id, tracker.ErrNotFound)
	}
	return w, nil
}

// Update implements tracker.Driver. It reads the issue and sends only what
// differs: a PATCH of an unchanged body still rewrites it, moves
// updated_at and fires issues/edited (services/issue/content.go:L16-L36).
// A description keeps the issue's marker. Labels are replaced as a set
// (PUT …/labels) when they differ, then the issue is read again. A patch
// that changes nothing sends nothing but the read.
func (d *Driver) Update(ctx context.Context, id string, p tracker.Patch) (tracker.Item, error) {
	cur, err := d.issue(ctx, id)
	if err != nil {
		return tracker.Item{}, err
	}
	it := d.item(cur)
	if p.Labels != nil && !d.writer && !tracker.SameLabels(*p.Labels, it.Labels) {
		return tracker.Item{}, fmt.Errorf("gitea: the token may not label issues in %s: %w", d.Project(), tracker.ErrRefused)
	}
	edit := map[string]any{}
	if p.Title != nil && *p.Title != it.Title {
		edit["title"] = *p.Title
	}
	if p.Description != nil && *p.Description != it.Description {
		body := *p.Description
		if it.Ref.Key != "" {
			body = d.marker.Mark(body, it.Ref.Key)
		}
		edit["body"] = body
	}
	if p.State != nil && stateOf(*p.State) != cur.State {
		edit["state"] = stateOf(*p.State)
	}
	edited := false
	if len(edit) > 0 {
		// PATCH answers 201 with a fresh read (issue.go:L929-L941).
		a, err := d.cl.Do(ctx, trackerhttp.Request{Method: http.MethodPatch, Path: d.repoPath("issues/" + id), Body: edit})
		if err != nil {
			return tracker.Item{}, err
		}
		w, err := decodeIssue(a.Body)
		if err != nil {
			return tracker.Item{}, trackerhttp.Garbled("gitea", "edited issue", err)
		}
		cur, edited = w, true
	}
	if p.Labels != nil && !tracker.SameLabels(*p.Labels, d.item(cur).Labels) {
		if err := d.setLabels(ctx, id, *p.Labels); err != nil {
			if edited {
				return tracker.Item{}, trackerhttp.Landed("gitea", "issue #"+id+"'s edit", "its labels", err)
			}
			return tracker.Item{}, err
		}
		w, err := d.issue(ctx, id)
		if err != nil {
			return tracker.Item{}, trackerhttp.Landed("gitea", "issue #"+id+"'s labels", "reading it back", err)
		}
		cur = w
	}
	return d.item(cur), nil
}

// setLabels replaces the issue's labels with names (issue_label.go).
func (d *Driver) setLabels(ctx context.Context, id string, names []string) error {
	ids, err := d.labelIDs(ctx, names)
	if err != nil {
		return err
	}
	_, err = d.cl.Do(ctx, trackerhttp.Request{Method: http.MethodPut, Path: d.repoPath("issues/" + id + "/labels"), Body: map[string]any{"labels": ids}})
	return err
}

// Comment implements tracker.Driver: the body with the key's marker on
// its last line. Gitea answers a comment on a missing issue with 500
// (routers/api/v1/repo/issue_comment.go:L383-L387), which a read of the
// issue tells apart from a server failing.
func (d *Driver) Comment(ctx context.Context, id, key, body string) (tracker.Comment, error) {
	n, _ := strconv.ParseInt(id, 10, 64) // checked by ValidID
	a, err := d.cl.Do(ctx, trackerhttp.Request{Method: http.MethodPost, Path: d.repoPath("issues/" + id + "/comments"), Body: map[string]string{"body": d.marker.Mark(body, key)}})
	if err != nil {
		if a.Status == http.StatusInternalServerError {
			return tracker.Comment{}, d.gone(ctx, id, err)
		}
		return tracker.Comment{}, err
	}
	var w wireComment
	if err := json.Unmarshal(a.Body, &w); err != nil || w.ID <= 0 {
		return tracker.Comment{}, trackerhttp.Garbled("gitea", "comment", err)
	}
	return d.comment(n, w), nil
}

// gone answers ErrNotFound when the issue behind a 500 is missing, and the
// 500 itself otherwise.
func (d *Driver) gone(ctx context.Context, id string, cause error) error {
	if _, err := d.issue(ctx, id); errors.Is(err, tracker.ErrNotFound) {
		return err
	}
	return cause
}

// Comments implements tracker.Driver: the issue's comments, which Gitea
// answers whole and oldest first (issue_comment.go:L27-L121, comment.go:
// L999-L1066); since filters on a comment's updated_at, so those created
// before since are left out here.
func (d *Driver) Comments(ctx context.Context, id string, since time.Time) ([]tracker.Comment, error) {
	n, _ := strconv.ParseInt(id, 10, 64) // checked by ValidID
	q := url.Values{}
	if !since.IsZero() {
		q.Set("since", since.UTC().Truncate(time.Second).Format(time.RFC3339))
	}
	a, err := d.cl.Do(ctx, trackerhttp.Request{Method: http.MethodGet, Path: d.repoPath("issues/" + id + "/comments"), Query: q})
	if err != nil {
		if a.Status == http.StatusInternalServerError {
			return nil, d.gone(ctx, id, err)
		}
		return nil, err
	}
	var ws []wireComment
	if err := json.Unmarshal(a.Body, &ws); err != nil {
		return nil, trackerhttp.Garbled("gitea", "comment list", err)
	}
	out := make([]tracker.Comment, 0, len(ws))
	for _, w := range ws {
		if w.ID <= 0 {
			return nil, trackerhttp.Garbled("gitea", "comment list", errNoID)
		}
		if c := d.comment(n, w); !c.CreatedAt.Before(since) {
			out = append(out, c)
		}
	}
	tracker.SortComments(out)
	return out, nil
}

// ProjectComments implements tracker.ProjectCommenter over the
// repository's comment list (issue_comment.go:L234-L341): comments of
// issues and pull requests, oldest first, filtered on updated_at since
// (inclusive, to the second), paged only when a page is named, at most 50
// a page, with X-Total-Count. The first page's count says how many pages
// the rest take; more than reads and nothing more is read. Pull requests'
// comments (no issue_url) are left out.
func (d *Driver) ProjectComments(ctx context.Context, since time.Time, reads int) ([]tracker.Comment, bool, error) {
	q := url.Values{"since": {since.UTC().Truncate(time.Second).Format(time.RFC3339)}, "limit": {strconv.Itoa(PageLimit)}}
	var out []tracker.Comment
	total := -1 // unknown until the first page says
	for page := 1; total < 0 || (page-1)*PageLimit < total; page++ {
		if page > reads {
			return nil, false, nil
		}
		q.Set("page", strconv.Itoa(page))
		a, err := d.cl.Do(ctx, trackerhttp.Request{Method: http.MethodGet, Path: d.repoPath("issues/comments"), Query: q})
		if err != nil {
			return nil, false, err
		}
		var ws []wireComment
		if err := json.Unmarshal(a.Body, &ws); err != nil {
			return nil, false, trackerhttp.Garbled("gitea", "repository comment list", err)
		}
		if n, err := strconv.Atoi(a.Header.Get("X-Total-Count")); page == 1 && err == nil && n >= 0 {
			if total = n; (total+PageLimit-1)/PageLimit > reads {
				return nil, false, nil
			}
		}
		for _, w := range ws {
			if w.ID <= 0 {
				return nil, false, trackerhttp.Garbled("gitea", "repository comment list", errNoID)
			}
			if n, ok := w.issueNumber(); ok {
				out = append(out, d.comment(n, w))
			}
		}
		if len(ws) < PageLimit {
			break // the last page, whatever the count said
		}
	}
	tracker.SortComments(out)
	return out, true, nil
}

// Nudge implements tracker.Driver: X-Gitea-Signature must be the hex
// HMAC-SHA256 of the raw body under secret; the project is the payload's
// repository.full_name. An issues/deleted delivery about an issue (not a
// pull request) names its number deleted, for the follower to confirm by a
// read. Deliveries are tried once and never again, so a lost one is found
// by the next poll.
func (d *Driver) Nudge(secret string, header http.Header, body []byte) (tracker.Nudged, error) {
	dl, err := forge.Verify(Kind, secret, "", header.Get(SignatureHeader), body)
	if err != nil {
		return tracker.Nudged{}, err
	}
	n := tracker.Nudged{Project: dl.Repo}
	event := header.Get("X-Gitea-Event")
	if (event == "" || event == "issues") && dl.Action == "deleted" && dl.Issue > 0 && !dl.Pull {
		n.Deleted = []string{strconv.FormatInt(dl.Issue, 10)}
	}
	return n, nil
}
