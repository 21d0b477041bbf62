package gitlab

import (
	"net/http"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// Every text reads back as it was sent, whatever its lines start with,
// and no line sent starts with "/".
func TestQuickActionsEscapedBothWays(t *testing.T) {
	for _, s := range []string{
		"", "plain", "/close", "/label ~bug\n/assign @me", "a\n/close\nb", `\/close`, `\\x`, `\x`, `\`, "\\\n/", "x /not at start",
		"/", "//", `\\\/`, "\n/close\n", "a\r\n/close\r\n",
	} {
		sent := escapeQuick(s)
		for i, l := range splitLines(sent) {
			if len(l) > 0 && l[0] == '/' {
				t.Errorf("escapeQuick(%q) line %d starts with /: %q", s, i, l)
			}
		}
		if got := unescapeQuick(sent); got != s {
			t.Errorf("unescapeQuick(escapeQuick(%q)) = %q", s, got)
		}
	}
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func FuzzQuickActions(f *testing.F) {
	for _, s := range []string{"/close", `\/x`, "a\n\\\\/b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sent := escapeQuick(s)
		for _, l := range splitLines(sent) {
			if len(l) > 0 && l[0] == '/' {
				t.Fatalf("a line sent starts with /: %q", sent)
			}
		}
		if got := unescapeQuick(sent); got != s {
			t.Fatalf("%q read back as %q", s, got)
		}
	})
}

func TestNextPageReadsTheLinkHeader(t *testing.T) {
	h := http.Header{}
	h.Add("Link", `<https://gl.example/api/v4/projects/1/issues?page=1>; rel="prev", <https://gl.example/api/v4/projects/1/issues?cursor=eyJ9&per_page=100>; rel="next", <https://gl.example/x>; rel="first"`)
	if got := nextPage(h); got != "https://gl.example/api/v4/projects/1/issues?cursor=eyJ9&per_page=100" {
		t.Fatalf("next = %q", got)
	}
	if got := nextPage(http.Header{"Link": {`<https://gl.example/x>; rel="first"`}}); got != "" {
		t.Fatalf("next of a last page = %q", got)
	}
}

func TestStatesReadByLabels(t *testing.T) {
	l, err := StateLabels{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		state  string
		labels []string
		want   tracker.State
	}{
		{"opened", nil, tracker.Todo},
		{"opened", []string{"bug", l.Backlog}, tracker.Backlog},
		{"opened", []string{l.Backlog, l.Started}, tracker.Started},
		{"opened", []string{l.Todo}, tracker.Todo},
		{"opened", []string{l.Cancelled}, tracker.Todo},
		{"closed", nil, tracker.Done},
		{"closed", []string{l.Started}, tracker.Done},
		{"closed", []string{l.Cancelled}, tracker.Cancelled},
	} {
		if got := l.stateOf(c.state, c.labels); got != c.want {
			t.Errorf("%s %v reads %s, want %s", c.state, c.labels, got, c.want)
		}
	}
	if _, err := (StateLabels{Backlog: "a", Todo: "a"}).withDefaults(); err == nil {
		t.Error("one label for two states was taken")
	}
	if _, err := (StateLabels{Started: "in,progress"}).withDefaults(); err == nil {
		t.Error("a label with a comma was taken")
	}
}

// The pacer keeps GitLab's minute: no more than the limit in any span,
// whatever the window's alignment, and what a 429 says is held.
func TestPacerKeepsTheMinute(t *testing.T) {
	now := time.Date(2026, 12, 4, 9, 0, 30, 0, time.UTC)
	p := &pacer{lim: Limits{Requests: -1, IssueCreates: 3, Notes: 2}, now: func() time.Time { return now }, creates: map[int64][]time.Time{}, held: map[class]time.Time{}}
	for i := range 3 {
		if w, _ := p.reserve(issueCreate, 7); w != 0 {
			t.Fatalf("create %d waits %s", i, w)
		}
	}
	if w, c := p.reserve(issueCreate, 7); w != span || c != issueCreate {
		t.Fatalf("the fourth create waits %s on %s, want %s on creations", w, c, span)
	}
	if w, _ := p.reserve(issueCreate, 8); w != 0 {
		t.Fatalf("another project's create waits %s", w)
	}
	if w, _ := p.reserve(anyRequest, 7); w != 0 {
		t.Fatalf("a read waits %s with no request limit", w)
	}
	p.observe(noteCreate, trackerhttp.Answer{Status: http.StatusTooManyRequests, Header: http.Header{}})
	if w, c := p.reserve(noteCreate, 7); c != noteCreate || w != 31*time.Second {
		t.Fatalf("a note after a bare 429 waits %s on %s, want 31s (the next minute and a second)", w, c)
	}
	if w, _ := p.reserve(anyRequest, 7); w != 0 {
		t.Fatalf("a bare 429 of the note limiter held a read %s", w)
	}
	p.observe(anyRequest, trackerhttp.Answer{Status: http.StatusOK, Header: http.Header{"Ratelimit-Remaining": {"0"}, "Ratelimit-Reset": {"1796374845"}}})
	if w, _ := p.reserve(anyRequest, 7); w != time.Unix(1796374845, 0).Sub(now) {
		t.Fatalf("RateLimit-Remaining 0 held a read %s", w)
	}
}
