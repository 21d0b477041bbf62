// Package config reads relayr's TOML configuration: validated whole before
// anything starts, unknown keys refused with their line, secrets read from
// the environment or from files and never from the file itself, and every
// timing of the seeds an option with the seeds' default.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/relayr-go/relayr/adapters/gitlab"
	"github.com/relayr-go/relayr/adapters/jira"
	"github.com/relayr-go/relayr/adapters/linear"
	"github.com/relayr-go/relayr/adapters/natsjs"
	"github.com/relayr-go/relayr/adapters/vikunja"
	"github.com/relayr-go/relayr/adapters/webhook"
	"github.com/relayr-go/relayr/core/budget"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/forge"
	"github.com/relayr-go/relayr/core/writes"
)

// Config is a whole configuration, as read.
type Config struct {
	// Listen is the HTTP address ("127.0.0.1:8080").
	Listen string `toml:"listen"`
	// OperatorToken guards /metrics, the status and the operator's page.
	OperatorToken Secret `toml:"operator_token"`
	// Holder names this replica in leases (the host name by default).
	Holder string `toml:"holder"`
	// TrackerConns is the most TCP connections the replica opens to one
	// tracker server, shared by every binding on it (16 by default).
	TrackerConns  int            `toml:"tracker_conns"`
	Ledger        Ledger         `toml:"ledger"`
	Timings       Timings        `toml:"timings"`
	Log           Log            `toml:"log"`
	Tenants       []Tenant       `toml:"tenants"`
	Bindings      []Binding      `toml:"bindings"`
	Subscriptions []Subscription `toml:"subscriptions"`
	// TrackerLimits are each tracker kind's own limits beside the
	// budget's minute, replacing the kind's defaults (budget.TrackerWindows:
	// GitHub's hour and points).
	TrackerLimits map[string]TrackerLimits `toml:"tracker_limits"`

	// Dir is the folder the configuration was read from.
	Dir string `toml:"-"`
}

// TrackerLimits are a tracker kind's own limits per key, across every
// replica (ADR-1009). Zero leaves a limit out.
type TrackerLimits struct {
	// PerHour is the requests an hour the tracker allows a key (GitHub:
	// 5,000), which it reports in its answers.
	PerHour int `toml:"per_hour"`
	// PointsPerMinute is the points a minute it allows (GitHub: 900), a
	// read costing one and a write WritePoints (GitHub: 5).
	PointsPerMinute int `toml:"points_per_minute"`
	WritePoints     int `toml:"write_points"`
}

// Windows are the budget's windows for the limits.
func (l TrackerLimits) Windows() []budget.TrackerWindow {
	var out []budget.TrackerWindow
	if l.PerHour > 0 {
		out = append(out, budget.TrackerWindow{Span: time.Hour, Limit: l.PerHour, Reported: true})
	}
	if l.PointsPerMinute > 0 {
		out = append(out, budget.TrackerWindow{Span: time.Minute, Limit: l.PointsPerMinute, WriteCost: l.WritePoints})
	}
	return out
}

// BudgetWindows are every kind's windows: the defaults, with the
// configuration's kinds in their place.
func (c *Config) BudgetWindows() map[string][]budget.TrackerWindow {
	out := map[string][]budget.TrackerWindow{}
	for k, ws := range budget.TrackerWindows {
		out[k] = ws
	}
	for k, l := range c.TrackerLimits {
		out[k] = l.Windows()
	}
	return out
}

// Ledger says where the ledger lives.
type Ledger struct {
	// Driver is "sqlite" (the default) or "postgres".
	Driver string `toml:"driver"`
	// Path is the SQLite file, relative to the configuration's folder
	// (default relayr.db beside it).
	Path string `toml:"path"`
	// DSN is PostgreSQL's connection string, a secret.
	DSN Secret `toml:"dsn"`
	// RLS turns PostgreSQL's row-level security on.
	RLS bool `toml:"rls"`
	// Schema is the PostgreSQL schema (default "relayr").
	Schema string `toml:"schema"`
}

// Log sets logging.
type Log struct {
	Level  string `toml:"level"`  // debug, info (default), warn, error
	Format string `toml:"format"` // text (default) or json
}

// Timings are every timing of the seeds, with their defaults.
type Timings struct {
	Lease       Duration `toml:"lease"`        // 30s: a follower's lease (ADR-0015)
	Poll        Duration `toml:"poll"`         // 30s: a tracker follower's poll (ADR-0036)
	Lookback    Duration `toml:"lookback"`     // 2m: a poll reads from this long before its cursor
	Sweep       Duration `toml:"sweep"`        // 24h: the sweep for removed items, at the least
	SweepMin    Duration `toml:"sweep_min"`    // 1m: a sweep may come this soon on an idle budget
	Debounce    Duration `toml:"debounce"`     // 2s: a nudge's debounce
	RetakeAfter Duration `toml:"retake_after"` // 30s: an unrecorded claim is retaken after
	WriteBound  Duration `toml:"write_bound"`  // 20s: all writes under a claim
	// RequestTimeout bounds each phase of a tracker request (ADR-0033's
	// 10 s, or the write bound when shorter; see Requests): connecting,
	// writing it, the answer's headers, its body.
	RequestTimeout Duration `toml:"request_timeout"`
	// WriteSettle is how long after a write ended in doubt (its answer
	// lost, or given up mid-request) the tracker is taken to be done with
	// it: relayr then looks the item up itself, and a Vikunja server's
	// write slot is held until then (2s, or less where the write bound
	// leaves less before the retake; see Settle).
	WriteSettle    Duration `toml:"write_settle"`
	CapWindow      Duration `toml:"cap_window"`      // 1h: the loop cap's window
	CapLimit       int      `toml:"cap_limit"`       // 20: writes to one item in the window
	Budget         int      `toml:"budget"`          // 40: requests a minute per tenant's key
	CredentialsTTL Duration `toml:"credentials_ttl"` // 5m: credentials are asked again after
	ShutdownGrace  Duration `toml:"shutdown_grace"`  // 25s: in-flight writes' time to finish on SIGTERM
	ReopenAfter    Duration `toml:"reopen_after"`    // 1m: a stopped follower reads again after
}

// Tenant is one tenant: its API token and its trackers' credentials.
type Tenant struct {
	Name  string `toml:"name"`
	Token Secret `toml:"token"`
	// Trackers holds the tenant's key per tracker kind ("plane",
	// "vikunja", "gitea", "github", "jira", "gitlab", "linear").
	Trackers map[string]TrackerCredentials `toml:"trackers"`
}

