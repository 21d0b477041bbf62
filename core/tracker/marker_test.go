package tracker_test

import (
	"strings"
	"testing"

	"github.com/relayr-go/relayr/core/tracker"
)

func TestTheMarkerReadsBackEveryKeyAndBodyAsFiled(t *testing.T) {
	d := tracker.HiddenMarker{Source: tracker.Source{Namespace: "lattice", Tenant: "acme", Workspace: "ops"}}
	keys := []string{"k1", "ci/run-42/failure", "a--b-->c", `quote"s 'and' <tags> & %41 _ *`, "é中🙂", "x\u00a0y", "-->", "%"}
	bodies := []string{"", "one line", "two\nlines", "ends with a newline\n", "blank\n\nlines", "crlf\r\nbody", "<!-- a comment of its own -->"}
	for _, k := range keys {
		for _, b := range bodies {
			marked := d.Mark(b, k)
			gotKey, gotBody := d.Unmark(marked)
			if gotKey != k || gotBody != b {
				t.Errorf("key %q body %q: marked %q, read back key %q body %q", k, b, marked, gotKey, gotBody)
			}
		}
	}
}

func TestAMarkerOfAnotherSourceOrNoneIsLeftInTheBody(t *testing.T) {
	d := tracker.HiddenMarker{Source: tracker.Source{Namespace: "lattice", Tenant: "acme", Workspace: "ops"}}
	other := tracker.HiddenMarker{Source: tracker.Source{Namespace: "lattice", Tenant: "acme", Workspace: "dev"}}
	for _, text := range []string{
		other.Mark("filed by dev", "k1"),
		"no marker at all",
		"<!-- lattice-key: lattice:acme/ops/k1 --> then more text",
		"<!-- lattice-key: lattice:acme/ops/k%zz -->",
		"<!-- lattice-key: lattice:acme/ops/%6B -->", // not as escapeKey writes it
	} {
		if k, b := d.Unmark(text); k != "" || b != text {
			t.Errorf("%q read as key %q body %q, want no key and the text as it is", text, k, b)
		}
	}
}

func TestTagAndUntagAreTheMarkersValue(t *testing.T) {
	m := tracker.HiddenMarker{Source: tracker.Source{Tenant: "t", Workspace: "w"}}
	for _, key := range []string{"k", "a b", "x -->", "ü/%", "lattice-key: y", "--"} {
		tag := m.Tag(key)
		if !strings.HasSuffix(m.Line(key), tag+" -->") {
			t.Fatalf("%q: the line %q does not end with the tag %q", key, m.Line(key), tag)
		}
		got, ok := m.Untag(tag)
		if !ok || got != key {
			t.Fatalf("%q: untag of %q answered %q %v", key, tag, got, ok)
		}
	}
	other := tracker.HiddenMarker{Source: tracker.Source{Tenant: "t", Workspace: "other"}}
	for _, tag := range []string{other.Tag("k"), "", m.Source.String() + "/", m.Source.String() + "/a b", m.Source.String() + "/%zz"} {
		if k, ok := m.Untag(tag); ok {
			t.Errorf("%q untagged as %q", tag, k)
		}
	}
}
