package linear

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// issueAnswer is a mutation's issue payload (schema IssuePayload).
type issueAnswer struct {
	Success bool       `json:"success"`
	Issue   *wireIssue `json:"issue"`
}

// Create implements tracker.Driver: one request of two mutations, the
// issue under the id derived from the key, in the team, its state and
// labels set, and the attachment naming its key. Linear's answer to a
// second create of an id is not documented (§0.1), so it is never read:
// after any failed or unknown create issue(id) decides. Found in the
// team, the key was filed before (*ExistsError); "Entity not found", the
// create did not land and the failure is answered as it came. A create
// answered with an issue that already holds the key's attachment (a Linear
// that answers a second create with the issue it has) was filed before.
func (d *Driver) Create(ctx context.Context, key string, dr tracker.Draft) (tracker.Item, error) {
	if n := utf8.RuneCountInString(dr.Title); n > MaxTitle {
		return tracker.Item{}, &tracker.InvalidError{Field: "title", Reason: fmt.Sprintf("is %d characters, over Linear's %d", n, MaxTitle)}
	}
	id := idOf(d.source, key)
	input := map[string]any{"id": id, "teamId": d.team.ID, "title": dr.Title, "description": dr.Description}
	if dr.State != "" {
		st, ok := d.team.stateFor(dr.State)
		if !ok {
			return tracker.Item{}, fmt.Errorf("linear: the team has no state for %s: %w", dr.State, tracker.ErrRefused)
		}
		input["stateId"] = st
	} else if st, ok := d.team.stateFor(tracker.Todo); ok {
		// Without a state a team with triage on routes an integration's
		// issue to triage (Team.triageEnabled, §0.8): todo is asked for.
		input["stateId"] = st
	}
	if len(dr.Labels) > 0 {
		ids, err := d.labelIDs(ctx, dr.Labels)
		if err != nil {
			return tracker.Item{}, err
		}
		input["labelIds"] = ids
	}
	attach := map[string]any{"issueId": id, "url": d.keyURL(key), "title": "relayr"}
	var out struct {
		IssueCreate *issueAnswer `json:"issueCreate"`
	}
	errs, err := d.do(ctx, write, mCreate, map[string]any{"input": input, "attach": attach}, &out)
	if errors.Is(err, tracker.ErrNotSent) {
		return tracker.Item{}, err
	}
	ok := out.IssueCreate != nil && out.IssueCreate.Success && out.IssueCreate.Issue.valid() && errs["issueCreate"] == nil
	if !ok {
		return d.decide(ctx, id, key, err)
	}
	w := out.IssueCreate.Issue
	if d.keyOf(w) == key {
		// The issue's own answer is read before the attachment is made
		// (a mutation's fields run in order): an issue answered with its
		// key was there before, and Linear answered a create of its id
		// with it.
		return tracker.Item{}, &tracker.ExistsError{ID: w.ID}
	}
	if err != nil {
		// The key's attachment failed beside a create that landed: it is
		// made again, for a reader to find the key.
		if err := d.attach(ctx, id, key); err != nil {
			return tracker.Item{}, trackerhttp.Landed("linear", "issue "+w.Identifier, "attaching its key", err)
		}
	}
	w.Attachments.Nodes = append(w.Attachments.Nodes, struct {
		URL string `json:"url"`
	}{URL: d.keyURL(key)})
	return d.item(w), nil
}