// TrackerCredentials are a tenant's key for one tracker kind (T4), the
// secret its webhook deliveries are signed with, and what goes with the key
// (Jira's account email, Linear's team).
type TrackerCredentials struct {
	Key           Secret `toml:"key"`
	WebhookSecret Secret `toml:"webhook_secret"`
	// Email is, on Jira, the account the key (an API token) belongs to:
	// requests carry Basic base64(email:key). Empty, the key is an OAuth
	// 2.0 bearer token. Not a secret: it names the account.
	Email string `toml:"email"`
	// Team is, on Linear, the team the tenant's Linear bindings file into
	// when a binding names none (its key, "ENG", or its UUID): a binding's
	// own team wins.
	Team string `toml:"team"`
}

// Binding binds a workspace to a tracker project.
type Binding struct {
	Tenant    string `toml:"tenant"`
	Workspace string `toml:"workspace"`
	// Tracker is "plane", "vikunja", "gitea", "github", "jira",
	// "gitlab" or "linear".
	Tracker string `toml:"tracker"`
	// BaseURL is the tracker's API: on Jira the site
	// (https://<site>.atlassian.net) or Atlassian's gateway
	// (https://api.atlassian.com/ex/jira/<cloudId>); on GitLab the
	// instance (https://gitlab.com, or a self-managed one's URL); on
	// Linear its GraphQL endpoint, linear.DefaultURL when unset.
	BaseURL string `toml:"base_url"`
	// WebURL is where a person opens an item, for links (default BaseURL):
	// Plane's web app, Gitea's ROOT_URL, GitHub's web host, Jira's site
	// (required when BaseURL is Atlassian's gateway).
	WebURL string `toml:"web_url"`
	// PlaneWorkspace is Plane's workspace slug.
	PlaneWorkspace string `toml:"plane_workspace"`
	// Project is Plane's project id, Vikunja's project number,
	// Gitea's or GitHub's repository ("owner/name"), Jira's project key
	// ("OPS") or GitLab's project, by its numeric id or its path
	// ("group/sub/project"); not Linear's, whose project is its team.
	Project string `toml:"project"`
	// Team is, on Linear, the team relayr files into: its key ("ENG") or
	// its UUID.
	Team string `toml:"team"`
	// KeyURL is, on Linear, the base of the attachment URL that names an
	// issue's key (default linear.DefaultKeyURL): changing it loses the
	// keys of the issues filed before.
	KeyURL string `toml:"key_url"`
	// Identifier is Plane's project identifier ("OPS"), read from Plane
	// when empty.
	Identifier string `toml:"identifier"`
	// Login is the account a GitHub token files as, for an installation
	// token ("<app-slug>[bot]"), which cannot read its own; read from
	// GitHub when empty.
	Login string `toml:"login"`
	// IssueType is, on Jira, the issue type relayr files, whose workflow's
	// statuses are the states' (default jira.DefaultIssueType, "Task").
	IssueType string `toml:"issue_type"`
	// Statuses names, on Jira, the workflow status each state is set to
	// and read from, by state ("todo" = "Selected for Development"); a
	// state left out goes by the status's category.
	Statuses map[string]string `toml:"statuses"`
	// CancelledResolutions are, on Jira, the resolutions a done issue
	// reads as cancelled by: jira.DefaultCancelledResolutions when unset,
	// none when set to [].
	CancelledResolutions []string `toml:"cancelled_resolutions"`
	// SearchLag bounds, on Jira, how long its search takes to show a
	// write (default jira.DefaultSearchLag, 30s): a look-up concludes no
	// issue holds a key only from two searches this far apart.
	SearchLag Duration `toml:"search_lag"`
	// Labels names, on GitLab, the label each state but done is held by
	// beside opened and closed, by state ("started" = "status::in
	// progress"); a state left out keeps gitlab.DefaultLabels'.
	Labels map[string]string `toml:"labels"`
	// Limits are, on GitLab, the instance's limits a minute, which the
	// driver keeps unsent: GitLab.com's where unset or 0, none where
	// negative (a self-managed instance's are its admin's to set).
	Limits *GitLabLimits `toml:"limits"`
	// ListLag bounds, on GitLab, how long its lists take to show a write
	// (default gitlab.DefaultListLag, 5s): they may read a database
	// replica, so a look-up concludes no issue holds a key only from two
	// reads this far apart.
	ListLag Duration `toml:"list_lag"`
	// Namespace of the source (default "lattice").
	Namespace string   `toml:"namespace"`
	Defaults  Defaults `toml:"defaults"`
	// AllowInsecureHTTP lets base_url be plain http:// to a host that is
	// not loopback; refused otherwise, since the tenant's key would cross
	// the network in the clear.
	AllowInsecureHTTP bool `toml:"allow_insecure_http"`
	// Since, when set, publishes the items changed since as created on the
	// binding's first read, instead of seeding silently.
	Since *time.Time `toml:"since"`
	// ConcurrentWrites is how many write requests the process sends the
	// Vikunja server at base_url at once, across every binding and tenant.
	// Unset, the server says (its /api/v1/info's concurrent_writes): at
	// once on PostgreSQL or MySQL, one at a time on SQLite, its default
	// database, which fails two writes that meet, and where it says
	// nothing. Every binding naming the server must say the same.
	ConcurrentWrites int `toml:"concurrent_writes"`
	// WriteHold is how long a write to the Vikunja server at base_url
	// holds the server's write slot without an answer before the next
	// write may go (its own request goes on): a duration, or
	// "until_answered"; unset, it is learned from the server's recent
	// writes (vikunja.WithWriteHold). Every binding naming the server must
	// say the same.
	WriteHold WriteHold `toml:"write_hold"`
}

// GitLabLimits are a GitLab binding's [bindings.limits], each a minute:
// 0 (or unset) takes GitLab.com's (gitlab.GitLabCom), a negative value
// keeps no limit.
type GitLabLimits struct {
	// Requests is the API requests a user sends (GitLab.com: 2,000).
	Requests int `toml:"requests"`
	// IssueCreates is the issues a user creates in one project
	// (GitLab.com: 200; issues_create_limit).
	IssueCreates int `toml:"issue_creates"`
	// Notes is the comments a user posts (GitLab.com: 60;
	// notes_create_limit).
	Notes int `toml:"notes"`
}

// WriteHold is a Vikunja binding's write_hold: unset (learned), a
// duration such as "500ms", or "until_answered".
type WriteHold struct {
	// Hold is the duration; negative for "until_answered", zero unset.
	Hold time.Duration
}

// UntilAnswered is write_hold's word for a write that holds the slot until
// it is answered.
const UntilAnswered = "until_answered"

// UnmarshalText implements encoding.TextUnmarshaler.
func (h *WriteHold) UnmarshalText(b []byte) error {
	if string(b) == UntilAnswered {
		h.Hold = -1
		return nil
	}
	v, err := time.ParseDuration(string(b))
	if err != nil || v <= 0 {
		return fmt.Errorf("%q is neither a duration above zero such as 500ms nor %q", b, UntilAnswered)
	}
	h.Hold = v
	return nil
}

