package jira

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// issueFields are the fields relayr reads of an issue.
var issueFields = []string{"summary", "description", "labels", "status", "resolution", "created", "updated", "project"}

// stamp is a Jira time: milliseconds and a ±hhmm offset
// ("2021-01-18T23:45:00.000+0000", x-atlassian-narrative.timestamps).
type stamp struct{ time.Time }

// jiraLayout is Jira's timestamp layout.
const jiraLayout = "2006-01-02T15:04:05.000-0700"

// UnmarshalJSON reads Jira's layout, or RFC 3339.
func (s *stamp) UnmarshalJSON(b []byte) error {
	var v string
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if v == "" {
		s.Time = time.Time{}
		return nil
	}
	t, err := time.Parse(jiraLayout, v)
	if err != nil {
		if t, err = time.Parse(time.RFC3339Nano, v); err != nil {
			return fmt.Errorf("a time that is not Jira's: %q", v)
		}
	}
	s.Time = t.UTC()
	return nil
}

// user is who made a change (components.schemas.UserDetails).
type user struct {
	AccountID string `json:"accountId"`
}

// history is one changelog entry (components.schemas.Changelog).
type history struct {
	ID      string `json:"id"`
	Author  *user  `json:"author"`
	Created stamp  `json:"created"`
}

// wireIssue is the part of Jira's issue relayr reads
// (components.schemas.IssueBean).
type wireIssue struct {
	ID     string `json:"id"`
	Key    string `json:"key"`
	Fields struct {
		Summary     string          `json:"summary"`
		Description json.RawMessage `json:"description"`
		Labels      []string        `json:"labels"`
		Status      status          `json:"status"`
		Resolution  *struct {
			Name string `json:"name"`
		} `json:"resolution"`
		Created stamp `json:"created"`
		Updated stamp `json:"updated"`
		Project struct {
			Key string `json:"key"`
		} `json:"project"`
	} `json:"fields"`
	Properties map[string]json.RawMessage `json:"properties"`
	Changelog  *struct {
		Histories []history `json:"histories"`
	} `json:"changelog"`
}

// valid: an issue has a numeric id and a key.
func (w wireIssue) valid() bool { return tracker.PositiveID(w.ID) && w.Key != "" }

// keyValue is the value of relayr's entity property on an issue.
type keyValue struct {
	Source string `json:"source"`
	Key    string `json:"key"`
}

// item maps an issue onto the port's item. The key is the entity
// property's, where it names this source; else the visible marker's.
func (d *Driver) item(w wireIssue) tracker.Item {
	doc, _ := parseDocument(w.Fields.Description)
	key := d.propertyKey(w)
	if tag, rest := cutMarker(doc); tag != "" {
		if k, ok := d.marker.Untag(tag); ok {
			doc = rest
			if key == "" {
				key = k
			}
		}
	}
	ref := tracker.ItemRef{ID: w.ID, Name: w.Key, Key: key}
	if _, n, ok := strings.Cut(w.Key, "-"); ok {
		if v, err := strconv.ParseInt(n, 10, 64); err == nil && v > 0 {
			ref.Number = v
		}
	}
	ref.Link = d.Link(ref)
	labels := slices.Clone(w.Fields.Labels)
	if labels == nil {
		labels = []string{}
	}
	slices.Sort(labels)
	resolution := ""
	if w.Fields.Resolution != nil {
		resolution = w.Fields.Resolution.Name
	}
	it := tracker.Item{
		Ref: ref, Title: w.Fields.Summary, Description: plainText(doc),
		State: d.wf.state(w.Fields.Status, resolution), Labels: labels,
		UpdatedAt: w.Fields.Updated.Time, CreatedAt: w.Fields.Created.Time,
	}
	if w.Changelog != nil {
		// The changelog names who changed the issue last (§0.8).
		var last *history
		for i, h := range w.Changelog.Histories {
			if h.Author != nil && (last == nil || h.Created.After(last.Created.Time)) {
				last = &w.Changelog.Histories[i]
			}
		}
		if last != nil {
			it.UpdatedBy = last.Author.AccountID
		}
	}
	return it
}