// decide reads the derived id after a create that failed or whose answer
// is unknown: held by an issue, trashed ones and ones a person moved to
// another team included, the key was filed before (*ExistsError; its
// Item then reads deleted for the trashed and the moved, and the key is
// marked so); else the create's own failure stands. A Linear that reads
// no trashed issue by id may still list it (includeArchived): that is
// asked too before the failure stands.
func (d *Driver) decide(ctx context.Context, id, key string, cause error) (tracker.Item, error) {
	w, err := d.read(ctx, id)
	if errors.Is(err, tracker.ErrNotFound) {
		var ws []*wireIssue
		if ws, err = d.byIDs(ctx, []string{id}); err == nil {
			if len(ws) == 1 && ws[0].ID == id {
				w = ws[0]
			} else {
				err = fmt.Errorf("linear: issue %s: %w", id, tracker.ErrNotFound)
			}
		}
	}
	switch {
	case err == nil:
		if w.Team.ID == d.team.ID && !w.trashed() && d.keyOf(w) != key {
			if err := d.attach(ctx, id, key); err != nil {
				return tracker.Item{}, trackerhttp.Landed("linear", "issue "+w.Identifier, "attaching its key", err)
			}
		}
		return tracker.Item{}, &tracker.ExistsError{ID: id}
	case errors.Is(err, tracker.ErrNotFound):
		if cause == nil {
			cause = fmt.Errorf("linear: the create answered no issue: %w", tracker.ErrUnavailable)
		}
		var unseen *issueUnseenError
		switch {
		case errors.As(cause, &unseen):
			// The id is held by an issue no read shows: filed before,
			// and its item reads deleted (a Linear that hides trashed
			// issues from reads by id and lists alike, and answers a
			// create of a held id with the issue it holds: linearemu's
			// TrashedNotFound, TrashedUnlisted and DuplicateSuccess).
			return tracker.Item{}, &tracker.ExistsError{ID: id}
		case errors.Is(cause, tracker.ErrNotFound):
			// Another "Entity not found" (a team, a label) to a create:
			// the same create would be answered the same, so it is
			// refused, not sent again.
			return tracker.Item{}, fmt.Errorf("linear: the create was answered %q, and no read finds the issue %s: %w",
				cause.Error(), id, tracker.ErrRefused)
		}
		return tracker.Item{}, cause
	}
	if cause != nil {
		return tracker.Item{}, fmt.Errorf("%w (and reading the id after: %s)", cause, err.Error())
	}
	return tracker.Item{}, err
}

// attach makes the attachment naming key on the issue: an upsert by its
// URL (AttachmentCreateInput.url, §4).
func (d *Driver) attach(ctx context.Context, id, key string) error {
	var out struct {
		AttachmentCreate *struct {
			Success bool `json:"success"`
		} `json:"attachmentCreate"`
	}
	if _, err := d.do(ctx, write, mAttach, map[string]any{"attach": map[string]any{"issueId": id, "url": d.keyURL(key), "title": "relayr"}}, &out); err != nil {
		return err
	}
	if out.AttachmentCreate == nil || !out.AttachmentCreate.Success {
		return fmt.Errorf("linear: attaching the key: %w", errNoSuccess)
	}
	return nil
}

// Find implements tracker.Driver: the issue of the id derived from the
// key, one read (§4). A trashed issue is deleted; one in another team is
// not this project's.
func (d *Driver) Find(ctx context.Context, key string) (tracker.Item, error) {
	id := idOf(d.source, key)
	w, err := d.issue(ctx, id)
	if err != nil {
		return tracker.Item{}, err
	}
	if d.keyOf(w) != key {
		// The attachment was lost beside its create: made again.
		if err := d.attach(ctx, id, key); err != nil {
			return tracker.Item{}, err
		}
		if w, err = d.issue(ctx, id); err != nil {
			return tracker.Item{}, err
		}
	}
	return d.item(w), nil
}

// Item implements tracker.Driver: one read. A trashed issue reads as
// deleted, and so does one moved to another team.
func (d *Driver) Item(ctx context.Context, id string) (tracker.Item, error) {
	w, err := d.issue(ctx, id)
	if err != nil {
		return tracker.Item{}, err
	}
	return d.item(w), nil
}

func (d *Driver) issue(ctx context.Context, id string) (*wireIssue, error) {
	w, err := d.read(ctx, id)
	switch {
	case err != nil:
		return nil, err
	case w.trashed():
		return nil, fmt.Errorf("linear: issue %s is in the trash: %w", w.Identifier, tracker.ErrNotFound)
	case w.Team.ID != d.team.ID:
		return nil, fmt.Errorf("linear: issue %s moved to another team: %w", w.Identifier, tracker.ErrNotFound)
	}
	return w, nil
}