// Defaults fill what a run's draft leaves out (T5).
type Defaults struct {
	State       string   `toml:"state"`
	Labels      []string `toml:"labels"`
	Description string   `toml:"description"`
}

// Subscription delivers a workspace's events to a URL, signed with a secret,
// or into a NATS JetStream stream: it names one of the two.
type Subscription struct {
	Tenant    string `toml:"tenant"`
	Workspace string `toml:"workspace"`
	Name      string `toml:"name"`
	URL       string `toml:"url"`
	// Secret signs the deliveries: a Standard Webhooks secret,
	// "whsec_" and the base64 of 24 to 64 random bytes, or a plain one
	// whose bytes are the key (webhook.ParseSecret; ADR-1014).
	Secret Secret `toml:"secret"`
	// PreviousSecret, while Secret replaces it, signs beside it:
	// webhook-signature carries both signatures until it is removed.
	PreviousSecret Secret `toml:"previous_secret"`
	// Signature is which signatures a delivery carries: "standard"
	// (Standard Webhooks' headers), the default (webhook.DefaultSigning);
	// "both", X-Relayr-Signature beside them, for a receiver that still
	// checks the old header; or "relayr" (X-Relayr-Signature alone, as
	// before ADR-1014).
	Signature string `toml:"signature"`
	// Format is the body of what is delivered (ADR-1016): "relayr",
	// relayr's own event JSON, the default (webhook.DefaultFormat), so an
	// existing subscriber takes what it always took; or CloudEvents 1.0,
	// "cloudevents-structured" (the whole event, for a url or a nats
	// target) or "cloudevents-binary" (ce-* headers and the data as the
	// body, for a url only).
	Format string `toml:"format"`
	// AllowInsecureHTTP lets url be plain http:// to a host that is not
	// loopback; refused otherwise, since the events would cross the
	// network in the clear.
	AllowInsecureHTTP bool  `toml:"allow_insecure_http"`
	NATS              *NATS `toml:"nats"`
}

// NATS is a subscription's JetStream target.
type NATS struct {
	// Servers are the NATS URLs (nats://host:4222, tls://host:4222).
	Servers []string `toml:"servers"`
	// Stream is the JetStream stream.
	Stream string `toml:"stream"`
	// SubjectPrefix begins every subject (default "relayr"): events go to
	// <prefix>.<tenant>.<workspace>.<namespace>.<name>.
	SubjectPrefix string `toml:"subject_prefix"`
	// CreateStream lets relayr create a missing stream; otherwise a
	// missing stream refuses the start.
	CreateStream bool `toml:"create_stream"`
	// At most one of: a .creds file's contents, an nkey seed, a token.
	Creds    Secret  `toml:"creds"`
	NKeySeed Secret  `toml:"nkey_seed"`
	Token    Secret  `toml:"token"`
	TLS      NATSTLS `toml:"tls"`
}

// NATSTLS names the files of a TLS connection to NATS.
type NATSTLS struct {
	CAFile   string `toml:"ca_file"`
	CertFile string `toml:"cert_file"`
	KeyFile  string `toml:"key_file"`
}

// DefaultSubjectPrefix begins a NATS subscription's subjects.
const DefaultSubjectPrefix = "relayr"

// Secret is read from the environment (env = "NAME") or a file (file =
// "/run/secrets/x"), never written in the configuration itself.
type Secret struct {
	Env  string `toml:"env"`
	File string `toml:"file"`
}

// Set reports whether the secret names a source.
func (s Secret) Set() bool { return s.Env != "" || s.File != "" }

// Duration is a time.Duration written as "30s".
type Duration struct{ time.Duration }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration such as 30s or 2m", b)
	}
	if v <= 0 {
		return fmt.Errorf("%q must be more than zero", b)
	}
	d.Duration = v
	return nil
}

// Requests answers request_timeout: as set, else ADR-0033's 10 s, or the
// write bound where that is shorter (a bound of 5 s needs no timeout set
// beside it).
func (t Timings) Requests() time.Duration {
	if t.RequestTimeout.Duration > 0 {
		return t.RequestTimeout.Duration
	}
	return min(vikunja.DefaultTimeout, t.WriteBound.Or(writes.DefaultWriteBound))
}

// Settle answers write_settle: as set, else 2 s, or half of what the write
// bound leaves before the retake where that is shorter.
func (t Timings) Settle() time.Duration {
	if t.WriteSettle.Duration > 0 {
		return t.WriteSettle.Duration
	}
	left := t.RetakeAfter.Or(writes.DefaultRetakeAfter) - t.WriteBound.Or(writes.DefaultWriteBound)
	return max(min(writes.DefaultSettle, left/2), time.Millisecond)
}

// Or answers d, or def when d was not set.
func (d Duration) Or(def time.Duration) time.Duration {
	if d.Duration == 0 {
		return def
	}
	return d.Duration
}

// Error lists everything wrong with a configuration at once.
type Error struct {
	Path     string
	Problems []string
}

func (e *Error) Error() string {
	return e.Path + ": " + strings.Join(e.Problems, "; ")
}

// ErrInvalid matches every *Error.
var ErrInvalid = errors.New("invalid configuration")

// Is makes an *Error match ErrInvalid.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// Load reads and validates the configuration at path. It reads no secret.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path) //nolint:gosec // G304: the operator names the configuration
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	return Parse(b, abs)
}

// Parse validates a configuration's text; path names it in errors and its
// folder anchors relative paths.
func Parse(b []byte, path string) (*Config, error) {
	var c Config
	dec := toml.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, &Error{Path: path, Problems: decodeProblems(err)}
	}
	c.Dir = filepath.Dir(path)
	if probs := c.validate(); len(probs) > 0 {
		return nil, &Error{Path: path, Problems: probs}
	}
	return &c, nil
}

func decodeProblems(err error) []string {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) {
		var out []string
		for _, e := range strict.Errors {
			row, _ := e.Position()
			out = append(out, fmt.Sprintf("line %d: unknown key %q", row, strings.Join(e.Key(), ".")))
		}
		return out
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, col := de.Position()
		msg := de.Error()
		switch key := strings.Join(de.Key(), "."); {
		case strings.Contains(msg, "config.Secret"):
			// A secret written into the file itself.
			msg = fmt.Sprintf("%s is a secret: read it from the environment or a file, as {env = \"NAME\"} or {file = \"/path\"}, never from this file", key)
		case key != "":
			// The value's own refusal (a duration that isn't one), under
			// the key it was given for.
			msg = key + ": " + strings.TrimPrefix(msg, "toml: ")
		}
		return []string{fmt.Sprintf("line %d, column %d: %s", row, col, msg)}
	}
	return []string{err.Error()}
}

