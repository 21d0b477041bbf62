// Package natsjs delivers a workspace's events into a NATS JetStream stream,
// exactly once: a sink for the log followers (ADR-0015's publish step) that
// publishes each event on <prefix>.<tenant>.<workspace>.<namespace>.<name>
// with Nats-Msg-Id set to the event's id, and answers only once the stream
// acknowledged it, so the follower's cursor moves after the publish.
//
// Exactly once rests on the ids, as it does for every sink: relayr's event
// ids are derived, and JetStream drops a second publish of an id within the
// stream's duplicate window. A process that dies between the broker's ack
// and the cursor's save, or a replica that lost its lease, publishes the
// same ids again within that window, which is why CheckStream asks the
// window to be at least the lease. Order is kept by publishing one event at
// a time: an event is sent only once the one before it was acknowledged.
//
// A target may ask for CloudEvents 1.0 (Target.CloudEvents): each message's
// data is then the event as a CloudEvent in JSON, the NATS protocol
// binding's structured content mode, encoded by the CloudEvents Go SDK's
// event.Event (ADR-1016).
//
// It uses the official client (github.com/nats-io/nats.go and its jetstream
// package) and nothing newer than NATS Server 2.9's JetStream API.
package natsjs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/relayr-go/relayr/adapters/cloudevents"
	"github.com/relayr-go/relayr/core/deliver"
	"github.com/relayr-go/relayr/core/eventlog"
)

// Headers every message carries beside Nats-Msg-Id (the event's id).
const (
	// TypeHeader names the event's type (tracker:item_changed).
	TypeHeader = "Relayr-Type"
	// CorrelationHeader carries the event's chain, when it has one.
	CorrelationHeader = "Relayr-Correlation"
	// SeqHeader is the event's sequence number in its workspace's log: a
	// consumer can check its order, or resume from it.
	SeqHeader = "Relayr-Seq"
)

// DefaultAckWait bounds the wait for one publish's acknowledgement; past it
// the publish counts as failed (timeout) and is tried again from the
// cursor, where the broker drops it if it had taken it after all.
const DefaultAckWait = 5 * time.Second

// Target is a stream relayr publishes a subscription's events into, and how
// to reach its servers.
type Target struct {
	// Servers are the NATS URLs (nats://host:4222, tls://host:4222).
	Servers []string
	// Stream is the JetStream stream the subjects belong to.
	Stream string
	// Prefix is the subjects' first tokens ("relayr", "acme.events").
	Prefix string
	// CreateStream lets relayr create the stream when it does not exist,
	// with subjects <Prefix>.> and a duplicate window of at least the
	// lease; otherwise a missing stream refuses the start.
	CreateStream bool
	// MinDuplicates is the shortest duplicate window relayr accepts: the
	// lease, within which a replica that lost its lease may publish again.
	MinDuplicates time.Duration
	// Credentials, at most one kind.
	Credentials Credentials
	// TLS, when any file is named or a server's URL is tls://.
	TLS TLS
	// Name names the connection on the server (its monitoring pages).
	Name string
	// CloudEvents publishes each event as a CloudEvent (ADR-1016) rather
	// than relayr's own JSON: the NATS protocol binding's structured
	// content mode, the message's data the CloudEvent's JSON
	// (application/cloudevents+json), as the CloudEvents SDK writes it.
	// Structured, not binary, mode: the stored message is then the whole
	// event, whatever reads it (a mirror, a replay, `nats stream view`, a
	// client that ignores headers), and relayr's message keeps its shape,
	// its body the whole event; the binding's binary mode puts the
	// attributes in headers a reader of the data alone never sees. The
	// SDK's own NATS JetStream binding is a module of its own, which
	// relayr does not take: the core SDK's event JSON is the format the
	// binding's structured mode names.
	CloudEvents bool
}

// Credentials authenticate relayr to the servers: the contents of a .creds
// file (a user JWT and its nkey seed), an nkey seed, or a token. Each is a
// secret, read by the caller from the environment or a file.
type Credentials struct {
	Creds    string
	NKeySeed string
	Token    string
}

// TLS names the files a TLS connection uses.
type TLS struct {
	// CAFile verifies the servers' certificates (the system's roots when
	// empty).
	CAFile string
	// CertFile and KeyFile are relayr's client certificate, when the
	// servers ask for one.
	CertFile string
	KeyFile  string
}

// Subject answers the subject e is published on under prefix: the type's
// colon made a token separator. Each token must be a valid NATS token (not
// empty; no '.', '*', '>' or white space): a name that isn't answers an
// error matching deliver.ErrUnknownType, which stops the follower rather than
// skip the event.
func Subject(prefix string, e eventlog.Event) (string, error) {
	parts := []string{e.Tenant, e.Workspace}
	parts = append(parts, strings.Split(e.Type, ":")...)
	for _, p := range parts {
		if !ValidToken(p) {
			return "", fmt.Errorf("%w: %q in %s/%s's event type %q is not a NATS subject token", deliver.ErrUnknownType, p, e.Tenant, e.Workspace, e.Type)
		}
	}
	return prefix + "." + strings.Join(parts, "."), nil
}

