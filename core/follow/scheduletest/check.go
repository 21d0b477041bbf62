package scheduletest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/core/follow"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
)

// drain ends a schedule: every key's filing answered (an in-doubt one
// resolved), every item read as it stands, and a sweep, with nothing
// interjected.
func (w *world) drain() {
	ctx := context.WithValue(w.ctx, quiet{}, true)
	w.inflight.Wait()
	synctest.Wait()
	w.note("drain")
	for _, name := range keyNames {
		w.mu.Lock()
		k := w.keys[name]
		w.mu.Unlock()
		if k == nil {
			continue
		}
		for try := 0; try < 8 && !k.isDone(w); try++ {
			_, err := w.reps[0].w.EnsureItem(ctx, writes.EnsureParams{Tenant: tenant, Workspace: workspace, Key: k.key, Draft: k.draft, Correlation: "run-" + k.key})
			if err == nil || writes.CodeOf(err) == writes.CodeDeleted {
				w.mu.Lock()
				k.done = true
				w.mu.Unlock()
				break
			}
			time.Sleep(5 * time.Second)
		}
		if !k.isDone(w) {
			w.fail("key %s was never answered", k.key)
		}
	}
	if w.nudging {
		w.reps[1].fs.Stop()
	}
	time.Sleep(follow.DefaultFilingBound + follow.DefaultLeaseTTL)
	synctest.Wait()
	for range 2 {
		w.pollDrain(ctx)
		time.Sleep(follow.DefaultSettleAfter + time.Second)
	}
	// A sweep finds what was deleted.
	time.Sleep(follow.DefaultSweepEvery)
	w.pollDrain(ctx)
	w.pollDrain(ctx)
}

func (k *keyLog) isDone(w *world) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return k.done
}

func (w *world) pollDrain(ctx context.Context) {
	if err := w.reps[0].fs.PollOnce(ctx, tenant, workspace); err != nil {
		w.fail("the drain's poll: %v", err)
	}
}

// fail fails the schedule, with its seed and its steps.
func (w *world) fail(format string, args ...any) {
	w.t.Helper()
	w.mu.Lock()
	steps := strings.Join(w.steps, "\n\t")
	w.mu.Unlock()
	w.t.Fatalf("seed %d (%s=%d plays it again): %s\nsteps:\n\t%s", w.seed, SeedVar, w.seed, fmt.Sprintf(format, args...), steps)
}

