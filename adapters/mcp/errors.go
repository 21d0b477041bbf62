package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relayr-go/relayr/adapters/httpapi"
	"github.com/relayr-go/relayr/core/writes"
)

// CodeUnreachable is a ToolError's code when relayr did not answer, or its
// answer was lost: a write may have been made, and a retry with the same
// key answers it.
const CodeUnreachable = "unreachable"

// ToolError is a call that failed, as the model reads it: the API's code
// and detail, whether the same call can succeed later, and when.
type ToolError struct {
	// Code is relayr's code (writes.Code's, the API's own such as
	// "unauthorized" or "too_many_requests", or CodeUnreachable).
	Code string `json:"code"`
	// Status is the API's HTTP status (0 when it did not answer).
	Status int `json:"status,omitempty"`
	// Detail is the API's message.
	Detail string `json:"detail"`
	// Retryable is true when the same call, with the same key, can
	// succeed later.
	Retryable bool `json:"retryable"`
	// RetryAfter is when to retry, when Retryable (the API's Retry-After).
	RetryAfter time.Duration `json:"-"`
	// RetryAfterSeconds is RetryAfter in whole seconds, for the model.
	RetryAfterSeconds int `json:"retry_after_seconds,omitempty"`
	// Hint says what to do: what to change, or when to retry.
	Hint string `json:"hint"`
}

func (e *ToolError) Error() string {
	s := e.Code + ": " + e.Detail
	if e.Hint != "" {
		s += ". " + e.Hint
	}
	return s
}

// hints say, per code, what a model does about a refusal: what to change,
// or whom to ask. A retryable code's hint is made from its Retry-After.
var hints = map[string]string{
	string(writes.CodeInvalid): "Do not retry the same call: change the argument the detail names (a key or title that is empty, too long or holds a control character, a state not among backlog, todo, started, done and cancelled, a label given twice or more than 50).",
	string(writes.CodeRefused): "Do not retry the same call: the tracker refused the write as it stands. Change what the detail names; " +
		"for update_item or comment on a key whose filing never finished, call file_item with that key again first.",
	string(writes.CodeNotAllowed): "Do not retry: the workspace is not bound to a tracker, or its tracker is switched off. Ask relayr's operator.",
	string(writes.CodeDeleted):    "Do not retry: the item filed under this key was deleted in the tracker. To file a new item, use a new key.",
	string(writes.CodeLoop):       "Do not retry: the item took its cap of writes for the hour, which stops a loop. Stop writing to it.",
	"unauthorized":                "Do not retry: the token was refused. The MCP server's configuration needs the tenant's token.",
	"not_found":                   "Do not retry: relayr serves no such route; the MCP server's URL is wrong.",
	"too_large":                   "Do not retry the same call: make the description or body shorter (at most 1 MB in all).",
	"internal":                    "Retrying may not help: relayr failed; its log says why.",
}

// problemError is the *ToolError of a non-2xx answer of the API (an RFC
// 9457 problem whose code is relayr's, Retry-After in its header).
func problemError(res *http.Response, body []byte) *ToolError {
	var p httpapi.Problem
	_ = json.Unmarshal(body, &p)
	code := p.Code
	if code == "" {
		code = p.Error.Code
	}
	detail := p.Detail
	if detail == "" {
		detail = p.Error.Message
	}
	if code == "" {
		code, detail = "http_"+strconv.Itoa(res.StatusCode), "relayr answered "+res.Status
	}
	e := &ToolError{Code: code, Status: res.StatusCode, Detail: detail}
	if s := res.Header.Get("Retry-After"); s != "" {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && n >= 0 {
			e.Retryable, e.RetryAfter = true, time.Duration(n)*time.Second
		}
	}
	if !e.Retryable && (writes.Code(code).Retryable() || res.StatusCode >= 500 && code != "internal") {
		e.Retryable, e.RetryAfter = true, time.Second
	}
	return e
}

// errorResult is a failed call's tool error: IsError, the hint in the
// text, the error as structured content.
func errorResult(err error) *gomcp.CallToolResult {
	var e *ToolError
	if !errors.As(err, &e) {
		e = &ToolError{Code: "internal", Detail: err.Error()}
	}
	e.Hint = hintOf(e)
	e.RetryAfterSeconds = int((e.RetryAfter + time.Second - 1) / time.Second)
	if !e.Retryable {
		e.RetryAfterSeconds = 0
	}
	b, _ := json.Marshal(e)
	return &gomcp.CallToolResult{
		IsError:           true,
		Content:           []gomcp.Content{&gomcp.TextContent{Text: e.Error()}},
		StructuredContent: json.RawMessage(b),
	}
}

func hintOf(e *ToolError) string {
	if !e.Retryable {
		if h, ok := hints[e.Code]; ok {
			return h
		}
		return "Do not retry the same call: change what the detail names."
	}
	secs := max(int((e.RetryAfter+time.Second-1)/time.Second), 1)
	when := fmt.Sprintf("Retry the same call, with the same key, after %d s", secs)
	switch e.Code {
	case string(writes.CodeClaimed):
		return when + ": another attempt is writing this key now, and the retry answers what it made, never a second item."
	case "too_many_requests":
		return when + ": too many reads are waiting at once; wait less, or read without wait_seconds."
	case CodeUnreachable:
		return when + ": the write may have been made, and retrying with the same key answers it; it never files a second item."
	}
	return when + ": it is safe, and answers the same item if the write was made."
}
