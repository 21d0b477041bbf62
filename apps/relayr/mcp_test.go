package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relayr-go/relayr/adapters/httpapi"
	"github.com/relayr-go/relayr/core/binding"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/faketracker"
	"github.com/relayr-go/relayr/core/ledger/memledger"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
)

// An agent runs relayr mcp as its MCP server, over real stdio, configured
// by relayr's file: filing one key twice files one item in the tracker
// behind the running relayr.
func TestMCPOverStdioFilesOnce(t *testing.T) {
	bin := relayrBinary(t)
	led := memledger.New()
	fake := faketracker.New(faketracker.LikePlane, faketracker.WithProject("ops", "OPS"))
	conns := binding.NewConnections(clock.System{}, tracker.StaticCredentials{"acme/fake": {Token: "k"}},
		binding.Binding{Tenant: "acme", Workspace: "ops", Connector: &faketracker.Connector{Fake: fake}})
	const token = "acme-token-0123456789abcdef0123456789"
	srv := httptest.NewServer(httpapi.New(httpapi.Config{
		Writes: writes.New(writes.Config{Ledger: led, Connections: conns}),
		Log:    eventlog.NewNotifying(led), Connections: conns, Ledger: led,
		Tokens: map[string]string{token: "acme"},
	}))
	defer srv.Close()

	dir := t.TempDir()
	cfg := filepath.Join(dir, "relayr.toml")
	conf := "listen = \"" + strings.TrimPrefix(srv.URL, "http://") + "\"\n\n[[tenants]]\nname = \"acme\"\ntoken = {env = \"ACME_TOKEN\"}\n"
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "mcp", "-config", cfg, "-tenant", "acme", "-workspace", "ops")
	cmd.Env = append(os.Environ(), "ACME_TOKEN="+token)
	cmd.Stderr = os.Stderr
	cs, err := gomcp.NewClient(&gomcp.Implementation{Name: "agent"}, nil).Connect(context.Background(), &gomcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close() }()
	var hows []string
	for range 2 {
		res, err := cs.CallTool(context.Background(), &gomcp.CallToolParams{Name: "file_item",
			Arguments: map[string]any{"key": "ci/build-1042", "title": "Build 1042 failed"}})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res.StructuredContent)
		var ir httpapi.ItemResponse
		if res.IsError || json.Unmarshal(b, &ir) != nil {
			t.Fatalf("file_item: %s", b)
		}
		hows = append(hows, ir.How)
	}
	if strings.Join(hows, ",") != "created,existing" || len(fake.ItemsByKey("ci/build-1042")) != 1 {
		t.Fatalf("hows %v, %d items", hows, len(fake.ItemsByKey("ci/build-1042")))
	}
}
