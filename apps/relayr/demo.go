package main

import (
	"context"
	"fmt"
	"io"

	"github.com/relayr-go/relayr/apps/relayr/internal/demo"
)

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flags("demo", "show the whole loop on loopback with no tracker installed: Plane's emulation, a SQLite ledger in a temporary folder, and the service; exit 0 only if every step held", stderr)
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if err := demo.Run(ctx, stdout); err != nil {
		fmt.Fprintf(stderr, "relayr demo: %v\n", err)
		return exitFail
	}
	return exitOK
}
