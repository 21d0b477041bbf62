// Package followtest is the tracker followers' scenarios, as a suite each
// ledger runs against itself (memory, SQLite, PostgreSQL): three replicas
// over one ledger while a scripted person works and relayr writes in
// between, the request budget shared with writes, and the loop cap.
//
// Run takes a factory, never a shared store: each scenario builds its own,
// inside a testing/synctest bubble, so the factory's store must start no
// goroutine that outlives the test (close it in t.Cleanup). Every scenario
// runs on virtual time with clock.System; none waits for real time.
package followtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/core/binding"
	"github.com/relayr-go/relayr/core/budget"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/faketracker"
	"github.com/relayr-go/relayr/core/follow"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/metrics"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
)

// Store is one ledger and the event log beside it; a store usually
// implements both.
type Store struct {
	Ledger ledger.Ledger
	Log    eventlog.Log
}

// NewStore makes a fresh, empty store for one scenario.
type NewStore func(t *testing.T) Store

// Run runs every scenario against stores made by newStore, one per
// scenario.
func Run(t *testing.T, newStore NewStore) {
	t.Helper()
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { s.run(t, newStore(t)) })
		})
	}
}

var scenarios = []struct {
	name string
	run  func(t *testing.T, s Store)
}{
	{"ThreeReplicasPublishEveryChangeOnceAndNoneOfRelayrs", threeReplicas},
	{"Budget/WritesTaking35OfThe40SlowPollsAndLoseNothing", budgetSlowsPolls},
	{"Budget/WritesTakingMoreThan40StillGoAndPollsWait", budgetWritesOver40},
	{"Loops/ARuleAnsweringEveryChangeStopsAt20WritesAnHour", loops},
}

const (
	tenant    = "acme"
	workspace = "ops"
	project   = "proj"
	kind      = "fake"
	secret    = "whsec"
)

var quiet = slog.New(slog.DiscardHandler)

// scope is the followed project, as ids name it.
var scope = follow.Scope{Tenant: tenant, Workspace: workspace, Project: project, Tracker: kind}

func creds() tracker.StaticCredentials {
	return tracker.StaticCredentials{tenant + "/" + kind: {Token: "tk", WebhookSecret: secret}}
}

// process is one replica: its own connections, budget, writer and
// followers, over the shared store and tracker.
type process struct {
	name  string
	conns *binding.Connections
	bud   *budget.Budget
	w     *writes.Writer
	fs    *follow.Followers
}

func newProcess(t *testing.T, s Store, name string, m metrics.Metrics, limit int, bindings ...binding.Binding) *process {
	p := &process{name: name, bud: budget.New(clock.System{}, limit)}
	p.conns = binding.NewConnections(clock.System{}, creds(), bindings...)
	p.w = writes.New(writes.Config{Ledger: s.Ledger, Connections: p.conns, Budget: p.bud, Metrics: m})
	p.fs = follow.New(follow.Config{
		Ledger: s.Ledger, Log: s.Log, Connections: p.conns, Budget: p.bud, Metrics: m, Logger: quiet, Holder: name,
	})
	t.Cleanup(p.fs.Stop)
	return p
}

// waitFor lets virtual time pass a second at a time until cond holds, or
// fails the test after limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	waitEvery(t, time.Second, limit, what, cond)
}

func waitEvery(t *testing.T, step, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", limit, what)
		}
		time.Sleep(step)
	}
}

func readAll(t *testing.T, l eventlog.Log) []eventlog.Event {
	t.Helper()
	var out []eventlog.Event
	for {
		evs, err := l.Read(context.Background(), tenant, workspace, int64(len(out)), 1000)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, evs...)
		if len(evs) < 1000 {
			return out
		}
	}
}

// expected is what the script made happen: event ids with a description.
type expected struct {
	mu    sync.Mutex
	ids   map[string]string
	chain map[string]string // id -> correlation the event must carry
}

