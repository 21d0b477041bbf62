package natsjs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/relayr-go/relayr/core/deliver"
)

// Reasons a publish failed for now, as the metrics and the status name them.
const (
	ReasonUnreachable  = "unreachable"   // no server answered, or the connection dropped
	ReasonUnauthorized = "unauthorized"  // the servers refused the credentials
	ReasonTimeout      = "timeout"       // no acknowledgement within the ack wait
	ReasonNoResponders = "no_responders" // no stream listens on the subject
	ReasonStreamFull   = "stream_full"   // the stream or the account is at a limit
	ReasonStream       = "stream"        // the stream is missing or does not fit (CheckStream)
	ReasonRefused      = "refused"       // the stream refused the message for another reason
)

// JetStream's error codes relayr tells apart (NATS Server 2.9).
const (
	codeStoreFailed          = 10077 // maximum messages, bytes or messages per subject exceeded
	codeInsufficientResource = 10023 // the account's JetStream limits
	codeMessageTooLarge      = 10054
)

// ErrStream is what a stream that is missing, or does not fit relayr, is
// matched with: a configuration to fix, which refuses relayr's start.
var ErrStream = errors.New("natsjs: stream check failed")

// Classify maps a failure of the client or the broker onto the follower's
// rules: everything that may pass (a broker down, slow, full or refusing the
// credentials, a missing or changed stream) matches deliver.ErrRetry with its
// reason; a message the stream can never take, and a type that makes no
// subject, are left as they are, and stop the follower (ADR-0015). nil stays
// nil.
func Classify(err error) error {
	if err == nil || errors.Is(err, deliver.ErrRetry) || errors.Is(err, deliver.ErrUnknownType) {
		return err
	}
	var api *jetstream.APIError
	switch {
	case errors.Is(err, ErrStream):
		return deliver.Retry(ReasonStream, err)
	case errors.As(err, &api):
		switch api.ErrorCode {
		case codeMessageTooLarge:
			return err
		case codeStoreFailed, codeInsufficientResource:
			return deliver.Retry(ReasonStreamFull, err)
		case jetstream.JSErrCodeStreamNotFound:
			return deliver.Retry(ReasonStream, err)
		}
		return deliver.Retry(ReasonRefused, err)
	case errors.Is(err, nats.ErrMaxPayload):
		return err
	case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired), errors.Is(err, nats.ErrAuthRevoked),
		errors.Is(err, nats.ErrAccountAuthExpired), errors.Is(err, nats.ErrPermissionViolation),
		strings.Contains(strings.ToLower(err.Error()), "authorization violation"):
		return deliver.Retry(ReasonUnauthorized, err)
	case errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, nats.ErrNoResponders):
		return deliver.Retry(ReasonNoResponders, err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return deliver.Retry(ReasonTimeout, err)
	case errors.Is(err, nats.ErrNoServers), errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrConnectionReconnecting),
		errors.Is(err, nats.ErrDisconnected), errors.Is(err, nats.ErrConnectionDraining), errors.Is(err, nats.ErrStaleConnection):
		return deliver.Retry(ReasonUnreachable, err)
	}
	var nerr net.Error
	if errors.As(err, &nerr) {
		return deliver.Retry(ReasonUnreachable, err)
	}
	// Anything else the client says may pass as well: a broker is a
	// network service, and a skipped event is never the answer.
	return deliver.Retry(ReasonRefused, err)
}

// parseCreds reads a .creds file's contents: a user JWT and its seed.
func parseCreds(creds string) (jwt, seed string, err error) {
	j, err := nkeys.ParseDecoratedJWT([]byte(creds))
	if err != nil {
		return "", "", fmt.Errorf("natsjs: creds: %w", err)
	}
	kp, err := nkeys.ParseDecoratedNKey([]byte(creds))
	if err != nil {
		return "", "", fmt.Errorf("natsjs: creds: %w", err)
	}
	s, err := kp.Seed()
	if err != nil {
		return "", "", fmt.Errorf("natsjs: creds: %w", err)
	}
	return j, string(s), nil
}

// nkeyOption authenticates with an nkey seed: the public key, and the
// server's nonce signed with the seed.
func nkeyOption(seed string) (nats.Option, error) {
	kp, err := nkeys.FromSeed([]byte(strings.TrimSpace(seed)))
	if err != nil {
		return nil, fmt.Errorf("natsjs: nkey seed: %w", err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return nil, fmt.Errorf("natsjs: nkey seed: %w", err)
	}
	return nats.Nkey(pub, kp.Sign), nil
}
