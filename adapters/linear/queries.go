package linear

// The operations the driver sends, each checked against Linear's schema
// (fixtures/linearemu.Validate) by the driver's tests. Selections are kept
// flat: a query's cost multiplies by each connection's first (§2).

// issueFields is what the driver reads of an issue (schema Issue): its
// newest comment's time moves the item's UpdatedAt (items.go), and its
// attachments carry the key. The newest comment is one end of the list,
// which end undocumented (sheet §6 "the default direction is not
// documented"): both ends are read, the later taken.
const issueFields = `fragment IssueFields on Issue {
  id identifier number title description createdAt updatedAt archivedAt trashed
  state { id type }
  team { id }
  labels(first: 50) { nodes { id name } }
  attachments(first: 10) { nodes { url } }
  comments(first: 1, orderBy: createdAt) { nodes { createdAt } }
  lastComment: comments(last: 1, orderBy: createdAt) { nodes { createdAt } }
}`

const qWorkspace = `query Workspace($team: String!) {
  viewer { id }
  organization { urlKey }
  team(id: $team) {
    id key
    defaultIssueState { id }
    states(first: 50) { nodes { id name type position } }
  }
}`

// qTeams lists the workspace's teams, for a team named by its key.
const qTeams = `query Teams($after: String) {
  teams(first: 50, after: $after) {
    nodes { id key }
    pageInfo { hasNextPage endCursor }
  }
}`

// qLabel reads the labels of a name the team can use: its own and the
// workspace's (IssueLabelFilter.team null).
const qLabel = `query Label($name: String!, $team: ID!) {
  issueLabels(first: 50, filter: { name: { eq: $name }, or: [{ team: { id: { eq: $team } } }, { team: { null: true } }] }) {
    nodes { id name isGroup team { id } }
  }
}`

const qIssue = `query Issue($id: String!) {
  issue(id: $id) { ...IssueFields }
}
` + issueFields

// mCreate files the issue and attaches its key in one request: GraphQL
// runs a mutation's root fields in order, so the attachment names the
// issue just made.
const mCreate = `mutation Create($input: IssueCreateInput!, $attach: AttachmentCreateInput!) {
  issueCreate(input: $input) { success issue { ...IssueFields } }
  attachmentCreate(input: $attach) { success }
}
` + issueFields

const mAttach = `mutation Attach($attach: AttachmentCreateInput!) {
  attachmentCreate(input: $attach) { success }
}`

const mUpdate = `mutation Update($id: String!, $input: IssueUpdateInput!) {
  issueUpdate(id: $id, input: $input) { success issue { ...IssueFields } }
}
` + issueFields

const mComment = `mutation Comment($input: CommentCreateInput!) {
  commentCreate(input: $input) { success comment { id body createdAt user { id } botActor { name } } }
}`

const mLabel = `mutation Label($input: IssueLabelCreateInput!) {
  issueLabelCreate(input: $input) { success issueLabel { id name } }
}`

const qComments = `query Comments($id: String!, $since: DateTimeOrDuration!, $after: String) {
  issue(id: $id) {
    comments(first: 50, after: $after, filter: { createdAt: { gte: $since } }) {
      nodes { id body createdAt user { id } botActor { name } }
      pageInfo { hasNextPage endCursor }
    }
  }
}`

const qTeamComments = `query TeamComments($team: ID!, $since: DateTimeOrDuration!, $after: String, $first: Int!) {
  comments(first: $first, after: $after, includeArchived: true, filter: { issue: { team: { id: { eq: $team } } }, createdAt: { gte: $since } }) {
    nodes { id body createdAt user { id } botActor { name } issue { id } }
    pageInfo { hasNextPage endCursor }
  }
}`

const qChanged = `query Changed($team: ID!, $since: DateTimeOrDuration!, $after: String, $first: Int!) {
  issues(first: $first, after: $after, orderBy: updatedAt, includeArchived: true, filter: { team: { id: { eq: $team } }, updatedAt: { gte: $since } }) {
    nodes { ...IssueFields }
    pageInfo { hasNextPage endCursor }
  }
}
` + issueFields

const qAll = `query All($team: ID!, $after: String) {
  issues(first: 50, after: $after, orderBy: createdAt, includeArchived: true, filter: { team: { id: { eq: $team } } }) {
    nodes { ...IssueFields }
    pageInfo { hasNextPage endCursor }
  }
}
` + issueFields

// qProbe asks whether anything changed since a time, for as little as a
// query costs: an idle poll is this one request.
const qProbe = `query Probe($team: ID!, $since: DateTimeOrDuration!) {
  issues(first: 1, includeArchived: true, filter: { team: { id: { eq: $team } }, updatedAt: { gte: $since } }) { nodes { id } }
  comments(first: 1, includeArchived: true, filter: { issue: { team: { id: { eq: $team } } }, createdAt: { gte: $since } }) { nodes { id } }
}`

const qByIDs = `query ByIDs($ids: [ID!]!) {
  issues(first: 50, includeArchived: true, filter: { id: { in: $ids } }) {
    nodes { ...IssueFields }
  }
}
` + issueFields

// Queries are every operation the driver sends, by name, for the tests
// that check them against Linear's schema.
var Queries = map[string]string{
	"Workspace": qWorkspace, "Teams": qTeams, "Issue": qIssue, "Create": mCreate, "Attach": mAttach, "Update": mUpdate,
	"Comment": mComment, "Label": mLabel, "LabelByName": qLabel, "Comments": qComments, "TeamComments": qTeamComments,
	"Changed": qChanged, "Probe": qProbe, "All": qAll, "ByIDs": qByIDs,
}
