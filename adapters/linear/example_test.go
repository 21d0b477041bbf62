package linear_test

import (
	"context"
	"fmt"
	"time"

	"github.com/relayr-go/relayr/adapters/linear"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/linearemu"
)

// Filing an agent's finding once by key: the issue's id is derived from
// the key, so a retried create cannot make a second issue, and a re-run
// finds the first by that id in one read. Here against the emulation
// instead of a Linear workspace.
func Example() {
	clock := linearemu.NewClock(time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC))
	emu, srv := linearemu.NewServer(linearemu.Options{Now: clock.Now})
	defer srv.Close()
	bot := emu.AddUser("agent bot", true)
	key := emu.AddKey(bot)
	emu.AddTeam("ENG", "Engineering")

	connector, err := linear.NewConnector(linear.Config{URL: srv.URL + "/graphql", Team: "ENG", Client: srv.Client(), Now: clock.Now})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	tr, err := connector.Connect(ctx, tracker.Credentials{Token: key}, tracker.Source{Tenant: "acme", Workspace: "agents"})
	if err != nil {
		fmt.Println(err)
		return
	}
	k := "agent/review-42/finding-3"
	made, err := tr.Create(ctx, k, tracker.Draft{Title: "Unchecked error in the parser", Labels: []string{"agent"}, State: tracker.Started})
	if err != nil {
		fmt.Println(err)
		return
	}
	// The agent's retry of the same call: the create is the look-up.
	_, again := tr.Create(ctx, k, tracker.Draft{Title: "Unchecked error in the parser"})
	found, err := tr.Find(ctx, k)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(made.Ref.Name, found.Ref.ID == made.Ref.ID, found.Labels, found.State, again != nil)
	// Output: ENG-1 true [agent] started true
}