// ValidToken reports whether s can be one token of a subject.
func ValidToken(s string) bool {
	return s != "" && !strings.ContainsAny(s, ".*> \t\r\n\f\v")
}

// ValidPrefix reports whether s can begin a subject: tokens, no wildcard.
func ValidPrefix(s string) bool {
	for _, t := range strings.Split(s, ".") {
		if !ValidToken(t) {
			return false
		}
	}
	return true
}

// Sink publishes a subscription's events into its stream: a deliver.Sink and
// deliver.BatchSink. It connects on first use and again after the connection
// closes, checks the stream (CheckStream) before its first publish and
// again after any failure, and answers every failure of the broker as
// deliver.ErrRetry with its reason, so the follower tries again from its
// cursor. It is safe for concurrent use; publishes are serialised.
type Sink struct {
	target  Target
	ackWait time.Duration
	logger  *slog.Logger

	mu      sync.Mutex
	nc      *nats.Conn
	js      jetstream.JetStream
	checked bool
	maxSize int
}

var (
	_ deliver.Sink      = (*Sink)(nil)
	_ deliver.BatchSink = (*Sink)(nil)
)

// SinkOptions tune a Sink; zero fields take the defaults.
type SinkOptions struct {
	// AckWait bounds the wait for one acknowledgement (DefaultAckWait).
	AckWait time.Duration
	// Logger logs connections (discards when nil).
	Logger *slog.Logger
}

// NewSink returns a sink for t; nothing is dialled before the first
// publish.
func NewSink(t Target, o SinkOptions) *Sink {
	if o.AckWait <= 0 {
		o.AckWait = DefaultAckWait
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Sink{target: t, ackWait: o.AckWait, logger: o.Logger}
}

// Publish implements deliver.Sink.
func (s *Sink) Publish(ctx context.Context, e eventlog.Event) error {
	_, err := s.PublishBatch(ctx, []eventlog.Event{e})
	return err
}

// PublishBatch implements deliver.BatchSink: each event is published, and
// its acknowledgement awaited, before the next is sent, so a later event is
// never stored before an earlier one.
func (s *Sink) PublishBatch(ctx context.Context, es []eventlog.Event) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	js, err := s.ready(ctx)
	if err != nil {
		return 0, err
	}
	for i, e := range es {
		m, err := s.message(e)
		if err != nil {
			return i, err
		}
		if err := s.publish(ctx, js, e, m); err != nil {
			s.checked = false // check the stream again before the next try
			return i, err
		}
	}
	return len(es), nil
}

func (s *Sink) message(e eventlog.Event) (*nats.Msg, error) {
	subj, err := Subject(s.target.Prefix, e)
	if err != nil {
		return nil, err
	}
	body, contentType, err := s.body(e)
	if err != nil {
		return nil, err
	}
	// A message the stream can never take is refused, not retried: the
	// follower stops at it (ADR-0015), and nothing after it is published
	// before it.
	if s.maxSize > 0 && len(body) > s.maxSize {
		return nil, fmt.Errorf("natsjs: event %s is %d bytes, more than the %d the stream %s or the server takes", e.ID, len(body), s.maxSize, s.target.Stream)
	}
	m := nats.NewMsg(subj)
	m.Data = body
	m.Header.Set(TypeHeader, e.Type)
	m.Header.Set(SeqHeader, strconv.FormatInt(e.Seq, 10))
	if e.Correlation != "" {
		m.Header.Set(CorrelationHeader, e.Correlation)
	}
	m.Header.Set("Content-Type", contentType)
	return m, nil
}

// body answers e's message data and its media type: relayr's JSON, or the
// event as a structured CloudEvent. An event that makes no CloudEvent is
// refused, as an event too large is: the follower stops at it.
func (s *Sink) body(e eventlog.Event) ([]byte, string, error) {
	if !s.target.CloudEvents {
		body, err := json.Marshal(e)
		if err != nil {
			return nil, "", fmt.Errorf("natsjs: event %s: %w", e.ID, err)
		}
		return body, "application/json", nil
	}
	ev, err := cloudevents.Event(e)
	if err != nil {
		return nil, "", fmt.Errorf("natsjs: %w", err)
	}
	body, err := ev.MarshalJSON()
	if err != nil {
		return nil, "", fmt.Errorf("natsjs: %w", &cloudevents.Error{ID: e.ID, Err: err})
	}
	return body, cloudevents.ContentType, nil
}

