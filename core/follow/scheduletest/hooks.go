package scheduletest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
)

// Rendered answers Tracker.Nudge from the webhook deliveries an emulation
// renders as events fire (Gitea's, GitHub's), rather than on demand. Such
// an emulation sends a delivery only to a hook that exists when the event
// fires: a hook signed with a secret is added the first time the secret is
// asked for, and the latest delivery about the item since is answered
// (none before: ok false).
type Rendered struct {
	// Add adds a hook signed with secret.
	Add func(secret string) error
	// Deliveries answers those rendered so far, oldest first.
	Deliveries func() []Delivery
	// Sign answers the signature of body with secret, as the tracker
	// signs it.
	Sign func(secret string, body []byte) string

	mu    sync.Mutex
	added map[string]bool
}

// Delivery is one delivery an emulation rendered.
type Delivery struct {
	Header http.Header
	Body   []byte
	// Signature is the one its header carries; Item the id of the item it
	// tells of (IssueNumber); Deleted says it tells of the item's deletion.
	Signature string
	Item      string
	Deleted   bool
}

// Nudge is a Tracker.Nudge.
func (r *Rendered) Nudge(id string, deleted bool, secret string) (http.Header, []byte, bool) {
	r.mu.Lock()
	if !r.added[secret] {
		if err := r.Add(secret); err != nil {
			r.mu.Unlock()
			return nil, nil, false
		}
		if r.added == nil {
			r.added = map[string]bool{}
		}
		r.added[secret] = true
	}
	r.mu.Unlock()
	ds := r.Deliveries()
	for i := len(ds) - 1; i >= 0; i-- {
		d := ds[i]
		if d.Item == id && d.Deleted == deleted && d.Signature == r.Sign(secret, d.Body) {
			return d.Header, d.Body, true
		}
	}
	return nil, nil, false
}

// IssueNumber answers the number of the issue a forge's delivery tells of
// (its issue.number, as Gitea and GitHub send it), "" when it names none.
func IssueNumber(body []byte) string {
	var p struct {
		Issue struct {
			Number int64 `json:"number"`
		} `json:"issue"`
	}
	if json.Unmarshal(body, &p) != nil || p.Issue.Number == 0 {
		return ""
	}
	return strconv.FormatInt(p.Issue.Number, 10)
}