// propertyKey is the key relayr's entity property names for this source,
// "" for none.
func (d *Driver) propertyKey(w wireIssue) string {
	raw, ok := w.Properties[PropertyKey]
	if !ok {
		return ""
	}
	var v keyValue
	if json.Unmarshal(raw, &v) != nil || v.Source != d.source.String() {
		return ""
	}
	return v.Key
}

// checkTitle refuses a summary Jira would refuse, before anything is sent.
func checkTitle(title string) error {
	if n := utf8.RuneCountInString(title); n > MaxSummary {
		return &tracker.InvalidError{Field: "title", Reason: fmt.Sprintf("is %d characters; Jira keeps %d", n, MaxSummary)}
	}
	if strings.ContainsAny(title, "\r\n") {
		return &tracker.InvalidError{Field: "title", Reason: "holds a line end; Jira's summary is one line"}
	}
	return nil
}

// checkBody refuses a body longer than Jira keeps, relayr's marker
// counted.
func checkBody(field, text, tag string) error {
	if n := utf8.RuneCountInString(text) + utf8.RuneCountInString(markerPrefix+tag); n > MaxBody {
		return &tracker.InvalidError{Field: field, Reason: fmt.Sprintf("is %d characters with relayr's marker; Jira keeps %d", n, MaxBody)}
	}
	return nil
}

// checkLabels refuses labels Jira would refuse: "labels can't contain
// spaces", at most 255 characters (§0.6).
func checkLabels(labels []string) error {
	for _, l := range labels {
		switch {
		case strings.IndexFunc(l, unicode.IsSpace) >= 0:
			return &tracker.InvalidError{Field: "labels", Reason: tracker.Quote(l) + " holds a space; Jira's labels are single words"}
		case utf8.RuneCountInString(l) > MaxLabel:
			return &tracker.InvalidError{Field: "labels", Reason: fmt.Sprintf("%s is over Jira's %d characters", tracker.Quote(l), MaxLabel)}
		}
	}
	return nil
}

// Create implements tracker.Driver: one POST with the key in the entity
// property and the marker paragraph (paths./rest/api/3/issue.post), the
// issue read back, and, for a state its workflow doesn't start in, the
// transition to it.
func (d *Driver) Create(ctx context.Context, key string, dr tracker.Draft) (tracker.Item, error) {
	tag := d.marker.Tag(key)
	if err := checkTitle(dr.Title); err != nil {
		return tracker.Item{}, err
	}
	if err := checkBody("description", dr.Description, tag); err != nil {
		return tracker.Item{}, err
	}
	if err := checkLabels(dr.Labels); err != nil {
		return tracker.Item{}, err
	}
	fields := map[string]any{
		"project":     map[string]string{"key": d.project},
		"issuetype":   map[string]string{"name": d.cfg.IssueType},
		"summary":     dr.Title,
		"description": withMarker(document(dr.Description), tag),
	}
	if len(dr.Labels) > 0 {
		fields["labels"] = dr.Labels
	}
	body := map[string]any{
		"fields":     fields,
		"properties": []map[string]any{{"key": PropertyKey, "value": keyValue{Source: d.source.String(), Key: key}}},
	}
	var made struct {
		ID  string `json:"id"`
		Key string `json:"key"`
	}
	if _, err := d.read(ctx, trackerhttp.Request{Method: http.MethodPost, Path: "rest/api/3/issue", Body: body}, "", "created issue", &made, func() bool { return tracker.PositiveID(made.ID) }); err != nil {
		return tracker.Item{}, err
	}
	d.c.wrote(made.ID, d.cfg.Now())
	d.c.pacer.count(made.ID) // the create is the issue's first write
	it, err := d.Item(ctx, made.ID)
	if err != nil {
		return tracker.Item{}, trackerhttp.Landed("jira", "issue "+made.Key, "reading it back", err)
	}
	if dr.State != "" {
		moved, err := d.setState(ctx, made.ID, it.State, dr.State)
		if err != nil {
			return tracker.Item{}, trackerhttp.Landed("jira", "issue "+made.Key, "its transition to "+string(dr.State), err)
		}
		if moved {
			if it, err = d.Item(ctx, made.ID); err != nil {
				return tracker.Item{}, trackerhttp.Landed("jira", "issue "+made.Key, "reading it back", err)
			}
		}
	}
	return it, nil
}