// Kinds of tracker a binding may name.
var Kinds = []string{"plane", "vikunja", "gitea", "github", jira.Kind, gitlab.Kind, linear.Kind}

// kinds words Kinds as a refusal names them: "plane, vikunja, gitea,
// github, jira, gitlab or linear".
func kinds() string {
	return strings.Join(Kinds[:len(Kinds)-1], ", ") + " or " + Kinds[len(Kinds)-1]
}

func (c *Config) validate() []string {
	var p []string
	add := func(format string, a ...any) { p = append(p, fmt.Sprintf(format, a...)) }
	c.checkService(add)
	c.checkTimings(add)
	c.checkTrackerLimits(add)
	tenants := c.checkTenants(add)
	bound := c.checkBindings(tenants, add)
	c.checkSubscriptions(bound, add)
	return p
}

// checkService checks the service's own keys (listen, the ledger, the log,
// tracker_conns, holder), filling the defaults they leave out.
func (c *Config) checkService(add func(string, ...any)) {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:8080"
	}
	switch c.Ledger.Driver {
	case "", "sqlite":
		c.Ledger.Driver = "sqlite"
		if c.Ledger.DSN.Set() {
			add("ledger: dsn is for driver postgres")
		}
	case "postgres":
		if !c.Ledger.DSN.Set() {
			add("ledger: driver postgres needs dsn = {env = \"…\"} or {file = \"…\"}")
		}
	default:
		add("ledger: driver %q is not sqlite or postgres", c.Ledger.Driver)
	}
	switch c.Log.Level {
	case "", "debug", "info", "warn", "error":
	default:
		add("log: level %q is not debug, info, warn or error", c.Log.Level)
	}
	switch c.Log.Format {
	case "", "text", "json":
	default:
		add("log: format %q is not text or json", c.Log.Format)
	}
	if c.TrackerConns < 0 {
		add("tracker_conns %d is below 1 (leave it out for 16)", c.TrackerConns)
	}
	if c.Holder != "" {
		// A run adds "~" and four hex digits (app.holderName).
		if err := tracker.ValidateName("holder", c.Holder); err != nil {
			add("holder: %v", err)
		} else if len(c.Holder) > ledger.MaxName-5 {
			add("holder: is %d bytes, over %d", len(c.Holder), ledger.MaxName-5)
		}
	}
}

// checkTimings checks the timings against each other.
func (c *Config) checkTrackerLimits(add func(string, ...any)) {
	for kind, l := range c.TrackerLimits {
		switch {
		case !known(kind):
			add("tracker_limits: tracker %q is not %s", kind, kinds())
		case l.PerHour < 0 || l.PointsPerMinute < 0 || l.WritePoints < 0:
			add("tracker_limits.%s: limits are counts, not below 0", kind)
		case l.WritePoints > 0 && l.PointsPerMinute == 0:
			add("tracker_limits.%s: write_points counts against points_per_minute, which is not set", kind)
		}
	}
}

func (c *Config) checkTimings(add func(string, ...any)) {
	// ADR-0033: an attempt's writes end within its write bound, before any
	// other attempt may retake its claim; a bound at or past the retake
	// would let a second attempt file while the first still creates.
	if wb, ra := c.Timings.WriteBound.Or(writes.DefaultWriteBound), c.Timings.RetakeAfter.Or(writes.DefaultRetakeAfter); wb >= ra {
		add("timings: write_bound (%s) must be shorter than retake_after (%s), or a slow create could be filed twice", wb, ra)
	}
	// A request's phase fits in the write bound, or no filing could end
	// within it; a filing in doubt is looked up before its claim could be
	// retaken, so the look-up, not a retake's, resolves it.
	wb, ra := c.Timings.WriteBound.Or(writes.DefaultWriteBound), c.Timings.RetakeAfter.Or(writes.DefaultRetakeAfter)
	if rt := c.Timings.RequestTimeout.Duration; rt > wb {
		add("timings: request_timeout (%s) must be at most write_bound (%s): a filing is several requests within the bound", rt, wb)
	}
	if st := c.Timings.WriteSettle.Duration; st > 0 && wb+st >= ra {
		add("timings: write_bound (%s) plus write_settle (%s) must be shorter than retake_after (%s), so relayr looks up a filing in doubt before its claim can be retaken", wb, st, ra)
	}
	if c.Timings.CapLimit < 0 || c.Timings.Budget < 0 {
		add("timings: cap_limit and budget must be positive")
	}
	if c.Timings.SweepMin.Duration > c.Timings.Sweep.Or(24*time.Hour) {
		add("timings: sweep_min (%s) is longer than sweep (%s): set it to sweep to sweep only every sweep", c.Timings.SweepMin.Duration, c.Timings.Sweep.Or(24*time.Hour))
	}
}

// checkTenants checks every tenant and answers them by name.
func (c *Config) checkTenants(add func(string, ...any)) map[string]*Tenant {
	tenants := map[string]*Tenant{}
	for i := range c.Tenants {
		t := &c.Tenants[i]
		switch {
		case writes.CheckName("name", t.Name) != nil:
			add("tenants[%d]: %v", i, writes.CheckName("name", t.Name))
		case tenants[t.Name] != nil:
			add("tenants: %q is configured twice", t.Name)
		}
		tenants[t.Name] = t
		if !t.Token.Set() {
			add("tenant %q: token must be read from env or file", t.Name)
		}
		for kind, cr := range t.Trackers {
			if !known(kind) {
				add("tenant %q: tracker %q is not %s", t.Name, kind, kinds())
			}
			if !cr.Key.Set() {
				add("tenant %q: trackers.%s.key must be read from env or file", t.Name, kind)
			}
			switch {
			case cr.Email == "":
				// None: on Jira, the key is an OAuth 2.0 bearer token.
			case kind != jira.Kind:
				add("tenant %q: trackers.%s.email is for jira, whose API tokens go with their account's email", t.Name, kind)
			case !isEmail(cr.Email):
				add("tenant %q: trackers.jira.email %q is not an email address such as bot@example.com", t.Name, cr.Email)
			}
			switch {
			case cr.Team == "":
			case kind != linear.Kind:
				add("tenant %q: trackers.%s.team is for linear, whose bindings file into a team", t.Name, kind)
			default:
				// Checked here too, where no binding takes it yet.
				if _, err := linear.NewConnector(linear.Config{Team: cr.Team}); err != nil {
					add("tenant %q: trackers.linear.team: %s is neither a team key (ENG) nor a team's UUID", t.Name, tracker.Quote(cr.Team))
				}
			}
		}
	}
	return tenants
}

