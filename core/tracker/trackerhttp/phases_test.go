package trackerhttp_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// piped is a client whose every connection is an in-memory pipe to serve,
// so a test in a synctest bubble passes a phase's 10 s at once.
func piped(t *testing.T, serve func(conn net.Conn)) *trackerhttp.Client {
	t.Helper()
	tr := &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) {
		c, s := net.Pipe()
		go serve(s)
		return c, nil
	}}
	t.Cleanup(tr.CloseIdleConnections)
	c, err := trackerhttp.New(trackerhttp.Config{Name: "test", BaseURL: "http://tracker.test/", Client: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestAPhaseThatMakesNoProgressTimesOut: the answer never comes; the
// request ends DefaultTimeout after it was written.
func TestAPhaseThatMakesNoProgressTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		done := make(chan struct{})
		defer close(done)
		c := piped(t, func(conn net.Conn) {
			defer func() { _ = conn.Close() }()
			_, _ = http.ReadRequest(bufio.NewReader(conn))
			<-done
		})
		start := time.Now()
		_, err := c.Do(context.Background(), trackerhttp.Request{Method: http.MethodGet, Path: "x"})
		if !errors.Is(err, tracker.ErrUnavailable) || !strings.Contains(err.Error(), "phase timeout") {
			t.Fatalf("%v, want ErrUnavailable over the phase timeout", err)
		}
		if took := time.Since(start); took != trackerhttp.DefaultTimeout {
			t.Fatalf("gave up after %s, want %s", took, trackerhttp.DefaultTimeout)
		}
	})
}

// TestEachPhaseHasItsOwnTimeout: an answer whose headers come 6 s after
// the request and whose body comes 6 s after them is read whole, though
// the two take longer than one timeout together.
func TestEachPhaseHasItsOwnTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := piped(t, func(conn net.Conn) {
			defer func() { _ = conn.Close() }()
			if _, err := http.ReadRequest(bufio.NewReader(conn)); err != nil {
				return
			}
			time.Sleep(6 * time.Second)
			_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n")
			time.Sleep(6 * time.Second)
			_, _ = io.WriteString(conn, "ok")
		})
		start := time.Now()
		a, err := c.Do(context.Background(), trackerhttp.Request{Method: http.MethodGet, Path: "x"})
		if err != nil || string(a.Body) != "ok" {
			t.Fatalf("%q %v, want the answer read whole", a.Body, err)
		}
		if took := time.Since(start); took != 12*time.Second {
			t.Fatalf("took %s, want 12s", took)
		}
	})
}
