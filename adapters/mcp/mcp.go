// Package mcp serves relayr's writes and event feed to agents over the Model
// Context Protocol, on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk): four tools, file_item,
// update_item, comment and read_events, each a call of relayr's HTTP API
// for one workspace (ADR-1015).
//
// The tools call the API, never the write path: one set of checks, one
// mapping of failures to codes and Retry-After, one place a key is claimed.
// NewServer's tools call a running relayr over HTTP (relayr mcp, over stdio
// for a local agent); Handler serves streamable HTTP at the API's own
// route (/relayr/v1/tenants/{tenant}/workspaces/{workspace}/mcp), its tools
// calling the API in process with the caller's token.
//
// It is a module of its own, not a package of adapters/httpapi: the SDK and
// its dependencies (JSON schema, OAuth, JWT) are pulled only by what serves
// MCP, and a user of the HTTP API who does not want MCP does not pull them.
// The API takes the handler as a plain http.Handler (httpapi.Config.MCP).
//
// A failed call answers a tool error (IsError) whose text says what to do:
// a refusal says what to change and that the same call will fail again; a
// retryable failure says when to retry (the API's Retry-After) and that a
// retry with the same key is safe and answers the same item.
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relayr-go/relayr/adapters/httpapi"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/tracker"
)

// Workspace is the workspace the tools write to and read from, and how
// they reach relayr's HTTP API.
type Workspace struct {
	// URL is the running relayr's base URL ("http://127.0.0.1:8080").
	URL string
	// Tenant and Workspace name the workspace, as the API's paths do.
	Tenant, Workspace string
	// Token is the tenant's bearer token.
	Token string
	// HTTP calls the API; a client with a 90 s timeout when nil (a write
	// ends within 20 s, a feed read waits at most 60 s).
	HTTP *http.Client
}

// Options tune the server; the zero value is the default.
type Options struct {
	// Version is the version the server reports ("dev" when empty).
	Version string
	// Logger logs the SDK's activity (discarded when nil).
	Logger *slog.Logger
}

// Tool names.
const (
	ToolFileItem   = "file_item"
	ToolUpdateItem = "update_item"
	ToolComment    = "comment"
	ToolReadEvents = "read_events"
)

// MaxWaitSeconds is the longest read_events waits for the next events
// (the API's long poll, httpapi.MaxWait).
const MaxWaitSeconds = int(httpapi.MaxWait / time.Second)

// instructions tell a model what the server is for.
const instructions = `relayr files and edits items in a task tracker (Plane, Vikunja, Gitea, GitHub Issues, Jira or GitLab) exactly once per key, and reads back what people do there as events.
A key is a name you choose for the item, stable across retries: derive it from what the item is about (for example "ci/build-1042" or "agent/flaky-test/TestLogin"), never from the time or a random value. Calling file_item again with the same key, or retrying after a timeout or a lost answer, is safe: it answers the same item and never files a second one.
When a tool answers an error, its text says whether to retry (and when) or what to change.`

// FileItemInput is file_item's arguments.
type FileItemInput struct {
	Key         string   `json:"key" jsonschema:"the item's key: a name you choose for this item, stable across retries (for example ci/build-1042), at most 1024 bytes. The same key always answers the same item: calling again, or retrying after a lost answer, never files a second item."`
	Title       string   `json:"title" jsonschema:"the item's title, used only when this call files the item"`
	Description string   `json:"description,omitempty" jsonschema:"the item's description, HTML (escape < and & in plain text such as logs)"`
	State       string   `json:"state,omitempty" jsonschema:"the state to file the item in: backlog, todo, started, done or cancelled (the tracker's default when left out)"`
	Labels      []string `json:"labels,omitempty" jsonschema:"label names, each once, at most 50"`
	Correlation string   `json:"correlation,omitempty" jsonschema:"an id of your run or conversation; every event of the item carries it back"`
}

// UpdateItemInput is update_item's arguments; a field left out is left as
// it is.
type UpdateItemInput struct {
	Key         string    `json:"key" jsonschema:"the key the item was filed under with file_item"`
	Title       *string   `json:"title,omitempty" jsonschema:"the new title"`
	Description *string   `json:"description,omitempty" jsonschema:"the new description, HTML"`
	State       *string   `json:"state,omitempty" jsonschema:"the new state: backlog, todo, started, done or cancelled"`
	Labels      *[]string `json:"labels,omitempty" jsonschema:"the item's labels, all of them (this replaces the list)"`
	Correlation string    `json:"correlation,omitempty" jsonschema:"an id of your run or conversation"`
}

