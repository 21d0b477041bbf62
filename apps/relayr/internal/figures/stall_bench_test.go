package figures

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/httpapi"
	"github.com/relayr-go/relayr/apps/relayr/internal/config"
	"github.com/relayr-go/relayr/core/tracker"
)

// The stalled tracker's figure: a slow tracker answers every caller.
const (
	stallKeys    = 50
	stallCallers = 2 // a CI job and its re-run, arriving together
	stallTimeout = 15 * time.Second
	stallRetries = 3
	stallShare   = 0.3
	stallLate    = 12 * time.Second
)

// quietTimings are the slow tracker's service's: no budget, and a poll an
// hour, so the requests counted are the filings' alone (the first read
// comes at once).
var quietTimings = config.Timings{Budget: unlimited, Poll: config.Duration{Duration: time.Hour}}

// stallFaults are the proxy's modes: none, a share of the creates landing
// and answered late (a proxy's 504), or landing and their answer lost.
var stallFaults = []string{"none", "late", "lost"}

// faultProxy is a proxy in front of an emulation that lets a share of the
// creates land, then answers them late or never, and counts the requests.
type faultProxy struct {
	srv      *httptest.Server
	next     *httputil.ReverseProxy
	mode     string
	mu       sync.Mutex
	rnd      *rand.Rand
	requests atomic.Int64
}

func newFaultProxy(tb testing.TB, target, mode string) *faultProxy {
	u, err := url.Parse(target)
	if err != nil {
		tb.Fatal(err)
	}
	p := &faultProxy{mode: mode, rnd: rand.New(rand.NewPCG(11, 11)), next: httputil.NewSingleHostReverseProxy(u)} //nolint:gosec // reproducible faults, not secrets
	p.next.Transport = loopback()
	p.srv = httptest.NewServer(p)
	tb.Cleanup(p.srv.Close)
	return p
}

// creates says whether r files an item: a POST or PUT of a tracker's
// items (Plane's work-items/, Gitea's, GitHub's and GitLab's issues,
// Vikunja's tasks, Jira's /rest/api/3/issue), or a GraphQL request whose
// document runs Linear's issueCreate (its body is read and put back).
func creates(r *http.Request) bool {
	if r.Method != http.MethodPost && r.Method != http.MethodPut {
		return false
	}
	p := strings.TrimSuffix(r.URL.Path, "/")
	if strings.HasSuffix(p, "/graphql") && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		_ = r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(body))
		return err == nil && bytes.Contains(body, []byte("issueCreate("))
	}
	return strings.HasSuffix(p, "/work-items") || strings.HasSuffix(p, "/issues") || strings.HasSuffix(p, "/tasks") ||
		strings.HasSuffix(p, "/rest/api/3/issue")
}

func (p *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.requests.Add(1)
	p.mu.Lock()
	stall := p.mode != "none" && creates(r) && p.rnd.Float64() < stallShare
	p.mu.Unlock()
	if !stall {
		p.next.ServeHTTP(w, r)
		return
	}
	// The create lands; its answer is late or lost.
	p.next.ServeHTTP(httptest.NewRecorder(), r)
	if p.mode == "lost" {
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				_ = c.Close()
				return
			}
		}
	}
	select {
	case <-time.After(stallLate):
	case <-r.Context().Done():
		return
	}
	w.WriteHeader(http.StatusGatewayTimeout)
}

// proxied is an emulation reached through a fault proxy.
type proxied struct {
	emulation
	proxy *faultProxy
}

func (p proxied) Binding() config.Binding {
	b := p.emulation.Binding()
	b.BaseURL = p.proxy.srv.URL + strings.TrimPrefix(b.BaseURL, originOf(b.BaseURL))
	return b
}

// Email implements accounted: the proxied tracker's account, where its
// key goes with one.
func (p proxied) Email() string { return trackerTable(p.emulation).Email }

func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Scheme + "://" + u.Host
}

// stallOutcome is what the callers of one run met.
type stallOutcome struct {
	failed, unfiled, duplicates int
	took                        time.Duration
	requests                    int64
	// prefix begins the run's keys.
	prefix string
}