func (x *expected) add(id, what, correlation string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.ids[id] = what
	x.chain[id] = correlation
}

func inLog(t *testing.T, l eventlog.Log, id string) bool {
	for _, e := range readAll(t, l) {
		if e.ID == id {
			return true
		}
	}
	return false
}

// threeReplicas: three processes, each with its own followers and writer,
// over one ledger and one tracker, while a person makes a few hundred
// changes and comments, relayr writes in between, and replicas stop and
// start at random. Every change of the script is published exactly once,
// none of relayr's writes is, and nothing twice.
func threeReplicas(t *testing.T, s Store) {
	const steps = 300
	rng := rand.New(rand.NewPCG(2026, 10)) //nolint:gosec // a repeatable script, not a secret
	fake := faketracker.New(faketracker.LikePlane, faketracker.WithProject(project, "OPS"))
	b := binding.Binding{Tenant: tenant, Workspace: workspace, Connector: &faketracker.Connector{Fake: fake}}
	m := metrics.NewMemory()
	ctx := t.Context()
	want := &expected{ids: map[string]string{}, chain: map[string]string{}}

	// Before any follower: items a person and relayr filed, seeded silently.
	var people, keys []string
	boot := newProcess(t, s, "boot", m, 1000, b)
	for i := range 5 {
		it, err := fake.PersonCreate(tracker.Draft{Title: fmt.Sprint("person ", i), State: tracker.Todo})
		if err != nil {
			t.Fatal(err)
		}
		people = append(people, it.Ref.ID)
		key := fmt.Sprint("k-", i)
		if _, err := boot.w.EnsureItem(ctx, writes.EnsureParams{Tenant: tenant, Workspace: workspace, Key: key, Draft: tracker.Draft{Title: "filed " + key}, Correlation: "run-" + key}); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key)
	}
	time.Sleep(time.Second)

	generation := 0
	var replicas [3]*process
	startReplica := func(i int) {
		generation++
		replicas[i] = newProcess(t, s, fmt.Sprintf("replica-%d-%d", i, generation), m, 1000, b)
		replicas[i].fs.Start(ctx)
	}
	for i := range replicas {
		startReplica(i)
	}
	time.Sleep(time.Second)
	itemOfKey := map[string]string{}
	for _, k := range keys {
		itemOfKey[k] = fake.ItemsByKey(k)[0].Ref.ID
	}
	keyOfItem := func(id string) string {
		for k, v := range itemOfKey {
			if v == id {
				return k
			}
		}
		return ""
	}
	correlationOf := func(id string) string {
		if k := keyOfItem(id); k != "" {
			return "run-" + k
		}
		return ""
	}
	all := func() []string { return append(slices.Clone(people), sortedValues(itemOfKey)...) }
	published := func(id, what string) {
		t.Helper()
		if rng.IntN(2) == 0 {
			p := replicas[rng.IntN(len(replicas))]
			h, body := fake.Delivery(secret)
			_ = p.fs.Deliver(ctx, tenant, kind, h, body) // a replica that never polled refuses; the poll still comes
		}
		waitFor(t, 5*time.Minute, "never published: "+what, func() bool { return inLog(t, s.Log, id) })
	}
	consumed := func(key string) {
		t.Helper()
		waitFor(t, 5*time.Minute, "relayr's write to "+key+" never read back", func() bool {
			row, err := s.Ledger.Lookup(ctx, ledger.Key{Tenant: tenant, Workspace: workspace, Kind: ledger.KindItem, Key: key})
			return err == nil && len(row.Values) == 0
		})
	}
	personChange := func(id string) {
		t.Helper()
		cur, _, _ := fake.Snapshot(id)
		var p tracker.Patch
		var field string
		switch rng.IntN(4) {
		case 0:
			p.Title, field = new(fmt.Sprintf("person title %d", rng.IntN(1e6))), tracker.FieldTitle
		case 1:
			p.Description, field = new(fmt.Sprintf("person body %d", rng.IntN(1e6))), tracker.FieldDescription
		case 2:
			st := tracker.States[rng.IntN(len(tracker.States))]
			for st == cur.State {
				st = tracker.States[rng.IntN(len(tracker.States))]
			}
			p.State, field = &st, tracker.FieldState
		default:
			p.Labels, field = &[]string{fmt.Sprint("l", rng.IntN(1e6)), "person"}, tracker.FieldLabels
		}
		if err := fake.Edit(id, p); err != nil {
			t.Fatal(err)
		}
		after, _, _ := fake.Snapshot(id)
		// A change's id names the version it is from: the one the
		// followers last read, which the script waited for.
		id2 := scope.ChangedID(id, field, writes.Canonical(field, after), cur.UpdatedAt)
		what := fmt.Sprintf("%s of %s", field, id)
		want.add(id2, what, correlationOf(id))
		published(id2, what)
	}

	for step := range steps {
		time.Sleep(time.Duration(1+rng.IntN(3)) * time.Second)
		w := replicas[rng.IntN(len(replicas))].w
		switch r := rng.IntN(100); {
		case r < 40:
			personChange(all()[rng.IntN(len(all()))])
		case r < 60:
			id := all()[rng.IntN(len(all()))]
			if err := fake.PersonComment(ctx, id, fmt.Sprint("comment at step ", step)); err != nil {
				t.Fatal(err)
			}
			cs := fake.PersonComments(id)
			cid := scope.CommentedID(cs[len(cs)-1].ID)
			want.add(cid, "comment on "+id, correlationOf(id))
			published(cid, "comment on "+id)
		case r < 67:
			it, err := fake.PersonCreate(tracker.Draft{Title: fmt.Sprint("new by a person at ", step), State: tracker.Backlog})
			if err != nil {
				t.Fatal(err)
			}
			people = append(people, it.Ref.ID)
			cid := scope.CreatedID(it.Ref.ID)
			want.add(cid, "creation of "+it.Ref.ID, "")
			published(cid, "creation of "+it.Ref.ID)
		case r < 75:
			key := fmt.Sprint("k-", len(keys))
			res, err := w.EnsureItem(ctx, writes.EnsureParams{Tenant: tenant, Workspace: workspace, Key: key, Draft: tracker.Draft{Title: "filed " + key, Labels: []string{"ci"}}, Correlation: "run-" + key})
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, key)
			itemOfKey[key] = res.Item.Ref.ID
			consumed(key)
		case r < 88:
			key := keys[rng.IntN(len(keys))]
			patch := tracker.Patch{Title: new(fmt.Sprintf("relayr title %d", rng.IntN(1e6)))}
			if rng.IntN(2) == 0 {
				patch = tracker.Patch{State: new(tracker.States[rng.IntN(len(tracker.States))])}
			}
			_, err := w.Update(ctx, writes.UpdateParams{Tenant: tenant, Workspace: workspace, Key: key, Patch: patch, Correlation: "run-" + key})
			if err != nil && !errors.Is(err, writes.ErrLoop) {
				t.Fatal(err)
			}
			consumed(key)
		case r < 94:
			key := keys[rng.IntN(len(keys))]
			if _, err := w.Comment(ctx, writes.CommentParams{Tenant: tenant, Workspace: workspace, ItemKey: key, Key: fmt.Sprint("c-", step), Body: "relayr says", Correlation: "run-" + key}); err != nil && !errors.Is(err, writes.ErrLoop) {
				t.Fatal(err)
			}
		default:
			i := rng.IntN(len(replicas))
			replicas[i].fs.Stop()
			time.Sleep(time.Duration(rng.IntN(40)) * time.Second)
			startReplica(i)
		}
	}

	// Removals: only the daily sweep finds them. Let the followers read
	// relayr's last comments first, so each item's last read is its last
	// change.
	time.Sleep(2 * time.Minute)
	removed := []string{itemOfKey[keys[0]], itemOfKey[keys[len(keys)-1]], people[0], people[len(people)-1]}
	for _, id := range removed {
		last, _, _ := fake.Snapshot(id)
		if err := fake.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
		rid := scope.RemovedID(id, last.UpdatedAt)
		want.add(rid, "removal of "+id, correlationOf(id))
	}
	waitEvery(t, time.Minute, 25*time.Hour, "the sweep found no removal", func() bool {
		for _, id := range removed {
			if !inLog(t, s.Log, scope.RemovedID(id, mustSnapshot(fake, id).UpdatedAt)) {
				return false
			}
		}
		return true
	})
	time.Sleep(time.Minute)

	// Compare the log with the script.
	got := readAll(t, s.Log)
	seen := map[string]int{}
	for _, e := range got {
		seen[e.ID]++
		what, ok := want.ids[e.ID]
		if !ok {
			t.Errorf("published what the script never did: %s %s", e.Type, e.Data)
			continue
		}
		if c := want.chain[e.ID]; e.Correlation != c {
			t.Errorf("%s: correlation %q, want %q", what, e.Correlation, c)
		}
	}
	for id, what := range want.ids {
		if seen[id] != 1 {
			t.Errorf("%s published %d times, want once", what, seen[id])
		}
	}
	if len(want.ids) < 150 {
		t.Fatalf("the script made only %d changes", len(want.ids))
	}
	if generation <= 3 {
		t.Fatal("no replica was restarted")
	}
	t.Logf("%d steps, %d events, %d replica generations, %v echoes dropped", steps, len(got), generation, m.Get(metrics.Echoes))
}

