package planehtml_test

import (
	"testing"

	"github.com/relayr-go/relayr/adapters/plane/planehtml"
)

// The allow-list keeps what Plane's nh3 call keeps and nothing else:
// ammonia's tags and Plane's custom ones, Plane's attributes in place of
// ammonia's, SAFE_PROTOCOLS and relative URLs.
func TestTheAllowList(t *testing.T) {
	for tag, want := range map[string]bool{
		"p": true, "a": true, "mention-component": true, "image-component": true, "input": true,
		"script": false, "style": false, "iframe": false, "svg": false, "": false, "P": false,
	} {
		if got := planehtml.AllowsTag(tag); got != want {
			t.Errorf("AllowsTag(%q) = %v, want %v", tag, got, want)
		}
	}
	for _, c := range []struct {
		tag, key string
		want     bool
	}{
		{"p", "class", true}, {"span", "data-node-type", true}, {"a", "href", true}, {"td", "colspan", true},
		{"p", "href", false}, {"a", "rel", false}, {"a", "onclick", false}, {"img", "lang", false},
	} {
		if got := planehtml.AllowsAttr(c.tag, c.key); got != c.want {
			t.Errorf("AllowsAttr(%q, %q) = %v, want %v", c.tag, c.key, got, c.want)
		}
	}
	for u, want := range map[string]bool{
		"https://x/y": true, "HTTP://x": true, "mailto:a@b": true, "tel:1": true, "/rel/path": true, "#top": true,
		"javascript:alert(1)": false, "data:text/html,x": false, "ftp://x": false, "%zz": false,
	} {
		if got := planehtml.AllowsURL(u); got != want {
			t.Errorf("AllowsURL(%q) = %v, want %v", u, got, want)
		}
	}
}
