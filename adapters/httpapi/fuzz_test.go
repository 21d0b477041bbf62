package httpapi_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/relayr-go/relayr/adapters/httpapi"
	"github.com/relayr-go/relayr/core/deliver"
	"github.com/relayr-go/relayr/core/faketracker"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/ledger/memledger"
)

// fuzzWorldUses is how many inputs one world serves before a fresh one, so
// a long run doesn't fill the fake tracker and the ledger.
const fuzzWorldUses = 2_000

// fuzzWorld hands out a world, fresh every fuzzWorldUses inputs.
type fuzzWorld struct {
	w    *world
	uses int
}

func (f *fuzzWorld) get(t *testing.T) *world {
	if f.w == nil || f.uses >= fuzzWorldUses {
		f.w, f.uses = newWorld(t), 0
	}
	f.uses++
	return f.w
}

// serve runs one request through the API in-process and fails on a 5xx or
// anything logged as an error (a recovered panic is one).
func serve(t *testing.T, w *world, req *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	w.api.ServeHTTP(rec, req)
	if rec.Code >= 500 {
		t.Fatalf("%s %s answered %d: %s; logged %q", req.Method, req.URL.Path, rec.Code, rec.Body, w.errs.first())
	}
	if errs := w.errs.first(); len(errs) > 0 {
		t.Fatalf("the API logged %q", errs)
	}
	return rec
}

// FuzzWebhook posts any body with any signature to acme's webhook: never a
// 5xx, a follower is woken only by a delivery signed with acme's secret
// (sign asks the target to sign the body itself, so verified deliveries are
// explored too), and never again by one taken before (a replay answers 204
// and wakes nothing).
func FuzzWebhook(f *testing.F) {
	good := []byte(`{"project":"proj"}`)
	f.Add(good, faketracker.Sign(secret, good), false)
	f.Add(good, "", true)
	f.Add(good, faketracker.Sign("wrong", good), false)
	f.Add(good, "", false)
	f.Add([]byte(`{"project":"other"}`), "", true)
	f.Add([]byte(`{"project":""}`), "", true)
	f.Add([]byte(`{"project":null,"project":"proj"}`), "", true)
	f.Add([]byte(`[]`), "00", false)
	f.Add([]byte{}, faketracker.Sign(secret, nil), false)
	f.Add([]byte("\x00\xff{"), "sha256="+faketracker.Sign(secret, good), true)
	var fw fuzzWorld
	f.Fuzz(func(t *testing.T, body []byte, sig string, sign bool) {
		w := fw.get(t)
		if sign {
			sig = faketracker.Sign(secret, body)
		}
		req := httptest.NewRequest(http.MethodPost, "http://relayr.test"+hook, bytes.NewReader(body))
		req.Header.Set(faketracker.SignatureHeader, sig)
		woken := w.waker.n.Load()
		rec := serve(t, w, req)
		woke := w.waker.n.Load() > woken
		verified := hmac.Equal([]byte(sig), []byte(faketracker.Sign(secret, body)))
		replay := rec.Code == http.StatusNoContent && !woke
		switch {
		case woke && !verified:
			t.Fatalf("a delivery not signed with acme's secret woke a follower (%d)", rec.Code)
		case woke && w.taken[string(body)]:
			t.Fatal("a replay of a delivery taken before woke a follower")
		case woke && rec.Code != http.StatusNoContent:
			t.Fatalf("answered %d, yet woke a follower", rec.Code)
		case replay && !w.taken[string(body)]:
			t.Fatal("answered 204 to a delivery never taken, and woke nothing")
		case !woke && !replay && rec.Code != http.StatusUnauthorized && rec.Code != http.StatusRequestEntityTooLarge:
			t.Fatalf("a refused delivery answered %d: %s", rec.Code, rec.Body)
		}
		if woke {
			w.taken[string(body)] = true
		}
		if w.fake.TotalCalls() != 0 {
			t.Fatal("a delivery reached the tracker")
		}
	})
}

