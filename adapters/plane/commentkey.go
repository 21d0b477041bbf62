package plane

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"regexp"
	"strings"
	"unicode/utf8"
)

// A comment's key is its external_id, which Plane keeps in 255 characters
// (IssueComment.external_id, a CharField(max_length=255); a longer one is
// refused with 400), while relayr's keys may be 1,024 bytes. A key of up
// to 255 characters is the external_id itself, as it always was, so a
// comment posted before is still found by Plane's 409. A longer key (or one
// that could be taken for a digest) files under its digest,
// "relayr-sha256:" and 64 hex digits of SHA-256, and the comment carries
// the full key in a marker, an HTML comment at the end of comment_html
// (which Plane stores as sent: api/serializers/issue.py:L690-720), which
// reads give back as the key and take off the body. A marker a person's
// edit dropped leaves the digest as the key: still relayr's comment. An
// external_source over 255 characters (a long tenant and workspace) files
// under its digest too. An item's key is never a digest: one past 255
// characters is refused before anything is sent (Capabilities.MaxKeyChars,
// plane.go).

// maxExternalID is external_id's length in characters.
const maxExternalID = 255

// digestPrefix starts a digest external_id.
const digestPrefix = "relayr-sha256:"

// markerRe is the marker: base64 of the key, which holds no "--".
var markerRe = regexp.MustCompile(`<!--relayr-key:([A-Za-z0-9+/=]*)-->$`)

// externalID is the external_id (or external_source) a key files under.
func externalID(key string) string {
	if utf8.RuneCountInString(key) <= maxExternalID && !strings.HasPrefix(key, digestPrefix) {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return digestPrefix + hex.EncodeToString(sum[:])
}

// markedBody is the comment_html posted for key: the body, with the
// marker when the external_id is a digest.
func markedBody(key, body string) string {
	if externalID(key) == key {
		return body
	}
	return body + "<!--relayr-key:" + base64.StdEncoding.EncodeToString([]byte(key)) + "-->"
}

// commentKey reads a comment's key back from its external_id and body, and
// answers the body without the marker.
func commentKey(filedAs, body string) (key, shown string) {
	if !strings.HasPrefix(filedAs, digestPrefix) {
		return filedAs, body
	}
	m := markerRe.FindStringSubmatchIndex(body)
	if m == nil {
		return filedAs, body
	}
	raw, err := base64.StdEncoding.DecodeString(body[m[2]:m[3]])
	if err != nil || externalID(string(raw)) != filedAs {
		return filedAs, body
	}
	return string(raw), body[:m[0]]
}
