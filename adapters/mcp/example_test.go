package mcp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relayr-go/relayr/adapters/httpapi"
	relayrmcp "github.com/relayr-go/relayr/adapters/mcp"
	"github.com/relayr-go/relayr/core/binding"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/faketracker"
	"github.com/relayr-go/relayr/core/ledger/memledger"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
)

// An agent files an item by key through relayr's MCP server, twice (a
// retry), and the tracker holds one item. The server is the one relayr
// mcp runs over stdio, calling a running relayr's API.
func Example() {
	led := memledger.New()
	fake := faketracker.New(faketracker.LikePlane, faketracker.WithProject("ops", "OPS"))
	conns := binding.NewConnections(clock.System{}, tracker.StaticCredentials{"acme/fake": {Token: "k"}},
		binding.Binding{Tenant: "acme", Workspace: "ops", Connector: &faketracker.Connector{Fake: fake}})
	var api *httpapi.API
	api = httpapi.New(httpapi.Config{
		Writes: writes.New(writes.Config{Ledger: led, Connections: conns}),
		Log:    eventlog.NewNotifying(led), Connections: conns, Ledger: led,
		Tokens: map[string]string{"token-of-acme": "acme"},
		// The streamable HTTP route, beside relayr mcp's stdio.
		MCP: relayrmcp.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { api.ServeHTTP(w, r) }), nil),
	})
	srv := httptest.NewServer(api)
	defer srv.Close()

	server := relayrmcp.NewServer(relayrmcp.Workspace{URL: srv.URL, Tenant: "acme", Workspace: "ops", Token: "token-of-acme"}, nil)
	clientSide, serverSide := gomcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := server.Connect(ctx, serverSide, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = ss.Close() }()
	agent, err := gomcp.NewClient(&gomcp.Implementation{Name: "agent"}, nil).Connect(ctx, clientSide, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = agent.Close() }()
	for range 2 {
		res, err := agent.CallTool(ctx, &gomcp.CallToolParams{Name: "file_item",
			Arguments: map[string]any{"key": "ci/build-7", "title": "Build 7 failed"}})
		if err != nil {
			fmt.Println(err)
			return
		}
		line, _, _ := strings.Cut(res.Content[0].(*gomcp.TextContent).Text, "\n")
		fmt.Println(line)
	}
	fmt.Println(len(fake.ItemsByKey("ci/build-7")), "item")
	// Output:
	// Filed OPS-1 (https://fake.example/ops/OPS-1) under key "ci/build-7".
	// The key "ci/build-7" was filed before: OPS-1 (https://fake.example/ops/OPS-1) (existing); nothing new was filed.
	// 1 item
}
