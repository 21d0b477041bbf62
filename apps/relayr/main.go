// Command relayr writes to a task tracker once per key, and turns what people
// do in the tracker back into an exactly-once event feed, without loops.
//
//	relayr serve   -config relayr.toml   run the service
//	relayr migrate -config relayr.toml   apply the ledger's migrations
//	relayr check   -config relayr.toml   validate and reach every tracker
//	relayr file    -url … -tenant … -workspace … -key … -title …
//	relayr events  -url … -tenant … -workspace … [-follow]
//	relayr mcp     -config relayr.toml -tenant … -workspace …   MCP over stdio
//	relayr demo                          the whole loop on loopback
//	relayr version [-json]               the release, commit and Go it was built from
//
// Every command takes -h; relayr -version is relayr version.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes a script can tell apart.
const (
	exitOK    = 0
	exitFail  = 1  // give up: retrying the same command won't help
	exitUsage = 2  // the command line is wrong
	exitRetry = 75 // EX_TEMPFAIL: retry later, the same command can succeed
)

type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"serve", "run the service: followers, delivery and the HTTP API", runServe},
		{"migrate", "apply the ledger's migrations and exit", runMigrate},
		{"check", "validate the configuration and reach every bound tracker", runCheck},
		{"file", "file an item once by key through a running relayr", runFile},
		{"events", "read or follow a workspace's event feed", runEvents},
		{"mcp", "serve MCP tools over stdio to a local agent, through a running relayr", runMCP},
		{"demo", "show the whole loop on loopback, no tracker needed", runDemo},
		{"version", "print the release, the commit and the Go version it was built from", runVersion},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	if args[0] == "-version" || args[0] == "--version" {
		return runVersion(ctx, args[1:], stdout, stderr)
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "relayr: unknown command %q\n\n", args[0])
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "relayr writes to a task tracker once per key and reads it back as an exactly-once event feed.")
	fmt.Fprintln(w, "\nUsage: relayr <command> [flags]   (relayr <command> -h for its flags)")
	fmt.Fprintln(w)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
}

// flags makes a command's flag set; parse answers false with the exit code
// when the command must end (-h, or a bad flag).
func flags(name, summary string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("relayr "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "relayr %s: %s\n\nFlags:\n", name, summary)
		fs.PrintDefaults()
	}
	return fs
}

func parse(fs *flag.FlagSet, args []string) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, false
		}
		return exitUsage, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "unexpected arguments: %v\n", fs.Args())
		return exitUsage, false
	}
	return 0, true
}

func newLogger(w io.Writer, level, format string) *slog.Logger {
	var l slog.Level
	switch level {
	case "debug":
		l = slog.LevelDebug
	case "warn":
		l = slog.LevelWarn
	case "error":
		l = slog.LevelError
	default:
		l = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: l}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
