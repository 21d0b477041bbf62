package linear

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// wireIssue is what IssueFields reads (schema Issue).
type wireIssue struct {
	ID          string     `json:"id"`
	Identifier  string     `json:"identifier"`
	Number      float64    `json:"number"`
	Title       string     `json:"title"`
	Description *string    `json:"description"`
	CreatedAt   time.Time  `json:"createdAt"`
	UpdatedAt   time.Time  `json:"updatedAt"`
	ArchivedAt  *time.Time `json:"archivedAt"`
	Trashed     *bool      `json:"trashed"`
	State       *struct {
		ID   string `json:"id"`
		Type string `json:"type"`
	} `json:"state"`
	Team *struct {
		ID string `json:"id"`
	} `json:"team"`
	Labels struct {
		Nodes []wireLabel `json:"nodes"`
	} `json:"labels"`
	Attachments struct {
		Nodes []struct {
			URL string `json:"url"`
		} `json:"nodes"`
	} `json:"attachments"`
	// Comments and LastComment are the two ends of the issue's comments,
	// one of them the newest (queries.go).
	Comments    commentEnd `json:"comments"`
	LastComment commentEnd `json:"lastComment"`
}

// commentEnd is one end of an issue's comment list: a comment's time.
type commentEnd struct {
	Nodes []struct {
		CreatedAt time.Time `json:"createdAt"`
	} `json:"nodes"`
}

func (w *wireIssue) valid() bool {
	return w != nil && w.ID != "" && w.State != nil && w.Team != nil && !w.UpdatedAt.IsZero()
}

// trashed: in the trash bin, which relayr reads as deleted (§8).
func (w *wireIssue) trashed() bool { return w.Trashed != nil && *w.Trashed }

type wireLabel struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	IsGroup bool   `json:"isGroup"`
}

type wireComment struct {
	ID        string    `json:"id"`
	Body      string    `json:"body"`
	CreatedAt time.Time `json:"createdAt"`
	User      *struct {
		ID string `json:"id"`
	} `json:"user"`
	BotActor *struct {
		Name string `json:"name"`
	} `json:"botActor"`
	Issue *struct {
		ID string `json:"id"`
	} `json:"issue"`
}

// state is one of a team's workflow states.
type state struct {
	ID       string  `json:"id"`
	Name     string  `json:"name"`
	Type     string  `json:"type"`
	Position float64 `json:"position"`
}

// team is the binding's team, its states by type.
type team struct {
	ID     string
	Key    string
	def    string             // defaultIssueState
	states map[string][]state // type → states, lowest position first
}

// typeOf is the port's state a workflow state's type reads as (§5).
var typeOf = map[string]tracker.State{
	"triage": tracker.Backlog, "backlog": tracker.Backlog, "unstarted": tracker.Todo, "started": tracker.Started,
	"completed": tracker.Done, "canceled": tracker.Cancelled, "duplicate": tracker.Cancelled,
}

// typesOf are the types a state is set to, first the one it names.
var typesOf = map[tracker.State][]string{
	tracker.Backlog: {"backlog", "triage"}, tracker.Todo: {"unstarted"}, tracker.Started: {"started"},
	tracker.Done: {"completed"}, tracker.Cancelled: {"canceled"},
}

// stateFor answers the workflow state a port state is set to: the team's
// default for todo where it is unstarted, else the lowest-positioned state
// of the type (§5); the state it is held as where the team has none.
func (t team) stateFor(s tracker.State) (string, bool) {
	if s == tracker.Todo && t.def != "" {
		for _, st := range t.states["unstarted"] {
			if st.ID == t.def {
				return st.ID, true
			}
		}
	}
	for _, typ := range typesOf[s] {
		if sts := t.states[typ]; len(sts) > 0 {
			return sts[0].ID, true
		}
	}
	return "", false
}

