package tracker_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
)

// stub is a driver that answers what it is told and counts its calls, so a
// test sees whether the portable tracker asked it at all.
type stub struct {
	caps  tracker.Capabilities
	calls map[string]int
	item  tracker.Item
	err   error
	nudge tracker.Nudged
}

func newStub() *stub {
	return &stub{
		caps: tracker.Capabilities{
			Name: "stub", MaxKeyChars: 10, Rewrites: "<>", MaxPage: 10, TimePrecision: time.Second,
			States:  map[tracker.State]tracker.State{tracker.Backlog: tracker.Todo, tracker.Cancelled: tracker.Done},
			ValidID: func(id string) bool { return strings.HasPrefix(id, "i-") },
		},
		calls: map[string]int{},
		item:  tracker.Item{Ref: tracker.ItemRef{ID: "i-1"}, Title: "T"},
		nudge: tracker.Nudged{Project: "p", Deleted: []string{"i-1"}},
	}
}

func (s *stub) Capabilities() tracker.Capabilities { return s.caps }
func (s *stub) Project() string                    { return "p" }
func (s *stub) Link(r tracker.ItemRef) string      { return "https://stub/" + r.ID }
func (s *stub) answer(m string) (tracker.Item, error) {
	s.calls[m]++
	return s.item, s.err
}
func (s *stub) Find(context.Context, string) (tracker.Item, error) { return s.answer("Find") }
func (s *stub) Create(context.Context, string, tracker.Draft) (tracker.Item, error) {
	return s.answer("Create")
}
func (s *stub) Item(context.Context, string) (tracker.Item, error) { return s.answer("Item") }
func (s *stub) Update(context.Context, string, tracker.Patch) (tracker.Item, error) {
	return s.answer("Update")
}
func (s *stub) Comment(context.Context, string, string, string) (tracker.Comment, error) {
	s.calls["Comment"]++
	return tracker.Comment{ID: "c-1"}, s.err
}
func (s *stub) Items(context.Context, tracker.Query) (tracker.Page, error) {
	s.calls["Items"]++
	return tracker.Page{Items: []tracker.Item{s.item}}, s.err
}
func (s *stub) Comments(context.Context, string, time.Time) ([]tracker.Comment, error) {
	s.calls["Comments"]++
	return nil, s.err
}
func (s *stub) Nudge(string, http.Header, []byte) (tracker.Nudged, error) {
	s.calls["Nudge"]++
	return s.nudge, s.err
}

func (s *stub) total() int {
	n := 0
	for _, c := range s.calls {
		n += c
	}
	return n
}

// calls of the port that take a key, a body, an id; each names its input.
func keyed(ctx context.Context, tr *tracker.Tracker, key string) map[string]error {
	_, find := tr.Find(ctx, key)
	_, create := tr.Create(ctx, key, tracker.Draft{Title: "T"})
	_, comment := tr.Comment(ctx, "i-1", key, "body")
	return map[string]error{"Find": find, "Create": create, "Comment": comment}
}

func TestPortableRefusesABadKeyWithoutAskingTheDriver(t *testing.T) {
	for name, key := range map[string]string{
		"empty":                   "",
		"a space at its end":      "k ",
		"a control character":     "k\x01",
		"a character it rewrites": "a<b",
		"not UTF-8":               "k\xff",
	} {
		s := newStub()
		for m, err := range keyed(context.Background(), tracker.New(s), key) {
			if !errors.Is(err, tracker.ErrInvalid) {
				t.Errorf("%s: %s answered %v, want ErrInvalid", name, m, err)
			}
		}
		if s.total() != 0 {
			t.Errorf("%s: the driver was asked %v", name, s.calls)
		}
	}
	// An item's key past MaxKeyChars is refused; a comment's is the
	// driver's to keep.
	s := newStub()
	tr := tracker.New(s)
	long := "kkkkkkkkkkk"
	if _, err := tr.Find(context.Background(), long); !errors.Is(err, tracker.ErrInvalid) {
		t.Errorf("Find past MaxKeyChars: %v, want ErrInvalid", err)
	}
	if _, err := tr.Create(context.Background(), long, tracker.Draft{Title: "T"}); !errors.Is(err, tracker.ErrInvalid) {
		t.Errorf("Create past MaxKeyChars: %v, want ErrInvalid", err)
	}
	if _, err := tr.Comment(context.Background(), "i-1", long, "b"); err != nil || s.calls["Comment"] != 1 {
		t.Errorf("Comment past MaxKeyChars: %v, want it passed to the driver", err)
	}
	// Ten characters of more than one byte each are within MaxKeyChars.
	s = newStub()
	for m, err := range keyed(context.Background(), tracker.New(s), strings.Repeat("é", 10)) {
		if err != nil {
			t.Errorf("a key of ten characters: %s answered %v", m, err)
		}
	}
}