func mustSnapshot(f *faketracker.Tracker, id string) tracker.Item {
	it, _, _ := f.Snapshot(id)
	return it
}

func sortedValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// pressure binds a second workspace of the tenant to another project, whose
// writes share the tenant's key and so its budget.
func pressure(t *testing.T, s Store, limit int) (followed, other *faketracker.Tracker, p *process, m *metrics.Memory) {
	followed = faketracker.New(faketracker.LikePlane, faketracker.WithProject(project, "OPS"))
	other = faketracker.New(faketracker.LikePlane, faketracker.WithProject("other", "OTH"))
	m = metrics.NewMemory()
	ops := binding.Binding{Tenant: tenant, Workspace: workspace, Connector: &faketracker.Connector{Fake: followed}}
	p = newProcess(t, s, "replica", m, limit, ops)
	// The writer knows both workspaces; the followers only the bound one.
	p.w = writes.New(writes.Config{
		Ledger: s.Ledger, Budget: p.bud, Metrics: m,
		Connections: binding.NewConnections(clock.System{}, creds(), ops, binding.Binding{Tenant: tenant, Workspace: "builds", Connector: &faketracker.Connector{Fake: other}}),
	})
	return followed, other, p, m
}

// writeFor files perMinute items a minute in the other workspace for d,
// spread evenly, and answers how many it filed; a write is never held back.
func writeFor(t *testing.T, p *process, perMinute int, d time.Duration) (done chan int) {
	done = make(chan int, 1)
	ctx := t.Context() // ends when the test does, failed or not
	go func() {
		n := 0
		gap := time.Minute / time.Duration(perMinute)
		for end := time.Now().Add(d); time.Now().Before(end) && ctx.Err() == nil; {
			key := fmt.Sprint("build-", n)
			_, err := p.w.EnsureItem(context.Background(), writes.EnsureParams{Tenant: tenant, Workspace: "builds", Key: key, Draft: tracker.Draft{Title: key}})
			if err != nil {
				t.Errorf("a write was held back: %v", err)
			}
			n++
			select {
			case <-time.After(gap):
			case <-ctx.Done():
			}
		}
		done <- n
	}()
	return done
}