// CommentInput is comment's arguments.
type CommentInput struct {
	ItemKey     string `json:"item_key" jsonschema:"the key the item was filed under with file_item"`
	Key         string `json:"key" jsonschema:"the comment's own key, stable across retries (for example ci/build-1042/retry-3): the same key posts the comment once, however often it is sent"`
	Body        string `json:"body" jsonschema:"the comment, HTML (escape < and & in plain text)"`
	Correlation string `json:"correlation,omitempty" jsonschema:"an id of your run or conversation"`
}

// ReadEventsInput is read_events' arguments.
type ReadEventsInput struct {
	After       int64 `json:"after,omitempty" jsonschema:"read the events after this sequence number: 0 for the first, then the next the last read answered"`
	Limit       int   `json:"limit,omitempty" jsonschema:"events per read, 1 to 1000 (100 when left out)"`
	WaitSeconds int   `json:"wait_seconds,omitempty" jsonschema:"when there is no event yet, wait up to this many seconds (0 to 60) for the next one; 0 answers at once"`
}

var states = []any{"backlog", "todo", "started", "done", "cancelled"}

// NewServer answers an MCP server whose tools act on w through relayr's
// HTTP API. Run it on a transport (gomcp.StdioTransport for a local agent),
// or serve it with Handler.
func NewServer(w Workspace, o *Options) *gomcp.Server {
	if o == nil {
		o = &Options{}
	}
	version := o.Version
	if version == "" {
		version = "dev"
	}
	s := gomcp.NewServer(&gomcp.Implementation{Name: "relayr", Title: "relayr: tracker items once per key", Version: version},
		&gomcp.ServerOptions{Instructions: instructions, Logger: o.Logger})
	if errInputSchemas != nil && o.Logger != nil {
		o.Logger.Error("mcp: serving the SDK's inferred input schemas, without the states' enum", "err", errInputSchemas)
	}
	c := &client{w: w}
	gomcp.AddTool(s, &gomcp.Tool{
		Name:  ToolFileItem,
		Title: "File a tracker item once by key",
		Description: "Ensure an item in the workspace's tracker by key: file it when no item has the key, else answer the item filed under it. " +
			"Safe to retry: the same key always answers the same item, whether you call again, time out, or lose the answer, and two callers racing one key get one item. " +
			`The answer's "how" is "created" when this call filed it, "existing" or "found" when it was filed before (its title and fields are then left as they are: use update_item to change them).`,
		InputSchema: inputSchema(ToolFileItem),
		Annotations: &gomcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: new(false), OpenWorldHint: new(true)},
	}, c.fileItem)
	gomcp.AddTool(s, &gomcp.Tool{
		Name:  ToolUpdateItem,
		Title: "Update the item of a key",
		Description: "Update the item filed under a key: only the fields given, and only where they differ; a call that changes nothing sends nothing to the tracker. " +
			"Safe to retry with the same arguments. The key must have been filed with file_item first.",
		InputSchema: inputSchema(ToolUpdateItem),
		Annotations: &gomcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: new(false), OpenWorldHint: new(true)},
	}, c.updateItem)
	gomcp.AddTool(s, &gomcp.Tool{
		Name:  ToolComment,
		Title: "Comment once by key",
		Description: "Comment on the item filed under item_key, once per comment key: the same comment key posts one comment however often it is sent, " +
			"so a retry after a timeout or a lost answer is safe.",
		InputSchema: inputSchema(ToolComment),
		Annotations: &gomcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: new(false), OpenWorldHint: new(true)},
	}, c.comment)
	gomcp.AddTool(s, &gomcp.Tool{
		Name:  ToolReadEvents,
		Title: "Read the workspace's events",
		Description: "Read what people did in the tracker (items created, changed, commented, removed), each event once, in order, after a sequence number. " +
			`Pass the answer's "next" as "after" to read on. With wait_seconds the call waits (at most 60 s) for the next event when there is none. ` +
			"relayr's own writes never come back as events.",
		InputSchema: inputSchema(ToolReadEvents),
		Annotations: &gomcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(true)},
	}, c.readEvents)
	return s
}