// holds is Capabilities.States: a state the team has no type for is held
// as the nearest one it has (backlog as todo, started as todo, cancelled
// as done).
func (t team) holds() map[tracker.State]tracker.State {
	out := map[tracker.State]tracker.State{}
	near := map[tracker.State][]tracker.State{
		tracker.Backlog: {tracker.Todo, tracker.Started}, tracker.Todo: {tracker.Backlog, tracker.Started},
		tracker.Started: {tracker.Todo, tracker.Backlog}, tracker.Done: {tracker.Cancelled}, tracker.Cancelled: {tracker.Done},
	}
	for _, s := range []tracker.State{tracker.Backlog, tracker.Todo, tracker.Started, tracker.Done, tracker.Cancelled} {
		if _, ok := t.stateFor(s); ok {
			continue
		}
		for _, n := range near[s] {
			if _, ok := t.stateFor(n); ok {
				out[s] = n
				break
			}
		}
	}
	return out
}

// readWorkspace reads the viewer, the workspace's web base, and the team:
// its states and labels, and the workspace's labels.
func (d *Driver) readWorkspace(ctx context.Context) error {
	var out struct {
		Viewer struct {
			ID string `json:"id"`
		} `json:"viewer"`
		Organization struct {
			URLKey string `json:"urlKey"`
		} `json:"organization"`
		Team *struct {
			ID                string `json:"id"`
			Key               string `json:"key"`
			DefaultIssueState *struct {
				ID string `json:"id"`
			} `json:"defaultIssueState"`
			States struct {
				Nodes []state `json:"nodes"`
			} `json:"states"`
		} `json:"team"`
	}
	id := d.cfg.Team
	if _, err := uuid.Parse(id); err != nil {
		if id, err = d.teamByKey(ctx, id); err != nil {
			return err
		}
	}
	if _, err := d.do(ctx, write, qWorkspace, map[string]any{"team": id}, &out); err != nil {
		return err
	}
	if out.Viewer.ID == "" || out.Team == nil || out.Team.ID == "" || out.Organization.URLKey == "" {
		return trackerhttp.Garbled("linear", "workspace", errGarbled)
	}
	d.viewer, d.web = out.Viewer.ID, "https://linear.app/"+url.PathEscape(out.Organization.URLKey)
	d.team = team{ID: out.Team.ID, Key: out.Team.Key, states: map[string][]state{}}
	if out.Team.DefaultIssueState != nil {
		d.team.def = out.Team.DefaultIssueState.ID
	}
	for _, st := range out.Team.States.Nodes {
		d.team.states[st.Type] = append(d.team.states[st.Type], st)
	}
	defer func() { d.holds = d.team.holds() }()
	for typ := range d.team.states {
		slices.SortStableFunc(d.team.states[typ], func(a, b state) int {
			switch {
			case a.Position < b.Position:
				return -1
			case a.Position > b.Position:
				return 1
			}
			return 0
		})
	}
	d.labels = map[string]string{}
	return nil
}

// teamByKey answers the UUID of the team a key names (ENG): the
// workspace's teams are read, fifty a page.
func (d *Driver) teamByKey(ctx context.Context, key string) (string, error) {
	vars := map[string]any{}
	for {
		var page struct {
			Teams connection[struct {
				ID  string `json:"id"`
				Key string `json:"key"`
			}] `json:"teams"`
		}
		if _, err := d.do(ctx, write, qTeams, vars, &page); err != nil {
			return "", err
		}
		for _, t := range page.Teams.Nodes {
			if strings.EqualFold(t.Key, key) && t.ID != "" {
				return t.ID, nil
			}
		}
		if !page.Teams.PageInfo.HasNextPage || page.Teams.PageInfo.EndCursor == "" {
			return "", fmt.Errorf("linear: no team of the workspace has the key %s: %w", tracker.Quote(key), tracker.ErrNotFound)
		}
		vars["after"] = page.Teams.PageInfo.EndCursor
	}
}

