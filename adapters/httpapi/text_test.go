package httpapi_test

import (
	"strings"
	"testing"

	"github.com/relayr-go/relayr/adapters/httpapi"
	"github.com/relayr-go/relayr/core/faketracker"
)

// Text is checked as sent: a string that is not UTF-8, or holds a lone
// surrogate, would reach relayr as U+FFFD (encoding/json rewrites both
// without a word), so "a\xffb" and "a\xfeb" would name one key. Each is
// refused with 400 invalid naming its field, as NUL and control
// characters are in keys, titles and labels; nothing is filed or sent.
func TestTextIsCheckedAsSent(t *testing.T) {
	bad := []struct {
		name string
		raw  string // a JSON string literal's inside, as sent
	}{
		{"NotUTF8", "a\xffb"},
		{"AnotherByteNotUTF8", "a\xfeb"},
		{"ACutSequence", "a\xe2\x82"},
		{"ALoneLowSurrogate", `a\udfffb`},
		{"ALoneHighSurrogate", `a\ud800b`},
		{"AHighSurrogateBeforeANonSurrogate", `a\ud800\u0041`},
	}
	nul := struct{ name, raw string }{"NUL", `a\u0000b`}
	routes := []struct {
		path   string
		fields map[string]string // field → a body with %s where the field's value goes
		nul    []string          // the fields NUL and control characters are refused in
	}{
		{"/items/ensure", map[string]string{
			"key":         `{"key":"%s","title":"t"}`,
			"title":       `{"key":"k","title":"%s"}`,
			"description": `{"key":"k","title":"t","description":"%s"}`,
			"state":       `{"key":"k","title":"t","state":"%s"}`,
			"labels":      `{"key":"k","title":"t","labels":["ok","%s"]}`,
			"correlation": `{"key":"k","title":"t","correlation":"%s"}`,
		}, []string{"key", "title", "labels", "description"}},
		{"/items/update", map[string]string{
			"key":         `{"key":"%s","title":"t"}`,
			"title":       `{"key":"k0","title":"%s"}`,
			"description": `{"key":"k0","description":"%s"}`,
			"state":       `{"key":"k0","state":"%s"}`,
			"labels":      `{"key":"k0","labels":["%s"]}`,
			"correlation": `{"key":"k0","title":"t","correlation":"%s"}`,
		}, []string{"key", "title", "labels", "description"}},
		{"/comments", map[string]string{
			"item_key":    `{"item_key":"%s","key":"c","body":"b"}`,
			"key":         `{"item_key":"k0","key":"%s","body":"b"}`,
			"body":        `{"item_key":"k0","key":"c","body":"%s"}`,
			"correlation": `{"item_key":"k0","key":"c","body":"b","correlation":"%s"}`,
		}, []string{"item_key", "key", "body"}},
	}
	for _, rt := range routes {
		for field, body := range rt.fields {
			cases := bad
			for _, f := range rt.nul {
				if f == field {
					cases = append(cases, nul)
				}
			}
			for _, c := range cases {
				t.Run(strings.TrimPrefix(rt.path, "/")+"/"+field+"/"+c.name, func(t *testing.T) {
					e := newEnv(t)
					if r := e.do("POST", ws+"/items/ensure", tokenA, httpapi.EnsureRequest{Key: "k0", Title: "t0"}); r.status != 201 {
						t.Fatalf("filing k0: %d %s", r.status, r.body)
					}
					_, before := e.fake.Filed()
					calls := e.fake.TotalCalls()
					r := e.do("POST", ws+rt.path, tokenA, strings.Replace(body, "%s", c.raw, 1))
					want(t, r, 400, "invalid")
					if msg := r.message(); !strings.Contains(msg, field) {
						t.Fatalf("the refusal %q does not name %s", msg, field)
					}
					if _, after := e.fake.Filed(); after != before || e.fake.TotalCalls() != calls {
						t.Fatalf("%d items filed and %d calls after the refusal, want none", after-before, e.fake.TotalCalls()-calls)
					}
				})
			}
		}
	}
	t.Run("TwoKeysThatDifferInBytesThatAreNotUTF8AreNeverOneKey", func(t *testing.T) {
		e := newEnv(t)
		for _, key := range []string{"a\xffb", "a\xfeb", `a\udfffb`} {
			r := e.do("POST", ws+"/items/ensure", tokenA, `{"key":"`+key+`","title":"t"}`)
			want(t, r, 400, "invalid")
		}
		if perKey, _ := e.fake.Filed(); len(perKey) != 0 {
			t.Fatalf("filed %v", perKey)
		}
		// A surrogate pair is a character, and files.
		if r := e.do("POST", ws+"/items/ensure", tokenA, `{"key":"a\ud83d\ude00b","title":"t"}`); r.status != 201 {
			t.Fatalf("a key with a surrogate pair: %d %s", r.status, r.body)
		}
		if perKey, _ := e.fake.Filed(); perKey["a😀b"] != 1 {
			t.Fatalf("filed %v, want the pair's character", perKey)
		}
	})
}

// A refusal quotes at most a short prefix of the value it refuses, with
// its length, in the body and in the log: a 900,000-character state came
// back whole before.
func TestARefusalQuotesAShortPrefixOfTheValue(t *testing.T) {
	e := newEnv(t)
	long := strings.Repeat("s", 900_000)
	for _, body := range []string{
		`{"key":"k","title":"t","state":"` + long + `"}`,
		`{"key":"k","title":"t","` + long + `":1}`,
	} {
		r := e.do("POST", ws+"/items/ensure", tokenA, body)
		want(t, r, 400, "invalid")
		if len(r.body) > 1024 || !strings.Contains(r.message(), "(900000 bytes)") {
			t.Fatalf("a %d-byte refusal: %.300s", len(r.body), r.body)
		}
	}
	if n := e.fake.Calls(faketracker.MethodCreate); n != 0 {
		t.Fatalf("%d creates", n)
	}
}
