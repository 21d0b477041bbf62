// Package app wires relayr's modules into the service `relayr serve` runs:
// the ledger, one connector per binding, the write path, the tracker
// followers, the delivery followers and the HTTP surface.
package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/relayr-go/relayr/adapters/gitea"
	"github.com/relayr-go/relayr/adapters/github"
	"github.com/relayr-go/relayr/adapters/gitlab"
	"github.com/relayr-go/relayr/adapters/httpapi"
	"github.com/relayr-go/relayr/adapters/httpapi/operator"
	"github.com/relayr-go/relayr/adapters/httpapi/status"
	"github.com/relayr-go/relayr/adapters/jira"
	"github.com/relayr-go/relayr/adapters/ledgerpg"
	"github.com/relayr-go/relayr/adapters/ledgersqlite"
	"github.com/relayr-go/relayr/adapters/linear"
	relayrmcp "github.com/relayr-go/relayr/adapters/mcp"
	"github.com/relayr-go/relayr/adapters/natsjs"
	"github.com/relayr-go/relayr/adapters/plane"
	"github.com/relayr-go/relayr/adapters/vikunja"
	"github.com/relayr-go/relayr/adapters/webhook"
	"github.com/relayr-go/relayr/apps/relayr/internal/config"
	"github.com/relayr-go/relayr/core/binding"
	"github.com/relayr-go/relayr/core/budget"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/deliver"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/follow"
	"github.com/relayr-go/relayr/core/integrations"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
)

// Store is a ledger that is also the event log, as both SQL ledgers are,
// and answers the operator's page.
type Store interface {
	ledger.Ledger
	eventlog.Log
	ledger.Operator
}

// App is a wired service.
type App struct {
	Config    *config.Config
	Store     Store
	Log       *eventlog.Notifying
	Conns     *binding.Connections
	Writer    *writes.Writer
	Followers *follow.Followers
	Delivery  *deliver.Followers
	API       *httpapi.API
	Registry  *prometheus.Registry
	Logger    *slog.Logger

	clock   clock.Clock
	closeDB func()
	subs    []config.Subscription
	// sinks are the subscriptions' sinks by "<tenant>/<workspace>/<name>",
	// built once (sinkFor) for the followers Start resumes and those Run
	// follows.
	sinks map[string]deliver.Sink
}

// Options are what the caller adds to a configuration: the clock, the
// logger, the environment secrets are read from, and HTTP clients.
type Options struct {
	Clock  clock.Clock
	Logger *slog.Logger
	Getenv func(string) string
	// Transport sends the adapters' and subscribers' requests (the default
	// transport when nil).
	Transport http.RoundTripper
	// Integrations switches trackers per workspace (Always when nil).
	Integrations integrations.Integrations
	// UIRefresh is how often the operator's page refreshes its sections
	// (operator.DefaultUIRefresh when zero).
	UIRefresh time.Duration
}

// OpenStore opens the configured ledger; migrate applies PostgreSQL's
// migrations first (SQLite's are always applied at open).
func OpenStore(ctx context.Context, c *config.Config, s *config.Secrets, migrate bool) (Store, func(), error) {
	switch c.Ledger.Driver {
	case "postgres":
		l, err := ledgerpg.Open(ctx, s.DSN, ledgerpg.Options{Schema: c.Ledger.Schema, RLS: c.Ledger.RLS, Migrate: migrate})
		if err != nil {
			return nil, nil, fmt.Errorf("ledger: %w", err)
		}
		return l, l.Close, nil
	default:
		unlock, err := lockLedger(c.LedgerPath())
		if err != nil {
			return nil, nil, fmt.Errorf("ledger %s: %w", c.LedgerPath(), err)
		}
		l, err := ledgersqlite.Open(ctx, c.LedgerPath())
		if err != nil {
			unlock()
			return nil, nil, fmt.Errorf("ledger %s: %w", c.LedgerPath(), err)
		}
		return l, func() { _ = l.Close(); unlock() }, nil
	}
}

