package figures

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/relayr-go/relayr/apps/relayr/internal/config"
	"github.com/relayr-go/relayr/core/follow"
)

// deleter is an emulation whose tracker reports a person's deletion by
// webhook (Vikunja's task.deleted); Plane sends none, and its deletions
// are found by the sweep.
type deleter interface {
	emulation
	PersonDelete(id string) error
	// ForwardDeletions sends the emulation's deletion deliveries to url.
	ForwardDeletions(url string)
}

func (v *vikunja) PersonDelete(id string) error {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return err
	}
	return v.e.Person().Delete(n)
}

func (v *vikunja) ForwardDeletions(url string) {
	v.e.RegisterWebhook(v.project, url, webhookSecret, "task.deleted")
}

// BenchmarkDeletionToFeed measures, on real time, from a person's deletion
// of an item the follower has read to its tracker:item_removed (deleted:
// true) in the feed, read by a consumer long-polling GET …/events: the
// tracker's deletion delivery goes to relayr's webhook route, and the
// follower reads the one task at once after a quiet spell (polls every
// 30 s; see BenchmarkChangeToFeed for the debounce). Only trackers that
// report deletions are measured.
func BenchmarkDeletionToFeed(b *testing.B) {
	for _, tr := range emulations {
		b.Run(tr.name+"/webhook", func(b *testing.B) {
			emu, ok := tr.new(time.Now).(deleter)
			if !ok {
				b.Skip(tr.name + " sends no deletion webhook: its deletions wait for the sweep")
			}
			s, ids := feedService(b, emu, config.Timings{Debounce: config.Duration{Duration: quietDebounce}})
			emu.Forward(s.hookURL())
			emu.ForwardDeletions(s.hookURL())
			var after int64
			var took []time.Duration
			n := 0
			for b.Loop() {
				if n >= len(ids) {
					// More rounds than items read at the start: a person
					// files one more, and the follower reads it first.
					id, err := emu.PersonCreate("item " + strconv.Itoa(n))
					if err != nil {
						b.Fatal(err)
					}
					if err := s.awaitItemEvent(b.Context(), &after, id); err != nil {
						b.Fatal(err)
					}
					ids = append(ids, id)
				}
				id := ids[n]
				quietSpell(b)
				start := time.Now()
				if err := emu.PersonDelete(id); err != nil {
					b.Fatal(err)
				}
				if err := s.awaitRemoval(b, &after, id); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
				n++
			}
			reportLatency(b, took, "deletion")
		})
	}
}

// awaitRemoval reads the feed's next event, which must be the item's
// removal with deleted: true.
func (s *service) awaitRemoval(b *testing.B, after *int64, itemID string) error {
	if err := s.awaitItemEvent(b.Context(), after, itemID); err != nil {
		return err
	}
	evs, err := s.events(b.Context(), *after-1, 0)
	switch {
	case err != nil:
		return fmt.Errorf("reading the removal back: %w", err)
	case len(evs) == 0:
		return errors.New("the removal is no longer in the feed")
	}
	var d follow.Data
	if err := json.Unmarshal(evs[0].Data, &d); err != nil {
		return err
	}
	if evs[0].Type != follow.TypeItemRemoved || d.Deleted == nil || !*d.Deleted {
		return fmt.Errorf("%s %s, want a removal with deleted: true", evs[0].Type, evs[0].Data)
	}
	return nil
}