// idOf is the issue id relayr files key under for source: a UUID derived
// from both and shaped as version 4 (IssueCreateInput.id takes "UUID v4
// format", §0.2), so a retried create names the same issue.
func idOf(source tracker.Source, key string) string {
	sum := sha256.Sum256([]byte("relayr linear issue\x00" + source.String() + "\x00" + key))
	var u uuid.UUID
	copy(u[:], sum[:16])
	u[6] = (u[6] & 0x0f) | 0x40 // version 4
	u[8] = (u[8] & 0x3f) | 0x80 // variant 10
	return u.String()
}

// commentIDOf is the id of the comment relayr posts under key on an
// issue, derived as an issue's is (CommentCreateInput.id).
func commentIDOf(source tracker.Source, issue, key string) string {
	return idOf(source, "comment\x00"+issue+"\x00"+key)
}

// keyURL is the attachment URL naming key under the workspace's source.
func (d *Driver) keyURL(key string) string {
	return d.cfg.KeyURL + url.PathEscape(d.source.String()) + "/" + url.PathEscape(key)
}

// keyOf reads the key from an issue's attachments: the one whose URL is
// this workspace's key URL.
func (d *Driver) keyOf(w *wireIssue) string {
	prefix := d.cfg.KeyURL + url.PathEscape(d.source.String()) + "/"
	for _, a := range w.Attachments.Nodes {
		if rest, ok := strings.CutPrefix(a.URL, prefix); ok && rest != "" && !strings.Contains(rest, "/") {
			if k, err := url.PathUnescape(rest); err == nil && url.PathEscape(k) == rest {
				return k
			}
		}
	}
	return ""
}

// item maps an issue onto the port's item. Its UpdatedAt is the later of
// the issue's and its newest comment's: Linear may not move an issue's
// updatedAt for a comment (§6), the driver does.
func (d *Driver) item(w *wireIssue) tracker.Item {
	desc := ""
	if w.Description != nil {
		desc = *w.Description
	}
	ref := tracker.ItemRef{ID: w.ID, Number: int64(w.Number), Name: w.Identifier, Key: d.keyOf(w)}
	// The page by identifier, which Linear opens without the title's
	// slug its own url carries: Link makes no request.
	ref.Link = d.Link(ref)
	it := tracker.Item{Ref: ref, Title: w.Title, Description: desc, State: typeOf[w.State.Type],
		Labels: make([]string, 0, len(w.Labels.Nodes)), UpdatedAt: w.UpdatedAt.UTC(), CreatedAt: w.CreatedAt.UTC(),
		Archived: w.ArchivedAt != nil}
	if it.State == "" {
		it.State = tracker.Todo
	}
	if held, ok := d.holds[it.State]; ok {
		it.State = held
	}
	for _, c := range slices.Concat(w.Comments.Nodes, w.LastComment.Nodes) {
		if c.CreatedAt.After(it.UpdatedAt) {
			it.UpdatedAt = c.CreatedAt.UTC()
		}
	}
	for _, l := range w.Labels.Nodes {
		it.Labels = append(it.Labels, l.Name)
		d.know(l)
	}
	return it
}

// commentTagPrefix opens the last line of a comment relayr posts: its key,
// in an alphabet Linear's Markdown keeps as it is (§6).
const commentTagPrefix = "lattice-key: "

// tag escapes s into letters, digits and "/.:@=,-", the rest as %XX:
// none of them is Markdown Linear rewrites.
func tag(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("/.:@=,-", c) >= 0 {
			b.WriteByte(c)
		} else {
			b.Write([]byte{'%', hex[c>>4], hex[c&0xf]})
		}
	}
	return b.String()
}

// markComment puts key on the body's last line, after a blank line.
func (d *Driver) markComment(body, key string) string {
	return strings.TrimRight(body, "\n") + "\n\n" + commentTagPrefix + tag(d.source.String()) + "/" + tag(key)
}

