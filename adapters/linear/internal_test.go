package linear

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// A derived id is a v4 UUID, lower case, the same for the same source and
// key, another for another source or key.
func TestIDsAreV4UUIDsOfSourceAndKey(t *testing.T) {
	a := tracker.Source{Tenant: "t", Workspace: "w"}
	b := tracker.Source{Tenant: "t", Workspace: "w2"}
	id := idOf(a, "k1")
	u, err := uuid.Parse(id)
	if err != nil || u.Version() != 4 || u.Variant() != uuid.RFC4122 || u.String() != id || !validID(id) {
		t.Fatalf("%s: version %d variant %v (%v)", id, u.Version(), u.Variant(), err)
	}
	if idOf(a, "k1") != id || idOf(b, "k1") == id || idOf(a, "k2") == id {
		t.Fatal("ids are not one per source and key")
	}
	if validID("ENG-12") || validID(string([]byte(id)[:35])) || validID("6BA7B810-9DAD-41D1-80B4-00C04FD430C8") {
		t.Fatal("an identifier or an upper-case UUID taken for an id")
	}
}

func FuzzCommentKeysReadBack(f *testing.F) {
	for _, k := range []string{"k1", "ci/run 7", "a_b*c~d[e]<f>&g\\h", "", "%41", "lattice-key: x"} {
		f.Add(k, "body\n\nwith lines")
	}
	d := &Driver{source: tracker.Source{Tenant: "t_1", Workspace: "w*2"}}
	f.Fuzz(func(t *testing.T, key, body string) {
		if key == "" {
			return
		}
		text := d.markComment(body, key)
		for i := range len(text) {
			if c := text[i]; c == '_' || c == '*' || c == '~' || c == '[' || c == '<' || c == '&' || c == '\\' {
				if i > len(text)-len(commentTagPrefix)-len(tag(d.source.String()))-len(tag(key))-1 {
					t.Fatalf("the key line holds %q, which Linear's Markdown rewrites", c)
				}
			}
		}
		k, _ := d.unmarkComment(normalize(text))
		if k != key {
			t.Fatalf("key %q read back as %q from %q", key, k, text)
		}
	})
}

func TestDescriptionsCompareAsLinearStoresThem(t *testing.T) {
	d := &Driver{}
	for _, c := range []struct {
		set, held string
		same      bool
	}{
		{"a\n\n\n\nb", "a\n\nb", true},
		{"* one\n+ two", "- one\n- two", true},
		{"line   \nnext", "line\nnext", true},
		{"text <!-- hidden -->", "text ", true},
		{"a\r\nb\n", "a\nb", true},
		{"a", "b", false},
		{"*emphasis*", "-emphasis*", false},
	} {
		if got := d.SameDescription(c.set, c.held); got != c.same {
			t.Errorf("SameDescription(%q, %q) = %v", c.set, c.held, got)
		}
	}
}

func TestResetsInSecondsOrMilliseconds(t *testing.T) {
	now := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	ms := http.Header{"X-Ratelimit-Requests-Remaining": {"0"}, "X-Ratelimit-Requests-Reset": {strconv.FormatInt(now.Add(90*time.Second).UnixMilli(), 10)}}
	if d := resetWait(ms, now); d != 90*time.Second {
		t.Fatalf("a reset in ms waits %s", d)
	}
	s := http.Header{"X-Ratelimit-Complexity-Remaining": {"0"}, "X-Ratelimit-Complexity-Reset": {strconv.FormatInt(now.Add(30*time.Second).Unix(), 10)}}
	if d := resetWait(s, now); d != 30*time.Second {
		t.Fatalf("a reset in s waits %s", d)
	}
	if d := resetWait(http.Header{"Retry-After": {"7"}}, now); d != 7*time.Second {
		t.Fatalf("Retry-After 7 waits %s", d)
	}
	if d := resetWait(http.Header{}, now); d != time.Minute {
		t.Fatalf("no word waits %s, want a minute", d)
	}
}

// The polls leave the writes their share of both axes.
func TestPollsLeaveTheWritesTheirShare(t *testing.T) {
	now := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	p := newPacer(func() time.Time { return now }, nil)
	reset := strconv.FormatInt(now.Add(time.Hour).UnixMilli(), 10)
	p.observe(answer(http.Header{"X-Ratelimit-Requests-Limit": {"2500"}, "X-Ratelimit-Requests-Remaining": {"1000"}, "X-Ratelimit-Requests-Reset": {reset},
		"X-Ratelimit-Complexity-Limit": {"250000"}, "X-Ratelimit-Complexity-Remaining": {"30000"}, "X-Ratelimit-Complexity-Reset": {reset}, "X-Complexity": {"2000"}}), poll, qChanged)
	if w, why := p.room(poll, qChanged); w != 0 {
		t.Fatalf("a poll waits %s (%s) with room on both axes", w, why)
	}
	p.observe(answer(http.Header{"X-Ratelimit-Complexity-Limit": {"250000"}, "X-Ratelimit-Complexity-Remaining": {"30000"}, "X-Ratelimit-Complexity-Reset": {reset}, "X-Complexity": {"2000"},
		"X-Ratelimit-Requests-Limit": {"2500"}, "X-Ratelimit-Requests-Remaining": {"200"}, "X-Ratelimit-Requests-Reset": {reset}}), poll, qChanged)
	if w, _ := p.room(poll, qChanged); w != time.Hour {
		t.Fatalf("a poll into the writes' share of requests waits %s, want the reset", w)
	}
	if w, _ := p.room(write, mCreate); w != 0 {
		t.Fatalf("a write waits %s", w)
	}
}

// A poll is taken to cost what the same query cost last; a query not yet
// seen what the dearest poll cost; a write's cost teaches nothing.
func TestAPollCostsWhatItsQueryCostLast(t *testing.T) {
	now := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	p := newPacer(func() time.Time { return now }, nil)
	reset := strconv.FormatInt(now.Add(time.Hour).UnixMilli(), 10)
	points := func(remaining, cost string) http.Header {
		return http.Header{"X-Ratelimit-Complexity-Limit": {"250000"}, "X-Ratelimit-Complexity-Remaining": {remaining},
			"X-Ratelimit-Complexity-Reset": {reset}, "X-Complexity": {cost}}
	}
	p.observe(answer(points("30000", "4")), poll, qProbe)
	p.observe(answer(points("30000", "4000")), poll, qChanged)
	p.observe(answer(points("26100", "20000")), write, mCreate)
	// 26,100 left, 25,000 the writes': the probe (4) fits, the walk
	// (4,000) does not, and neither does a query not yet seen.
	if w, why := p.room(poll, qProbe); w != 0 {
		t.Fatalf("the probe waits %s (%s)", w, why)
	}
	if w, _ := p.room(poll, qChanged); w != time.Hour {
		t.Fatalf("the walk waits %s, want the reset", w)
	}
	if w, _ := p.room(poll, qComments); w != time.Hour {
		t.Fatalf("an unseen poll waits %s, want the reset (taken at the dearest poll's cost)", w)
	}
	if w, _ := p.room(write, mCreate); w != 0 {
		t.Fatalf("a write waits %s", w)
	}
}

func answer(h http.Header) trackerhttp.Answer { return trackerhttp.Answer{Status: 200, Header: h} }
