package jira_test

import (
	"context"
	"fmt"
	"time"

	"github.com/relayr-go/relayr/adapters/jira"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/jiraemu"
)

// Filing a CI job's failure once by key: a re-run of the job finds the
// issue its first run filed instead of filing it again. Here against the
// emulation instead of a Jira Cloud site.
func Example() {
	clock := jiraemu.NewClock(time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC))
	emu, srv := jiraemu.NewServer(jiraemu.Options{Now: clock.Now})
	defer srv.Close()
	emu.AddUser("5b10a2844c20165700ede21g", "CI bot", nil)
	token := emu.AddToken("ci-bot@acme.example", "5b10a2844c20165700ede21g")
	emu.CreateProject("OPS", "Operations", jiraemu.DefaultWorkflow())

	connector, err := jira.NewConnector(jira.Config{
		BaseURL: srv.URL, Project: "OPS", Email: "ci-bot@acme.example",
		Client: srv.Client(), Now: clock.Now,
	})
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
	made, err := tr.Create(ctx, key, tracker.Draft{Title: "Build 1234 failed", Labels: []string{"ci"}, State: tracker.Started})
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
	fmt.Println(made.Ref.Name, found.Ref.ID == made.Ref.ID, found.Labels, found.State)
	// Output: OPS-1 true [ci] started
}
