package vikunja

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
)

// pageToken is where an Items answer goes on: the filter's lower bound
// (updated > After, Unix seconds; unset for a whole-project read), the page
// of that query, and the second the last page ended on with the ids read at
// it, which the next page drops.
type pageToken struct {
	After  *int64  `json:"a,omitempty"`
	Page   int     `json:"p"`
	Second int64   `json:"s,omitempty"`
	Seen   []int64 `json:"i,omitempty"`
}

func (p pageToken) encode() string {
	b, _ := json.Marshal(p)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeToken(s string) (pageToken, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	var p pageToken
	if err == nil {
		err = json.Unmarshal(b, &p)
	}
	if err != nil || p.Page < 1 {
		return pageToken{}, &tracker.InvalidError{Field: "page", Reason: tracker.Quote(s) + " is not a page this adapter answered"}
	}
	return p, nil
}

// maxEmptyPages bounds how many pages of already-read items one Items call
// skips before answering an empty page with a Next.
const maxEmptyPages = 20

// Items implements tracker.Driver. Vikunja keeps updated to the second and
// its > is the only exact comparison at a second's edge, so the query is
// updated > since − 1 s (truncated), sorted by updated then id; pages go on
// by keyset from the last second read, dropping the ids read at it. Within
// an answer items are in (UpdatedAt, ID) order.
func (t *driver) Items(ctx context.Context, q tracker.Query) (tracker.Page, error) {
	tok := pageToken{Page: 1}
	if q.Page != "" {
		var err error
		if tok, err = decodeToken(q.Page); err != nil {
			return tracker.Page{}, err
		}
	} else if !q.Since.IsZero() {
		a := q.Since.UTC().Truncate(time.Second).Add(-time.Second).Unix()
		tok.After = &a
	}
	var out []tracker.Item
	for range maxEmptyPages {
		// Each task's comments come with it (expand=comments: the first
		// page of them, and their count), so a poll reads them with no
		// request of their own while they fit.
		v := url.Values{"sort_by": {"updated", "id"}, "order_by": {"asc", "asc"}, "page": {strconv.Itoa(tok.Page)},
			"expand": {"comments", "comment_count"}}
		if tok.After != nil {
			v.Set("filter", "updated > "+time.Unix(*tok.After, 0).UTC().Format(time.RFC3339))
		}
		ws, a, err := t.listTasks(ctx, v)
		if err != nil {
			return tracker.Page{}, err
		}
		for _, w := range ws {
			s := w.Updated.Unix()
			if s < tok.Second || (s == tok.Second && slices.Contains(tok.Seen, w.ID)) {
				continue
			}
			it := t.item(w)
			it.Comments = t.inlineComments(w)
			out = append(out, it)
		}
		slices.SortStableFunc(out, func(a, b tracker.Item) int {
			if c := a.UpdatedAt.Compare(b.UpdatedAt); c != 0 {
				return c
			}
			// Ids as the port orders them: "9" before "10".
			switch {
			case tracker.LessID(a.Ref.ID, b.Ref.ID):
				return -1
			case tracker.LessID(b.Ref.ID, a.Ref.ID):
				return 1
			}
			return 0
		})
		if lastPage(a, tok.Page, len(ws)) {
			return tracker.Page{Items: out}, nil
		}
		tok = nextToken(tok, ws)
		if len(out) > 0 {
			return tracker.Page{Items: out, Next: tok.encode()}, nil
		}
	}
	return tracker.Page{Items: out, Next: tok.encode()}, nil
}

// nextToken goes on from a full page: by keyset from its last second, or,
// when the whole page sat in the second the query already starts at (more
// than a page of items changed in one second), to the query's next page.
func nextToken(tok pageToken, ws []wireTask) pageToken {
	last := ws[len(ws)-1].Updated.Unix()
	var seen []int64
	if last == tok.Second {
		seen = slices.Clone(tok.Seen)
	}
	for _, w := range ws {
		if w.Updated.Unix() == last && !slices.Contains(seen, w.ID) {
			seen = append(seen, w.ID)
		}
	}
	after := last - 1
	if tok.After != nil && *tok.After == after {
		return pageToken{After: tok.After, Page: tok.Page + 1, Second: last, Seen: seen}
	}
	return pageToken{After: &after, Page: 1, Second: last, Seen: seen}
}

// inlineComments are a listed task's comments, when the list answered all
// of them (its count matches what it expanded), oldest first; nil when it
// answered none or only some, which leaves the follower to ask.
func (t *driver) inlineComments(w wireTask) []tracker.Comment {
	if w.CommentCount == nil || *w.CommentCount != len(w.Comments) {
		return nil
	}
	out := make([]tracker.Comment, 0, len(w.Comments))
	for _, c := range w.Comments {
		if c.ID <= 0 {
			return nil
		}
		out = append(out, t.comment(w.ID, c))
	}
	tracker.SortComments(out)
	return out
}
