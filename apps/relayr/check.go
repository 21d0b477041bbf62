package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/relayr-go/relayr/adapters/jira"
	"github.com/relayr-go/relayr/adapters/natsjs"
	"github.com/relayr-go/relayr/apps/relayr/internal/app"
	"github.com/relayr-go/relayr/core/follow"
	"github.com/relayr-go/relayr/core/tracker"
)

func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flags("check", "validate the configuration, read its secrets, and reach every bound tracker and NATS stream with its credentials", stderr)
	path := fs.String("config", "relayr.toml", "the configuration file")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	c, s, ok := loadConfig(*path, stderr)
	if !ok {
		return exitFail
	}
	fmt.Fprintf(stdout, "configuration %s: valid, %s, %s, %s\n", *path,
		counted(len(c.Tenants), "tenant"), counted(len(c.Bindings), "binding"), counted(len(c.Subscriptions), "subscription"))
	for _, w := range c.Warnings() {
		fmt.Fprintf(stdout, "  warning: %s\n", w)
	}
	bindings, err := app.Bindings(c, nil)
	if err != nil {
		fmt.Fprintf(stderr, "relayr: %v\n", err)
		return exitFail
	}
	failed := 0
	for _, b := range bindings {
		err := reach(ctx, b.Connector, s.Trackers[b.Tenant+"/"+b.Kind()], b.Source())
		if err != nil {
			failed++
			fmt.Fprintf(stdout, "  %-24s %-8s FAILED: %v\n", b.Name(), b.Kind(), err)
			continue
		}
		fmt.Fprintf(stdout, "  %-24s %-8s reachable\n", b.Name(), b.Kind())
	}
	if failed > 0 {
		fmt.Fprintf(stdout, "%d of %d bindings failed\n", failed, len(bindings))
	}
	// Each NATS subscription's broker, with its credentials, and its stream
	// as `relayr serve` checks it (never created here).
	natsFailed := 0
	for _, sub := range c.Subscriptions {
		if sub.NATS == nil {
			continue
		}
		name := sub.Tenant + "/" + sub.Workspace + "/" + sub.Name
		tg := app.NATSTarget(sub, s.NATS[name], c.Timings.Lease.Or(follow.DefaultLeaseTTL), "check")
		tg.CreateStream = false
		sink := natsjs.NewSink(tg, natsjs.SinkOptions{})
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		err := sink.Check(cctx)
		cancel()
		sink.Close()
		if err != nil {
			natsFailed++
			fmt.Fprintf(stdout, "  %-24s %-8s FAILED: %v\n", name, "nats", err)
			continue
		}
		fmt.Fprintf(stdout, "  %-24s %-8s reachable, stream %s fits\n", name, "nats", sub.NATS.Stream)
	}
	if natsFailed > 0 {
		fmt.Fprintf(stdout, "%d NATS subscriptions failed\n", natsFailed)
	}
	if failed > 0 || natsFailed > 0 {
		return exitFail
	}
	return exitOK
}

// neverFiled is the key check looks up: nobody files it.
const neverFiled = "relayr-check/never-filed"

// reach connects with the binding's credentials and asks for a key nobody
// filed: a tracker that answers "not found" is reachable and takes the key.
// Jira's search lags behind writes, so its look-up concludes "none" only
// from two searches the search's lag apart (search_lag, 30 s by default),
// longer than check waits: there one search of the issues created from
// this minute on, answered, is reach enough (a shorter lag is waited out,
// and the look-up is then complete).
func reach(ctx context.Context, conn tracker.Connector, creds tracker.Credentials, src tracker.Source) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tr, err := conn.Connect(ctx, creds, src)
	if err != nil {
		return err
	}
	if conn.Kind() == jira.Kind {
		_, _, err = tr.FindKeys(ctx, []string{neverFiled}, time.Now())
		return err
	}
	_, err = tr.Find(ctx, neverFiled)
	if errors.Is(err, tracker.ErrNotFound) {
		return nil
	}
	if err == nil {
		return nil
	}
	return err
}

// counted says n things, "1 tenant", "2 tenants".
func counted(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