// personChanges retitles each item once, one every gap, and answers the ids
// of the events they must publish.
func personChanges(t *testing.T, f *faketracker.Tracker, items []string, gap time.Duration) []string {
	var ids []string
	for i, id := range items {
		title := fmt.Sprint("changed ", i)
		from := mustSnapshot(f, id)
		if err := f.Retitle(context.Background(), id, title); err != nil {
			t.Fatal(err)
		}
		it := mustSnapshot(f, id)
		ids = append(ids, scope.ChangedID(id, tracker.FieldTitle, writes.Canonical(tracker.FieldTitle, it), from.UpdatedAt))
		time.Sleep(gap)
	}
	return ids
}

func pollRequests(f *faketracker.Tracker) int {
	return f.Calls(faketracker.MethodItems) + f.Calls(faketracker.MethodComments)
}

func budgetSlowsPolls(t *testing.T, s Store) {
	followed, other, p, _ := pressure(t, s, budget.DefaultLimit)
	var items []string
	for i := range 60 {
		it, err := followed.PersonCreate(tracker.Draft{Title: fmt.Sprint("item ", i)})
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, it.Ref.ID)
	}
	p.fs.Start(t.Context())
	time.Sleep(time.Second)
	before := pollRequests(followed)
	done := writeFor(t, p, 35, 10*time.Minute)
	ids := personChanges(t, followed, items, 10*time.Second)
	n := <-done
	during := pollRequests(followed) - before
	// Writes took 35 of each minute's 40: the polls had five, beside what
	// the minute before the writes began left in the sliding window.
	if during > 5*10+budget.DefaultLimit {
		t.Fatalf("polls made %d requests in 10 minutes beside 35 writes a minute, want at most the 5 a minute left (and the first window's)", during)
	}
	if missing := notIn(t, s.Log, ids); len(missing) == 0 {
		t.Fatalf("every change was read while writes took 35 a minute: the polls did not slow down")
	}
	waitFor(t, 30*time.Minute, "changes lost once the writes stopped", func() bool { return len(notIn(t, s.Log, ids)) == 0 })
	if got := len(readAll(t, s.Log)); got != len(ids) {
		t.Fatalf("%d events, want the %d changes once each", got, len(ids))
	}
	if other.Calls(faketracker.MethodCreate) != n {
		t.Fatalf("%d of %d writes went", other.Calls(faketracker.MethodCreate), n)
	}
}

