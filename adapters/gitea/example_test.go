package gitea_test

import (
	"context"
	"fmt"
	"time"

	"github.com/relayr-go/relayr/adapters/gitea"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/giteaemu"
)

// Filing a CI job's failure once by key, and finding it again by the same
// key after a crash, here against the emulation instead of a live Gitea.
func Example() {
	clock := giteaemu.NewClock(time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC))
	emu, srv := giteaemu.NewServer(giteaemu.Options{Now: clock.Now})
	defer srv.Close()
	emu.AddUser("ci-bot")
	token := emu.AddToken("ci-bot", true)
	emu.CreateRepo("ci-bot", "app")

	connector, err := gitea.NewConnector(gitea.Config{BaseURL: srv.URL, Repo: "ci-bot/app", Client: srv.Client(), Now: clock.Now})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	tr, err := connector.Connect(ctx, tracker.Credentials{Token: token}, tracker.Source{Tenant: "acme", Workspace: "ci"})
	if err != nil {
		fmt.Println(err)
		return
	}
	made, err := tr.Create(ctx, "nightly/build-1234/test-failure", tracker.Draft{Title: "Nightly build failed", Labels: []string{"ci"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	found, err := tr.Find(ctx, "nightly/build-1234/test-failure")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(made.Ref.Name, found.Ref.ID == made.Ref.ID, found.Labels, tr.Holds(tracker.Cancelled))
	// Output: #1 true [ci] done
}