// checkBindings checks every binding against its tenant and the other
// bindings, and answers the bound workspaces (tenant/workspace).
func (c *Config) checkBindings(tenants map[string]*Tenant, add func(string, ...any)) map[string]bool {
	bound := map[string]bool{}
	// One Vikunja server takes one setting of writes at once: the first
	// binding naming it, by index, and the setting it gives.
	type serverSetting struct {
		at, writes int
		hold       time.Duration
	}
	servers := map[string]serverSetting{}
	for i := range c.Bindings {
		if c.Bindings[i].Tracker == linear.Kind && c.Bindings[i].BaseURL == "" {
			// Linear is SaaS: one endpoint, unless a test names its own.
			c.Bindings[i].BaseURL = linear.DefaultURL
		}
		if t := tenants[c.Bindings[i].Tenant]; c.Bindings[i].Tracker == linear.Kind && c.Bindings[i].Team == "" && t != nil {
			// The tenant's team, where the binding names none.
			c.Bindings[i].Team = t.Trackers[linear.Kind].Team
		}
		b := c.Bindings[i]
		where := fmt.Sprintf("bindings[%d] (%s/%s)", i, b.Tenant, b.Workspace)
		t := tenants[b.Tenant]
		switch {
		case b.Tenant == "":
			add("%s: names no tenant", where)
		case t == nil:
			add("%s: tenant %q is not configured", where, b.Tenant)
		}
		if err := writes.CheckName("workspace", b.Workspace); err != nil {
			add("%s: %v", where, err)
		}
		if bound[b.Tenant+"/"+b.Workspace] {
			add("%s: the workspace is bound twice", where)
		}
		bound[b.Tenant+"/"+b.Workspace] = true
		if !known(b.Tracker) {
			add("%s: tracker %q is not %s", where, b.Tracker, kinds())
		} else if t != nil {
			if _, ok := t.Trackers[b.Tracker]; !ok {
				add("%s: tenant %q has no credentials for %s", where, b.Tenant, b.Tracker)
			}
		}
		if err := checkURL(b.BaseURL, b.AllowInsecureHTTP); err != nil {
			add("%s: base_url: %v", where, err)
		}
		if b.WebURL != "" {
			// Only links are made from it: no request goes there.
			if err := checkURL(b.WebURL, true); err != nil {
				add("%s: web_url: %v", where, err)
			}
		}
		if b.Project == "" && b.Tracker != linear.Kind {
			add("%s: names no project", where)
		}
		if b.Tracker == "plane" && b.PlaneWorkspace == "" {
			add("%s: plane needs plane_workspace (the workspace slug)", where)
		}
		if b.Tracker == "vikunja" && !allDigits(b.Project) {
			add("%s: vikunja's project is a number, not %q", where, b.Project)
		}
		if (b.Tracker == "gitea" || b.Tracker == "github") && b.Project != "" {
			if _, err := forge.ParseRepo(b.Project); err != nil {
				add("%s: %s's project is its repository, \"owner/name\", not %q", where, b.Tracker, b.Project)
			}
		}
		if b.Login != "" && b.Tracker != "github" {
			add("%s: login is for github, whose installation tokens cannot read their own account", where)
		}
		checkJira(b, where, add)
		checkGitLab(b, where, add)
		checkLinear(b, where, add)
		if s := b.Defaults.State; s != "" && !tracker.State(s).Valid() {
			add("%s: defaults.state %s is not backlog, todo, started, done or cancelled", where, tracker.Quote(s))
		}
		// Defaults join every draft after the caller's is checked: one a
		// tracker can't keep would refuse every filing as the caller's.
		if err := tracker.ValidateDraft(tracker.Draft{Title: "defaults", Labels: b.Defaults.Labels}); err != nil {
			add("%s: defaults.labels: %v", where, err)
		}
		if err := tracker.ValidateText("description", b.Defaults.Description); err != nil {
			add("%s: defaults.description: %v", where, err)
		}
		switch {
		case b.ConcurrentWrites < 0:
			add("%s: concurrent_writes %d is below 1", where, b.ConcurrentWrites)
		case b.Tracker != vikunja.Kind && b.ConcurrentWrites != 0:
			add("%s: concurrent_writes is for vikunja, whose SQLite fails writes that meet", where)
		case b.Tracker != vikunja.Kind && b.WriteHold.Hold != 0:
			add("%s: write_hold is for vikunja, whose writes go one at a time", where)
		case b.Tracker == vikunja.Kind && b.WriteHold.Hold > c.Timings.WriteBound.Or(writes.DefaultWriteBound):
			add("%s: write_hold %v is past the write bound %v: no write is held so long", where, b.WriteHold.Hold, c.Timings.WriteBound.Or(writes.DefaultWriteBound))
		case b.Tracker == vikunja.Kind && checkURL(b.BaseURL, b.AllowInsecureHTTP) == nil:
			n := b.ConcurrentWrites
			key := vikunja.ServerKey(b.BaseURL)
			if first, ok := servers[key]; !ok {
				servers[key] = serverSetting{at: i, writes: n, hold: b.WriteHold.Hold}
			} else if first.writes != n {
				add("%s: concurrent_writes %s for %s, where bindings[%d] says %s: one server takes one setting", where, writesSetting(n), key, first.at, writesSetting(first.writes))
			} else if first.hold != b.WriteHold.Hold {
				add("%s: write_hold for %s differs from bindings[%d]'s: one server takes one setting", where, key, first.at)
			}
		}
	}
	return bound
}

// writesSetting words a binding's concurrent_writes as the configuration
// reads it.
func writesSetting(n int) string {
	if n == 0 {
		return "unset (the server says)"
	}
	return strconv.Itoa(n)
}