func TestPortableRefusesABadDraftPatchOrBodyWithoutAskingTheDriver(t *testing.T) {
	s := newStub()
	tr := tracker.New(s)
	ctx := context.Background()
	bad := "bad\x00"
	state := tracker.State("doing")
	for name, err := range map[string]error{
		"a blank title":       func() error { _, err := tr.Create(ctx, "k", tracker.Draft{Title: " "}); return err }(),
		"a state not of five": func() error { _, err := tr.Create(ctx, "k", tracker.Draft{Title: "T", State: state}); return err }(),
		"a blank label": func() error {
			_, err := tr.Create(ctx, "k", tracker.Draft{Title: "T", Labels: []string{""}})
			return err
		}(),
		"a label twice": func() error {
			_, err := tr.Create(ctx, "k", tracker.Draft{Title: "T", Labels: []string{"l", "m", "l"}})
			return err
		}(),
		"more labels than MaxLabels": func() error {
			many := make([]string, tracker.MaxLabels+1)
			for i := range many {
				many[i] = fmt.Sprint("l", i)
			}
			_, err := tr.Update(ctx, "i-1", tracker.Patch{Labels: &many})
			return err
		}(),
		"a patch's NUL":   func() error { _, err := tr.Update(ctx, "i-1", tracker.Patch{Description: &bad}); return err }(),
		"a patch's state": func() error { _, err := tr.Update(ctx, "i-1", tracker.Patch{State: &state}); return err }(),
		"a comment's NUL": func() error { _, err := tr.Comment(ctx, "i-1", "k", bad); return err }(),
	} {
		if !errors.Is(err, tracker.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if s.total() != 0 {
		t.Errorf("the driver was asked %v", s.calls)
	}
}

func TestPortableAnswersNotFoundForAnIDOfAnotherShape(t *testing.T) {
	s := newStub()
	tr := tracker.New(s)
	ctx := context.Background()
	title := "T"
	for _, id := range []string{"", "x-1", "1"} {
		for m, err := range map[string]error{
			"Item":     func() error { _, err := tr.Item(ctx, id); return err }(),
			"Update":   func() error { _, err := tr.Update(ctx, id, tracker.Patch{Title: &title}); return err }(),
			"Comment":  func() error { _, err := tr.Comment(ctx, id, "k", "b"); return err }(),
			"Comments": func() error { _, err := tr.Comments(ctx, id, time.Time{}); return err }(),
		} {
			if !errors.Is(err, tracker.ErrNotFound) {
				t.Errorf("%s(%q): %v, want ErrNotFound", m, id, err)
			}
		}
	}
	if s.total() != 0 {
		t.Errorf("the driver was asked %v", s.calls)
	}
}

func TestPortableEndsACallWhoseContextIsDoneBeforeTheDriver(t *testing.T) {
	s := newStub()
	tr := tracker.New(s)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	title := "T"
	errs := keyed(ctx, tr, "k")
	_, errs["Item"] = tr.Item(ctx, "i-1")
	_, errs["Update"] = tr.Update(ctx, "i-1", tracker.Patch{Title: &title})
	_, errs["Items"] = tr.Items(ctx, tracker.Query{})
	_, errs["Comments"] = tr.Comments(ctx, "i-1", time.Time{})
	for m, err := range errs {
		if !errors.Is(err, context.Canceled) || !errors.Is(err, tracker.ErrUnavailable) || !errors.Is(err, tracker.ErrNotSent) {
			t.Errorf("%s: %v, want ErrNotSent and ErrUnavailable wrapping context.Canceled", m, err)
		}
	}
	if s.total() != 0 {
		t.Errorf("the driver was asked %v", s.calls)
	}
}

func TestPortableReadsTheItemForAnEmptyPatch(t *testing.T) {
	s := newStub()
	it, err := tracker.New(s).Update(context.Background(), "i-1", tracker.Patch{})
	if err != nil || it.Ref.ID != "i-1" || s.calls["Item"] != 1 || s.calls["Update"] != 0 {
		t.Fatalf("%+v %v, calls %v: want one read and no update", it, err, s.calls)
	}
}

func TestPortableMapsEveryDriverFailureOntoThePortsErrors(t *testing.T) {
	ctx := context.Background()
	s := newStub()
	tr := tracker.New(s)
	s.err = errors.New("socket closed")
	if _, err := tr.Item(ctx, "i-1"); !errors.Is(err, tracker.ErrUnavailable) || !strings.Contains(err.Error(), "socket closed") || !strings.HasPrefix(err.Error(), "stub: ") {
		t.Errorf("an untyped failure: %v, want ErrUnavailable naming it", err)
	}
	s.err = &tracker.ExistsError{ID: "i-9"}
	var ex *tracker.ExistsError
	if _, err := tr.Create(ctx, "k", tracker.Draft{Title: "T"}); !errors.As(err, &ex) || ex.ID != "i-9" {
		t.Errorf("a typed failure: %v, want it as it is", err)
	}
	s.err = tracker.RateLimited(time.Second)
	if _, err := tr.Items(ctx, tracker.Query{}); !errors.Is(err, tracker.ErrRateLimited) {
		t.Errorf("a rate limit: %v", err)
	}
	s.err = nil
	s.item = tracker.Item{Title: "no id"}
	if _, err := tr.Find(ctx, "k"); !errors.Is(err, tracker.ErrUnavailable) {
		t.Errorf("an item without an id: %v, want ErrUnavailable", err)
	}
	if _, err := tr.Items(ctx, tracker.Query{}); !errors.Is(err, tracker.ErrUnavailable) {
		t.Errorf("a page with an item without an id: %v, want ErrUnavailable", err)
	}
}

func TestPortableNudge(t *testing.T) {
	s := newStub()
	tr := tracker.New(s)
	if _, err := tr.Nudge("", nil, nil); !errors.Is(err, tracker.ErrUnauthorized) || s.total() != 0 {
		t.Errorf("no secret: %v (calls %v), want ErrUnauthorized without asking", err, s.calls)
	}
	n, err := tr.Nudge("secret", nil, nil)
	if err != nil || n.Project != "p" || n.Deleted != nil {
		t.Errorf("a tracker that reports no deletions: %+v %v, want its project and none deleted", n, err)
	}
	s.caps.NudgesDeletions = true
	if n, err := tracker.New(s).Nudge("secret", nil, nil); err != nil || len(n.Deleted) != 1 {
		t.Errorf("a tracker that reports deletions: %+v %v", n, err)
	}
	s.nudge = tracker.Nudged{}
	if _, err := tr.Nudge("secret", nil, nil); !errors.Is(err, tracker.ErrRefused) {
		t.Errorf("a delivery naming no project: %v, want ErrRefused", err)
	}
	s.err = errors.New("not JSON")
	if _, err := tr.Nudge("secret", nil, nil); !errors.Is(err, tracker.ErrRefused) {
		t.Errorf("an untyped failure: %v, want ErrRefused", err)
	}
	s.err = tracker.ErrUnauthorized
	if _, err := tr.Nudge("secret", nil, nil); !errors.Is(err, tracker.ErrUnauthorized) || errors.Is(err, tracker.ErrRefused) {
		t.Errorf("a bad signature: %v, want ErrUnauthorized", err)
	}
}

// comparing is a stub whose tracker rewrites descriptions to upper case.
type comparing struct{ *stub }

func (comparing) SameDescription(set, held string) bool { return strings.ToUpper(set) == held }

func TestPortableHoldsAndDescriptionsFollowTheDriver(t *testing.T) {
	plain := tracker.New(newStub())
	if plain.Holds(tracker.Backlog) != tracker.Todo || plain.Holds(tracker.Started) != tracker.Started || plain.Holds(tracker.Cancelled) != tracker.Done {
		t.Error("Holds does not follow Capabilities.States")
	}
	if plain.RewritesDescriptions() || plain.SameDescription("a", "A") || !plain.SameDescription("a", "a") {
		t.Error("a driver without a comparer compares descriptions by equality")
	}
	up := tracker.New(comparing{newStub()})
	if !up.RewritesDescriptions() || !up.SameDescription("a", "A") || up.SameDescription("a", "B") {
		t.Error("a driver's comparer is not used")
	}
}
