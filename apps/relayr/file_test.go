package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/relayr-go/relayr/adapters/httpapi"
)

// TestFileExitCodesTellRetryFromGiveUp runs `relayr file` against a relayr
// that answers each of the API's kinds of answer.
func TestFileExitCodesTellRetryFromGiveUp(t *testing.T) {
	var got httpapi.EnsureRequest
	answer := func(status int, code, retryAfter string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer tok" || r.URL.Path != "/relayr/v1/tenants/acme/workspaces/ops/items/ensure" {
				w.WriteHeader(http.StatusTeapot)
				return
			}
			_ = json.NewDecoder(r.Body).Decode(&got)
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.WriteHeader(status)
			if code != "" {
				_, _ = w.Write([]byte(`{"error":{"code":"` + code + `","message":"x"}}`))
				return
			}
			_, _ = w.Write([]byte(`{"item":{"id":"1","name":"OPS-1"},"how":"created"}`))
		}
	}
	t.Setenv("RELAYR_TOKEN", "tok")
	args := func(url string) []string {
		return []string{"file", "-url", url, "-tenant", "acme", "-workspace", "ops", "-key", "ci/1", "-title", "Build failed", "-label", "ci", "-label", "build", "-correlation", "run-1"}
	}
	for _, c := range []struct {
		name string
		h    http.HandlerFunc
		want int
	}{
		{"FiledIs0", answer(201, "", ""), exitOK},
		{"ClaimedIsRetry", answer(409, "tracker_claimed", "1"), exitRetry},
		{"UnavailableIsRetry", answer(503, "tracker_unavailable", "3"), exitRetry},
		{"LoopIsGiveUp", answer(409, "tracker_loop", ""), exitFail},
		{"NotAllowedIsGiveUp", answer(403, "not_allowed", ""), exitFail},
		{"InvalidIsGiveUp", answer(400, "invalid", ""), exitFail},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(c.h)
			defer srv.Close()
			var out bytes.Buffer
			if code := run(context.Background(), args(srv.URL), &out, &out); code != c.want {
				t.Fatalf("exit %d, want %d: %s", code, c.want, out.String())
			}
			if got.Key != "ci/1" || got.Correlation != "run-1" || len(got.Labels) != 2 {
				t.Fatalf("sent %+v", got)
			}
		})
	}
	t.Run("NoRelayrIsRetry", func(t *testing.T) {
		srv := httptest.NewServer(answer(201, "", ""))
		url := srv.URL
		srv.Close()
		var out bytes.Buffer
		if code := run(context.Background(), args(url), &out, &out); code != exitRetry {
			t.Fatalf("exit %d, want %d", code, exitRetry)
		}
	})
	t.Run("TextThatIsNotUTF8OrHoldsNULIsUsageAndNothingIsSent", func(t *testing.T) {
		sent := false
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { sent = true; w.WriteHeader(201) }))
		defer srv.Close()
		t.Setenv("RELAYR_TOKEN", "tok")
		for _, c := range [][]string{
			{"-key", "a\xffb", "-title", "t"},
			{"-key", "k", "-title", "a\x00b"},
			{"-key", "k", "-title", "t", "-label", "l\xfe"},
			{"-key", "k", "-title", "t", "-description", "d\x00"},
			{"-key", "k", "-title", "t", "-correlation", "r\xff"},
		} {
			var out bytes.Buffer
			a := append([]string{"file", "-url", srv.URL, "-tenant", "acme", "-workspace", "ops"}, c...)
			if code := run(context.Background(), a, &out, &out); code != exitUsage {
				t.Fatalf("%q: exit %d, want %d: %s", c, code, exitUsage, out.String())
			}
		}
		if sent {
			t.Fatal("a refused filing was sent")
		}
	})
	t.Run("WhatNoRetryHelpsIsUsageOrGiveUp", func(t *testing.T) {
		for _, c := range []struct {
			name, url, token string
			want             int
		}{
			{"AnFTPURL", "ftp://127.0.0.1:1", "tok", exitUsage},
			{"NoScheme", "::bad", "tok", exitUsage},
			{"NoHost", "http://", "tok", exitUsage},
			{"ATokenWithANewline", "http://127.0.0.1:1", "abc\ndef", exitUsage},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Setenv("RELAYR_TOKEN", c.token)
				var out bytes.Buffer
				if code := run(context.Background(), args(c.url), &out, &out); code != c.want {
					t.Fatalf("exit %d, want %d: %s", code, c.want, out.String())
				}
			})
		}
		// A 2xx whose body is not the API's: relayr's answer was not
		// understood, and asking again gets the same.
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("<html>a proxy's page</html>")) }))
		defer srv.Close()
		var out bytes.Buffer
		if code := run(context.Background(), args(srv.URL), &out, &out); code != exitFail {
			t.Fatalf("a 200 that is not the API's: exit %d, want %d", code, exitFail)
		}
		// A certificate the client does not trust is refused again on
		// every retry.
		tlsSrv := httptest.NewTLSServer(answer(201, "", ""))
		defer tlsSrv.Close()
		if code := run(context.Background(), args(tlsSrv.URL), &out, &out); code != exitFail {
			t.Fatalf("an untrusted certificate: exit %d, want %d: %s", code, exitFail, out.String())
		}
		if code := run(context.Background(), []string{"events", "-url", srv.URL, "-tenant", "acme", "-workspace", "ops", "-limit", "0"}, &out, &out); code != exitUsage {
			t.Fatalf("events -limit 0: exit %d, want %d", code, exitUsage)
		}
	})
	t.Run("AMissingFlagIsUsage", func(t *testing.T) {
		var out bytes.Buffer
		if code := run(context.Background(), []string{"file", "-tenant", "acme"}, &out, &out); code != exitUsage {
			t.Fatalf("exit %d", code)
		}
		if !strings.Contains(out.String(), "required") {
			t.Fatalf("output %s", out.String())
		}
	})
}