// Connector makes a binding's connector, its requests timed by t (each
// phase, and a Vikunja write's settle after it was given up). cr is the
// tenant's table for the binding's tracker, [tenants.trackers.<kind>]: what
// goes with its key (Jira's account email); the key itself is read when a
// follower connects.
func Connector(b config.Binding, cr config.TrackerCredentials, t config.Timings, transport http.RoundTripper) (tracker.Connector, error) {
	switch b.Tracker {
	case plane.Kind:
		var client *http.Client
		if transport != nil {
			client = &http.Client{Transport: transport}
		}
		return plane.NewConnector(plane.Config{
			BaseURL: b.BaseURL, WebURL: b.WebURL, Workspace: b.PlaneWorkspace, Project: b.Project,
			Identifier: b.Identifier, Namespace: b.Namespace, Client: client, Timeout: t.Requests(),
		})
	case vikunja.Kind:
		id, err := strconv.ParseInt(b.Project, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("vikunja project %q: %w", b.Project, err)
		}
		// One write at a time to the server unless the binding allows more
		// (config checks every binding of a server says the same).
		opts := []vikunja.Option{vikunja.WithConcurrentWrites(b.ConcurrentWrites), vikunja.WithWriteHold(b.WriteHold.Hold),
			vikunja.WithTimeout(t.Requests()), vikunja.WithWriteSettle(t.Settle())}
		if transport != nil {
			opts = append(opts, vikunja.WithTransport(transport))
		}
		return vikunja.Connector{BaseURL: b.BaseURL, Project: id, Options: opts}, nil
	case gitea.Kind:
		var client *http.Client
		if transport != nil {
			client = &http.Client{Transport: transport}
		}
		return gitea.NewConnector(gitea.Config{
			BaseURL: b.BaseURL, WebURL: b.WebURL, Repo: b.Project, Namespace: b.Namespace, Client: client, Timeout: t.Requests(),
		})
	case github.Kind:
		var client *http.Client
		if transport != nil {
			client = &http.Client{Transport: transport}
		}
		return github.NewConnector(github.Config{
			BaseURL: b.BaseURL, WebURL: b.WebURL, Repo: b.Project, Login: b.Login, Namespace: b.Namespace, Client: client, Timeout: t.Requests(),
		})
	case jira.Kind:
		cfg := b.Jira(cr.Email)
		if transport != nil {
			cfg.Client = &http.Client{Transport: transport}
		}
		cfg.Timeout = t.Requests()
		return jira.NewConnector(cfg)
	case gitlab.Kind:
		cfg := b.GitLab()
		if transport != nil {
			cfg.Client = &http.Client{Transport: transport}
		}
		cfg.Timeout = t.Requests()
		return gitlab.NewConnector(cfg)
	case linear.Kind:
		cfg := b.Linear()
		if transport != nil {
			cfg.Client = &http.Client{Transport: transport}
		}
		cfg.Timeout = t.Requests()
		return linear.NewConnector(cfg)
	}
	return nil, fmt.Errorf("tracker %q is not plane, vikunja, gitea, github, jira, gitlab or linear", b.Tracker)
}

// Bindings makes the configuration's bindings, the bindings of one tracker
// server sharing one bounded transport made from transport (Pools).
func Bindings(c *config.Config, transport http.RoundTripper) ([]binding.Binding, error) {
	var out []binding.Binding
	pools := NewPools(transport, c.TrackerConns)
	for _, b := range c.Bindings {
		var cr config.TrackerCredentials
		for _, tn := range c.Tenants {
			if tn.Name == b.Tenant {
				cr = tn.Trackers[b.Tracker]
			}
		}
		conn, err := Connector(b, cr, c.Timings, pools.For(b.BaseURL))
		if err != nil {
			return nil, fmt.Errorf("binding %s/%s: %w", b.Tenant, b.Workspace, err)
		}
		nb := binding.Binding{
			Tenant: b.Tenant, Workspace: b.Workspace, Connector: conn, Namespace: b.Namespace,
			Defaults: tracker.Draft{State: tracker.State(b.Defaults.State), Labels: b.Defaults.Labels, Description: b.Defaults.Description},
		}
		if b.Since != nil {
			nb.Since = *b.Since
		}
		out = append(out, nb)
	}
	return out, nil
}

