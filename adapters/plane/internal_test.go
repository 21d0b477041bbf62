package plane

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
	"github.com/relayr-go/relayr/fixtures/planeemu"
)

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		status int
		header http.Header
		body   string
		want   error
	}{
		{200, nil, "{}", nil},
		{201, nil, "{}", nil},
		{204, nil, "", nil},
		{301, nil, "", tracker.ErrRefused},
		{400, nil, `{"name": ["This field is required."]}`, tracker.ErrRefused},
		{401, nil, `{"detail": "Authentication credentials were not provided."}`, tracker.ErrUnauthorized},
		{403, nil, `{"detail": "Given API token is not valid"}`, tracker.ErrUnauthorized},
		// A view's 403 past the throttle carries the allowed answer's
		// X-RateLimit-Remaining: still the key's rights, not the limit.
		{403, http.Header{"X-Ratelimit-Remaining": {"0"}}, `{"detail": "You do not have permission to perform this action."}`, tracker.ErrUnauthorized},
		{404, nil, `{"error": "Page not found."}`, tracker.ErrNotFound},
		{405, nil, `{"detail": "Method \"PUT\" not allowed."}`, tracker.ErrRefused},
		{409, nil, `{"error": "…", "id": "x"}`, tracker.ErrRefused},
		{413, nil, `{"error": "REQUEST_BODY_TOO_LARGE"}`, tracker.ErrRefused},
		{429, http.Header{"Retry-After": {"7"}}, `{"error_code": 5900}`, tracker.ErrRateLimited},
		{500, nil, "<html>boom</html>", tracker.ErrUnavailable},
		{502, nil, "", tracker.ErrUnavailable},
		{503, nil, strings.Repeat("\x00", 500), tracker.ErrUnavailable},
		{100, nil, "", tracker.ErrUnavailable},
	} {
		h := c.header
		if h == nil {
			h = http.Header{}
		}
		err := mapped(c.status, h, c.body)
		if c.want == nil {
			if err != nil {
				t.Errorf("%d: %v", c.status, err)
			}
			continue
		}
		if !errors.Is(err, c.want) {
			t.Errorf("%d: %v, want %v", c.status, err, c.want)
		}
		if len(err.Error()) > 300 {
			t.Errorf("%d: message of %d bytes", c.status, len(err.Error()))
		}
	}
	var rl *tracker.RateLimitedError
	if err := mapped(429, http.Header{"Retry-After": {"7"}}, ""); !errors.As(err, &rl) || rl.RetryAfter != 7*time.Second {
		t.Fatalf("429: %v", err)
	}
}

// mapped is the error an answer of status maps to for Plane: trackerhttp's
// default mapping under Plane's classify.
func mapped(status int, h http.Header, body string) error {
	a := trackerhttp.Answer{Status: status, Header: h, Body: []byte(body)}
	return classify(a, trackerhttp.Classify(a, rateWindow, time.Now()))
}

func TestWindowOverlapsAndProgresses(t *testing.T) {
	for _, size := range []int{1, 2, 3, 5, 7, 100, 1000} {
		for end := 1; end < 5000; end += 1 + end/7 {
			page, per, checked := window(end, size)
			off := page * per
			if per < 1 || per > size || off > end || off+per <= end {
				t.Fatalf("window(%d, %d) = page %d per %d: no progress", end, size, page, per)
			}
			if checked && off >= end {
				t.Fatalf("window(%d, %d) checked without overlap", end, size)
			}
			if size >= 100 && (!checked || end-off > size/2) {
				t.Fatalf("window(%d, %d) = page %d per %d: rereads %d", end, size, page, per, end-off)
			}
		}
	}
}

func TestParseTime(t *testing.T) {
	want := time.Date(2026, 5, 1, 10, 20, 30, 123456000, time.UTC)
	for _, s := range []string{
		"2026-05-01T10:20:30.123456Z",
		"2026-05-01T15:50:30.123456+05:30",
		"2026-05-01T10:20:30.123456",
		"2026-05-01 10:20:30.123456+00:00",
	} {
		got, err := parseTime(s)
		if err != nil || !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("parseTime(%q) = %s, %v", s, got, err)
		}
	}
	if got, err := parseTime("2026-05-01T10:20:30Z"); err != nil || got.Nanosecond() != 0 {
		t.Errorf("no microseconds: %s %v", got, err)
	}
	if _, err := parseTime("2026-13-01"); err == nil {
		t.Error("a bad date parsed")
	}
}

