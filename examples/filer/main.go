// Command filer is relayr composed into a program of its own: the core's
// writer, one tracker (Vikunja) and the SQLite ledger, and no other module
// of relayr's. It files an item once per key, however often it runs:
//
//	filer -url http://127.0.0.1:3456 -token TOKEN -project 1 -key ci/build-1042 -title "Build 1042 failed"
//
// prints "created OPS-1" the first time and "existing OPS-1" every time
// after, with the same key, from the same ledger file. A product that wants
// relayr's exactly-once writes inside its own binary starts here; its
// module graph holds no PostgreSQL driver, NATS client or browser driver.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/relayr-go/relayr/adapters/ledgersqlite"
	"github.com/relayr-go/relayr/adapters/vikunja"
	"github.com/relayr-go/relayr/core/binding"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("filer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", os.Getenv("VIKUNJA_URL"), "Vikunja's base URL (VIKUNJA_URL)")
	token := fs.String("token", os.Getenv("VIKUNJA_TOKEN"), "a Vikunja API token (VIKUNJA_TOKEN)")
	project := fs.Int64("project", 0, "the Vikunja project's id (VIKUNJA_PROJECT when 0)")
	ledgerPath := fs.String("ledger", "filer.db", "the SQLite ledger's file")
	key := fs.String("key", "", "the item's key: the same key files the same item once")
	title := fs.String("title", "", "the item's title")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *project == 0 {
		_, _ = fmt.Sscan(os.Getenv("VIKUNJA_PROJECT"), project)
	}
	if *url == "" || *token == "" || *project == 0 || *key == "" || *title == "" {
		fmt.Fprintln(stderr, "filer: -url, -token, -project, -key and -title are required")
		return 2
	}

	led, err := ledgersqlite.Open(ctx, *ledgerPath)
	if err != nil {
		fmt.Fprintf(stderr, "filer: %v\n", err)
		return 1
	}
	defer func() { _ = led.Close() }()

	ops := binding.Binding{Tenant: "acme", Workspace: "ops", Connector: vikunja.Connector{BaseURL: *url, Project: *project}}
	w := writes.New(writes.Config{
		Ledger:      led,
		Connections: binding.NewConnections(clock.System{}, tracker.StaticCredentials{"acme/" + vikunja.Kind: {Token: *token}}, ops),
	})
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	res, err := w.EnsureItem(ctx, writes.EnsureParams{
		Tenant: "acme", Workspace: "ops", Key: *key,
		Draft: tracker.Draft{Title: *title},
	})
	var werr *writes.Error
	switch {
	case errors.As(err, &werr) && werr.RetryAfter > 0:
		fmt.Fprintf(stderr, "filer: %v (safe to run again with the same key after %s)\n", err, werr.RetryAfter)
		return 1
	case err != nil:
		fmt.Fprintf(stderr, "filer: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s %s\n", res.How, res.Item.Ref.Name)
	return 0
}