// inputSchemas are the tools' input schemas by tool name, inferred once
// from this package's argument types, each state field taking one of the
// five states (schemaFor). The types are fixed, so what the package's
// tests see here is what every server serves: TestInputSchemas fails on
// errInputSchemas and checks each state field's enum, and
// TestToolsListEachWithSchemaAndDescription reads the enum back through
// the SDK's client.
var inputSchemas, errInputSchemas = buildInputSchemas()

func buildInputSchemas() (map[string]*jsonschema.Schema, error) {
	out := map[string]*jsonschema.Schema{}
	var errs []error
	add := func(tool string, s *jsonschema.Schema, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("mcp: %s's input schema: %w", tool, err))
			return
		}
		out[tool] = s
	}
	s, err := schemaFor[FileItemInput]("state")
	add(ToolFileItem, s, err)
	s, err = schemaFor[UpdateItemInput]("state")
	add(ToolUpdateItem, s, err)
	s, err = schemaFor[CommentInput]()
	add(ToolComment, s, err)
	s, err = schemaFor[ReadEventsInput]()
	add(ToolReadEvents, s, err)
	return out, errors.Join(errs...)
}

// schemaFor is In's input schema, the properties named taking one of the
// five states; a property named that In does not have is an error, as is
// a type the SDK's inference refuses.
func schemaFor[In any](stateFields ...string) (*jsonschema.Schema, error) {
	s, err := jsonschema.For[In](nil)
	if err != nil {
		return nil, err
	}
	for _, name := range stateFields {
		p, ok := s.Properties[name]
		if !ok {
			return nil, fmt.Errorf("no property %q to give the states", name)
		}
		p.Enum = states
	}
	return s, nil
}

// inputSchema is tool's schema for gomcp.Tool.InputSchema: nil, so the
// SDK infers one (without the states' enum), only if buildInputSchemas
// failed, which the package's tests refuse and NewServer logs.
func inputSchema(tool string) any {
	if s := inputSchemas[tool]; s != nil {
		return s
	}
	return nil
}

// client calls the API for one workspace.
type client struct{ w Workspace }

func (c *client) fileItem(ctx context.Context, _ *gomcp.CallToolRequest, in FileItemInput) (*gomcp.CallToolResult, any, error) {
	req := httpapi.EnsureRequest{Key: in.Key, Title: in.Title, Description: in.Description,
		State: tracker.State(in.State), Labels: in.Labels, Correlation: in.Correlation}
	var res httpapi.ItemResponse
	if err := c.do(ctx, http.MethodPost, "/items/ensure", req, &res); err != nil {
		return errorResult(err), nil, nil
	}
	var what string
	switch res.How {
	case "created":
		what = "Filed " + itemName(res.Item) + " under key " + strconv.Quote(in.Key) + "."
	default:
		what = "The key " + strconv.Quote(in.Key) + " was filed before: " + itemName(res.Item) + " (" + res.How + "); nothing new was filed."
	}
	return result(what, res), nil, nil
}

func (c *client) updateItem(ctx context.Context, _ *gomcp.CallToolRequest, in UpdateItemInput) (*gomcp.CallToolResult, any, error) {
	req := httpapi.UpdateRequest{Key: in.Key, Title: in.Title, Description: in.Description,
		Labels: in.Labels, Correlation: in.Correlation}
	if in.State != nil {
		st := tracker.State(*in.State)
		req.State = &st
	}
	var res httpapi.ItemResponse
	if err := c.do(ctx, http.MethodPost, "/items/update", req, &res); err != nil {
		return errorResult(err), nil, nil
	}
	return result("Updated "+itemName(res.Item)+", filed under key "+strconv.Quote(in.Key)+".", res), nil, nil
}

func (c *client) comment(ctx context.Context, _ *gomcp.CallToolRequest, in CommentInput) (*gomcp.CallToolResult, any, error) {
	req := httpapi.CommentRequest(in)
	var res httpapi.CommentResponse
	if err := c.do(ctx, http.MethodPost, "/comments", req, &res); err != nil {
		return errorResult(err), nil, nil
	}
	what := "Commented on the item of key " + strconv.Quote(in.ItemKey) + " under comment key " + strconv.Quote(in.Key) + "."
	if res.How != "created" {
		what = "The comment key " + strconv.Quote(in.Key) + " was posted before; nothing new was posted."
	}
	return result(what, res), nil, nil
}

