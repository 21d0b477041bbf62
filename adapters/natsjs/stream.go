package natsjs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// DefaultDuplicates is the duplicate window of a stream relayr creates when
// the lease is shorter: JetStream's own default.
const DefaultDuplicates = 2 * time.Minute

// Subjects answers what a stream must cover for relayr to publish t's
// events: everything under the prefix.
func Subjects(t Target) string { return t.Prefix + ".>" }

// CheckStream checks that t's stream exists, covers every subject relayr
// publishes on (<prefix>.>), and keeps a duplicate window at least as long
// as t.MinDuplicates (the lease: a replica that lost its lease may publish
// again within it, and the window is what drops the second publish). It
// creates a missing stream only when t.CreateStream says so. A stream that
// does not fit answers an error matching ErrStream that says what to
// change; one that can't be asked answers the broker's failure, classified.
// It answers the stream's info.
func CheckStream(ctx context.Context, js jetstream.JetStream, t Target) (*jetstream.StreamInfo, error) {
	st, err := js.Stream(ctx, t.Stream)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound) && t.CreateStream:
		st, err = js.CreateStream(ctx, jetstream.StreamConfig{
			Name:        t.Stream,
			Description: "relayr's events",
			Subjects:    []string{Subjects(t)},
			Storage:     jetstream.FileStorage,
			Retention:   jetstream.LimitsPolicy,
			Discard:     jetstream.DiscardOld,
			Duplicates:  max(t.MinDuplicates, DefaultDuplicates),
		})
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			st, err = js.Stream(ctx, t.Stream) // another replica made it first
		}
		if err != nil {
			return nil, Classify(fmt.Errorf("natsjs: creating stream %s: %w", t.Stream, err))
		}
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return nil, fmt.Errorf("%w: stream %s does not exist on %s; create it with subjects %q and a duplicate window of at least %s, or set create_stream = true",
			ErrStream, t.Stream, strings.Join(t.Servers, ","), Subjects(t), t.MinDuplicates)
	case err != nil:
		return nil, Classify(fmt.Errorf("natsjs: stream %s: %w", t.Stream, err))
	}
	info := st.CachedInfo()
	if err := Fits(info.Config, t); err != nil {
		return nil, err
	}
	return info, nil
}

// Fits says whether a stream's configuration takes t's events: an error
// matching ErrStream says what does not fit.
func Fits(c jetstream.StreamConfig, t Target) error {
	covered := false
	for _, s := range c.Subjects {
		if SubsetOf(Subjects(t), s) {
			covered = true
			break
		}
	}
	if !covered {
		return fmt.Errorf("%w: stream %s's subjects %q do not cover %q, where relayr publishes", ErrStream, t.Stream, c.Subjects, Subjects(t))
	}
	if c.Duplicates < t.MinDuplicates {
		return fmt.Errorf("%w: stream %s's duplicate window is %s, shorter than the lease %s: an event published again within the lease would be stored twice; set it to at least %s",
			ErrStream, t.Stream, c.Duplicates, t.MinDuplicates, t.MinDuplicates)
	}
	return nil
}

// SubsetOf reports whether every subject sub matches (it may end in '>',
// and hold '*') is matched by filter.
func SubsetOf(sub, filter string) bool {
	st, ft := strings.Split(sub, "."), strings.Split(filter, ".")
	for i, f := range ft {
		if f == ">" {
			return i < len(st)
		}
		if i >= len(st) {
			return false
		}
		switch s := st[i]; {
		case s == ">":
			return false
		case f == "*":
		case s == "*" || s != f:
			return false
		}
	}
	return len(st) == len(ft)
}
