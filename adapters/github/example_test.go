package github_test

import (
	"context"
	"fmt"
	"time"

	"github.com/relayr-go/relayr/adapters/github"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/githubemu"
)

// Filing a CI job's failure once by key: a re-run of the job finds the
// issue its first run filed instead of filing it again. Here against the
// emulation instead of github.com.
func Example() {
	clock := githubemu.NewClock(time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC))
	emu, srv := githubemu.NewServer(githubemu.Options{Now: clock.Now})
	defer srv.Close()
	emu.AddUser("ci-bot")
	token := emu.AddToken("ci-bot", true)
	emu.CreateRepo("acme", "app")

	connector, err := github.NewConnector(github.Config{BaseURL: srv.URL, Repo: "acme/app", Client: srv.Client(), Now: clock.Now})
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
	key := "ci/build-1234/test-failure"
	made, err := tr.Create(ctx, key, tracker.Draft{Title: "Build 1234 failed", Labels: []string{"ci"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	// The job's re-run, after a crash between the create and the record.
	found, err := tr.Find(ctx, key)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(made.Ref.Name, found.Ref.ID == made.Ref.ID, found.Labels, tr.Holds(tracker.Cancelled))
	// Output: #1 true [ci] cancelled
}