// check compares the feed with what happened.
func (w *world) check() {
	evs, err := w.mem.Read(context.Background(), tenant, workspace, 0, 1<<20)
	if err != nil {
		w.fail("reading the feed: %v", err)
	}
	byItem := map[string][]follow.Data{}
	types := map[string][]string{}
	for _, e := range evs {
		d, err := follow.DataOf(e)
		if err != nil {
			w.fail("event %s: %v", e.ID, err)
		}
		byItem[d.Item.ID] = append(byItem[d.Item.ID], d)
		types[d.Item.ID] = append(types[d.Item.ID], e.Type)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range w.order {
		it := w.items[id]
		w.checkItem(it, byItem[id], types[id])
	}
}

// point is what relayr knew of an item at one moment: its baseline, or a
// read it took in.
type point = read

func (w *world) checkItem(it *itemLog, data []follow.Data, types []string) {
	// The truth now.
	now, err := w.truth.Item(context.Background(), it.id)
	gone := errors.Is(err, tracker.ErrNotFound)
	if err != nil && !gone {
		w.failLocked("reading %s: %v", it.id, err)
	}
	var k *keyLog
	if it.key != "" {
		k = w.keys[it.key]
	}
	base := w.baseline(it, k)
	points := []*point{}
	if base != nil {
		points = append(points, base)
	}
	for _, r := range it.reads {
		if r.processed && (base == nil || r.seq > base.seq) {
			points = append(points, r)
		}
	}
	w.checkUnread(it, points)
	if !gone && len(points) > 0 {
		if last := points[len(points)-1]; !sameValues(last.values, valuesOf(now)) {
			w.failLocked("%s (%s) was never read as it stands: last read %v, holds %v", it.id, it.key, last.values, valuesOf(now))
		}
	}
	if !gone && len(points) == 0 {
		w.failLocked("%s (%s) was never read", it.id, it.key)
	}

	// Created: a person's item once, relayr's never.
	created, removed := 0, 0
	for _, t := range types {
		switch t {
		case follow.TypeItemCreated:
			created++
		case follow.TypeItemRemoved:
			removed++
		}
	}
	switch {
	case it.key != "" && created > 0:
		w.failLocked("relayr's item %s (%s) was published as created", it.id, it.key)
	case it.key == "" && len(points) > 0 && created != 1:
		w.failLocked("a person's item %s was published as created %d times, want once", it.id, created)
	case it.key == "" && created > 1:
		w.failLocked("a person's item %s was published as created %d times", it.id, created)
	}
	if it.key == "" && created == 1 {
		w.tally.creations++
	}
	// Removed: an item deleted once, a live one never.
	switch {
	case gone && len(points) > 0 && removed != 1:
		w.failLocked("%s (%s) was deleted and published as removed %d times, want once", it.id, it.key, removed)
	case !gone && removed > 0:
		w.failLocked("%s (%s) stands and was published as removed %d times", it.id, it.key, removed)
	}
	if gone && removed == 1 {
		w.tally.removals++
	}
	// Comments: a person's once, relayr's never.
	for _, body := range it.personBodies {
		n := 0
		for i, d := range data {
			if types[i] == follow.TypeItemCommented && d.Comment != nil && strings.Contains(d.Comment.Body, body) {
				n++
			}
		}
		if n > 1 || (n == 0 && !gone) {
			w.failLocked("the person's comment %q on %s (%s) was published %d times, want once", body, it.id, it.key, n)
		}
		w.tally.comments++
	}
	for _, body := range it.relayrBodies {
		for i, d := range data {
			if types[i] == follow.TypeItemCommented && d.Comment != nil && strings.Contains(d.Comment.Body, body) {
				w.failLocked("relayr's comment %q on %s was published", body, it.id)
			}
		}
	}
	// Changes: each field's published values are the person's changes,
	// each once and in order; every change a read could see is among them.
	for _, f := range follow.Fields {
		var published []string
		for i, d := range data {
			if types[i] == follow.TypeItemChanged && d.Field == f {
				published = append(published, string(d.New))
				if string(d.Old) == string(d.New) {
					w.failLocked("%s (%s): a change of %s from %s to itself", it.id, it.key, f, d.Old)
				}
			}
		}
		var persons []string
		for _, c := range it.sets[f] {
			if c.person {
				persons = append(persons, c.value)
			}
		}
		if !subsequence(published, persons) {
			w.failLocked("%s (%s): %s published %v, not each once among the person's changes %v (relayr's own, or one twice)",
				it.id, it.key, f, published, persons)
		}
		required := w.required(it, f, points)
		for _, v := range required {
			if count(published, v) < count(required, v) {
				w.failLocked("%s (%s): the person's change of %s to %s, which a read saw, was not published (published %v)",
					it.id, it.key, f, v, published)
			}
		}
		w.tally.required += len(required)
		w.tally.published += len(published)
	}
}

// baseline answers what relayr knew of an item first, as the schedule
// saw it: for relayr's item, the tracker's answer to its create, or, its
// answer lost, the draft's values as the tracker held them and the item as
// found for the rest (exception: a person's change to a field the draft
// left unset, made before relayr found the item, is its baseline). Nil
// for a person's item (its first read is), and for relayr's item whose
// filing left no snapshot (exception: a filing left unrecorded is read as
// it stands).
func (w *world) baseline(it *itemLog, k *keyLog) *point {
	if k == nil || it.filed == nil {
		return nil
	}
	// Known from the create on (its seq), though saved later.
	b := &point{seq: k.createdSeq, version: it.filed.version, values: map[string]string{}, processed: true, baseline: true}
	switch {
	case k.answered && k.created != nil:
		b.values = valuesOf(*k.created)
	case k.created != nil && k.found != nil:
		set := draftFields(k.draft)
		for _, f := range follow.Fields {
			if set[f] {
				b.values[f] = ledger.Canonical(f, *k.created)
			} else {
				b.values[f] = ledger.Canonical(f, *k.found)
			}
		}
	default:
		b.values = it.filed.values
	}
	return b
}

func draftFields(d tracker.Draft) map[string]bool {
	return map[string]bool{
		tracker.FieldTitle: true, tracker.FieldDescription: true,
		tracker.FieldState: d.State != "", tracker.FieldLabels: len(d.Labels) > 0,
	}
}

// required answers the values of a field a person set that a read saw
// and that differ from what relayr knew before: by level, each must be
// published. relayr knew what it last read, and a value of its own the
// tracker answered it held after that read's version and before this
// one's (ledger.HeldBetween). A value equal to one relayr recorded and
// no read showed since is allowed either way (exception: an echo by
// value).
func (w *world) required(it *itemLog, f string, points []*point) []string {
	var out []string
	seen := map[string]bool{}
	for i := 1; i < len(points); i++ {
		p, c := points[i-1], points[i]
		old := p.values[f]
		var best *landing
		for j := range it.landings {
			l := &it.landings[j]
			v, ok := l.values[f]
			if !ok || v == "" || l.version.IsZero() || !l.version.After(p.version) || !l.version.Before(c.version) || l.seq > c.seq {
				continue
			}
			if best == nil || l.seq > best.seq {
				best = l
			}
		}
		if best != nil {
			old = best.values[f]
		}
		cur := c.values[f]
		if cur == old {
			continue
		}
		setter := lastSet(it.sets[f], c.seq)
		if setter == nil || !setter.person || setter.value != cur {
			continue
		}
		if w.possiblyPending(it, f, cur, c.seq, points) {
			w.tally.ambiguous++
			continue
		}
		// A change's id names the version and the value it is from
		// (follow.Scope.ChangedID): a second change of the field to the
		// same value from the same version and value is one event
		// (exception: two such changes within one tick of the tracker's
		// clock, which it cannot tell apart).
		id := fmt.Sprint(p.version.UnixNano(), "\x00", p.values[f], "\x00", cur)
		if seen[id] {
			w.tally.ambiguous++
			continue
		}
		seen[id] = true
		out = append(out, cur)
	}
	return out
}

func lastSet(sets []change, before int) *change {
	var out *change
	for i := range sets {
		if sets[i].seq < before {
			out = &sets[i]
		}
	}
	return out
}

// possiblyPending reports whether v may still be one of relayr's values for
// the field when a read at seq took it in: relayr recorded it, and no read
// taken in since showed it (which would have consumed it).
func (w *world) possiblyPending(it *itemLog, f, v string, seq int, points []*point) bool {
	var recs []recorded
	recs = append(recs, it.recorded[f]...)
	if k := w.keys[it.key]; k != nil {
		recs = append(recs, k.early[f]...)
	}
	for _, r := range recs {
		if r.value != v || r.seq >= seq {
			continue
		}
		consumed := false
		for _, p := range points {
			if !p.baseline && p.seq > r.seq && p.seq < seq && p.values[f] == v {
				consumed = true
				break
			}
		}
		if !consumed {
			return true
		}
	}
	return false
}

// checkUnread fails the schedule on a read the followers left unread that
// they may not leave: one after the item's first snapshot was saved that
// showed something new.
func (w *world) checkUnread(it *itemLog, points []*point) {
	for _, r := range it.reads {
		if r.processed {
			continue
		}
		w.tally.unreadReads++
		if it.key != "" && (it.filed == nil || r.seq < it.filed.seq) {
			continue // relayr's item whose filing has not left its snapshot: it may show it half made
		}
		if it.deleted > 0 {
			// Deleted while its page was read; or before it, listed by a
			// search that lags (Jira's lists a deleted issue for its lag):
			// its removal is what is published.
			continue
		}
		var prev *point
		for _, p := range points {
			if p.seq < r.seq {
				prev = p
			}
		}
		if prev == nil {
			continue
		}
		if sameValues(prev.values, r.values) && prev.version.Equal(r.version) || r.version.Before(prev.version) {
			continue // nothing new, or an older version
		}
		w.failLocked("a read of %s (%s) at %d showing %v (version %v) was left unread", it.id, it.key, r.seq, r.values, r.version)
	}
}

// failLocked is fail with w.mu held.
func (w *world) failLocked(format string, args ...any) {
	w.t.Helper()
	steps := strings.Join(w.steps, "\n\t")
	w.t.Fatalf("seed %d (%s=%d plays it again): %s\nsteps:\n\t%s", w.seed, SeedVar, w.seed, fmt.Sprintf(format, args...), steps)
}

// subsequence reports whether sub is a subsequence of seq.
func subsequence(sub, seq []string) bool {
	i := 0
	for _, v := range seq {
		if i < len(sub) && sub[i] == v {
			i++
		}
	}
	return i == len(sub)
}

func count(vs []string, v string) int {
	n := 0
	for _, x := range vs {
		if x == v {
			n++
		}
	}
	return n
}
