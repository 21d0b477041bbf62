package figures

import (
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/relayr-go/relayr/apps/relayr/internal/config"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/jiraemu"
)

// Jira's figures run in a project of its own, filed by relayr's account
// with an API token that goes with its email, and changed by a person of
// the team in the web UI.
const (
	jiraProject = "OPS"
	jiraEmail   = "relayr-bot@example.com"
	// The accounts are Atlassian accountIds, as Jira names every user.
	jiraBot    = "5b10a2844c20165700ede21g"
	jiraPerson = "5b10ac8d82e05b22cc7d4ef5"
)

// jiraEvents are the admin webhook's events, as docs/trackers/jira.md has
// an administrator register them: a deletion comes with the rest.
var jiraEvents = []string{"jira:issue_created", "jira:issue_updated", "jira:issue_deleted", "comment_created"}

type jira struct {
	e     *jiraemu.Emulator
	srv   *httptest.Server
	token string
	p     *jiraemu.Person
	hooks hooks
	// deliveries is the client the site sends its webhooks with.
	deliveries *http.Client
	// searchLag is the binding's search_lag (the driver's 30 s when 0).
	searchLag time.Duration
}

// newJira is a Jira Cloud site as documented, its limits on (relayr's
// driver paces one issue's writes itself, and a person's hand is limited
// by nothing), and its search current: Atlassian states no lag, so the
// figures take none. With one, a person's change to an issue relayr did
// not write within it reaches the feed with the first poll after the
// lag, not with the webhook's (TestTheWholeLoopHoldsOnJira runs both).
// The binding keeps the driver's search_lag, which only a look-up of a
// key never filed waits out, and no figure makes one.
func newJira(now func() time.Time) *jira { return newJiraSite(jiraemu.Options{Now: now}, 0) }

// newJiraSite is a site set up by opts (its clock, its search's lag),
// whose binding takes searchLag as its search_lag (the driver's default
// when 0), delivering its webhooks on loopback.
func newJiraSite(opts jiraemu.Options, searchLag time.Duration) *jira {
	opts.WebhookClient = &http.Client{Transport: loopback(), Timeout: 10 * time.Second}
	e, srv := jiraemu.NewServer(opts)
	e.AddUser(jiraBot, "relayr bot", nil)
	e.AddUser(jiraPerson, "Ana Person", nil)
	j := &jira{e: e, srv: srv, token: e.AddToken(jiraEmail, jiraBot), p: e.Person(jiraPerson),
		deliveries: opts.WebhookClient, searchLag: searchLag}
	e.CreateProject(jiraProject, "Operations", jiraemu.DefaultWorkflow())
	return j
}

func (j *jira) Name() string { return "Jira" }

func (j *jira) Binding() config.Binding {
	return config.Binding{
		Tenant: tenant, Workspace: workspace, Tracker: "jira", BaseURL: j.srv.URL, Project: jiraProject,
		SearchLag: config.Duration{Duration: j.searchLag},
	}
}

func (j *jira) Credentials() tracker.Credentials {
	return tracker.Credentials{Token: j.token, WebhookSecret: webhookSecret}
}

// Email implements accounted: the API token is the bot's, sent as Basic
// email:token.
func (j *jira) Email() string { return jiraEmail }

func (j *jira) Requests() int  { return j.e.TotalRequests() }
func (j *jira) ResetRequests() { j.e.ResetCounts() }

func (j *jira) PersonCreate(title string) (string, error) { return j.p.Create(jiraProject, title, "") }
func (j *jira) PersonRetitle(id, title string) error      { return j.p.Retitle(id, title) }

func (j *jira) PersonComment(id, text string) error {
	_, err := j.p.Comment(id, text)
	return err
}

// PersonDelete deletes the issue as a site admin does in the web UI (Jira
// lets no one else): jira:issue_deleted is sent.
func (j *jira) PersonDelete(id string) error {
	if !j.e.DeleteIssue(id) {
		return jiraemu.ErrNotFound
	}
	return nil
}

// Forward registers one admin webhook for the project's issue and comment
// events, a deletion among them, signed with the tenant's webhook secret.
func (j *jira) Forward(url string) {
	j.hooks.once(url, func() { j.e.AddWebhook("relayr", url, webhookSecret, jiraEvents, "project = "+jiraProject) })
}

func (j *jira) ForwardDeletions(url string) { j.Forward(url) }

// Violations implements validated.
func (j *jira) Violations() []string { return j.e.Violations() }

// CloseIdleConnections implements delivering.
func (j *jira) CloseIdleConnections() { j.deliveries.CloseIdleConnections() }

func (j *jira) Close() {
	j.srv.Close()
	j.e.Close()
}