// read reads an issue by id as Linear answers it, trashed or in another
// team.
func (d *Driver) read(ctx context.Context, id string) (*wireIssue, error) {
	var out struct {
		Issue *wireIssue `json:"issue"`
	}
	if _, err := d.do(ctx, write, qIssue, map[string]any{"id": id}, &out); err != nil {
		return nil, err
	}
	switch w := out.Issue; {
	case w == nil:
		return nil, fmt.Errorf("linear: issue %s: %w", id, tracker.ErrNotFound)
	case !w.valid():
		return nil, trackerhttp.Garbled("linear", "issue", errGarbled)
	default:
		return w, nil
	}
}

// Update implements tracker.Driver: one issueUpdate of what the patch
// names, labels replaced as a set (labelIds), the state the team's first
// of its type; the answer is the issue as Linear stored it.
func (d *Driver) Update(ctx context.Context, id string, p tracker.Patch) (tracker.Item, error) {
	input := map[string]any{}
	if p.Title != nil {
		if n := utf8.RuneCountInString(*p.Title); n > MaxTitle {
			return tracker.Item{}, &tracker.InvalidError{Field: "title", Reason: fmt.Sprintf("is %d characters, over Linear's %d", n, MaxTitle)}
		}
		input["title"] = *p.Title
	}
	if p.Description != nil {
		input["description"] = *p.Description
	}
	if p.State != nil {
		st, ok := d.team.stateFor(*p.State)
		if !ok {
			return tracker.Item{}, fmt.Errorf("linear: the team has no state for %s: %w", *p.State, tracker.ErrRefused)
		}
		input["stateId"] = st
	}
	if p.Labels != nil {
		ids, err := d.labelIDs(ctx, *p.Labels)
		if err != nil {
			return tracker.Item{}, err
		}
		input["labelIds"] = ids
	}
	var out struct {
		IssueUpdate *issueAnswer `json:"issueUpdate"`
	}
	if _, err := d.do(ctx, write, mUpdate, map[string]any{"id": id, "input": input}, &out); err != nil {
		return tracker.Item{}, err
	}
	if out.IssueUpdate == nil || !out.IssueUpdate.Success || !out.IssueUpdate.Issue.valid() {
		// success false or no issue: Linear says nothing landed, but a
		// write was seen to revert silently once (§5): read it.
		return tracker.Item{}, fmt.Errorf("linear: the update of %s: %w: %w", id, errNoSuccess, tracker.ErrUnavailable)
	}
	w := out.IssueUpdate.Issue
	if w.trashed() || w.Team.ID != d.team.ID {
		return tracker.Item{}, fmt.Errorf("linear: issue %s is gone from the team: %w", w.Identifier, tracker.ErrNotFound)
	}
	return d.item(w), nil
}

// Comment implements tracker.Driver: one commentCreate, its id derived
// from the issue and the key (a retried comment names the same one), the
// key on the body's last line.
func (d *Driver) Comment(ctx context.Context, id, key, body string) (tracker.Comment, error) {
	var out struct {
		CommentCreate *struct {
			Success bool         `json:"success"`
			Comment *wireComment `json:"comment"`
		} `json:"commentCreate"`
	}
	input := map[string]any{"id": commentIDOf(d.source, id, key), "issueId": id, "body": d.markComment(body, key)}
	if _, err := d.do(ctx, write, mComment, map[string]any{"input": input}, &out); err != nil {
		return tracker.Comment{}, err
	}
	if out.CommentCreate == nil || !out.CommentCreate.Success || out.CommentCreate.Comment == nil || out.CommentCreate.Comment.ID == "" {
		return tracker.Comment{}, trackerhttp.Garbled("linear", "comment", errGarbled)
	}
	return d.comment(id, *out.CommentCreate.Comment), nil
}

// connection is a page of a Relay connection.
type connection[T any] struct {
	Nodes    []T `json:"nodes"`
	PageInfo struct {
		HasNextPage bool   `json:"hasNextPage"`
		EndCursor   string `json:"endCursor"`
	} `json:"pageInfo"`
}

