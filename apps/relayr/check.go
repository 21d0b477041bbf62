package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/relayr-go/relayr/adapters/gitlab"
	"github.com/relayr-go/relayr/adapters/jira"
	"github.com/relayr-go/relayr/adapters/natsjs"
	"github.com/relayr-go/relayr/apps/relayr/internal/app"
	"github.com/relayr-go/relayr/apps/relayr/internal/config"
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
	for i, b := range bindings {
		// app.Bindings makes the configuration's bindings in its order.
		err := reach(ctx, b.Connector, s.Trackers[b.Tenant+"/"+b.Kind()], b.Source(), lookupLag(c.Bindings[i]))
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
// Where what a look-up reads lags behind writes (lag: Jira's search,
// search_lag, 30 s by default; GitLab's lists, list_lag, 5 s), the
// look-up concludes "none" only from two reads the lag apart: there one
// read of the issues filed from now on, answered, is reach enough, and
// the look-up is given less than the lag, so that it answers after its
// first read and check waits the lag out for no binding. Elsewhere the
// look-up reads current, and its "not found" is reach: on Linear it is
// one issue(id) read of the id the key derives (the driver's Find).
func reach(ctx context.Context, conn tracker.Connector, creds tracker.Credentials, src tracker.Source, lag time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tr, err := conn.Connect(ctx, creds, src)
	if err != nil {
		return err
	}
	if lag > 0 {
		fctx, cancel := context.WithTimeout(ctx, lag)
		defer cancel()
		_, _, err = tr.FindKeys(fctx, []string{neverFiled}, time.Now())
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

// lookupLag is how far behind writes what the binding's look-up reads
// may be (Jira's search, GitLab's lists); zero where it reads current
// (Plane, Vikunja, Gitea, GitHub, Linear).
func lookupLag(b config.Binding) time.Duration {
	switch b.Tracker {
	case jira.Kind:
		return b.SearchLag.Or(jira.DefaultSearchLag)
	case gitlab.Kind:
		return b.ListLag.Or(gitlab.DefaultListLag)
	}
	return 0
}

// counted says n things, "1 tenant", "2 tenants".
func counted(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