// checkSubscriptions checks every subscription: a bound workspace, one
// target, and that target's keys.
func (c *Config) checkSubscriptions(bound map[string]bool, add func(string, ...any)) {
	subs := map[string]bool{}
	for i, s := range c.Subscriptions {
		where := fmt.Sprintf("subscriptions[%d] (%s)", i, s.Name)
		if !bound[s.Tenant+"/"+s.Workspace] {
			add("%s: %s/%s is not a bound workspace", where, s.Tenant, s.Workspace)
		}
		if err := writes.CheckName("name", s.Name); err != nil {
			add("%s: %v", where, err)
		}
		if subs[s.Tenant+"/"+s.Workspace+"/"+s.Name] {
			add("%s: configured twice", where)
		}
		subs[s.Tenant+"/"+s.Workspace+"/"+s.Name] = true
		if s.NATS != nil {
			if s.URL != "" || s.Secret.Set() {
				add("%s: names both a url and a nats target; a subscription delivers to one", where)
			}
			if s.PreviousSecret.Set() || s.Signature != "" {
				add("%s: previous_secret and signature are for a url's webhooks, not a nats target", where)
			}
			// ADR-1016: into JetStream, the NATS binding's structured mode
			// only, the stored message the whole event.
			switch f := webhook.Format(s.Format); f {
			case "":
				c.Subscriptions[i].Format = string(webhook.DefaultFormat)
			case webhook.FormatRelayr, webhook.FormatCloudEventsStructured:
			case webhook.FormatCloudEventsBinary:
				add("%s: format %q is for a url's webhooks; a nats target publishes CloudEvents as %q, the whole event as the message's data", where, f, webhook.FormatCloudEventsStructured)
			default:
				add("%s: format %s is not %q or %q", where, tracker.Quote(s.Format), webhook.FormatRelayr, webhook.FormatCloudEventsStructured)
			}
			if s.NATS.SubjectPrefix == "" {
				s.NATS.SubjectPrefix = DefaultSubjectPrefix
			}
			checkNATS(s, where, add)
			continue
		}
		if err := checkURL(s.URL, s.AllowInsecureHTTP); err != nil {
			add("%s: url: %v (or name a [subscriptions.nats] target)", where, err)
		}
		if !s.Secret.Set() {
			add("%s: secret must be read from env or file", where)
		}
		// ADR-1016: relayr's own JSON unless asked, so an existing
		// subscriber takes what it always took.
		switch f := webhook.Format(s.Format); {
		case f == "":
			c.Subscriptions[i].Format = string(webhook.DefaultFormat)
		case !f.Valid():
			add("%s: format %s is not %q, %q or %q", where, tracker.Quote(s.Format), webhook.FormatRelayr, webhook.FormatCloudEventsStructured, webhook.FormatCloudEventsBinary)
		}
		// ADR-1014: Standard Webhooks alone unless asked; the old
		// header only for a subscription that asks for it.
		switch sig := webhook.Signing(s.Signature); {
		case sig == "":
			c.Subscriptions[i].Signature = string(webhook.DefaultSigning)
		case !sig.Valid():
			add("%s: signature %s is not %q, %q or %q", where, tracker.Quote(s.Signature), webhook.SignStandard, webhook.SignRelayr, webhook.SignBoth)
		case sig == webhook.SignRelayr && s.PreviousSecret.Set():
			add("%s: previous_secret signs only Standard Webhooks' webhook-signature, which signature = %q does not send: set signature = %q while the secret is rotated", where, webhook.SignRelayr, webhook.SignBoth)
		}
	}
}

