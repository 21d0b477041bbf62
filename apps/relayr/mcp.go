package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"

	relayrmcp "github.com/relayr-go/relayr/adapters/mcp"
	"github.com/relayr-go/relayr/apps/relayr/internal/config"
)

// mcpSummary is relayr mcp's help: what it serves, and that it talks to a
// running relayr, never to the ledger.
const mcpSummary = "serve the Model Context Protocol over stdio to a local agent: tools file_item, update_item, comment and read_events for one workspace. " +
	"It talks to a running relayr's HTTP API with the tenant's token (never to the ledger), so the agent's writes are claimed, checked and budgeted as every other. " +
	"-config reads relayr's URL (its listen) and the tenant's token from relayr's configuration file; -url and -token-env or -token-file name them instead"

func runMCP(ctx context.Context, args []string, _, stderr io.Writer) int {
	fs := flags("mcp", mcpSummary, stderr)
	c, tokenEnv, tokenFile := clientFlags(fs)
	path := fs.String("config", "", "relayr's configuration file: the URL from its listen, the token from the tenant's")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if c.tenant == "" || c.workspace == "" {
		fmt.Fprintln(stderr, "relayr mcp: -tenant and -workspace are required")
		return exitUsage
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var tok string
	if *path != "" {
		u, t, err := fromConfig(*path, c.tenant)
		if err != nil {
			fmt.Fprintf(stderr, "relayr mcp: %v\n", err)
			return exitUsage
		}
		if !set["url"] {
			c.base = u
		}
		tok = t
	}
	if set["token-file"] || set["token-env"] || tok == "" {
		t, err := tokenFrom(*tokenEnv, *tokenFile)
		if err != nil || t == "" {
			fmt.Fprintf(stderr, "relayr mcp: no token: set $%s, -token-file or -config\n", *tokenEnv)
			return exitUsage
		}
		tok = t
	}
	c.token = tok
	if err := c.check(); err != nil {
		fmt.Fprintf(stderr, "relayr mcp: %v\n", err)
		return exitUsage
	}
	// stdout is the protocol's: nothing else may be written to it.
	s := relayrmcp.NewServer(relayrmcp.Workspace{URL: c.base, Tenant: c.tenant, Workspace: c.workspace, Token: c.token},
		&relayrmcp.Options{Version: currentVersion().Release})
	if err := s.Run(ctx, &gomcp.StdioTransport{}); err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
		fmt.Fprintf(stderr, "relayr mcp: %v\n", err)
		return exitFail
	}
	return exitOK
}

// fromConfig is relayr's URL, from the configuration's listen (a wildcard
// host read as loopback), and the tenant's token, read as relayr serve
// reads it.
func fromConfig(path, tenant string) (string, string, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return "", "", err
	}
	host, port, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return "", "", fmt.Errorf("listen %q: %w", cfg.Listen, err)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	u := "http://" + net.JoinHostPort(host, port)
	for _, t := range cfg.Tenants {
		if t.Name == tenant {
			tok, err := config.ReadSecret(t.Token, os.Getenv)
			if err != nil {
				return "", "", fmt.Errorf("tenant %s's token: %w", tenant, err)
			}
			return u, tok, nil
		}
	}
	return "", "", fmt.Errorf("%s names no tenant %q", path, tenant)
}
