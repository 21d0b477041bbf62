// Package cloudevents maps relayr's events onto CloudEvents 1.0 (ADR-1016):
// the one place where an eventlog.Event becomes a CloudEvents event.Event,
// built with the CloudEvents Go SDK (github.com/cloudevents/sdk-go/v2), so
// the webhook and NATS JetStream sinks send the same attributes and the
// SDK's own encoding, never a hand-made one.
//
// The mapping, every attribute from the event alone, so a redelivery
// carries the same CloudEvent:
//
//   - id: the event's id (the Idempotency-Key, webhook-id and Nats-Msg-Id);
//   - source: /relayr/<tenant>/<workspace>, each name path-escaped (Source);
//   - type: TypePrefix, then relayr's type with its colon made a dot
//     (tracker:item_changed is io.github.relayr-go.tracker.item_changed; Type);
//   - time: when the event happened (its At);
//   - subject: the item's key, when the event's data names one (an item a
//     person filed has none, and its events have no subject);
//   - datacontenttype: application/json, and data the event's payload as is;
//   - the extensions correlation (the run's chain, when there is one) and
//     relayrseq (the event's place in its workspace's log, in decimal).
package cloudevents

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/relayr-go/relayr/core/eventlog"
)

// TypePrefix begins every CloudEvents type relayr sends: the reverse-DNS
// name the specification asks a type to begin with, of the project's
// GitHub organisation (relayr-go.github.io, the form Maven Central gives
// GitHub projects). relayr owns no other domain, and a name it does not
// own would claim another's (ADR-1016).
const TypePrefix = "io.github.relayr-go."

// SourcePrefix begins every source: /relayr/<tenant>/<workspace>.
const SourcePrefix = "/relayr/"

// Extension attributes beside the specification's own: lower-case letters
// and digits, as CloudEvents asks of an extension's name.
const (
	// CorrelationExtension carries the event's chain, when it has one.
	CorrelationExtension = "correlation"
	// SeqExtension carries the event's sequence number in its workspace's
	// log, in decimal: a String, since CloudEvents' Integer is 32 bits
	// and a log's sequence is not.
	SeqExtension = "relayrseq"
)

// ContentType is the media type of a structured CloudEvent in JSON.
const ContentType = "application/cloudevents+json"

// Error is an event that makes no valid CloudEvent: the SDK refused one of
// its attributes. No retry mends it.
type Error struct {
	ID  string
	Err error
}

func (e *Error) Error() string {
	return fmt.Sprintf("cloudevents: event %s makes no CloudEvent: %v", e.ID, e.Err)
}

// Unwrap answers the SDK's refusal.
func (e *Error) Unwrap() error { return e.Err }

// Source answers the source of a workspace's events: /relayr/<tenant>/<workspace>,
// a URI reference whatever the names hold.
func Source(tenant, workspace string) string {
	return SourcePrefix + url.PathEscape(tenant) + "/" + url.PathEscape(workspace)
}

// Type answers the CloudEvents type of relayr's type t: TypePrefix and t
// with its first colon made a dot.
func Type(t string) string {
	return TypePrefix + strings.Replace(t, ":", ".", 1)
}

// RelayrType answers relayr's type back from a CloudEvents type Type made,
// and false for a type that does not begin with TypePrefix.
func RelayrType(ceType string) (string, bool) {
	rest, ok := strings.CutPrefix(ceType, TypePrefix)
	if !ok {
		return "", false
	}
	return strings.Replace(rest, ".", ":", 1), true
}

// Subject answers the item's key an event's data names ("" when it names
// none, or the data is not an object holding item.key).
func Subject(data json.RawMessage) string {
	var d struct {
		Item struct {
			Key string `json:"key"`
		} `json:"item"`
	}
	if json.Unmarshal(data, &d) != nil {
		return ""
	}
	return d.Item.Key
}

// Event answers e as a CloudEvent, validated by the SDK; an *Error when
// the SDK refuses it.
func Event(e eventlog.Event) (event.Event, error) {
	ev := event.New(event.CloudEventsVersionV1)
	ev.SetID(e.ID)
	ev.SetSource(Source(e.Tenant, e.Workspace))
	ev.SetType(Type(e.Type))
	ev.SetTime(e.At)
	if s := Subject(e.Data); s != "" {
		ev.SetSubject(s)
	}
	if e.Correlation != "" {
		ev.SetExtension(CorrelationExtension, e.Correlation)
	}
	ev.SetExtension(SeqExtension, strconv.FormatInt(e.Seq, 10))
	data := e.Data
	if len(data) == 0 {
		data = json.RawMessage("null") // the log's JSON of an event without data
	}
	// A json.RawMessage, not a []byte: the SDK sends bytes as data_base64,
	// and JSON as data, the payload itself.
	if err := ev.SetData(event.ApplicationJSON, data); err != nil {
		return event.Event{}, &Error{ID: e.ID, Err: err}
	}
	if err := ev.Validate(); err != nil {
		return event.Event{}, &Error{ID: e.ID, Err: err}
	}
	return ev, nil
}