func budgetWritesOver40(t *testing.T, s Store) {
	followed, other, p, _ := pressure(t, s, budget.DefaultLimit)
	var items []string
	for i := range 10 {
		it, err := followed.PersonCreate(tracker.Draft{Title: fmt.Sprint("item ", i)})
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, it.Ref.ID)
	}
	p.fs.Start(t.Context())
	time.Sleep(time.Second)
	done := writeFor(t, p, 45, 5*time.Minute)
	time.Sleep(time.Minute) // the writes fill the minute
	before := pollRequests(followed)
	ids := personChanges(t, followed, items, 10*time.Second)
	time.Sleep(2 * time.Minute) // still inside the five minutes of writes
	if got := pollRequests(followed) - before; got != 0 {
		t.Fatalf("polls made %d requests while writes took more than the budget, want them to wait", got)
	}
	n := <-done
	if other.Calls(faketracker.MethodCreate) != n || n < 45*5-2 {
		t.Fatalf("%d writes went of %d, want every write to go", other.Calls(faketracker.MethodCreate), n)
	}
	waitFor(t, 10*time.Minute, "changes lost once the writes stopped", func() bool { return len(notIn(t, s.Log, ids)) == 0 })
	if got := len(readAll(t, s.Log)); got != len(ids) {
		t.Fatalf("%d events, want the %d changes once each", got, len(ids))
	}
}

func notIn(t *testing.T, l eventlog.Log, ids []string) []string {
	have := map[string]bool{}
	for _, e := range readAll(t, l) {
		have[e.ID] = true
	}
	var out []string
	for _, id := range ids {
		if !have[id] {
			out = append(out, id)
		}
	}
	return out
}

