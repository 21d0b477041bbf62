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
	"net/http"
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
	{"Budget/WritesAtTwiceTheBudgetForTenMinutesDelayNoChangePastTwoIntervals", budgetFloor},
	{"Budget/AStartWith50BindingsStaysWithinTheBudgetEveryMinute", budgetStart},
	{"Loops/ARuleAnsweringEveryChangeStopsAt20WritesAnHour", loops},
	{"Replicas/ThreeReplicasShare300BindingsEvenlyThroughKillsAndRestarts", replicasShare},
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
	p.w = writes.New(writes.Config{Ledger: s.Ledger, Log: s.Log, Connections: p.conns, Budget: p.bud, Metrics: m})
	p.fs = follow.New(follow.Config{
		Ledger: s.Ledger, Log: s.Log, Connections: p.conns, Budget: p.bud, Metrics: m, Logger: quiet, Holder: name,
	})
	t.Cleanup(p.fs.Stop)
	return p
}

// deliver takes a webhook delivery along the HTTP route's path (adapters/
// httpapi's webhook, ADR-0036): the signature checked with the credentials
// the followers last asked for, then the switch (always on here), then the
// followers of the project it names woken. A replica whose followers never
// asked for credentials verifies nothing and wakes nobody.
func (p *process) deliver(h http.Header, body []byte) {
	for _, b := range p.conns.Bindings() {
		tr, creds, ok := p.conns.Cached(b)
		if !ok || creds.WebhookSecret == "" {
			continue
		}
		if n, err := tr.Nudge(creds.WebhookSecret, h, body); err == nil && tr.Project() == n.Project {
			p.fs.Wake(b, n)
		}
	}
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
			p.deliver(h, body) // a replica that never polled refuses; the poll still comes
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
		id2 := scope.ChangedID(id, field, ledger.Canonical(field, cur), ledger.Canonical(field, after), cur.UpdatedAt)
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
		Ledger: s.Ledger, Log: s.Log, Budget: p.bud, Metrics: m,
		Connections: binding.NewConnections(clock.System{}, creds(), ops, binding.Binding{Tenant: tenant, Workspace: "builds", Connector: &faketracker.Connector{Fake: other}}),
	})
	return followed, other, p, m
}

// seen watches the log every second and answers when each event id first
// showed up in it; the func it answers second stops the watch and waits
// for it.
func seen(l eventlog.Log) (at func(id string) (time.Time, bool), stop func()) {
	var mu sync.Mutex
	first := map[string]time.Time{}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for after := int64(0); ; {
			evs, err := l.Read(context.Background(), tenant, workspace, after, 1000)
			if err == nil {
				mu.Lock()
				for _, e := range evs {
					if _, ok := first[e.ID]; !ok {
						first[e.ID] = time.Now()
					}
					after = e.Seq
				}
				mu.Unlock()
			}
			select {
			case <-quit:
				return
			case <-time.After(time.Second):
			}
		}
	}()
	return func(id string) (time.Time, bool) {
			mu.Lock()
			defer mu.Unlock()
			t, ok := first[id]
			return t, ok
		}, func() {
			close(quit)
			<-done
		}
}

// budgetFloor: a rule writes at twice the budget for ten minutes (filings
// in another project of the key, and edits of relayr's own items in the
// followed one) while a person changes the followed project every seven
// seconds. Writes are never held back, and the polls keep their floor: every
// change of the person's reaches the log within two poll intervals plus
// the debounce, once, and none of relayr's edits does.
func budgetFloor(t *testing.T, s Store) {
	followed, other, p, m := pressure(t, s, budget.DefaultLimit)
	var people, mine []string
	for i := range 20 {
		it, err := followed.PersonCreate(tracker.Draft{Title: fmt.Sprint("item ", i)})
		if err != nil {
			t.Fatal(err)
		}
		people = append(people, it.Ref.ID)
		key := fmt.Sprint("rule-", i)
		if _, err := p.w.EnsureItem(context.Background(), writes.EnsureParams{Tenant: tenant, Workspace: workspace, Key: key, Draft: tracker.Draft{Title: key}}); err != nil {
			t.Fatal(err)
		}
		mine = append(mine, key)
	}
	p.fs.Start(t.Context())
	time.Sleep(time.Minute)
	firstSeen, stop := seen(s.Log)
	defer stop()

	// The rule: 80 writes a minute, one in four an edit of its own items.
	writesDone := make(chan int, 1)
	go func() {
		n := 0
		for end := time.Now().Add(10 * time.Minute); time.Now().Before(end) && t.Context().Err() == nil; n++ {
			var err error
			if n%4 == 3 {
				key := mine[(n/4)%len(mine)]
				_, err = p.w.Update(context.Background(), writes.UpdateParams{Tenant: tenant, Workspace: workspace, Key: key, Patch: tracker.Patch{Title: new(fmt.Sprint(key, " edit ", n))}})
			} else {
				key := fmt.Sprint("build-", n)
				_, err = p.w.EnsureItem(context.Background(), writes.EnsureParams{Tenant: tenant, Workspace: "builds", Key: key, Draft: tracker.Draft{Title: key}})
			}
			if err != nil {
				t.Errorf("a write was held back: %v", err)
			}
			time.Sleep(time.Minute / 80)
		}
		writesDone <- n
	}()

	// The person: a change every seven seconds for the same ten minutes.
	type change struct {
		id string
		at time.Time
	}
	var changes []change
	for i := 0; i < 10*60/7; i++ {
		id := people[i%len(people)]
		from := mustSnapshot(followed, id)
		if err := followed.Retitle(context.Background(), id, fmt.Sprint("changed ", i)); err != nil {
			t.Fatal(err)
		}
		it := mustSnapshot(followed, id)
		changes = append(changes, change{scope.ChangedID(id, tracker.FieldTitle, ledger.Canonical(tracker.FieldTitle, from), ledger.Canonical(tracker.FieldTitle, it), from.UpdatedAt), time.Now()})
		time.Sleep(7 * time.Second)
	}
	n := <-writesDone
	time.Sleep(2 * time.Minute)

	bound := 2*follow.DefaultPollEvery + follow.DefaultDebounce
	worst := time.Duration(0)
	for _, c := range changes {
		at, ok := firstSeen(c.id)
		if !ok {
			t.Fatalf("a change made at %v never reached the log", c.at)
		}
		worst = max(worst, at.Sub(c.at))
	}
	t.Logf("writes=%d (%.0f a minute) changes=%d worst delay=%v", n, float64(n)/10, len(changes), worst)
	if worst > bound {
		t.Fatalf("a change reached the log %v after it was made, want within %v", worst, bound)
	}
	if got := len(readAll(t, s.Log)); got != len(changes) {
		t.Fatalf("%d events, want the %d changes once each and none of relayr's edits", got, len(changes))
	}
	if other.Calls(faketracker.MethodCreate) < n*3/4-1 {
		t.Fatalf("%d filings went of about %d, want every write to go", other.Calls(faketracker.MethodCreate), n*3/4)
	}
	if m.Get(metrics.Echoes) == 0 {
		t.Fatal("no echo was dropped: the rule's edits were never read back")
	}
}

