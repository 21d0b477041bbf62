package webhook_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/webhook"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/eventlog"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// hostileSubscriber records what reached a subscriber that redirects, and
// what reached the host it redirects to.
type hostileSubscriber struct {
	mu        sync.Mutex
	got       []string // "METHOD path"
	elsewhere []string
}

func TestHostileSubscribers(t *testing.T) {
	for _, status := range []int{
		http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect,
	} {
		for _, client := range []struct {
			name string
			c    *http.Client
		}{{"DefaultClient", nil}, {"AClientThatFollows", &http.Client{}}} {
			t.Run(fmt.Sprintf("A%dIsAFailureAndNothingGoesElsewhere/%s", status, client.name), func(t *testing.T) {
				s := &hostileSubscriber{}
				// Another host: the signed body must never reach it.
				other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					s.mu.Lock()
					s.elsewhere = append(s.elsewhere, r.Method+" "+r.URL.Path+" signed="+r.Header.Get(webhook.StandardSignatureHeader))
					s.mu.Unlock()
				}))
				defer other.Close()
				sub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					s.mu.Lock()
					s.got = append(s.got, r.Method+" "+r.URL.Path)
					s.mu.Unlock()
					if r.URL.Path == "/hook" {
						http.Redirect(w, r, other.URL+"/stolen", status)
					}
				}))
				defer sub.Close()
				clk := clock.NewFake(t0)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				done := make(chan error, 1)
				go func() {
					done <- (&webhook.Subscriber{Name: "rules", URL: sub.URL + "/hook", Secret: "x", Client: client.c, Clock: clk}).
						Publish(ctx, eventlog.Event{ID: "trk_0123456789abcdef", Type: "tracker:item_changed"})
				}()
				// The first attempt failed: Publish waits out its backoff.
				select {
				case err := <-done:
					t.Fatalf("a %d was counted delivered (%v); the subscriber saw %q, elsewhere %q", status, err, s.got, s.elsewhere)
				case <-blockUntil(clk, 1):
				}
				cancel()
				if err := <-done; err == nil {
					t.Fatalf("a %d was counted delivered", status)
				}
				s.mu.Lock()
				defer s.mu.Unlock()
				if len(s.got) != 1 || s.got[0] != "POST /hook" || len(s.elsewhere) != 0 {
					t.Fatalf("the subscriber saw %q, elsewhere %q; want one POST to the configured URL only", s.got, s.elsewhere)
				}
			})
		}
	}

	t.Run("TheLogNamesTheSubscriptionNeverItsCredentials", func(t *testing.T) {
		failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusBadGateway)
		}))
		defer failing.Close()
		closed, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		unreachable := "http://" + closed.Addr().String()
		_ = closed.Close()
		for _, base := range []string{failing.URL, unreachable} {
			u, _ := url.Parse(base + "/hook?token=query-secret#frag-secret")
			u.User = url.UserPassword("user-secret", "password-secret")
			var logged bytes.Buffer
			clk := clock.NewFake(t0)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				done <- (&webhook.Subscriber{
					Name: "rules", URL: u.String(), Secret: "x", Clock: clk,
					Logger: slog.New(slog.NewTextHandler(&logged, nil)),
				}).Publish(ctx, eventlog.Event{ID: "e1", Type: "t:x"})
			}()
			<-blockUntil(clk, 1)
			cancel()
			if err := <-done; err == nil {
				t.Fatal("a failing subscriber was counted delivered")
			}
			line := logged.String()
			if !strings.Contains(line, "subscription=rules") || !strings.Contains(line, "/hook") {
				t.Fatalf("the log does not name the subscription: %s", line)
			}
			for _, secret := range []string{"user-secret", "password-secret", "query-secret", "frag-secret"} {
				if strings.Contains(line, secret) {
					t.Fatalf("the log shows %s: %s", secret, line)
				}
			}
		}
	})
}

// blockUntil is closed once c has n timers pending.
func blockUntil(c *clock.Fake, n int) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		if c.BlockUntil(context.Background(), n) == nil {
			close(ch)
		}
	}()
	return ch
}