// FuzzWriteAPI posts any body to the ensure route with acme's token: never
// a 5xx, and a 201 or 200 only for a body that decodes strictly.
func FuzzWriteAPI(f *testing.F) {
	for _, s := range []string{
		`{"key":"ci/1","title":"Build failed","labels":["ci"],"correlation":"run-1"}`,
		`{"key":"ci/1","title":"Build failed","description":"log","state":"todo"}`,
		`{"key":"k","title":"t","state":"finished"}`,
		`{"key":"k\u0000","title":"t"}`,
		`{"key":"k","title":"t\u0000"}`,
		`{"key":"k","title":"t","labels":["a\u0000b"]}`,
		`{"key":"k","title":"t","description":"\u0000"}`,
		`{"key":"k","title":"t","correlation":"run\u0000"}`,
		`{"key":"k","title":"t","bogus":1}`,
		`{"key":5,"title":"t"}`,
		`{"key":"k","title":"t"}{"key":"k"}`,
		`{"key":"k","title":"t","labels":[[[]]]}`,
		`{"key":1e999999}`,
		`{"key":`,
		``,
		`null`,
	} {
		f.Add([]byte(s))
	}
	var fw fuzzWorld
	f.Fuzz(func(t *testing.T, body []byte) {
		w := fw.get(t)
		req := httptest.NewRequest(http.MethodPost, "http://relayr.test"+ws+"/items/ensure", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tokenA)
		rec := serve(t, w, req)
		if rec.Code == http.StatusCreated || rec.Code == http.StatusOK {
			var ok httpapi.EnsureRequest
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&ok); err != nil {
				t.Fatalf("answered %d to a body that doesn't decode: %v", rec.Code, err)
			}
		}
	})
}

// uiWorld is a world with the operator's page on, over its ledger.
func uiWorld(t *testing.T) *world {
	return newWorld(t, func(c *httpapi.Config) {
		led := c.Ledger.(*memledger.Ledger)
		c.Status = httpapi.StatusFunc(func(context.Context) (httpapi.StatusReport, error) {
			return httpapi.StatusReport{Holder: "fuzz"}, nil
		})
		c.UI = operatorPage(c, led, &deliver.Resolver{Ledger: led, Sink: func(ledger.Follower) (deliver.Sink, error) {
			return nil, errors.New("no sink: the world has no subscription")
		}})
	})
}

// FuzzUIQuery sends the operator's page any query: it answers the page or
// a 400 page, never a 5xx.
func FuzzUIQuery(f *testing.F) {
	for _, s := range []string{"", "ws=acme/ops", "type=tracker:item_changed", "ws=%zz", "ws=a/b&ws=a/c", "ws=" + strings.Repeat("x", 2000), "x=1", "ws=acme/%ff"} {
		f.Add(s)
	}
	var fw *world
	f.Fuzz(func(t *testing.T, raw string) {
		if fw == nil {
			fw = uiWorld(t)
		}
		req := httptest.NewRequest(http.MethodGet, "/relayr/ui/", nil)
		req.URL.RawQuery = raw
		req.Header.Set("Authorization", "Bearer "+opTok)
		rec := serve(t, fw, req)
		if rec.Code != http.StatusOK && rec.Code != http.StatusBadRequest {
			t.Fatalf("query %q answered %d", raw, rec.Code)
		}
	})
}

// FuzzUIForm posts any form to the page's dead-letter action: it answers a
// 4xx page, never a 5xx, and resolves nothing (the world has no dead
// letter to resolve).
func FuzzUIForm(f *testing.F) {
	for _, s := range []string{"", "kind=log&tenant=acme&workspace=ops&name=rules&id=1&action=replay", "csrf=%zz", "kind=log&kind=log", "id=" + strings.Repeat("x", 9000)} {
		f.Add(s)
	}
	var fw *world
	f.Fuzz(func(t *testing.T, body string) {
		if fw == nil {
			fw = uiWorld(t)
		}
		req := httptest.NewRequest(http.MethodPost, "/relayr/ui/dead-letters", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Bearer "+opTok)
		rec := serve(t, fw, req)
		if rec.Code < 400 || rec.Code >= 500 {
			t.Fatalf("form %q answered %d", body, rec.Code)
		}
	})
}
