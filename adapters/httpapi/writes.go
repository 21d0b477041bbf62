package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
)

// CorrelationHeader carries a run's correlation id when the body doesn't.
const CorrelationHeader = "X-Relayr-Correlation"

// EnsureRequest files an item once by key.
type EnsureRequest struct {
	Key         string        `json:"key"`
	Title       string        `json:"title"`
	Description string        `json:"description,omitempty"`
	State       tracker.State `json:"state,omitempty"`
	Labels      []string      `json:"labels,omitempty"`
	Correlation string        `json:"correlation,omitempty"`
	// Live reads a key already filed from the tracker before answering it
	// (one request); without it the answer comes from the ledger, and a
	// retry costs the tracker nothing.
	Live bool `json:"live,omitempty"`
}

// UpdateRequest edits the item filed under a key; a field left out is left
// as it is.
type UpdateRequest struct {
	Key         string         `json:"key"`
	Title       *string        `json:"title,omitempty"`
	Description *string        `json:"description,omitempty"`
	State       *tracker.State `json:"state,omitempty"`
	Labels      *[]string      `json:"labels,omitempty"`
	Correlation string         `json:"correlation,omitempty"`
	// Live reads the item first and sends what differs from what the
	// tracker holds; without it relayr compares with what it knows, reads
	// only what it doesn't, and an edit that changes nothing sends nothing.
	Live bool `json:"live,omitempty"`
}

// CommentRequest comments once by key on the item filed under ItemKey.
type CommentRequest struct {
	ItemKey     string `json:"item_key"`
	Key         string `json:"key"`
	Body        string `json:"body"`
	Correlation string `json:"correlation,omitempty"`
}

// ItemResponse is an item and how the request came to it (created, found,
// existing, updated).
type ItemResponse struct {
	Item ItemJSON `json:"item"`
	How  string   `json:"how"`
}

// ItemJSON is an item as the API answers it.
type ItemJSON struct {
	ID          string `json:"id"`
	Number      int64  `json:"number"`
	Name        string `json:"name"`
	Link        string `json:"link"`
	Key         string `json:"key"`
	Title       string `json:"title"`
	Description string `json:"description"`
	// State and UpdatedAt are left out when relayr does not know them: a
	// retried filing answered from the ledger before any read of the item
	// knows what it filed, not the state the tracker gave it by default.
	State     tracker.State `json:"state,omitempty"`
	Labels    []string      `json:"labels"`
	UpdatedAt time.Time     `json:"updated_at,omitzero"`
	Archived  bool          `json:"archived,omitempty"`
}

func itemJSON(it tracker.Item) ItemJSON {
	labels := it.Labels
	if labels == nil {
		labels = []string{}
	}
	return ItemJSON{
		ID: it.Ref.ID, Number: it.Ref.Number, Name: it.Ref.Name, Link: it.Ref.Link, Key: it.Ref.Key,
		Title: it.Title, Description: it.Description, State: it.State, Labels: labels,
		UpdatedAt: it.UpdatedAt, Archived: it.Archived,
	}
}

// CommentResponse is a comment and how the request came to it.
type CommentResponse struct {
	Comment CommentJSON `json:"comment"`
	How     string      `json:"how"`
}

// CommentJSON is a comment as the API answers it.
type CommentJSON struct {
	ID     string `json:"id"`
	ItemID string `json:"item_id"`
	Key    string `json:"key"`
}

func correlation(r *http.Request, body string) string {
	if body != "" {
		return body
	}
	return r.Header.Get(CorrelationHeader)
}

// preferredWait answers the wait the request's client said it takes
// (RFC 7240's Prefer: wait=N, in seconds), when it said one: relayr answers
// such a caller before it gives up, with its item or a retryable error
// saying when to come back (writes.AnswerMargin before the wait ends), and
// says so in Preference-Applied. A Prefer header relayr cannot read is
// ignored, as RFC 7240 has preferences be.
func preferredWait(w http.ResponseWriter, r *http.Request) (time.Duration, bool) {
	for _, h := range r.Header.Values("Prefer") {
		for pref := range strings.SplitSeq(h, ",") {
			name, value, ok := strings.Cut(strings.TrimSpace(pref), "=")
			if !ok || !strings.EqualFold(strings.TrimSpace(name), "wait") {
				continue
			}
			n, err := strconv.Atoi(strings.Trim(strings.TrimSpace(value), `"`))
			if err != nil || n < 1 || n > maxPreferWait {
				continue
			}
			w.Header().Set("Preference-Applied", "wait="+strconv.Itoa(n))
			return time.Duration(n) * time.Second, true
		}
	}
	return 0, false
}

// maxPreferWait is the longest Prefer: wait relayr reads (a day); a longer
// one is ignored.
const maxPreferWait = 86400

func (a *API) ensure(w http.ResponseWriter, r *http.Request) {
	tenant, ok := a.tenantOf(w, r)
	if !ok {
		return
	}
	workspace := r.PathValue("workspace")
	var req EnsureRequest
	if !decode(w, r, &req) {
		return
	}
	ctx := r.Context()
	if wait, ok := preferredWait(w, r); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	res, err := a.c.Writes.EnsureItem(ctx, writes.EnsureParams{
		Tenant: tenant, Workspace: workspace, Key: req.Key,
		Draft:       tracker.Draft{Title: req.Title, Description: req.Description, State: req.State, Labels: req.Labels},
		Correlation: correlation(r, req.Correlation), Live: req.Live,
	})
	if err != nil {
		a.writeWriteError(w, tenant, workspace, err)
		return
	}
	status := http.StatusOK
	if res.How == writes.Created {
		status = http.StatusCreated
	}
	writeJSON(w, status, ItemResponse{Item: itemJSON(res.Item), How: res.How})
}

func (a *API) update(w http.ResponseWriter, r *http.Request) {
	tenant, ok := a.tenantOf(w, r)
	if !ok {
		return
	}
	workspace := r.PathValue("workspace")
	var req UpdateRequest
	if !decode(w, r, &req) {
		return
	}
	ctx := r.Context()
	if wait, ok := preferredWait(w, r); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	it, err := a.c.Writes.Update(ctx, writes.UpdateParams{
		Tenant: tenant, Workspace: workspace, Key: req.Key,
		Patch:       tracker.Patch{Title: req.Title, Description: req.Description, State: req.State, Labels: req.Labels},
		Correlation: correlation(r, req.Correlation), Live: req.Live,
	})
	if err != nil {
		a.writeWriteError(w, tenant, workspace, err)
		return
	}
	writeJSON(w, http.StatusOK, ItemResponse{Item: itemJSON(it), How: "updated"})
}

func (a *API) comment(w http.ResponseWriter, r *http.Request) {
	tenant, ok := a.tenantOf(w, r)
	if !ok {
		return
	}
	workspace := r.PathValue("workspace")
	var req CommentRequest
	if !decode(w, r, &req) {
		return
	}
	ctx := r.Context()
	if wait, ok := preferredWait(w, r); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	res, err := a.c.Writes.Comment(ctx, writes.CommentParams{
		Tenant: tenant, Workspace: workspace, ItemKey: req.ItemKey, Key: req.Key,
		Body: req.Body, Correlation: correlation(r, req.Correlation),
	})
	if err != nil {
		a.writeWriteError(w, tenant, workspace, err)
		return
	}
	status := http.StatusOK
	if res.How == writes.Created {
		status = http.StatusCreated
	}
	writeJSON(w, status, CommentResponse{Comment: CommentJSON{ID: res.Comment.ID, ItemID: res.Comment.ItemID, Key: res.Comment.Key}, How: res.How})
}