// FuzzDecode feeds arbitrary answers to every decoder: each answers a value
// or a typed error, and never panics.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"id":"a","updated_at":"2026-05-01T10:00:00Z"}`,
		`{"id":"a","name":null,"state":{"id":"s"},"labels":[{"id":"l"},"m",3],"sequence_id":1e300,"updated_at":"2026-05-01T10:00:00.1+05:30","archived_at":"2026-05-01","external_id":12}`,
		`{"results":[{"id":"a","updated_at":"2026-05-01"}],"next_page_results":true}`,
		`{"id":"c","comment_html":"<p>x</p>","created_at":"2026-05-01T10:00:00Z","actor":null}`,
		`<html>`, ``, `null`, `[]`, `{"results":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		check := func(err error) {
			if err != nil && !errors.Is(err, tracker.ErrUnavailable) {
				t.Fatalf("untyped error %v", err)
			}
		}
		w, err := decodeItem(b)
		check(err)
		if err == nil {
			tr := &Driver{ident: "OPS", source: "lattice:t/w", cat: &catalog{loaded: true}}
			tr.cfg.WebURL, tr.cfg.Workspace = "https://x", "w"
			// Nothing unknown is asked of the server: every state is known
			// and no label is.
			tr.cat.names = map[string]string{}
			if s := str(w.State); s != "" {
				tr.cat.states = []wireState{{ID: s, Group: "started"}}
			}
			var ids []string
			for _, l := range w.Labels {
				if id := str(l); id != "" {
					ids = append(ids, id)
				}
			}
			for _, id := range ids {
				tr.cat.names[id] = "n"
			}
			if _, err := tr.toItem(t.Context(), w); err != nil {
				t.Fatalf("toItem of a decoded item: %v", err)
			}
		}
		_, err = decodeEnvelope(b)
		check(err)
		if c, err := decodeComment(b); err == nil {
			(&Driver{source: "s"}).toComment(c, "i")
		} else {
			check(err)
		}
		if _, err := decodePage(string(b), DefaultPageSize); err != nil && !errors.Is(err, tracker.ErrInvalid) {
			t.Fatalf("page token: %v", err)
		}
		if d := string(b); !SameDescription(d, d) {
			t.Fatalf("a description is not the same as itself: %q", d)
		}
	})
}

// FuzzNudge checks signatures over arbitrary bodies and headers: a body
// verifies under its own signature only, and nothing panics.
func FuzzNudge(f *testing.F) {
	f.Add("s3cret", "", []byte(`{"event": "issue", "data": {"project": "p"}}`))
	f.Add("", "00", []byte(`{}`))
	f.Add("k", "zz", []byte(`{"event": "project", "data": {"id": 1}}`))
	f.Fuzz(func(t *testing.T, secret, sig string, body []byte) {
		d := &Driver{}
		nudge := func(secret, sig string, body []byte) error {
			_, err := d.Nudge(secret, http.Header{SignatureHeader: {sig}}, body)
			return err
		}
		if err := nudge(secret, sig, body); err != nil && !errors.Is(err, tracker.ErrUnauthorized) && !errors.Is(err, tracker.ErrRefused) {
			t.Fatalf("untyped error %v", err)
		}
		if secret == "" {
			if err := nudge(secret, sig, body); !errors.Is(err, tracker.ErrUnauthorized) {
				t.Fatalf("an empty secret verified: %v", err)
			}
			return
		}
		good := planeemu.Sign(secret, body)
		if err := nudge(secret, good, body); errors.Is(err, tracker.ErrUnauthorized) {
			t.Fatal("a body did not verify under its own signature")
		}
		if err := nudge(secret+"x", good, body); !errors.Is(err, tracker.ErrUnauthorized) {
			t.Fatal("another secret verified")
		}
		if err := nudge(secret, good, append(append([]byte{}, body...), ' ')); !errors.Is(err, tracker.ErrUnauthorized) {
			t.Fatal("a tampered body verified")
		}
	})
}