// unmarkComment answers the key a comment's last line names under this
// workspace's source, and the body without it.
func (d *Driver) unmarkComment(text string) (key, body string) {
	t := strings.TrimRight(text, "\n ")
	i := strings.LastIndex(t, "\n")
	last := t[i+1:]
	rest, ok := strings.CutPrefix(last, commentTagPrefix+tag(d.source.String())+"/")
	if !ok {
		return "", text
	}
	k, err := url.PathUnescape(rest)
	if err != nil || tag(k) != rest {
		return "", text
	}
	if i < 0 {
		return k, ""
	}
	return k, strings.TrimRight(t[:i], "\n")
}

// comment maps a comment onto the port's.
func (d *Driver) comment(issue string, w wireComment) tracker.Comment {
	key, body := d.unmarkComment(w.Body)
	c := tracker.Comment{ID: w.ID, ItemID: issue, Body: body, Key: key, CreatedAt: w.CreatedAt.UTC()}
	switch {
	case w.User != nil:
		c.Author = w.User.ID
	case w.BotActor != nil:
		c.Author = w.BotActor.Name
	}
	return c
}

// know caches a label seen on an issue.
func (d *Driver) know(l wireLabel) {
	if l.ID == "" || l.Name == "" {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.labels[l.Name]; !ok {
		d.labels[l.Name] = l.ID
	}
}

func (d *Driver) labelID(name string) (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	id, ok := d.labels[name]
	return id, ok
}

// labelIDs resolves label names to ids, making the team labels it lacks
// (Linear never makes one itself, §0.9).
func (d *Driver) labelIDs(ctx context.Context, names []string) ([]string, error) {
	ids := make([]string, 0, len(names))
	for _, n := range names {
		if id, ok := d.labelID(n); ok {
			ids = append(ids, id)
			continue
		}
		id, err := d.makeLabel(ctx, n)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// makeLabel finds the label of a name the team can use, its own before
// the workspace's, and makes it a team label where there is none. A group
// label cannot be set on an issue (§5): refused.
func (d *Driver) makeLabel(ctx context.Context, name string) (string, error) {
	d.lmu.Lock()
	defer d.lmu.Unlock()
	if id, ok := d.labelID(name); ok {
		return id, nil
	}
	var found struct {
		IssueLabels struct {
			Nodes []struct {
				wireLabel
				Team *struct {
					ID string `json:"id"`
				} `json:"team"`
			} `json:"nodes"`
		} `json:"issueLabels"`
	}
	if _, err := d.do(ctx, write, qLabel, map[string]any{"name": name, "team": d.team.ID}, &found); err != nil {
		return "", fmt.Errorf("linear: reading label %s: %w", tracker.Quote(name), err)
	}
	var pick *wireLabel
	for i := range found.IssueLabels.Nodes {
		l := &found.IssueLabels.Nodes[i]
		if l.Name != name || l.ID == "" {
			continue
		}
		if pick == nil || l.Team != nil {
			pick = &l.wireLabel
		}
	}
	if pick != nil {
		if pick.IsGroup {
			return "", fmt.Errorf("linear: label %s is a group, which cannot be set on an issue: %w", tracker.Quote(name), tracker.ErrRefused)
		}
		d.know(*pick)
		return pick.ID, nil
	}
	var out struct {
		IssueLabelCreate struct {
			Success    bool       `json:"success"`
			IssueLabel *wireLabel `json:"issueLabel"`
		} `json:"issueLabelCreate"`
	}
	if _, err := d.do(ctx, write, mLabel, map[string]any{"input": map[string]any{"name": name, "teamId": d.team.ID}}, &out); err != nil {
		return "", fmt.Errorf("linear: making label %s: %w", tracker.Quote(name), err)
	}
	l := out.IssueLabelCreate.IssueLabel
	if !out.IssueLabelCreate.Success || l == nil || l.ID == "" {
		return "", trackerhttp.Garbled("linear", "created label", errGarbled)
	}
	d.know(*l)
	return l.ID, nil
}
