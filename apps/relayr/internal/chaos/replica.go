package chaos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Replica is one `relayr serve` child process on a fixed loopback address,
// which keeps its address across restarts so clients can go on naming it.
type Replica struct {
	Name   string
	Bin    string
	Config string
	// Env is the child's whole environment (secrets included).
	Env []string
	// Addr is host:port.
	Addr string
	// Log collects the child's output across its lives.
	Log *os.File

	mu    sync.Mutex
	cmd   *exec.Cmd
	done  chan struct{}
	lives int
}

// FreeAddr answers a loopback address with a port nobody listens on now.
func FreeAddr(ctx context.Context) (string, error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// URL is the replica's base URL.
func (r *Replica) URL() string { return "http://" + r.Addr }

// Start starts the process and waits, up to timeout, until /readyz answers
// 200.
func (r *Replica) Start(ctx context.Context, timeout time.Duration) error {
	r.mu.Lock()
	if r.cmd != nil {
		r.mu.Unlock()
		return fmt.Errorf("%s is running", r.Name)
	}
	// The process outlives ctx: Kill and the test's cleanup end it.
	cmd := exec.CommandContext(context.WithoutCancel(ctx), r.Bin, "serve", "-config", r.Config, "-listen", r.Addr) //nolint:gosec // G204: the binary the test built, with its own arguments
	cmd.Env = r.Env
	cmd.Stdout, cmd.Stderr = r.Log, r.Log
	// Its own process group: nothing the test's terminal sends reaches it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r.lives++
	fmt.Fprintf(r.Log, "=== %s life %d starts at %s\n", r.Name, r.lives, time.Now().Format(time.RFC3339Nano))
	if err := cmd.Start(); err != nil {
		r.mu.Unlock()
		return fmt.Errorf("starting %s: %w", r.Name, err)
	}
	done := make(chan struct{})
	r.cmd, r.done = cmd, done
	r.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	return r.waitReady(ctx, done, timeout)
}

func (r *Replica) waitReady(ctx context.Context, done <-chan struct{}, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.URL()+"/readyz", nil)
		if res, err := client.Do(req); err == nil {
			_ = res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-done:
			return fmt.Errorf("%s exited before it was ready (see its log %s)", r.Name, r.Log.Name())
		case <-ctx.Done():
			return fmt.Errorf("%s was not ready within %s (see its log %s)", r.Name, timeout, r.Log.Name())
		case <-tick.C:
		}
	}
}

// Running reports whether the process is alive.
func (r *Replica) Running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return false
	}
	select {
	case <-r.done:
		return false
	default:
		return true
	}
}

// take takes the running process, if any, for Stop or Kill to end.
func (r *Replica) take() (*exec.Cmd, chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cmd, done := r.cmd, r.done
	r.cmd, r.done = nil, nil
	return cmd, done
}

// Stop stops the process as an operator does, with SIGTERM, and waits up
// to timeout for it to exit; an exit that is not clean (a status other
// than 0) is an error. A replica not running is left as it is.
func (r *Replica) Stop(timeout time.Duration) error {
	cmd, done := r.take()
	if cmd == nil {
		return nil
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-done:
	case <-time.After(timeout):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
		return fmt.Errorf("%s did not stop within %s of SIGTERM", r.Name, timeout)
	}
	fmt.Fprintf(r.Log, "=== %s stopped at %s\n", r.Name, time.Now().Format(time.RFC3339Nano))
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		return fmt.Errorf("%s exited with %d on SIGTERM", r.Name, code)
	}
	return nil
}

// Kill kills the process with SIGKILL and waits for it to be gone. A
// replica not running is left as it is.
func (r *Replica) Kill() error {
	cmd, done := r.take()
	if cmd == nil {
		return nil
	}
	err := cmd.Process.Signal(syscall.SIGKILL)
	if err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s did not die within 10 s of SIGKILL", r.Name)
	}
	fmt.Fprintf(r.Log, "=== %s killed at %s\n", r.Name, time.Now().Format(time.RFC3339Nano))
	return nil
}
