package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/relayr-go/relayr/apps/relayr/internal/app"
	"github.com/relayr-go/relayr/apps/relayr/internal/config"
)

func loadConfig(path string, stderr io.Writer) (*config.Config, *config.Secrets, bool) {
	c, err := config.Load(path)
	if err != nil {
		fmt.Fprintf(stderr, "relayr: %v\n", err)
		return nil, nil, false
	}
	s, err := c.ReadSecrets(os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "relayr: %v\n", err)
		return nil, nil, false
	}
	return c, s, true
}

func runServe(ctx context.Context, args []string, _, stderr io.Writer) int {
	fs := flags("serve", "run the service: the bound workspaces' followers, delivery to subscribers, and the HTTP API", stderr)
	path := fs.String("config", "relayr.toml", "the configuration file")
	listen := fs.String("listen", "", "the HTTP address (the configuration's listen by default)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	c, s, ok := loadConfig(*path, stderr)
	if !ok {
		return exitFail
	}
	if *listen != "" {
		c.Listen = *listen
	}
	log := newLogger(stderr, c.Log.Level, c.Log.Format)
	a, err := app.New(ctx, c, s, app.Options{Logger: log})
	if err != nil {
		log.Error("starting", "err", err)
		return exitFail
	}
	defer a.Close()
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", c.Listen)
	if err != nil {
		log.Error("listening", "addr", c.Listen, "err", err)
		return exitFail
	}
	if err := a.Run(ctx, ln); err != nil {
		log.Error("serving", "err", err)
		return exitFail
	}
	log.Info("relayr stopped")
	return exitOK
}

func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flags("migrate", "apply the ledger's migrations (under an advisory lock on PostgreSQL) and exit", stderr)
	path := fs.String("config", "relayr.toml", "the configuration file")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	c, err := config.Load(*path)
	if err != nil {
		fmt.Fprintf(stderr, "relayr: %v\n", err)
		return exitFail
	}
	s := &config.Secrets{}
	if c.Ledger.Driver == "postgres" {
		dsn, err := config.ReadSecret(c.Ledger.DSN, os.Getenv)
		if err != nil {
			fmt.Fprintf(stderr, "relayr: ledger.dsn: %v\n", err)
			return exitFail
		}
		s.DSN = dsn
	}
	// Migrations run as the tables' owner, whom row-level security never
	// binds: checking for a role RLS binds would refuse every owner.
	c.Ledger.RLS = false
	_, closeDB, err := app.OpenStore(ctx, c, s, true)
	if err != nil {
		fmt.Fprintf(stderr, "relayr: %v\n", err)
		return exitFail
	}
	closeDB()
	fmt.Fprintf(stdout, "relayr: the %s ledger is migrated\n", c.Ledger.Driver)
	return exitOK
}