// loops: a rule answers every change of an item with a write, and a
// person's automation in the tracker answers every write with a change. The
// cap ends it: 20 writes by relayr to the item within the hour, the next one
// refused as tracker_loop, and counted.
func loops(t *testing.T, s Store) {
	fake := faketracker.New(faketracker.LikePlane, faketracker.WithProject(project, "OPS"))
	b := binding.Binding{Tenant: tenant, Workspace: workspace, Connector: &faketracker.Connector{Fake: fake}}
	m := metrics.NewMemory()
	p := newProcess(t, s, "replica", m, 1000, b)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	res, err := p.w.EnsureItem(ctx, writes.EnsureParams{Tenant: tenant, Workspace: workspace, Key: "incident", Draft: tracker.Draft{Title: "Incident", State: tracker.Todo}, Correlation: "run-1"})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Item.Ref.ID
	p.fs.Start(ctx)
	start := time.Now()

	// The tracker sends a webhook for every change, relayr's included;
	// the person's automation reopens whatever relayr closes, a few seconds
	// after it hears of it.
	webhook := func() {
		h, body := fake.Delivery(secret)
		_ = p.fs.Deliver(ctx, tenant, kind, h, body)
	}
	wg.Go(func() {
		for ctx.Err() == nil {
			time.Sleep(time.Second)
			if it := mustSnapshot(fake, id); it.State == tracker.Done {
				webhook()
				time.Sleep(5 * time.Second)
				_ = fake.SetState(id, tracker.Todo)
				webhook()
			}
		}
	})
	// The rule closes the item on every change it hears of.
	var loopErr error
	writesOK := 0
	wg.Go(func() {
		var after int64
		for ctx.Err() == nil && loopErr == nil {
			time.Sleep(time.Second)
			evs, err := s.Log.Read(ctx, tenant, workspace, after, 100)
			if err != nil {
				return
			}
			for _, e := range evs {
				after = e.Seq
				if e.Type != follow.TypeItemChanged {
					continue
				}
				_, err := p.w.Update(ctx, writes.UpdateParams{Tenant: tenant, Workspace: workspace, Key: "incident", Patch: tracker.Patch{State: new(tracker.Done)}, Correlation: e.Correlation})
				if err != nil {
					loopErr = err
					break
				}
				writesOK++
			}
		}
	})
	// A person's edit starts it.
	time.Sleep(time.Second)
	if err := fake.Retitle(ctx, id, "Incident: still broken"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Hour, "the loop never hit the cap", func() bool {

		return m.Get(metrics.Loops) > 0
	})
	elapsed := time.Since(start)
	time.Sleep(5 * time.Minute)
	cancel()
	wg.Wait()

	if writes.CodeOf(loopErr) != writes.CodeLoop {
		t.Fatalf("the rule's write failed with %v, want tracker_loop", loopErr)
	}
	// The filing is the first of the 20 writes the cap counts.
	if writesOK != 19 || fake.Calls(faketracker.MethodUpdate) != 19 {
		t.Fatalf("%d updates succeeded, %d sent; want 19 after the filing, 20 writes in all", writesOK, fake.Calls(faketracker.MethodUpdate))
	}
	if elapsed >= time.Hour {
		t.Fatalf("the cap took %v, want it within the hour", elapsed)
	}
	if m.Get(metrics.Loops) != 1 {
		t.Fatalf("loops counted %v, want 1", m.Get(metrics.Loops))
	}
	for _, e := range readAll(t, s.Log) {
		d, _ := follow.DataOf(e)
		if strings.Contains(string(d.New), "done") {
			t.Fatalf("relayr's own write was published: %s", e.Data)
		}
		if e.Correlation != "run-1" {
			t.Fatalf("a change on the run's item left its chain: %q", e.Correlation)
		}
	}
}
