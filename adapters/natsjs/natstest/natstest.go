// Package natstest gives tests the machine's NATS server with JetStream:
// its URL from RELAYR_TEST_NATS_URL (nats://127.0.0.1:4222 by default), a
// stream of each test's own that the test deletes, the stream's messages in
// order, and a second server of the test's own for what the shared one
// can't show (credentials refused). No mock broker: without a server a test
// skips, saying why, and fails instead under RELAYR_REQUIRE_NATS=1.
package natstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultURL is the machine's server.
const DefaultURL = "nats://127.0.0.1:4222"

// URL answers the test server's URL.
func URL() string {
	if u := os.Getenv("RELAYR_TEST_NATS_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// Required reports whether a missing server fails the tests.
func Required() bool { return os.Getenv("RELAYR_REQUIRE_NATS") == "1" }

func unavailable(t testing.TB, format string, a ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, a...)
	if Required() {
		t.Fatalf("natstest: %s (RELAYR_REQUIRE_NATS=1)", msg)
	}
	t.Skipf("natstest: %s; set RELAYR_REQUIRE_NATS=1 to fail instead", msg)
}

// Connect connects to the test server, closed when the test ends.
func Connect(t testing.TB) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(URL(), nats.Timeout(5*time.Second))
	if err != nil {
		unavailable(t, "no NATS server at %s: %v", URL(), err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// JetStream is the test server's JetStream.
func JetStream(t testing.TB) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.AccountInfo(context.Background()); err != nil {
		unavailable(t, "the NATS server at %s has no JetStream: %v", URL(), err)
	}
	return js
}

// Name answers a name of the test's own: a stream's, a prefix's token.
func Name(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// Stream creates a stream of the test's own from cfg (its Name set when
// empty), deleted when the test ends.
func Stream(t testing.TB, js jetstream.JetStream, cfg jetstream.StreamConfig) jetstream.Stream {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = Name("RELAYR_TEST_")
	}
	st, err := js.CreateStream(context.Background(), cfg)
	if err != nil {
		t.Fatalf("natstest: creating stream %s: %v", cfg.Name, err)
	}
	Delete(t, js, cfg.Name)
	return st
}

// Delete deletes the stream when the test ends (one it made, or that the
// code under test made).
func Delete(t testing.TB, js jetstream.JetStream, name string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := js.DeleteStream(ctx, name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Errorf("natstest: deleting stream %s: %v", name, err)
		}
	})
}

// Messages answers every message of a stream, in the stream's order.
func Messages(t testing.TB, js jetstream.JetStream, stream string) []*jetstream.RawStreamMsg {
	t.Helper()
	ctx := context.Background()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatalf("natstest: stream %s: %v", stream, err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			t.Fatalf("natstest: message %d of %s: %v", seq, stream, err)
		}
		out = append(out, m)
	}
	return out
}

// Server is a nats-server process of a test's own.
type Server struct {
	URL string
	cmd *exec.Cmd
}

// Start starts the machine's nats-server binary with JetStream on a free
// loopback port, with extra arguments (--auth <token>, …), stopped when
// the test ends.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	return StartAt(t, ClosedURL(t), args...)
}

// StartAt starts the server on url's port (one ClosedURL answered): a
// broker that was down comes up.
func StartAt(t testing.TB, url string, args ...string) *Server {
	t.Helper()
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/nats-server"); serr == nil {
			bin = "/usr/sbin/nats-server"
		} else {
			unavailable(t, "no nats-server binary to start: %v", err)
		}
	}
	_, portText, _ := strings.Cut(strings.TrimPrefix(url, "nats://"), ":")
	port, err := strconv.Atoi(portText)
	if err != nil {
		t.Fatalf("natstest: %q names no port", url)
	}
	dir := t.TempDir()
	all := append([]string{"-a", "127.0.0.1", "-p", strconv.Itoa(port), "-js", "-sd", filepath.Join(dir, "js")}, args...)
	// The process outlives no test: the cleanup below kills it.
	cmd := exec.CommandContext(context.WithoutCancel(t.Context()), bin, all...) //nolint:gosec // G204: the machine's server, the test's arguments
	logf, err := os.Create(filepath.Join(dir, "nats-server.log"))               //nolint:gosec // G304: the test's own folder
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("natstest: starting %s: %v", bin, err)
	}
	s := &Server{URL: fmt.Sprintf("nats://127.0.0.1:%d", port), cmd: cmd}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logf.Close()
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := (&net.Dialer{Timeout: time.Second}).DialContext(t.Context(), "tcp", strings.TrimPrefix(s.URL, "nats://"))
		if err == nil {
			_ = c.Close()
			return s
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("natstest: nats-server did not listen within 10 s:\n%s", b)
		}
		time.Sleep(20 * time.Millisecond) // a real process starting; no clock to step
	}
}

// ClosedURL answers a nats:// URL on 127.0.0.1 where nothing listens: an
// unreachable broker.
func ClosedURL(t testing.TB) string {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("nats://127.0.0.1:%d", port)
}

func freePort() (int, error) {
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