func checkNATS(s Subscription, where string, add func(string, ...any)) {
	n := s.NATS
	if len(n.Servers) == 0 {
		add("%s: nats.servers names no server", where)
	}
	for _, srv := range n.Servers {
		u, err := url.Parse(srv)
		switch {
		case err != nil || (u.Scheme != "nats" && u.Scheme != "tls") || u.Host == "":
			add("%s: nats.servers: %q is not a nats:// or tls:// URL", where, srv)
		case u.User != nil:
			add("%s: nats.servers: %q carries credentials; read them from creds, nkey_seed or token", where, srv)
		}
	}
	if !natsjs.ValidToken(n.Stream) || strings.ContainsAny(n.Stream, `/\`) {
		add("%s: nats.stream %q is not a stream name", where, n.Stream)
	}
	if !natsjs.ValidPrefix(n.SubjectPrefix) {
		add("%s: nats.subject_prefix %q is not subject tokens (no '*', '>', spaces or empty tokens)", where, n.SubjectPrefix)
	}
	// The tenant and the workspace are tokens of every subject.
	if !natsjs.ValidToken(s.Tenant) || !natsjs.ValidToken(s.Workspace) {
		add("%s: %s/%s cannot be NATS subject tokens (no '.', '*', '>' or spaces)", where, s.Tenant, s.Workspace)
	}
	creds := 0
	for _, c := range []Secret{n.Creds, n.NKeySeed, n.Token} {
		if c.Set() {
			creds++
		}
	}
	if creds > 1 {
		add("%s: nats names more than one of creds, nkey_seed and token", where)
	}
	if (n.TLS.CertFile == "") != (n.TLS.KeyFile == "") {
		add("%s: nats.tls needs both cert_file and key_file, or neither", where)
	}
}

// checkJira checks a binding's Jira keys: on a jira binding, each one set,
// and then the whole as the driver takes it (jira.NewConnector, which
// makes no request); on a binding of another tracker, that none is set.
func checkJira(b Binding, where string, add func(string, ...any)) {
	if b.Tracker != jira.Kind {
		for _, k := range []struct {
			key string
			set bool
		}{
			{"issue_type", b.IssueType != ""}, {"statuses", b.Statuses != nil},
			{"cancelled_resolutions", b.CancelledResolutions != nil}, {"search_lag", b.SearchLag.Duration != 0},
		} {
			if k.set {
				add("%s: %s is for jira", where, k.key)
			}
		}
		return
	}
	bad := false
	refuse := func(format string, a ...any) {
		bad = true
		add("%s: "+format, append([]any{where}, a...)...)
	}
	if b.IssueType != "" && strings.TrimSpace(b.IssueType) == "" {
		refuse("issue_type %q is blank: name an issue type of the project, or leave it out for %s", b.IssueType, jira.DefaultIssueType)
	}
	states := make([]string, 0, len(b.Statuses))
	for s := range b.Statuses {
		states = append(states, s)
	}
	sort.Strings(states)
	for _, s := range states {
		switch {
		case !tracker.State(s).Valid():
			refuse("statuses: %s is not backlog, todo, started, done or cancelled", tracker.Quote(s))
		case strings.TrimSpace(b.Statuses[s]) == "":
			refuse("statuses.%s is blank: name a status of the issue type's workflow", s)
		}
	}
	for i, r := range b.CancelledResolutions {
		if strings.TrimSpace(r) == "" {
			refuse("cancelled_resolutions[%d] is blank: name a resolution", i)
		}
	}
	if bad || b.Project == "" || checkURL(b.BaseURL, true) != nil {
		return // said already
	}
	if _, err := jira.NewConnector(b.Jira("")); err != nil {
		var inv *tracker.InvalidError
		if errors.As(err, &inv) && jiraKeys[inv.Field] != "" {
			add("%s: %s: %s", where, jiraKeys[inv.Field], inv.Reason)
		} else {
			add("%s: %v", where, err)
		}
	}
}

// jiraKeys name the key of each field jira.NewConnector refuses.
var jiraKeys = map[string]string{
	"jira base URL": "base_url", "jira web URL": "web_url", "jira project": "project",
	"jira statuses": "statuses", "jira search lag": "search_lag",
}

// Jira is a jira binding's driver configuration, email being the account
// the tenant's key belongs to (TrackerCredentials.Email); the caller adds
// the client and the timeout.
func (b Binding) Jira(email string) jira.Config {
	var statuses map[tracker.State]string
	if b.Statuses != nil {
		statuses = make(map[tracker.State]string, len(b.Statuses))
		for s, name := range b.Statuses {
			statuses[tracker.State(s)] = name
		}
	}
	return jira.Config{
		BaseURL: b.BaseURL, WebURL: b.WebURL, Project: b.Project, Email: email,
		IssueType: b.IssueType, Statuses: statuses, CancelledResolutions: b.CancelledResolutions,
		SearchLag: b.SearchLag.Duration, Namespace: b.Namespace,
	}
}

// checkGitLab checks a binding's GitLab keys as checkJira does Jira's: on
// a gitlab binding, each one set, and then the whole as the driver takes
// it (gitlab.NewConnector, which makes no request); on a binding of
// another tracker, that none is set.
func checkGitLab(b Binding, where string, add func(string, ...any)) {
	if b.Tracker != gitlab.Kind {
		for _, k := range []struct {
			key string
			set bool
		}{
			{"labels", b.Labels != nil}, {"limits", b.Limits != nil}, {"list_lag", b.ListLag.Duration != 0},
		} {
			if k.set {
				add("%s: %s is for gitlab", where, k.key)
			}
		}
		return
	}
	bad := false
	refuse := func(format string, a ...any) {
		bad = true
		add("%s: "+format, append([]any{where}, a...)...)
	}
	if b.WebURL != "" {
		// Links are to the page GitLab names for the project.
		refuse("web_url is not for gitlab: an issue's link is the project's page as GitLab names it")
	}
	states := make([]string, 0, len(b.Labels))
	for s := range b.Labels {
		states = append(states, s)
	}
	sort.Strings(states)
	for _, s := range states {
		switch s {
		case string(tracker.Backlog), string(tracker.Todo), string(tracker.Started), string(tracker.Cancelled):
			if strings.TrimSpace(b.Labels[s]) == "" {
				refuse("labels.%s is blank: name a label", s)
			}
		case string(tracker.Done):
			refuse("labels: done is a closed issue without the cancelled label, held by no label of its own")
		default:
			refuse("labels: %s is not backlog, todo, started or cancelled", tracker.Quote(s))
		}
	}
	if bad || b.Project == "" || checkURL(b.BaseURL, true) != nil {
		return // said already
	}
	if _, err := gitlab.NewConnector(b.GitLab()); err != nil {
		var inv *tracker.InvalidError
		if errors.As(err, &inv) && gitlabKeys[inv.Field] != "" {
			add("%s: %s: %s", where, gitlabKeys[inv.Field], inv.Reason)
		} else {
			add("%s: %v", where, err)
		}
	}
}

// gitlabKeys name the key of each field gitlab.NewConnector refuses.
var gitlabKeys = map[string]string{
	"gitlab base URL": "base_url", "gitlab project": "project",
	"gitlab state labels": "labels", "gitlab list lag": "list_lag", "gitlab limits": "limits",
}

// GitLab is a gitlab binding's driver configuration; the caller adds the
// client and the timeout.
func (b Binding) GitLab() gitlab.Config {
	cfg := gitlab.Config{BaseURL: b.BaseURL, Project: b.Project, ListLag: b.ListLag.Duration, Namespace: b.Namespace}
	cfg.Labels = gitlab.StateLabels{
		Backlog: b.Labels[string(tracker.Backlog)], Todo: b.Labels[string(tracker.Todo)],
		Started: b.Labels[string(tracker.Started)], Cancelled: b.Labels[string(tracker.Cancelled)],
	}
	if l := b.Limits; l != nil {
		cfg.Limits = gitlab.Limits{Requests: l.Requests, IssueCreates: l.IssueCreates, Notes: l.Notes}
	}
	return cfg
}

// checkLinear checks a binding's Linear keys as checkGitLab does
// GitLab's: on a linear binding, its team (no project: the team is
// Linear's project) and then the whole as the driver takes it
// (linear.NewConnector, which makes no request); on a binding of another
// tracker, that none of Linear's keys is set.
func checkLinear(b Binding, where string, add func(string, ...any)) {
	if b.Tracker != linear.Kind {
		for _, k := range []struct {
			key string
			set bool
		}{
			{"team", b.Team != ""}, {"key_url", b.KeyURL != ""},
		} {
			if k.set {
				add("%s: %s is for linear", where, k.key)
			}
		}
		return
	}
	bad := false
	refuse := func(format string, a ...any) {
		bad = true
		add("%s: "+format, append([]any{where}, a...)...)
	}
	if b.Project != "" {
		refuse("project is not for linear: a Linear binding files into a team, named by team (its key, \"ENG\", or its UUID)")
	}
	if b.Team == "" {
		refuse("linear needs team (the team's key, \"ENG\", or its UUID)")
	}
	if b.WebURL != "" {
		// Links are to the issue's page in the workspace Linear names.
		refuse("web_url is not for linear: an issue's link is its page in the workspace, as Linear names it")
	}
	if bad || checkURL(b.BaseURL, true) != nil {
		return // said already
	}
	if _, err := linear.NewConnector(b.Linear()); err != nil {
		var inv *tracker.InvalidError
		if errors.As(err, &inv) && linearKeys[inv.Field] != "" {
			add("%s: %s: %s", where, linearKeys[inv.Field], inv.Reason)
		} else {
			add("%s: %v", where, err)
		}
	}
}

// linearKeys name the key of each field linear.NewConnector refuses.
var linearKeys = map[string]string{
	"linear URL": "base_url", "linear team": "team", "linear key URL": "key_url",
}

// Linear is a linear binding's driver configuration; the caller adds the
// client and the timeout.
func (b Binding) Linear() linear.Config {
	return linear.Config{URL: b.BaseURL, Team: b.Team, KeyURL: b.KeyURL, Namespace: b.Namespace}
}

// isEmail reports whether s is a bare email address (name@example.com, no
// display name or angle brackets).
func isEmail(s string) bool {
	a, err := mail.ParseAddress(s)
	return err == nil && a.Name == "" && a.Address == s
}

func known(kind string) bool {
	for _, k := range Kinds {
		if k == kind {
			return true
		}
	}
	return false
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// checkURL refuses what is not an http(s) URL, a URL carrying a user name
// or password, and, unless insecure is allowed, plain http to a host that is
// not loopback.
func checkURL(s string, insecure bool) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", s)
	}
	if u.User != nil {
		// Never echo it: the password is in it.
		return errors.New("the URL carries a user name or password: credentials are secrets, read from the environment or a file, never written in a URL")
	}
	if u.Scheme == "http" && !insecure && !loopback(u.Hostname()) {
		return fmt.Errorf("%q is plain http to a host that is not loopback: use https, or set allow_insecure_http = true beside it", s)
	}
	return nil
}

// loopback reports whether host is this machine: localhost or a loopback
// address.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ReadSecret reads a secret from its environment variable or file; getenv
// is os.Getenv unless a test passes its own.
func ReadSecret(s Secret, getenv func(string) string) (string, error) {
	switch {
	case s.Env != "" && s.File != "":
		return "", errors.New("a secret names both env and file")
	case s.Env != "":
		v := getenv(s.Env)
		if v == "" {
			return "", fmt.Errorf("environment variable %s is empty or unset", s.Env)
		}
		return v, nil
	case s.File != "":
		b, err := os.ReadFile(s.File)
		if err != nil {
			return "", fmt.Errorf("secret file: %w", err)
		}
		v := strings.TrimRight(string(b), "\r\n")
		if v == "" {
			return "", fmt.Errorf("secret file %s is empty", s.File)
		}
		return v, nil
	}
	return "", errors.New("the secret names neither env nor file")
}

// MinTokenBytes is the shortest bearer token taken, the operator's and each
// tenant's: long enough that a token is drawn at random, not chosen.
const MinTokenBytes = 32

// shortToken says what is wrong with a token read but too short, "" when
// it is long enough (or was not read at all, which is said apart).
func shortToken(tok string) string {
	if tok == "" || len(tok) >= MinTokenBytes {
		return ""
	}
	return fmt.Sprintf("is %d bytes; a token must be at least %d (`openssl rand -hex 32` makes one)", len(tok), MinTokenBytes)
}

// Secrets are every secret a configuration names, read.
type Secrets struct {
	OperatorToken string
	DSN           string
	// Tokens maps an API token to its tenant.
	Tokens map[string]string
	// Trackers are the tenants' tracker credentials by "<tenant>/<kind>".
	Trackers tracker.StaticCredentials
	// Subscriptions are the subscriptions' secrets by
	// "<tenant>/<workspace>/<name>".
	Subscriptions map[string]string
	// PreviousSecrets are the previous secrets of the subscriptions
	// rotating theirs, by "<tenant>/<workspace>/<name>".
	PreviousSecrets map[string]string
	// NATS are the NATS subscriptions' credentials by
	// "<tenant>/<workspace>/<name>".
	NATS map[string]NATSCredentials
}

// NATSCredentials are a NATS subscription's credentials, read: at most one
// is set.
type NATSCredentials struct {
	Creds, NKeySeed, Token string
}

// ReadSecrets reads every secret and reports every one missing at once.
func (c *Config) ReadSecrets(getenv func(string) string) (*Secrets, error) {
	s := &Secrets{
		Tokens: map[string]string{}, Trackers: tracker.StaticCredentials{},
		Subscriptions: map[string]string{}, PreviousSecrets: map[string]string{}, NATS: map[string]NATSCredentials{},
	}
	var probs []string
	read := func(what string, sec Secret) string {
		v, err := ReadSecret(sec, getenv)
		if err != nil {
			probs = append(probs, what+": "+err.Error())
		}
		return v
	}
	if c.OperatorToken.Set() {
		s.OperatorToken = read("operator_token", c.OperatorToken)
		if short := shortToken(s.OperatorToken); short != "" {
			probs = append(probs, "operator_token: "+short)
		}
	}
	if c.Ledger.Driver == "postgres" {
		s.DSN = read("ledger.dsn", c.Ledger.DSN)
	}
	for _, t := range c.Tenants {
		tok := read("tenant "+t.Name+" token", t.Token)
		if other, dup := s.Tokens[tok]; dup && tok != "" {
			probs = append(probs, fmt.Sprintf("tenants %s and %s share a token", other, t.Name))
		}
		if short := shortToken(tok); short != "" {
			probs = append(probs, "tenant "+t.Name+" token: "+short)
		}
		if tok != "" && tok == s.OperatorToken {
			// The operator's token reads every tenant's counters; a
			// tenant holding it would too.
			probs = append(probs, "operator_token is tenant "+t.Name+"'s token: the operator's token must be its own")
		}
		s.Tokens[tok] = t.Name
		kinds := make([]string, 0, len(t.Trackers))
		for k := range t.Trackers {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		for _, kind := range kinds {
			cr := t.Trackers[kind]
			creds := tracker.Credentials{Token: read("tenant "+t.Name+" "+kind+" key", cr.Key)}
			if cr.WebhookSecret.Set() {
				creds.WebhookSecret = read("tenant "+t.Name+" "+kind+" webhook_secret", cr.WebhookSecret)
			}
			s.Trackers[t.Name+"/"+kind] = creds
		}
	}
	for _, sub := range c.Subscriptions {
		k := sub.Tenant + "/" + sub.Workspace + "/" + sub.Name
		if n := sub.NATS; n != nil {
			var nc NATSCredentials
			if n.Creds.Set() {
				nc.Creds = read("subscription "+sub.Name+" nats.creds", n.Creds)
			}
			if n.NKeySeed.Set() {
				nc.NKeySeed = read("subscription "+sub.Name+" nats.nkey_seed", n.NKeySeed)
			}
			if n.Token.Set() {
				nc.Token = read("subscription "+sub.Name+" nats.token", n.Token)
			}
			s.NATS[k] = nc
			continue
		}
		s.Subscriptions[k] = read("subscription "+sub.Name+" secret", sub.Secret)
		checkSigning := func(what, v string) {
			if v == "" {
				return // said already
			}
			if _, err := webhook.ParseSecret(v); err != nil {
				var se *webhook.SecretError
				if errors.As(err, &se) {
					err = errors.New(se.Reason)
				}
				probs = append(probs, "subscription "+sub.Name+" "+what+": "+err.Error())
			}
		}
		checkSigning("secret", s.Subscriptions[k])
		if sub.PreviousSecret.Set() {
			s.PreviousSecrets[k] = read("subscription "+sub.Name+" previous_secret", sub.PreviousSecret)
			checkSigning("previous_secret", s.PreviousSecrets[k])
		}
	}
	if len(probs) > 0 {
		return nil, &Error{Path: "secrets", Problems: probs}
	}
	return s, nil
}

// LedgerPath is the SQLite file: relayr.db beside the configuration by
// default, a relative path anchored at the configuration's folder.
func (c *Config) LedgerPath() string {
	p := c.Ledger.Path
	if p == "" {
		p = "relayr.db"
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(c.Dir, p)
	}
	return p
}

// Warnings names what the configuration allows but an operator should
// know: a shutdown grace no longer than the write bound (a write under way
// at SIGTERM may be cut off, its claim held unrecorded until it is retaken;
// nothing is filed twice, and tests that kill replicas set it short on
// purpose). relayr check prints them, and serve logs them.
func (c *Config) Warnings() []string {
	var out []string
	if grace, wb := c.Timings.ShutdownGrace.Or(25*time.Second), c.Timings.WriteBound.Or(writes.DefaultWriteBound); grace <= wb {
		out = append(out, fmt.Sprintf("timings: shutdown_grace (%s) is not longer than write_bound (%s): a write under way at SIGTERM may be cut off, and its key answers tracker_claimed until its claim is retaken", grace, wb))
	}
	return out
}
