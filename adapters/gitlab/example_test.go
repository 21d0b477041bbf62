package gitlab_test

import (
	"context"
	"fmt"
	"time"

	"github.com/relayr-go/relayr/adapters/gitlab"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/gitlabemu"
)

// Filing a CI pipeline's failure once by key: a retried pipeline finds the
// issue its first run filed instead of filing it again. Here against the
// emulation instead of GitLab.com.
func Example() {
	clock := gitlabemu.NewClock(time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC))
	emu, srv := gitlabemu.NewServer(gitlabemu.Options{Now: clock.Now})
	defer srv.Close()
	emu.AddUser("ci-bot")
	token := emu.AddToken("ci-bot")
	emu.CreateProject("acme/platform", "ci-bot")

	connector, err := gitlab.NewConnector(gitlab.Config{
		BaseURL: srv.URL, Project: "acme/platform", Client: srv.Client(), Now: clock.Now,
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
	key := "ci/pipeline-1234/test-failure"
	made, err := tr.Create(ctx, key, tracker.Draft{Title: "Pipeline 1234 failed", Labels: []string{"ci"}, State: tracker.Started})
	if err != nil {
		fmt.Println(err)
		return
	}
	// The pipeline's retry, after a crash between the create and the
	// record: the lists are read twice, GitLab's lag apart, before
	// concluding; here the issue is found at once.
	found, err := tr.Find(ctx, key)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(made.Ref.Name, found.Ref.ID == made.Ref.ID, found.Labels, found.State)
	// Output: #1 true [ci] started
}
