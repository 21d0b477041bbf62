package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/relayr-go/relayr/adapters/httpapi"
	"github.com/relayr-go/relayr/core/tracker"
)

type labels []string

func (l *labels) String() string     { return strings.Join(*l, ",") }
func (l *labels) Set(v string) error { *l = append(*l, v); return nil }

func clientFlags(fs *flag.FlagSet) (c *client, tokenEnv, tokenFile *string) {
	c = &client{}
	fs.StringVar(&c.base, "url", "http://127.0.0.1:8080", "the relayr service")
	fs.StringVar(&c.tenant, "tenant", "", "the tenant (required)")
	fs.StringVar(&c.workspace, "workspace", "", "the workspace (required)")
	tokenEnv = fs.String("token-env", "RELAYR_TOKEN", "the environment variable holding the tenant's token")
	tokenFile = fs.String("token-file", "", "a file holding the tenant's token (instead of -token-env)")
	return c, tokenEnv, tokenFile
}

func runFile(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flags("file", "file an item once by key through a running relayr; however often the job is retried, the tracker holds one item. Exit 0: filed (or filed before); 75: retry later; 1: give up; 2: usage", stderr)
	c, tokenEnv, tokenFile := clientFlags(fs)
	var req httpapi.EnsureRequest
	var ls labels
	fs.StringVar(&req.Key, "key", "", "the key the item is filed under (required)")
	fs.StringVar(&req.Title, "title", "", "the item's title (required)")
	fs.StringVar(&req.Description, "description", "", "the item's description")
	state := fs.String("state", "", "backlog, todo, started, done or cancelled")
	fs.Var(&ls, "label", "a label (repeat for more)")
	fs.StringVar(&req.Correlation, "correlation", "", "the run's correlation id (its chain)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if c.tenant == "" || c.workspace == "" || req.Key == "" || req.Title == "" {
		fmt.Fprintln(stderr, "relayr file: -tenant, -workspace, -key and -title are required")
		return exitUsage
	}
	tok, err := tokenFrom(*tokenEnv, *tokenFile)
	if err != nil || tok == "" {
		fmt.Fprintf(stderr, "relayr file: no token: set $%s or -token-file\n", *tokenEnv)
		return exitUsage
	}
	c.token = tok
	if err := c.check(); err != nil {
		fmt.Fprintf(stderr, "relayr file: %v\n", err)
		return exitUsage
	}
	req.State, req.Labels = tracker.State(*state), ls
	// What is sent is checked as the API checks it: JSON would carry a
	// value that is not UTF-8 rewritten, never refused (tracker.Quote
	// keeps the refusal short).
	if err := checkFiling(req); err != nil {
		fmt.Fprintf(stderr, "relayr file: %v\n", err)
		return exitUsage
	}
	var res httpapi.ItemResponse
	if err := c.do(ctx, "POST", c.workspacePath("/items/ensure"), req, &res); err != nil {
		fmt.Fprintf(stderr, "relayr file: %v\n", err)
		if retryable(err) {
			return exitRetry
		}
		return exitFail
	}
	out, _ := json.Marshal(res)
	fmt.Fprintln(stdout, string(out))
	return exitOK
}

func runEvents(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flags("events", "read a workspace's events after a sequence number, one JSON object a line; -follow keeps reading", stderr)
	c, tokenEnv, tokenFile := clientFlags(fs)
	after := fs.Int64("after", 0, "read the events after this sequence number")
	follow := fs.Bool("follow", false, "keep reading as events arrive (long-poll)")
	limit := fs.Int("limit", 100, "events per read, 1 to 1000")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if c.tenant == "" || c.workspace == "" {
		fmt.Fprintln(stderr, "relayr events: -tenant and -workspace are required")
		return exitUsage
	}
	tok, err := tokenFrom(*tokenEnv, *tokenFile)
	if err != nil || tok == "" {
		fmt.Fprintf(stderr, "relayr events: no token: set $%s or -token-file\n", *tokenEnv)
		return exitUsage
	}
	c.token = tok
	if err := c.check(); err != nil {
		fmt.Fprintf(stderr, "relayr events: %v\n", err)
		return exitUsage
	}
	if *limit < 1 || *limit > 1000 || *after < 0 {
		fmt.Fprintln(stderr, "relayr events: -limit is 1 to 1000 and -after at least 0")
		return exitUsage
	}
	enc := json.NewEncoder(stdout)
	for {
		wait := "0s"
		if *follow {
			wait = "30s"
		}
		var f httpapi.FeedResponse
		err := c.do(ctx, "GET", c.workspacePath(fmt.Sprintf("/events?after=%d&limit=%d&wait=%s", *after, *limit, wait)), nil, &f)
		if err != nil {
			if ctx.Err() != nil {
				return exitOK
			}
			fmt.Fprintf(stderr, "relayr events: %v\n", err)
			if retryable(err) {
				return exitRetry
			}
			return exitFail
		}
		for _, e := range f.Events {
			_ = enc.Encode(e)
		}
		*after = f.Next
		if !*follow && len(f.Events) < *limit {
			return exitOK
		}
	}
}

// checkFiling checks a filing's values before they are sent, by the rules
// the write path applies: the key, the draft, and a correlation that is
// UTF-8.
func checkFiling(req httpapi.EnsureRequest) error {
	if err := tracker.ValidateKey(req.Key); err != nil {
		return err
	}
	if err := tracker.ValidateDraft(tracker.Draft{Title: req.Title, Description: req.Description, State: req.State, Labels: req.Labels}); err != nil {
		return err
	}
	return tracker.ValidateText("correlation", req.Correlation)
}
