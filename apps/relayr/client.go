package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
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
// or it didn't answer at all (the network, a timeout, a dropped answer).
// Anything else (a 2xx whose body is not the API's) is no better retried.
func retryable(err error) bool {
	var ae *apiError
	var ne net.Error
	var unknownCA x509.UnknownAuthorityError
	var badCert x509.CertificateInvalidError
	var badHost x509.HostnameError
	switch {
	case errors.As(err, &ae):
		return ae.retryAfter != "" || ae.status >= 500
	case errors.As(err, &unknownCA), errors.As(err, &badCert), errors.As(err, &badHost):
		// A certificate refused is refused again: not the network's
		// passing failure (url.Error is a net.Error whatever it wraps).
		return false
	case errors.As(err, &ne), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET):
		return true
	}
	return false
}

// check refuses, as a usage error, a client that no retry could help: a
// -url that is not http(s) with a host, or a token that can't be sent in
// a header.
func (c *client) check() error {
	u, err := url.Parse(c.base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("-url %q is not an http(s) URL", c.base)
	}
	for _, r := range c.token {
		if r < 0x20 || r == 0x7f {
			return errors.New("the token holds a control character (a newline?), which no header carries")
		}
	}
	return nil
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