func (c *client) readEvents(ctx context.Context, _ *gomcp.CallToolRequest, in ReadEventsInput) (*gomcp.CallToolResult, any, error) {
	switch {
	case in.After < 0:
		return errorResult(&ToolError{Code: "invalid", Detail: "after must be 0 or more"}), nil, nil
	case in.Limit < 0 || in.Limit > httpapi.MaxLimit:
		return errorResult(&ToolError{Code: "invalid", Detail: fmt.Sprintf("limit must be from 1 to %d", httpapi.MaxLimit)}), nil, nil
	case in.WaitSeconds < 0 || in.WaitSeconds > MaxWaitSeconds:
		return errorResult(&ToolError{Code: "invalid", Detail: fmt.Sprintf("wait_seconds must be from 0 to %d", MaxWaitSeconds)}), nil, nil
	}
	q := url.Values{}
	q.Set("after", strconv.FormatInt(in.After, 10))
	if in.Limit > 0 {
		q.Set("limit", strconv.Itoa(in.Limit))
	}
	q.Set("wait", strconv.Itoa(in.WaitSeconds)+"s")
	var res httpapi.FeedResponse
	if err := c.do(ctx, http.MethodGet, "/events?"+q.Encode(), nil, &res); err != nil {
		return errorResult(err), nil, nil
	}
	if res.Events == nil {
		res.Events = []eventlog.Event{}
	}
	what := fmt.Sprintf("%d events; pass after=%d to read on.", len(res.Events), res.Next)
	return result(what, res), nil, nil
}

func itemName(it httpapi.ItemJSON) string {
	name := it.Name
	if name == "" {
		name = "item " + it.ID
	}
	if it.Link != "" {
		name += " (" + it.Link + ")"
	}
	return name
}

// result is a successful call's answer: what happened in a sentence, and
// the API's answer as JSON, in the text and as structured content.
func result(what string, v any) *gomcp.CallToolResult {
	b, err := json.Marshal(v)
	if err != nil {
		return errorResult(&ToolError{Code: "internal", Detail: "the answer could not be encoded"})
	}
	return &gomcp.CallToolResult{
		Content:           []gomcp.Content{&gomcp.TextContent{Text: what + "\n" + string(b)}},
		StructuredContent: json.RawMessage(b),
	}
}

// do calls the API at the workspace's path rest, sending body as JSON when
// it is not nil and reading a 2xx answer into out; any other answer is a
// *ToolError.
func (c *client) do(ctx context.Context, method, rest string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return &ToolError{Code: "invalid", Detail: "the arguments could not be encoded: " + err.Error()}
		}
		rd = bytes.NewReader(b)
	}
	u := strings.TrimRight(c.w.URL, "/") + "/relayr/v1/tenants/" + url.PathEscape(c.w.Tenant) +
		"/workspaces/" + url.PathEscape(c.w.Workspace) + rest
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return &ToolError{Code: "invalid", Detail: "relayr's URL is not valid: fix the MCP server's configuration"}
	}
	req.Header.Set("Authorization", "Bearer "+c.w.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.w.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 90 * time.Second}
	}
	res, err := hc.Do(req)
	if err != nil {
		// The network, a timeout, or an answer lost on the way: the write
		// may have been made, and a retry with the same key answers it.
		return &ToolError{Code: CodeUnreachable, Detail: "relayr did not answer: " + unwrapURL(err), Retryable: true, RetryAfter: time.Second}
	}
	defer func() { _ = res.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if err != nil {
		return &ToolError{Code: CodeUnreachable, Detail: "relayr's answer was cut: " + err.Error(), Retryable: true, RetryAfter: time.Second}
	}
	if res.StatusCode/100 != 2 {
		return problemError(res, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return &ToolError{Code: CodeUnreachable, Detail: "relayr's answer is not its JSON (a proxy?)", Retryable: true, RetryAfter: time.Second}
	}
	return nil
}

// unwrapURL is a client error without the URL it names (the same for
// every call, and the in-process one names no real host).
func unwrapURL(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}
