package plane

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// wireItem is the part of Plane's work item object the adapter reads
// (api/serializers/issue.py IssueSerializer, §3.8 of the sheet). Every field
// may be null or missing; state and labels may arrive as ids or expanded.
type wireItem struct {
	ID              string   `json:"id"`
	Name            *string  `json:"name"`
	DescriptionHTML *string  `json:"description_html"`
	State           any      `json:"state"`
	Labels          []any    `json:"labels"`
	SequenceID      *float64 `json:"sequence_id"`
	UpdatedAt       *string  `json:"updated_at"`
	UpdatedBy       any      `json:"updated_by"`
	ArchivedAt      *string  `json:"archived_at"`
	ExternalID      any      `json:"external_id"`
	ExternalSource  any      `json:"external_source"`
	Project         any      `json:"project"`
}

// wireComment is Plane's comment object (§6).
type wireComment struct {
	ID             string  `json:"id"`
	CommentHTML    *string `json:"comment_html"`
	Issue          any     `json:"issue"`
	Actor          any     `json:"actor"`
	CreatedBy      any     `json:"created_by"`
	CreatedAt      *string `json:"created_at"`
	ExternalID     any     `json:"external_id"`
	ExternalSource any     `json:"external_source"`
}

// envelope is Plane's pagination envelope (utils/paginator.py:L716-731).
type envelope struct {
	Results         []json.RawMessage `json:"results"`
	NextPageResults bool              `json:"next_page_results"`
	TotalCount      *float64          `json:"total_count"`
}

// garbled reports an answer Plane would never give: nothing is known of what
// happened, so it is Unavailable, as a 5xx is.
func garbled(what string, err error) error { return trackerhttp.Garbled(Kind, what, err) }

func decodeItem(b []byte) (wireItem, error) {
	var w wireItem
	if err := json.Unmarshal(b, &w); err != nil {
		return w, garbled("work item", err)
	}
	if w.ID == "" {
		return w, garbled("work item without an id", nil)
	}
	if w.UpdatedAt == nil {
		return w, garbled("work item without updated_at", nil)
	}
	if _, err := parseTime(*w.UpdatedAt); err != nil {
		return w, garbled("work item updated_at", err)
	}
	return w, nil
}

func decodeEnvelope(b []byte) (envelope, error) {
	var e envelope
	if err := json.Unmarshal(b, &e); err != nil {
		return e, garbled("page", err)
	}
	if e.Results == nil {
		return e, garbled("page without results", nil)
	}
	return e, nil
}

func decodeComment(b []byte) (wireComment, error) {
	var w wireComment
	if err := json.Unmarshal(b, &w); err != nil {
		return w, garbled("comment", err)
	}
	if w.ID == "" {
		return w, garbled("comment without an id", nil)
	}
	if w.CreatedAt == nil {
		return w, garbled("comment without created_at", nil)
	}
	if _, err := parseTime(*w.CreatedAt); err != nil {
		return w, garbled("comment created_at", err)
	}
	return w, nil
}

// parseTime reads Plane's timestamps: RFC 3339 in the key owner's zone, with
// microseconds only when they aren't 0 (§10), and, leniently, one without a
// zone (read as UTC) or a bare date. The answer is in UTC.
func parseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00", time.DateOnly} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("unreadable timestamp %s", tracker.Quote(s))
}

// str reads an optional string-ish value: a string, a number's text, or the
// id of an expanded object.
func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return fmt.Sprintf("%d", int64(x))
		}
		return fmt.Sprint(x)
	case map[string]any:
		if id, ok := x["id"].(string); ok {
			return id
		}
	}
	return ""
}