// budgetStart: one replica starts following 50 projects under one key,
// each connection reading two things before its first poll. The budget
// paces every request, the connections' reads included, so no minute sees
// more than the budget; the polls stretch evenly to what the budget can
// carry, and every project is read within two of those intervals.
func budgetStart(t *testing.T, s Store) {
	const n = 50
	var bindings []binding.Binding
	var fakes []*faketracker.Tracker
	for i := range n {
		f := faketracker.New(faketracker.LikePlane, faketracker.WithProject(fmt.Sprint("proj-", i), "P"))
		if _, err := f.PersonCreate(tracker.Draft{Title: "first"}); err != nil {
			t.Fatal(err)
		}
		fakes = append(fakes, f)
		bindings = append(bindings, binding.Binding{Tenant: tenant, Workspace: fmt.Sprint("ws-", i), Connector: &faketracker.Connector{Fake: f, Reads: 2}})
	}
	p := newProcess(t, s, "replica", metrics.NewMemory(), budget.DefaultLimit, bindings...)
	// 50 bindings polling every 30 s need 100 requests a minute; the floor
	// may take 36 of the 40: each polls every 83 s.
	stretched := p.bud.Interval(tenant+"/"+kind, follow.DefaultPollEvery)
	if want := follow.DefaultPollEvery * 100 / 36; stretched != want {
		t.Fatalf("interval %v, want %v for %d bindings on a budget of %d", stretched, want, n, budget.DefaultLimit)
	}
	// Every request the key makes, as the budget's metered contexts see
	// them (the connection's reads and each call).
	var mu sync.Mutex
	var sent []time.Time
	probe := func() {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, time.Now())
	}
	for _, f := range fakes {
		f.OnRequest(probe)
	}
	for _, b := range bindings {
		b.Connector.(*faketracker.Connector).OnRead(probe)
	}
	var polls [n][]time.Time
	for i, f := range fakes {
		f.OnRequest(func() {
			mu.Lock()
			defer mu.Unlock()
			polls[i] = append(polls[i], time.Now())
		})
	}
	start := time.Now()
	p.fs.Start(t.Context())
	time.Sleep(15 * time.Minute)

	mu.Lock()
	defer mu.Unlock()
	worst := worstMinute(sent)
	if worst > budget.DefaultLimit {
		t.Fatalf("%d requests in one minute, want at most the budget's %d", worst, budget.DefaultLimit)
	}
	// The start ramps up: 150 requests (each first poll's two connection
	// reads and page) at the budget's pace take about four minutes; then
	// every project is polled every stretched interval, in turn.
	widest := time.Duration(0)
	for i := range polls {
		if len(polls[i]) == 0 || polls[i][0].Sub(start) > 5*time.Minute {
			t.Fatalf("project %d was first read at %v, want within the start's ramp", i, polls[i])
		}
		for j := 1; j < len(polls[i]); j++ {
			if polls[i][j].Sub(start) > 6*time.Minute {
				widest = max(widest, polls[i][j].Sub(polls[i][j-1]))
			}
		}
	}
	// The floor's polls fill the pacer exactly (the stretch makes what
	// they need its capacity), so a poll whose turn meets others' waits
	// behind them in its first-come queue: about a quarter of an interval
	// at the worst seen, a little over it in some orders of the polls'
	// timers (105 s against 104 s, 1 run in 8 or so under load). A third
	// keeps the bound on the spreading, not on that order.
	if widest > stretched+stretched/3 {
		t.Fatalf("a project waited %v between two polls, want about the stretched %v", widest, stretched)
	}
	t.Logf("requests=%d worst minute=%d interval=%v widest gap=%v", len(sent), worst, stretched, widest)
}

// worstMinute answers the most requests of sent, in the order they were
// sent, that fall within any one minute.
func worstMinute(sent []time.Time) int {
	worst := 0
	for i := range sent {
		j := i
		for j < len(sent) && sent[j].Sub(sent[i]) < time.Minute {
			j++
		}
		worst = max(worst, j-i)
	}
	return worst
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
		p.deliver(h, body)
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