// Item implements tracker.Driver: one read by id, which Jira answers
// current (§10), with relayr's property and the changelog. A deleted
// issue answers 404, as does one moved out of the project (it has left
// the project relayr follows, §8).
func (d *Driver) Item(ctx context.Context, id string) (tracker.Item, error) {
	w, err := d.issue(ctx, id)
	if err != nil {
		return tracker.Item{}, err
	}
	return d.item(w), nil
}

func (d *Driver) issue(ctx context.Context, id string) (wireIssue, error) {
	q := url.Values{"fields": {strings.Join(issueFields, ",")}, "properties": {PropertyKey}, "expand": {"changelog"}}
	var w wireIssue
	if _, err := d.read(ctx, trackerhttp.Request{Method: http.MethodGet, Path: "rest/api/3/issue/" + id, Query: q}, id, "issue", &w, func() bool { return w.valid() }); err != nil {
		return wireIssue{}, err
	}
	if !strings.EqualFold(w.Fields.Project.Key, d.project) {
		return wireIssue{}, fmt.Errorf("jira: issue %s has moved to project %s: %w", id, w.Fields.Project.Key, tracker.ErrNotFound)
	}
	return w, nil
}

// Update implements tracker.Driver: the issue is read, only what differs
// is sent, in one PUT (paths./rest/api/3/issue/{issueIdOrKey}.put: labels
// replace the set, the description keeps relayr's marker), then the
// transition a state change takes, then the issue read back.
func (d *Driver) Update(ctx context.Context, id string, p tracker.Patch) (tracker.Item, error) {
	cur, err := d.issue(ctx, id)
	if err != nil {
		return tracker.Item{}, err
	}
	it := d.item(cur)
	fields := map[string]any{}
	if p.Title != nil && *p.Title != it.Title {
		if err := checkTitle(*p.Title); err != nil {
			return tracker.Item{}, err
		}
		fields["summary"] = *p.Title
	}
	if p.Description != nil && !d.SameDescription(*p.Description, it.Description) {
		doc := document(*p.Description)
		tag := ""
		if it.Ref.Key != "" {
			tag = d.marker.Tag(it.Ref.Key)
			doc = withMarker(doc, tag)
		}
		if err := checkBody("description", *p.Description, tag); err != nil {
			return tracker.Item{}, err
		}
		fields["description"] = doc
	}
	if p.Labels != nil && !tracker.SameLabels(*p.Labels, it.Labels) {
		if err := checkLabels(*p.Labels); err != nil {
			return tracker.Item{}, err
		}
		fields["labels"] = *p.Labels
	}
	moveState := p.State != nil && d.Capabilities().Holds(*p.State) != it.State
	if len(fields) == 0 && !moveState {
		return it, nil
	}
	wrote := false
	if len(fields) > 0 {
		if _, err := d.send(ctx, trackerhttp.Request{Method: http.MethodPut, Path: "rest/api/3/issue/" + id, Body: map[string]any{"fields": fields}}, "PUT /rest/api/3/issue/{issueIdOrKey}", id); err != nil {
			return tracker.Item{}, err
		}
		wrote = true
		d.c.wrote(id, d.cfg.Now())
	}
	if moveState {
		if _, err := d.setState(ctx, id, it.State, *p.State); err != nil {
			if wrote {
				return tracker.Item{}, trackerhttp.Landed("jira", "issue "+it.Ref.Name+"'s edit", "its transition", err)
			}
			return tracker.Item{}, err
		}
		d.c.wrote(id, d.cfg.Now())
	}
	got, err := d.Item(ctx, id)
	if err != nil {
		return tracker.Item{}, trackerhttp.Landed("jira", "issue "+it.Ref.Name+"'s edit", "reading it back", err)
	}
	return got, nil
}

