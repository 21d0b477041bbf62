package mcp

import (
	"bytes"
	"io"
	"net/http"
	"strconv"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"
)

// inProcessURL is the base URL Handler's tools call the API at: the
// requests never leave the process, so the host is never dialled.
const inProcessURL = "http://relayr.in-process"

// Handler serves MCP's streamable HTTP transport for the API's route
// /relayr/v1/tenants/{tenant}/workspaces/{workspace}/mcp: mount it as
// httpapi.Config.MCP, behind the API's check of the tenant's token. Each
// request is served on its own (the SDK's stateless mode: no session to
// hold between requests, so any replica answers any request), and its
// tools call api, the API's handler, in process, with the request's
// token, tenant and workspace.
func Handler(api http.Handler, o *Options) http.Handler {
	hc := &http.Client{Transport: handlerTransport{h: api}}
	opts := &gomcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}
	if o != nil {
		opts.Logger = o.Logger
	}
	return gomcp.NewStreamableHTTPHandler(func(r *http.Request) *gomcp.Server {
		return NewServer(Workspace{
			URL: inProcessURL, Tenant: r.PathValue("tenant"), Workspace: r.PathValue("workspace"),
			Token: bearer(r), HTTP: hc,
		}, o)
	}, opts)
}

// bearer is the request's bearer token, "" when it has none (the API
// refuses it then).
func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && (h[:7] == "Bearer " || h[:7] == "bearer ") {
		return h[7:]
	}
	return ""
}

// handlerTransport is an http.RoundTripper that answers a request with a
// handler, in process.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	in := r.Clone(r.Context())
	if in.Body == nil {
		in.Body = http.NoBody
	}
	in.RequestURI = in.URL.RequestURI()
	in.RemoteAddr = "in-process"
	rec := &recorder{header: http.Header{}}
	t.h.ServeHTTP(rec, in)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return &http.Response{
		Status:        strconv.Itoa(rec.status) + " " + http.StatusText(rec.status),
		StatusCode:    rec.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        rec.header,
		Body:          io.NopCloser(bytes.NewReader(rec.body.Bytes())),
		ContentLength: int64(rec.body.Len()),
		Request:       r,
	}, nil
}

// recorder is the http.ResponseWriter handlerTransport hands the handler.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *recorder) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}
