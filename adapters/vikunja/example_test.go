package vikunja_test

import (
	"context"
	"fmt"
	"time"

	"github.com/relayr-go/relayr/adapters/vikunja"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/vikunjaemu"
)

// Filing an item once by key, and finding it again by the same key, here
// against the emulation instead of a live Vikunja.
func Example() {
	clock := vikunjaemu.NewClock(time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC))
	emu, srv := vikunjaemu.NewServer(vikunjaemu.Options{Now: clock.Now})
	defer srv.Close()
	project := emu.CreateProject("Operations", "OPS")

	connector := vikunja.Connector{BaseURL: srv.URL, Project: project}
	tr, err := connector.Connect(context.Background(), tracker.Credentials{Token: emu.Token},
		tracker.Source{Tenant: "acme", Workspace: "ops"})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	made, err := tr.Create(ctx, "dead-letter/nightly", tracker.Draft{Title: "Nightly job failed", Labels: []string{"relayr"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	found, err := tr.Find(ctx, "dead-letter/nightly")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(made.Ref.Name, found.Ref.ID == made.Ref.ID, found.Labels, tr.Holds(tracker.Started))
	// Output: OPS-1 true [relayr] todo
}

// The marker a filed item carries in its description.
func ExampleMarker() {
	fmt.Println(vikunja.Marker(tracker.Source{Tenant: "acme", Workspace: "ops"}, "dead-letter/nightly"))
	// Output: lattice-key: lattice:acme/ops/dead-letter/nightly
}