// SameDescription implements tracker.DescriptionComparer: Jira may
// re-serialize a document (attributes added, text nodes merged, an empty
// last paragraph dropped: unknown, §10), none of which changes its text
// but for blank lines at its end.
func (d *Driver) SameDescription(set, held string) bool {
	norm := func(s string) string { return strings.TrimRight(strings.ReplaceAll(s, "\r\n", "\n"), "\n") }
	return set == held || norm(set) == norm(held)
}

// wireComment is a comment as Jira answers it (components.schemas.Comment).
type wireComment struct {
	ID      string          `json:"id"`
	Body    json.RawMessage `json:"body"`
	Author  *user           `json:"author"`
	Created stamp           `json:"created"`
}

func (w wireComment) valid() bool { return w.ID != "" }

func (d *Driver) comment(w wireComment, itemID string) tracker.Comment {
	doc, _ := parseDocument(w.Body)
	c := tracker.Comment{ID: w.ID, ItemID: itemID, CreatedAt: w.Created.Time}
	if tag, rest := cutMarker(doc); tag != "" {
		if k, ok := d.marker.Untag(tag); ok {
			c.Key, doc = k, rest
		}
	}
	c.Body = plainText(doc)
	if w.Author != nil {
		c.Author = w.Author.AccountID
	}
	return c
}

// Comment implements tracker.Driver: one POST of the body with the key's
// marker paragraph (paths./rest/api/3/issue/{issueIdOrKey}/comment.post).
func (d *Driver) Comment(ctx context.Context, id, key, body string) (tracker.Comment, error) {
	tag := d.marker.Tag(key)
	if err := checkBody("comment", body, tag); err != nil {
		return tracker.Comment{}, err
	}
	var w wireComment
	req := trackerhttp.Request{Method: http.MethodPost, Path: "rest/api/3/issue/" + id + "/comment", Body: map[string]any{"body": withMarker(document(body), tag)}}
	if _, err := d.read(ctx, req, id, "comment", &w, func() bool { return w.valid() }); err != nil {
		return tracker.Comment{}, err
	}
	d.c.wrote(id, d.cfg.Now())
	return d.comment(w, id), nil
}

// Comments implements tracker.Driver: the issue's comments oldest first
// (orderBy=created), a page of 100 at a time, those created since kept.
func (d *Driver) Comments(ctx context.Context, id string, since time.Time) ([]tracker.Comment, error) {
	var out []tracker.Comment
	for start := 0; ; {
		var pg struct {
			StartAt  int           `json:"startAt"`
			Total    int           `json:"total"`
			Comments []wireComment `json:"comments"`
		}
		q := url.Values{"orderBy": {"created"}, "startAt": {fmt.Sprint(start)}, "maxResults": {fmt.Sprint(PageSize)}}
		if _, err := d.read(ctx, trackerhttp.Request{Method: http.MethodGet, Path: "rest/api/3/issue/" + id + "/comment", Query: q}, id, "comments", &pg, nil); err != nil {
			return nil, err
		}
		for _, w := range pg.Comments {
			if !w.valid() {
				return nil, trackerhttp.Garbled("jira", "comment list", errGarbled)
			}
			if c := d.comment(w, id); !c.CreatedAt.Before(since) {
				out = append(out, c)
			}
		}
		start += len(pg.Comments)
		if len(pg.Comments) == 0 || start >= pg.Total {
			break
		}
	}
	tracker.SortComments(out)
	return out, nil
}

// errLagging is a look-up that found nothing yet: the search may not show
// an issue filed within its lag.
var errLagging = errors.New("the search may not show an issue filed within its lag yet")
