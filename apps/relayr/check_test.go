package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relayr-go/relayr/fixtures/planeemu"
)

// TestCheckReachesEveryBoundTrackerWithItsCredentials runs `relayr check`
// against the Plane emulation with a good key and a bad one.
func TestCheckReachesEveryBoundTrackerWithItsCredentials(t *testing.T) {
	plane := planeemu.New(planeemu.Options{Now: time.Now, RateLimit: -1})
	ps := httptest.NewServer(plane)
	defer ps.Close()
	path := filepath.Join(t.TempDir(), "relayr.toml")
	cfg := acmeOnPlane(ps.URL, plane)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ACME_TOKEN", "check-token-of-acme-0123456789abcdef")

	t.Setenv("ACME_PLANE_KEY", plane.Bot.Key)
	var out bytes.Buffer
	if code := run(context.Background(), []string{"check", "-config", path}, &out, &out); code != exitOK {
		t.Fatalf("exit %d with a good key:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "acme/ops") || !strings.Contains(out.String(), "reachable") {
		t.Fatalf("output:\n%s", out.String())
	}

	t.Setenv("ACME_PLANE_KEY", "plane_api_00000000000000000000000000000000")
	out.Reset()
	if code := run(context.Background(), []string{"check", "-config", path}, &out, &out); code != exitFail {
		t.Fatalf("exit %d with a bad key:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "FAILED") || !strings.Contains(out.String(), "unauthorized") {
		t.Fatalf("output:\n%s", out.String())
	}

	t.Setenv("ACME_PLANE_KEY", "")
	out.Reset()
	if code := run(context.Background(), []string{"check", "-config", path}, &out, &out); code != exitFail {
		t.Fatalf("exit %d with the key unset", code)
	}
	if !strings.Contains(out.String(), "ACME_PLANE_KEY") {
		t.Fatalf("a missing secret is not named:\n%s", out.String())
	}
}
