package forge_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/forge"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

func TestParseRepo(t *testing.T) {
	r, err := forge.ParseRepo("Relayr/live.app")
	if err != nil || r.Owner != "Relayr" || r.Name != "live.app" || r.String() != "Relayr/live.app" {
		t.Fatalf("%+v %v", r, err)
	}
	if p := r.Path("issues/3"); p != "repos/Relayr/live.app/issues/3" {
		t.Errorf("path %q", p)
	}
	if l := r.IssueLink("https://forge.example", 3); l != "https://forge.example/Relayr/live.app/issues/3" {
		t.Errorf("link %q", l)
	}
	for _, bad := range []string{"", "owner", "/name", "owner/", "a/b/c", "a/..", "a b/c", "a/b?x", "a/%2e"} {
		if _, err := forge.ParseRepo(bad); !errors.Is(err, tracker.ErrInvalid) {
			t.Errorf("%q: %v, want ErrInvalid", bad, err)
		}
	}
}

func TestReadAndLogins(t *testing.T) {
	var users atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/repos/relayr/live":
			_, _ = io.WriteString(w, `{"full_name":"Relayr/Live","permissions":{"push":true}}`)
		case "/user":
			users.Add(1)
			_, _ = io.WriteString(w, `{"login":"bot"}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	cl, err := trackerhttp.New(trackerhttp.Config{Name: "forge", BaseURL: srv.URL + "/"})
	if err != nil {
		t.Fatal(err)
	}
	r, push, err := forge.Repo{Owner: "relayr", Name: "live"}.Read(context.Background(), cl)
	if err != nil || r.String() != "Relayr/Live" || !push {
		t.Fatalf("%v %v %v, want the forge's own name and push", r, push, err)
	}
	if _, _, err := (forge.Repo{Owner: "relayr", Name: "gone"}).Read(context.Background(), cl); !errors.Is(err, tracker.ErrNotFound) {
		t.Fatalf("a missing repository: %v", err)
	}
	var l forge.Logins
	for range 3 {
		if login, err := l.Of(context.Background(), cl, "tk"); err != nil || login != "bot" {
			t.Fatalf("%q %v", login, err)
		}
	}
	if users.Load() != 1 {
		t.Fatalf("the account was read %d times for one token, want once", users.Load())
	}
}

func TestParseDelivery(t *testing.T) {
	d, err := forge.ParseDelivery("forge", []byte(`{"action":"deleted","issue":{"number":7,"pull_request":null},"repository":{"full_name":"o/r"}}`))
	if err != nil || d.Action != "deleted" || d.Issue != 7 || d.Pull || d.Repo != "o/r" {
		t.Fatalf("%+v %v", d, err)
	}
	d, _ = forge.ParseDelivery("forge", []byte(`{"action":"deleted","issue":{"number":8,"pull_request":{"merged":false}},"repository":{"full_name":"o/r"}}`))
	if !d.Pull {
		t.Fatal("a pull request's delivery read as an issue's")
	}
	for _, bad := range []string{`not json`, `{"action":"x"}`, `{"repository":{"full_name":""}}`} {
		if _, err := forge.ParseDelivery("forge", []byte(bad)); !errors.Is(err, tracker.ErrRefused) {
			t.Errorf("%s: %v, want ErrRefused", bad, err)
		}
	}
}

func TestIssueNumber(t *testing.T) {
	for url, want := range map[string]int64{
		"http://127.0.0.1:3000/relayr/live/issues/7":         7,
		"https://api.github.com/repos/o/r/issues/12":         12,
		"https://github.example/o/issues/r/issues/3":         3,
		"https://api.github.com/repos/o/r/issues/0":          0,
		"https://api.github.com/repos/o/r/issues/7/comments": 0,
		"https://api.github.com/repos/o/r/pulls/7":           0,
		"": 0,
	} {
		if n, ok := forge.IssueNumber(url); n != want || ok != (want > 0) {
			t.Errorf("IssueNumber(%q) = %d, %v; want %d", url, n, ok, want)
		}
	}
}
