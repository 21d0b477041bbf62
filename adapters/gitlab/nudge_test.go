package gitlab_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/gitlab"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/gitlabemu"
)

// hookSecret is the hook's secret token, and in a signed position its
// signing token too (the driver checks both with the one secret).
const hookSecret = "hook-s3cret"

// hooked is a position's emulation with one project hook, registered as
// the position says: a secret token, and a signing token when signed.
type hooked struct {
	*emulated
	tr   *tracker.Tracker
	seen int // deliveries taken by next so far
}

func newHooked(t *testing.T, pos position) *hooked {
	t.Helper()
	em := newEmulated(t, pos.opts, gitlab.Config{})
	em.signed = pos.signed
	signing := ""
	if pos.signed {
		signing = hookSecret
	}
	if em.e.AddHook(project, "http://127.0.0.1:9/hook", hookSecret, signing) == 0 {
		t.Fatal("no hook added")
	}
	return &hooked{emulated: em, tr: tracker.New(em.driver(t))}
}

// next answers the deliveries made since the last call, each checked to
// carry the hook's token, and a Standard Webhooks signature exactly when
// the position signs.
func (h *hooked) next(t *testing.T) []gitlabemu.Delivery {
	t.Helper()
	all := h.e.Deliveries()
	ds := all[h.seen:]
	h.seen = len(all)
	for _, d := range ds {
		if d.Header.Get(gitlab.HookHeader) != hookSecret {
			t.Fatalf("%s %s carries token %q", d.Event, d.Action, d.Header.Get(gitlab.HookHeader))
		}
		if signed := d.Header.Get("webhook-signature") != ""; signed != h.signed {
			t.Fatalf("%s %s signed %v in a position signed %v", d.Event, d.Action, signed, h.signed)
		}
	}
	return ds
}

// nudged checks the delivery verifies and names the project and its
// Idempotency-Key.
func (h *hooked) nudged(t *testing.T, d gitlabemu.Delivery) tracker.Nudged {
	t.Helper()
	n, err := h.tr.Nudge(hookSecret, d.Header, d.Body)
	if err != nil || n.Project != project || n.Delivery == "" || n.Delivery != d.Header.Get("Idempotency-Key") || len(n.Deleted) != 0 {
		t.Fatalf("%s %s nudged %+v, %v; want project %s and delivery %q", d.Event, d.Action, n, err, project, d.Header.Get("Idempotency-Key"))
	}
	return n
}

// noteHookIssue answers the iid of the issue a Note Hook's body tells of
// (its issue.iid) and whether its note is a system note.
func noteHookIssue(t *testing.T, body []byte) (string, bool) {
	t.Helper()
	var p struct {
		Kind  string `json:"object_kind"`
		Attrs struct {
			System       bool   `json:"system"`
			NoteableType string `json:"noteable_type"` //nolint:misspell // GitLab's field name
		} `json:"object_attributes"`
		Issue struct {
			IID int64 `json:"iid"`
		} `json:"issue"`
	}
	if err := json.Unmarshal(body, &p); err != nil || p.Kind != "note" || p.Attrs.NoteableType != "Issue" || p.Issue.IID == 0 {
		t.Fatalf("a Note Hook body %s: %v", body, err)
	}
	return strconv.FormatInt(p.Issue.IID, 10), p.Attrs.System
}