// BenchmarkStalledTracker files 50 keys, each sent by two callers at once
// (a CI job and its re-run), each caller with a 15 s timeout and up to three
// retries, honouring the Retry-After it is told, against each emulation
// behind a proxy that lets 30% of the creates land and then answers them
// 12 s late with a 504 (late), or drops their answer (lost), or does nothing
// (none): through relayr's API, and beside it straight to the tracker's
// create (direct, which a retry files again). Its figures: the wall time, the
// callers that never got their item, the keys left unfiled, the keys filed
// twice, and the tracker requests per key. One run each (the late run takes
// its 12 s at the least).
func BenchmarkStalledTracker(b *testing.B) {
	for _, tr := range emulations {
		for _, mode := range stallFaults {
			b.Run(tr.name+"/"+mode+"/relayr", func(b *testing.B) {
				for b.Loop() {
					emu := tr.new(time.Now)
					px := newFaultProxy(b, originOf(emu.Binding().BaseURL), mode)
					s := startService(b, proxied{emu, px}, serviceOptions{serve: true, timings: quietTimings})
					px.requests.Store(0)
					out := stallRun(b, func(ctx context.Context, key string) (time.Duration, error) { return s.ensureAnswer(ctx, key) })
					// What relayr resolves in the background (a filing in
					// doubt) ends, then the tracker is counted.
					time.Sleep(5 * time.Second)
					out.requests = px.requests.Load()
					countStalled(b, proxied{emu, px}, &out)
					reportStalled(b, out)
				}
			})
			b.Run(tr.name+"/"+mode+"/direct", func(b *testing.B) {
				for b.Loop() {
					emu := tr.new(time.Now)
					b.Cleanup(emu.Close)
					px := newFaultProxy(b, originOf(emu.Binding().BaseURL), mode)
					t := direct(b, proxied{emu, px})
					out := stallRun(b, func(ctx context.Context, key string) (time.Duration, error) {
						_, err := t.Create(ctx, key, tracker.Draft{Title: title(key)})
						if errors.Is(err, tracker.ErrExists) {
							err = nil // Plane's 409: the key's item stands
						}
						return 0, err
					})
					out.requests = px.requests.Load()
					countStalled(b, proxied{emu, px}, &out)
					reportStalled(b, out)
				}
			})
		}
	}
}

// stallRun runs the callers of every key through file, which answers how
// long to wait before a retry (0: at once), and counts those that failed.
func stallRun(b testing.TB, file func(ctx context.Context, key string) (time.Duration, error)) stallOutcome {
	prefix := keyPrefix() + strconv.FormatInt(time.Now().UnixNano(), 36) + "-"
	var failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for k := range stallKeys {
		key := prefix + strconv.Itoa(k)
		for range stallCallers {
			wg.Go(func() {
				for attempt := 0; ; attempt++ {
					ctx, cancel := context.WithTimeout(b.Context(), stallTimeout)
					wait, err := file(ctx, key)
					cancel()
					if err == nil {
						return
					}
					if attempt == stallRetries {
						failed.Add(1)
						return
					}
					time.Sleep(wait)
				}
			})
		}
	}
	wg.Wait()
	return stallOutcome{failed: int(failed.Load()), took: time.Since(start), prefix: prefix}
}

// countStalled counts the items the tracker holds per key filed.
func countStalled(b testing.TB, emu emulation, out *stallOutcome) {
	perTitle, err := itemsPerTitle(context.Background(), direct(b, emu))
	if err != nil {
		b.Fatal(err)
	}
	filed := 0
	for t, n := range perTitle {
		if !strings.HasPrefix(t, title(out.prefix)) {
			continue
		}
		filed++
		out.duplicates += n - 1
	}
	out.unfiled = stallKeys - filed
}

func reportStalled(b *testing.B, out stallOutcome) {
	b.ReportMetric(out.took.Seconds(), "s/run")
	b.ReportMetric(float64(out.failed), "failed-callers")
	b.ReportMetric(float64(out.unfiled), "unfiled-keys")
	b.ReportMetric(float64(out.duplicates), "duplicates")
	b.ReportMetric(float64(out.requests)/stallKeys, "requests/key")
}

// ensureAnswer files key through the write API with a title alone, as a
// caller that says how long it waits (Prefer: wait), and answers the wait
// a retryable answer asks for.
func (s *service) ensureAnswer(ctx context.Context, key string) (time.Duration, error) {
	body, _ := json.Marshal(httpapi.EnsureRequest{Key: key, Title: title(key)})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/relayr/v1/tenants/"+tenant+"/workspaces/"+workspace+"/items/ensure", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Prefer", "wait="+strconv.Itoa(int(stallTimeout/time.Second)))
	res, err := s.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer func() { _ = res.Body.Close() }()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode/100 == 2 {
		return 0, nil
	}
	wait := time.Second
	if n, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil {
		wait = time.Duration(n) * time.Second
	}
	return wait, fmt.Errorf("ensure %s: %d %s", key, res.StatusCode, raw)
}