// New wires a service from a validated configuration and its secrets.
func New(ctx context.Context, c *config.Config, s *config.Secrets, o Options) (*App, error) {
	if o.Clock == nil {
		o.Clock = clock.System{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Integrations == nil {
		o.Integrations = integrations.Always
	}
	// A role row-level security binds owns no tables and may not create
	// them: under RLS, `relayr migrate` runs the migrations as the owner.
	store, closeDB, err := OpenStore(ctx, c, s, !c.Ledger.RLS)
	if err != nil {
		return nil, err
	}
	bindings, err := Bindings(c, o.Transport)
	if err != nil {
		closeDB()
		return nil, err
	}
	t := c.Timings
	conns := binding.NewConnections(o.Clock, s.Trackers, bindings...)
	conns.TTL = t.CredentialsTTL.Or(binding.CredentialsTTL)
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := NewPrometheus(reg)
	bud := budget.NewWith(o.Clock, t.Budget, budget.Options{Logger: o.Logger, Metrics: m, Windows: c.BudgetWindows()})
	conns.Budget = bud
	log := eventlog.NewNotifying(store)
	// The writer reads the log the followers publish to, so an edit its own
	// answered write already made is answered without a request.
	w := writes.New(writes.Config{
		Ledger: store, Connections: conns, Integrations: o.Integrations, Clock: o.Clock, Budget: bud, Metrics: m, Log: log,
		Options: writes.Options{
			RetakeAfter: t.RetakeAfter.Duration, WriteBound: t.WriteBound.Duration,
			CapWindow: t.CapWindow.Duration, CapLimit: t.CapLimit, Settle: t.Settle(),
		},
	})
	holder := holderName(c.Holder)
	fopts := follow.Options{
		LeaseTTL: t.Lease.Duration, PollEvery: t.Poll.Duration, Lookback: t.Lookback.Duration,
		SweepEvery: t.Sweep.Duration, SweepMin: t.SweepMin.Duration, Debounce: t.Debounce.Duration,
		// The service opens a stopped follower again (ADR-0015's departures).
		ReopenAfter: t.ReopenAfter.Or(time.Minute),
	}
	fs := follow.New(follow.Config{
		Ledger: store, Log: log, Connections: conns, Integrations: o.Integrations, Clock: o.Clock,
		Budget: bud, Metrics: m, Logger: o.Logger, Holder: holder, Options: fopts,
	})
	reg.MustRegister(&gauges{fs: fs, bud: bud})
	a := &App{
		Config: c, Store: store, Log: log, Conns: conns, Writer: w, Followers: fs, Registry: reg, Logger: o.Logger,
		clock: o.Clock, closeDB: closeDB, subs: c.Subscriptions, sinks: map[string]deliver.Sink{},
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	for _, sub := range c.Subscriptions {
		a.sinks[subKey(sub.Tenant, sub.Workspace, sub.Name)] = sinkFor(sub, s, o, t.Lease.Or(follow.DefaultLeaseTTL), holder, getenv)
	}
	// A stream that is missing or does not fit refuses the start; a broker
	// that can't be reached now is the subscription's to retry.
	if err := a.checkStreams(ctx); err != nil {
		a.Close()
		return nil, err
	}
	a.Delivery = deliver.New(deliver.Config{
		Ledger: store, Log: log, Clock: o.Clock, Metrics: m, Logger: o.Logger, Holder: holder,
		Options: deliver.Options{LeaseTTL: fopts.LeaseTTL, ReopenAfter: fopts.ReopenAfter},
		Subscriptions: func(_ context.Context, f ledger.Follower) (deliver.Subscription, error) {
			if sink, ok := a.sinks[subKey(f.Tenant, f.Workspace, f.Name)]; ok {
				return deliver.Subscription{Sink: sink}, nil
			}
			return deliver.Subscription{}, fmt.Errorf("subscription %s/%s/%s is no longer configured", f.Tenant, f.Workspace, f.Name)
		},
	})
	report := status.Func(func(ctx context.Context) (status.Report, error) {
		bs, err := fs.Status(ctx)
		subs, serr := a.Delivery.Status(ctx)
		return status.Report{Holder: holder, Now: o.Clock.Now(), Bindings: bs, Budgets: fs.BudgetStatus(), Leases: fs.Share(), Subscriptions: subs}, errors.Join(err, serr)
	})
	a.API = httpapi.New(httpapi.Config{
		Writes: w, Log: log, Connections: conns, Integrations: o.Integrations, Ledger: store,
		Waker: httpapi.WakerFunc(func(b binding.Binding, n tracker.Nudged) {
			// The route asked the switch, once, after the signature.
			fs.Wake(b, n)
		}),
		Tokens: s.Tokens, OperatorToken: s.OperatorToken, Status: report,
		Metrics:  promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
		Counters: m, Clock: o.Clock, Logger: o.Logger,
		UI: operator.New(operator.Config{
			Token: s.OperatorToken, Tokens: s.Tokens, Status: report, Clock: o.Clock, Logger: o.Logger,
			Ledger: store, Resolver: a.resolver(log, o),
			CapWindow: t.CapWindow.Or(writes.DefaultCapWindow), CapLimit: cmp.Or(t.CapLimit, writes.DefaultCapLimit),
			Refresh: o.UIRefresh,
		}),
		// The MCP route's tools call the API itself, in process, with the
		// caller's token (ADR-1015). The SDK's log stays off: it logs every
		// stateless request's session at INFO, and the API logs the writes.
		MCP: relayrmcp.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { a.API.ServeHTTP(w, r) }), nil),
	})
	return a, nil
}

// Run starts the followers and delivery and serves HTTP on ln until ctx
// ends; then it stops: the followers give their leases up at once, so
// another replica takes over without waiting for them to lapse, and
// in-flight writes get ShutdownGrace to finish within their bound.
func (a *App) Run(ctx context.Context, ln net.Listener) error {
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	a.Followers.Start(runCtx)
	if err := a.Delivery.Start(runCtx); err != nil {
		a.Logger.Error("resuming delivery", "err", err)
	}
	for _, sub := range a.subs {
		f := ledger.Follower{Kind: ledger.LogFollower, Tenant: sub.Tenant, Workspace: sub.Workspace, Name: sub.Name}
		if err := a.Delivery.Follow(runCtx, f, deliver.Subscription{Sink: a.sinks[subKey(sub.Tenant, sub.Workspace, sub.Name)]}); err != nil {
			a.Logger.Error("delivery", "subscription", sub.Name, "err", err)
		}
	}
	var wg sync.WaitGroup

	srv := httpapi.NewServer(ln.Addr().String(), a.API)
	fresh := &freshConns{conns: map[net.Conn]bool{}}
	srv.ConnState = fresh.track
	ln = &closeOnce{Listener: ln}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	a.Logger.Info("relayr serving", "addr", ln.Addr().String(), "bindings", len(a.Config.Bindings), "ledger", a.Config.Ledger.Driver)
	for _, w := range a.Config.Warnings() {
		a.Logger.Warn("configuration", "warning", w)
	}

	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	// Leases first, at once: another replica may take over now.
	stopped := make(chan struct{})
	go func() {
		a.Followers.Stop()
		a.Delivery.Stop()
		close(stopped)
	}()
	grace := a.Config.Timings.ShutdownGrace.Or(25 * time.Second)
	sctx, scancel := context.WithTimeout(context.Background(), grace)
	defer scancel()
	// No connection is taken from now on, and a feed read waiting, or
	// arriving, answers at once. net/http's Shutdown drops, unanswered, a
	// request it reads after it began: the connections already taken have
	// their first request read before it, so a read sent before the
	// signal is answered however loaded the machine.
	_ = ln.Close()
	a.API.Drain()
	fresh.settle(sctx, firstRequestWait)
	if serr := srv.Shutdown(sctx); serr != nil && err == nil && !errors.Is(serr, net.ErrClosed) {
		err = serr
	}
	<-stopped
	cancel()
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// firstRequestWait bounds how long a shutdown waits for the connections
// already taken to send their first request: a client that opened one and
// sent nothing for that long is no read waiting to be answered.
const firstRequestWait = 2 * time.Second

// freshConns are the server's connections whose first request has not
// been read yet (http.StateNew).
type freshConns struct {
	mu    sync.Mutex
	conns map[net.Conn]bool
}

func (f *freshConns) track(c net.Conn, st http.ConnState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st == http.StateNew {
		f.conns[c] = true
	} else {
		delete(f.conns, c)
	}
}

// settle waits until no connection is fresh, for at most d or until ctx
// ends, looking every 5 ms (a real server's connections, on no clock a
// test steps).
func (f *freshConns) settle(ctx context.Context, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		f.mu.Lock()
		n := len(f.conns)
		f.mu.Unlock()
		if n == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// closeOnce is a listener closed once: Run closes it before the server's
// Shutdown, which closes it again.
type closeOnce struct {
	net.Listener
	once sync.Once
	err  error
}

func (l *closeOnce) Close() error {
	l.once.Do(func() { l.err = l.Listener.Close() })
	return l.err
}

// resolver replays and skips dead letters for the operator's page: a log
// follower's replay goes to its subscription's sink, a tracker follower's
// into its workspace's log, each under the event's own id.
func (a *App) resolver(log eventlog.Log, o Options) *deliver.Resolver {
	return &deliver.Resolver{
		Ledger: a.Store, Clock: o.Clock, Logger: o.Logger,
		Sink: func(f ledger.Follower) (deliver.Sink, error) {
			if f.Kind == ledger.TrackerFollower {
				return deliver.LogSink{Log: log, Publisher: eventlog.TrackerPublisher}, nil
			}
			if sink, ok := a.sinks[subKey(f.Tenant, f.Workspace, f.Name)]; ok {
				return sink, nil
			}
			return nil, fmt.Errorf("subscription %s/%s/%s is no longer configured", f.Tenant, f.Workspace, f.Name)
		},
	}
}

// Close closes the subscriptions' connections and the ledger.
func (a *App) Close() {
	for _, sink := range a.sinks {
		if c, ok := sink.(interface{ Close() }); ok {
			c.Close()
		}
	}
	a.closeDB()
}

func subKey(tenant, workspace, name string) string { return tenant + "/" + workspace + "/" + name }

// sinkFor builds a subscription's sink, for either kind of target: a signed
// POST per event to a URL, or a publish per event into a JetStream stream.
// lease is the followers' lease, the shortest duplicate window a stream may
// keep.
func sinkFor(sub config.Subscription, s *config.Secrets, o Options, lease time.Duration, holder string, getenv func(string) string) deliver.Sink {
	key := subKey(sub.Tenant, sub.Workspace, sub.Name)
	if n := sub.NATS; n != nil {
		cr := s.NATS[key]
		var sink deliver.Sink = natsjs.NewSink(NATSTarget(sub, cr, lease, holder), natsjs.SinkOptions{Logger: o.Logger})
		return withTestHold(sink, getenv)
	}
	// Delivery follows no redirect: a 3xx is a failure, retried from the
	// cursor, and the signed body goes to the configured URL only.
	client := &http.Client{Transport: o.Transport, Timeout: 10 * time.Second, CheckRedirect: webhook.NoRedirects}
	return &webhook.Subscriber{
		Name: key, URL: sub.URL, Secret: s.Subscriptions[key], PreviousSecret: s.PreviousSecrets[key],
		Signing: webhook.Signing(sub.Signature), Format: webhook.Format(sub.Format), Client: client, Clock: o.Clock, Logger: o.Logger,
	}
}

// NATSTarget is a NATS subscription's target: its servers, stream and
// prefix, its credentials, and the lease as the shortest duplicate window.
func NATSTarget(sub config.Subscription, cr config.NATSCredentials, lease time.Duration, holder string) natsjs.Target {
	n := sub.NATS
	return natsjs.Target{
		Servers: n.Servers, Stream: n.Stream, Prefix: n.SubjectPrefix, CreateStream: n.CreateStream,
		MinDuplicates: lease,
		Credentials:   natsjs.Credentials{Creds: cr.Creds, NKeySeed: cr.NKeySeed, Token: cr.Token},
		TLS:           natsjs.TLS{CAFile: n.TLS.CAFile, CertFile: n.TLS.CertFile, KeyFile: n.TLS.KeyFile},
		Name:          "relayr " + holder + " " + subKey(sub.Tenant, sub.Workspace, sub.Name),
		CloudEvents:   sub.Format == string(webhook.FormatCloudEventsStructured),
	}
}

// checkStreams checks each NATS subscription's stream once at start: one
// that is missing (and not to be created) or does not fit refuses the
// start with what to change; a broker that cannot be reached now, or that
// refuses the credentials, is logged, and the subscription retries from
// its cursor without holding anything else up.
func (a *App) checkStreams(ctx context.Context) error {
	lease := a.Config.Timings.Lease.Or(follow.DefaultLeaseTTL)
	for _, sub := range a.subs {
		if sub.NATS == nil {
			continue
		}
		sink, ok := unwrapNATS(a.sinks[subKey(sub.Tenant, sub.Workspace, sub.Name)])
		if !ok {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := sink.Check(cctx)
		cancel()
		switch {
		case errors.Is(err, natsjs.ErrStream):
			return fmt.Errorf("subscription %s/%s/%s: %w", sub.Tenant, sub.Workspace, sub.Name, err)
		case err != nil:
			a.Logger.Warn("nats not reachable at start; the subscription retries from its cursor",
				"tenant", sub.Tenant, "workspace", sub.Workspace, "name", sub.Name, "err", err)
		default:
			a.Logger.Info("nats stream checked", "tenant", sub.Tenant, "workspace", sub.Workspace, "name", sub.Name,
				"stream", sub.NATS.Stream, "subjects", sub.NATS.SubjectPrefix+".>", "lease", lease)
		}
	}
	return nil
}

// holderName answers this run's name in leases and heartbeats: the
// configured holder (the host name and process id by default), and "~"
// with four hex digits of its own. Each run is a replica of its own: a
// restart under the same name (a configured holder, or a container's PID
// 1) is then a replica gone within the minute, whose spending the new run
// inherits, instead of one whose heartbeat the new run overwrites,
// forgetting what its last run spent of each key's minute
// (ADR-1001: one budget per key across replicas).
func holderName(configured string) string {
	if configured == "" {
		host, _ := os.Hostname()
		configured = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	return configured + "~" + ledger.NewNonce()[:4]
}