func (s *Sink) publish(ctx context.Context, js jetstream.JetStream, e eventlog.Event, m *nats.Msg) error {
	ctx, cancel := context.WithTimeout(ctx, s.ackWait)
	defer cancel()
	// Nats-Msg-Id is the event's id: the stream drops a second publish of
	// it within its duplicate window, so an event published again after a
	// crash or by another replica is stored once.
	_, err := js.PublishMsg(ctx, m, jetstream.WithMsgID(e.ID), jetstream.WithExpectStream(s.target.Stream))
	if err != nil {
		return Classify(fmt.Errorf("natsjs: publish %s (seq %d) on %s: %w", e.ID, e.Seq, m.Subject, err))
	}
	return nil
}

// ready answers a connection whose stream was checked, dialling and
// checking as needed.
func (s *Sink) ready(ctx context.Context) (jetstream.JetStream, error) {
	if s.nc == nil || s.nc.IsClosed() {
		nc, err := Connect(ctx, s.target, s.logger)
		if err != nil {
			return nil, err
		}
		js, err := jetstream.New(nc)
		if err != nil {
			nc.Close()
			return nil, Classify(fmt.Errorf("natsjs: %w", err))
		}
		s.nc, s.js, s.checked = nc, js, false
	}
	if !s.checked {
		info, err := CheckStream(ctx, s.js, s.target)
		if err != nil {
			// At run time a stream that does not fit may be fixed while
			// the follower waits: it passes, and is checked again.
			return nil, Classify(err)
		}
		s.maxSize = int(s.nc.MaxPayload())
		if m := int(info.Config.MaxMsgSize); m > 0 && m < s.maxSize {
			s.maxSize = m
		}
		s.checked = true
	}
	return s.js, nil
}

// Check connects and checks the stream now, as the first publish would: an
// error matching ErrStream says the stream is missing or does not fit; any
// other is the broker's, classified.
func (s *Sink) Check(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.ready(ctx)
	return err
}

// Close closes the sink's connection, if any.
func (s *Sink) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.nc != nil {
		s.nc.Close()
		s.nc = nil
	}
}

// Connect dials t's servers once, with t's credentials and TLS. A
// connection that drops later reconnects by itself; one that cannot be made
// answers an error matching deliver.ErrRetry with its reason.
func Connect(ctx context.Context, t Target, logger *slog.Logger) (*nats.Conn, error) {
	opts, err := connectOptions(t)
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	opts = append(opts,
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil { // nil when the connection was closed on purpose
				logger.Warn("nats disconnected", "stream", t.Stream, "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			logger.Info("nats reconnected", "stream", t.Stream, "server", nc.ConnectedUrlRedacted())
		}),
	)
	if dl, ok := ctx.Deadline(); ok {
		opts = append(opts, nats.Timeout(max(time.Until(dl), time.Millisecond)))
	}
	nc, err := nats.Connect(strings.Join(t.Servers, ","), opts...)
	if err != nil {
		return nil, Classify(fmt.Errorf("natsjs: connect to %s: %w", strings.Join(t.Servers, ","), err))
	}
	logger.Info("nats connected", "stream", t.Stream, "server", nc.ConnectedUrlRedacted())
	return nc, nil
}

func connectOptions(t Target) ([]nats.Option, error) {
	name := t.Name
	if name == "" {
		name = "relayr"
	}
	opts := []nats.Option{
		nats.Name(name),
		nats.Timeout(5 * time.Second),
		// Reconnect without end: a broker that comes back is used again.
		nats.MaxReconnects(-1),
		nats.ReconnectWait(time.Second),
	}
	c := t.Credentials
	n := 0
	for _, v := range []string{c.Creds, c.NKeySeed, c.Token} {
		if v != "" {
			n++
		}
	}
	if n > 1 {
		return nil, errors.New("natsjs: name one of creds, nkey seed and token")
	}
	switch {
	case c.Creds != "":
		jwt, seed, err := parseCreds(c.Creds)
		if err != nil {
			return nil, err
		}
		opts = append(opts, nats.UserJWTAndSeed(jwt, seed))
	case c.NKeySeed != "":
		opt, err := nkeyOption(c.NKeySeed)
		if err != nil {
			return nil, err
		}
		opts = append(opts, opt)
	case c.Token != "":
		opts = append(opts, nats.Token(c.Token))
	}
	if t.TLS.CAFile != "" {
		opts = append(opts, nats.RootCAs(t.TLS.CAFile))
	}
	if t.TLS.CertFile != "" || t.TLS.KeyFile != "" {
		opts = append(opts, nats.ClientCert(t.TLS.CertFile, t.TLS.KeyFile))
	}
	if t.TLS != (TLS{}) {
		opts = append(opts, nats.Secure())
	}
	return opts, nil
}
