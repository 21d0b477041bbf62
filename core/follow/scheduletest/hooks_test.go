package scheduletest_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/relayr-go/relayr/core/follow/scheduletest"
)

func TestRendered(t *testing.T) {
	sign := func(secret string, body []byte) string { return secret + ":" + string(body) }
	var ds []scheduletest.Delivery
	deliver := func(secret, body string, deleted bool) {
		ds = append(ds, scheduletest.Delivery{
			Header: http.Header{"X-Body": {body}}, Body: []byte(body), Signature: sign(secret, []byte(body)),
			Item: scheduletest.IssueNumber([]byte(body)), Deleted: deleted,
		})
	}
	var added []string
	fail := false
	r := &scheduletest.Rendered{
		Add: func(secret string) error {
			if fail {
				return errors.New("refused")
			}
			added = append(added, secret)
			return nil
		},
		Deliveries: func() []scheduletest.Delivery { return ds },
		Sign:       sign,
	}

	if _, _, ok := r.Nudge("7", false, "s"); ok {
		t.Fatal("answered a delivery before any was rendered")
	}
	deliver("s", `{"issue":{"number":7},"v":1}`, false)
	deliver("s", `{"issue":{"number":8}}`, false)
	deliver("other", `{"issue":{"number":7},"v":2}`, false)
	deliver("s", `{"issue":{"number":7},"v":3}`, true)
	deliver("s", `{"issue":{"number":7},"v":4}`, false)

	h, body, ok := r.Nudge("7", false, "s")
	if !ok || string(body) != `{"issue":{"number":7},"v":4}` || h.Get("X-Body") != string(body) {
		t.Fatalf("answered %q, %v: want the latest delivery about #7 signed with s", body, ok)
	}
	if _, body, ok := r.Nudge("7", true, "s"); !ok || string(body) != `{"issue":{"number":7},"v":3}` {
		t.Fatalf("deletion answered %q, %v", body, ok)
	}
	if _, _, ok := r.Nudge("9", false, "s"); ok {
		t.Fatal("answered a delivery about an issue none tells of")
	}
	if len(added) != 1 || added[0] != "s" {
		t.Fatalf("hooks added %v: want one for s", added)
	}
	fail = true
	if _, _, ok := r.Nudge("7", false, "new"); ok {
		t.Fatal("answered with no hook added for the secret")
	}
	fail = false
	if _, body, ok := r.Nudge("7", false, "other"); !ok || string(body) != `{"issue":{"number":7},"v":2}` {
		t.Fatalf("other secret answered %q, %v", body, ok)
	}
	if len(added) != 2 {
		t.Fatalf("hooks added %v: a refused add is asked again", added)
	}
}

func TestIssueNumber(t *testing.T) {
	for body, want := range map[string]string{
		`{"issue":{"number":12}}`: "12",
		`{"action":"deleted"}`:    "",
		`not json`:                "",
	} {
		if got := scheduletest.IssueNumber([]byte(body)); got != want {
			t.Errorf("IssueNumber(%s) = %q, want %q", body, got, want)
		}
	}
}