// Comments implements tracker.Driver: the issue's comments created at or
// after since, oldest first.
func (d *Driver) Comments(ctx context.Context, id string, since time.Time) ([]tracker.Comment, error) {
	var out []tracker.Comment
	vars := map[string]any{"id": id, "since": stamp(since)}
	for {
		var page struct {
			Issue *struct {
				Comments connection[wireComment] `json:"comments"`
			} `json:"issue"`
		}
		if _, err := d.do(ctx, poll, qComments, vars, &page); err != nil {
			return nil, err
		}
		if page.Issue == nil {
			return nil, fmt.Errorf("linear: issue %s: %w", id, tracker.ErrNotFound)
		}
		for _, w := range page.Issue.Comments.Nodes {
			if w.ID == "" {
				return nil, trackerhttp.Garbled("linear", "comment list", errGarbled)
			}
			if c := d.comment(id, w); !c.CreatedAt.Before(since) {
				out = append(out, c)
			}
		}
		if !page.Issue.Comments.PageInfo.HasNextPage || page.Issue.Comments.PageInfo.EndCursor == "" {
			break
		}
		vars["after"] = page.Issue.Comments.PageInfo.EndCursor
	}
	tracker.SortComments(out)
	return out, nil
}

// ProjectComments implements tracker.ProjectCommenter: the team's comments
// created at or after since (comments filtered by issue.team), in at most
// reads requests. An item's UpdatedAt moves with its comments (the
// driver's doing), as the port asks of a tracker that lists them so.
func (d *Driver) ProjectComments(ctx context.Context, since time.Time, reads int) ([]tracker.Comment, bool, error) {
	cs, complete, err := d.teamComments(ctx, since, reads)
	if err != nil || !complete {
		return nil, false, err
	}
	out := make([]tracker.Comment, 0, len(cs))
	for _, w := range cs {
		out = append(out, d.comment(w.Issue.ID, w))
	}
	tracker.SortComments(out)
	return out, true, nil
}

// teamComments reads the team's comments created at or after since, in at
// most reads requests (0: every page).
func (d *Driver) teamComments(ctx context.Context, since time.Time, reads int) ([]wireComment, bool, error) {
	var out []wireComment
	vars := map[string]any{"team": d.team.ID, "since": stamp(since), "first": firstPage}
	for n := 1; ; n++ {
		var page struct {
			Comments connection[wireComment] `json:"comments"`
		}
		if _, err := d.do(ctx, poll, qTeamComments, vars, &page); err != nil {
			return nil, false, err
		}
		for _, w := range page.Comments.Nodes {
			if w.ID == "" || w.Issue == nil || w.Issue.ID == "" {
				return nil, false, trackerhttp.Garbled("linear", "team comment list", errGarbled)
			}
			if !w.CreatedAt.Before(since) {
				out = append(out, w)
			}
		}
		if !page.Comments.PageInfo.HasNextPage || page.Comments.PageInfo.EndCursor == "" {
			return out, true, nil
		}
		if reads > 0 && n >= reads {
			return nil, false, nil
		}
		vars["after"], vars["first"] = page.Comments.PageInfo.EndCursor, PageSize
	}
}

// FetchItems implements tracker.ItemsFetcher: the issues of ids, fifty a
// request (filter id in); a trashed one, or one moved to another team, is
// not answered.
func (d *Driver) FetchItems(ctx context.Context, ids []string) (map[string]tracker.Item, error) {
	out := map[string]tracker.Item{}
	ws, err := d.byIDs(ctx, ids)
	if err != nil {
		return nil, err
	}
	for _, w := range ws {
		if !w.trashed() && w.Team.ID == d.team.ID {
			out[w.ID] = d.item(w)
		}
	}
	return out, nil
}

func (d *Driver) byIDs(ctx context.Context, ids []string) ([]*wireIssue, error) {
	var out []*wireIssue
	for chunk := range slices.Chunk(ids, PageSize) {
		var page struct {
			Issues connection[*wireIssue] `json:"issues"`
		}
		if _, err := d.do(ctx, poll, qByIDs, map[string]any{"ids": chunk}, &page); err != nil {
			return nil, err
		}
		for _, w := range page.Issues.Nodes {
			if !w.valid() {
				return nil, trackerhttp.Garbled("linear", "issue list", errGarbled)
			}
			out = append(out, w)
		}
	}
	return out, nil
}

// stamp is a time as Linear's filters take it: RFC 3339, in UTC, to the
// millisecond (§7).
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
