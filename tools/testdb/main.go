// Command testdb runs a command against a PostgreSQL it starts in Docker
// through testcontainers, for a machine with Docker and no PostgreSQL of
// its own:
//
//	go run ./tools/testdb -- make test
//	go run ./tools/testdb -- go test ./adapters/ledgerpg/...
//
// It sets RELAYR_TEST_DATABASE_URL for the command (the variable relayr's
// database tests read), answers the command's exit code, and removes the
// container when the command ends. It is a module of its own so that the
// container client is in no module a user of relayr requires.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/modules/postgres"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("testdb", flag.ContinueOnError)
	fs.SetOutput(stderr)
	image := fs.String("image", "postgres:16-alpine", "the PostgreSQL image to start")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	command := fs.Args()
	if len(command) == 0 {
		fmt.Fprintln(stderr, "usage: testdb [-image postgres:16-alpine] -- command [args...]")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	c, err := postgres.Run(startCtx, *image,
		postgres.WithDatabase("relayr"), postgres.WithUsername("postgres"), postgres.WithPassword("postgres"),
		postgres.BasicWaitStrategies())
	defer cancel()
	defer func() {
		if c != nil {
			if err := testcontainers.TerminateContainer(c); err != nil {
				fmt.Fprintf(stderr, "testdb: removing the container: %v\n", err)
			}
		}
	}()
	if err != nil {
		fmt.Fprintf(stderr, "testdb: starting PostgreSQL in Docker: %v\n", err)
		return 1
	}
	url, err := c.ConnectionString(startCtx, "sslmode=disable")
	if err != nil {
		fmt.Fprintf(stderr, "testdb: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "testdb: RELAYR_TEST_DATABASE_URL=%s\n", url)

	// Running the command it is given, as given, is what testdb is for.
	cmd := exec.CommandContext(ctx, command[0], command[1:]...) //nolint:gosec // the caller's own command line

	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	cmd.Env = append(os.Environ(), "RELAYR_TEST_DATABASE_URL="+url)
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode()
	case err != nil:
		fmt.Fprintf(stderr, "testdb: %v\n", err)
		return 1
	}
	return 0
}