// nudgesIn checks, in one position, what GitLab delivers reaching the
// driver's Nudge: a person's comment sends a Note Hook about the item
// commented on, which nudges, and the item's comments then read it; an
// edit of the comment sends a Note Hook "update", which nudges too; a
// retitle sends one Issue Hook and no Note Hook for its system note
// (app/services/system_note_service.rb sends none, sheet §9). In a signed
// position each delivery carries a Standard Webhooks signature, verified:
// a body altered, a signature of another signing token and a delivery
// replayed over SignatureTolerance later are refused; in an unsigned one
// the token is all there is, and an altered body still nudges (sheet §9,
// the driver's Nudge: a shared secret, no HMAC).
func nudgesIn(t *testing.T, pos position) {
	h := newHooked(t, pos)
	ctx := context.Background()
	var ids []string
	for _, k := range []string{"k1", "k2"} {
		it, err := h.tr.Create(ctx, k, tracker.Draft{Title: "Filed " + k})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, it.Ref.ID)
	}
	for _, d := range h.next(t) {
		if d.Event != "Issue Hook" || d.Action != "open" {
			t.Fatalf("relayr's filings delivered %s %s", d.Event, d.Action)
		}
		h.nudged(t, d)
	}
	target := ids[1]
	p := emuPerson{t, h.emulated}

	// A person's comment: one Note Hook "create" about the item.
	h.clock.Advance(2 * time.Minute)
	const said = "Still failing on main"
	noteID, err := h.person.Comment(iid(t, target), said)
	if err != nil {
		t.Fatal(err)
	}
	_ = p.settle(nil)
	ds := h.next(t)
	if len(ds) != 1 || ds[0].Event != "Note Hook" || ds[0].Action != "create" || strconv.FormatInt(ds[0].IID, 10) != target {
		t.Fatalf("the comment delivered %+v, want one Note Hook create about #%s", ds, target)
	}
	if about, system := noteHookIssue(t, ds[0].Body); about != target || system {
		t.Fatalf("the Note Hook tells of #%s (system %v), want #%s, a person's note", about, system, target)
	}
	comment := ds[0]
	first := h.nudged(t, comment)
	cs, err := h.tr.Comments(ctx, target, time.Time{})
	if err != nil || len(cs) != 1 || cs[0].Body != said || cs[0].ItemID != target || cs[0].Key != "" {
		t.Fatalf("after the nudge #%s's comments read %+v, %v; want the person's", target, cs, err)
	}
	if other, err := h.tr.Comments(ctx, ids[0], time.Time{}); err != nil || len(other) != 0 {
		t.Fatalf("#%s's comments read %+v, %v; want none", ids[0], other, err)
	}

	// The comment edited: a Note Hook "update", another delivery.
	if err := h.person.EditComment(noteID, said+" (and on stable)"); err != nil {
		t.Fatal(err)
	}
	ds = h.next(t)
	if len(ds) != 1 || ds[0].Event != "Note Hook" || ds[0].Action != "update" || strconv.FormatInt(ds[0].IID, 10) != target {
		t.Fatalf("the edit delivered %+v, want one Note Hook update about #%s", ds, target)
	}
	if n := h.nudged(t, ds[0]); n.Delivery == first.Delivery {
		t.Fatal("the edit's delivery is named as the comment's")
	}

	// A retitle: its system note sends no Note Hook.
	if err := p.Retitle(ctx, target, "Retitled by a person"); err != nil {
		t.Fatal(err)
	}
	ds = h.next(t)
	if len(ds) != 1 || ds[0].Event != "Issue Hook" || ds[0].Action != "update" {
		t.Fatalf("the retitle delivered %+v, want one Issue Hook update", ds)
	}
	h.nudged(t, ds[0])

	// Refused: another secret; and, signed, what the token alone can't
	// tell.
	if _, err := h.tr.Nudge("another-secret", comment.Header, comment.Body); !errors.Is(err, tracker.ErrUnauthorized) {
		t.Fatalf("another secret: %v, want unauthorized", err)
	}
	altered := bytes.ReplaceAll(comment.Body, []byte(said), []byte("Fixed, close it"))
	if bytes.Equal(altered, comment.Body) {
		t.Fatal("the Note Hook's body holds no note text to alter")
	}
	_, err = h.tr.Nudge(hookSecret, comment.Header, altered)
	switch {
	case h.signed && !errors.Is(err, tracker.ErrUnauthorized):
		t.Fatalf("a signed delivery altered: %v, want unauthorized", err)
	case !h.signed && err != nil:
		t.Fatalf("an unsigned delivery altered: %v; the token is all GitLab sends, so it nudges", err)
	}
	if !h.signed {
		return
	}
	forged := comment.Header.Clone()
	forged.Set("webhook-signature", "v1,"+gitlabemu.Sign("another-signing-token", forged.Get("webhook-id"), forged.Get("webhook-timestamp"), comment.Body))
	if _, err := h.tr.Nudge(hookSecret, forged, comment.Body); !errors.Is(err, tracker.ErrUnauthorized) {
		t.Fatalf("signed with another signing token: %v, want unauthorized", err)
	}
	h.clock.Advance(gitlab.SignatureTolerance + time.Second)
	if _, err := h.tr.Nudge(hookSecret, comment.Header, comment.Body); !errors.Is(err, tracker.ErrUnauthorized) {
		t.Fatalf("replayed %s later: %v, want unauthorized", gitlab.SignatureTolerance+time.Second, err)
	}
}
