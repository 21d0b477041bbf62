package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// client speaks to a running relayr's API.
type client struct {
	base, token, tenant, workspace string
	http                           *http.Client
}

// apiError is an answer that is not 2xx.
type apiError struct {
	status     int
	code, msg  string
	retryAfter string
}

func (e *apiError) Error() string {
	s := fmt.Sprintf("%d %s: %s", e.status, e.code, e.msg)
	if e.retryAfter != "" {
		s += " (retry after " + e.retryAfter + " s)"
	}
	return s
}

// retryable: the API said a retry can succeed (it sends Retry-After then),
// or it didn't answer at all.
func retryable(err error) bool {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.retryAfter != "" || ae.status >= 500
	}
	return true
}

func tokenFrom(flagValue, file string) (string, error) {
	switch {
	case file != "":
		b, err := os.ReadFile(file) //nolint:gosec // G304: the operator names the token file
		if err != nil {
			return "", err
		}
		return strings.TrimSpace(string(b)), nil
	case flagValue != "":
		return os.Getenv(flagValue), nil
	}
	return "", errors.New("no token")
}

func (c *client) workspacePath(rest string) string {
	return strings.TrimRight(c.base, "/") + "/relayr/v1/tenants/" + url.PathEscape(c.tenant) + "/workspaces/" + url.PathEscape(c.workspace) + rest
}

func (c *client) do(ctx context.Context, method, u string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.http
	if hc == nil {
		hc = &http.Client{Timeout: 90 * time.Second}
	}
	res, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = res.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if err != nil {
		return err
	}
	if res.StatusCode/100 != 2 {
		var eb struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		_ = json.Unmarshal(b, &eb)
		return &apiError{status: res.StatusCode, code: eb.Error.Code, msg: eb.Error.Message, retryAfter: res.Header.Get("Retry-After")}
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}
