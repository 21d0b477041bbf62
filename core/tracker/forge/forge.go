// Package forge is what the code forges' issue APIs share, Gitea's and
// GitHub's (Gitea's API is GitHub's shape): a repository as a binding's
// project, its paths and links, the read of a repository and of the
// account a token acts as. Their drivers import it; standard library and
// core only.
package forge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/trackerhttp"
)

// Repo is a code forge's repository (Gitea's, GitHub's): a Gitea or GitHub
// binding's project, "owner/name".
type Repo struct{ Owner, Name string }

// ParseRepo reads "owner/name", refusing what cannot name a repository.
func ParseRepo(repo string) (Repo, error) {
	owner, name, ok := strings.Cut(repo, "/")
	part := func(s string) bool {
		return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/?#% \t\r\n")
	}
	if !ok || !part(owner) || !part(name) {
		return Repo{}, &tracker.InvalidError{Field: "repo", Reason: tracker.Quote(repo) + ` is not "owner/name"`}
	}
	return Repo{Owner: owner, Name: name}, nil
}

// String is "owner/name", as the forges' webhooks name the repository.
func (r Repo) String() string { return r.Owner + "/" + r.Name }

// Path is the API path of rest under the repository, both forges'
// "repos/<owner>/<name>/<rest>" (rest "" for the repository itself).
func (r Repo) Path(rest string) string {
	p := "repos/" + url.PathEscape(r.Owner) + "/" + url.PathEscape(r.Name)
	if rest != "" {
		p += "/" + rest
	}
	return p
}

// IssueLink is where a person opens issue n: <web>/<owner>/<name>/issues/<n>.
func (r Repo) IssueLink(web string, n int64) string {
	return web + "/" + url.PathEscape(r.Owner) + "/" + url.PathEscape(r.Name) + "/issues/" + strconv.FormatInt(n, 10)
}

// IssueNumber answers the number of the issue a URL names by its last
// "/issues/<n>" (a comment's issue_url on Gitea and GitHub), and false for
// a URL that names none.
func IssueNumber(url string) (int64, bool) {
	i := strings.LastIndex(url, "/issues/")
	if i < 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(url[i+len("/issues/"):], 10, 64)
	return n, err == nil && n > 0
}

// Read reads the repository with the client's token (GET repos/<owner>/
// <name>): it answers the repository as the forge names it (names are
// case-insensitive; full_name is how webhook deliveries name it) and
// whether the token may push, which labels need.
func (r Repo) Read(ctx context.Context, cl *trackerhttp.Client) (Repo, bool, error) {
	var repo struct {
		FullName    string `json:"full_name"`
		Permissions struct {
			Push  bool `json:"push"`
			Admin bool `json:"admin"`
		} `json:"permissions"`
	}
	if err := get(ctx, cl, r.Path(""), &repo); err != nil {
		return r, false, err
	}
	out := r
	if o, n, ok := strings.Cut(repo.FullName, "/"); ok && strings.EqualFold(repo.FullName, r.String()) {
		out = Repo{Owner: o, Name: n}
	}
	return out, repo.Permissions.Push || repo.Permissions.Admin, nil
}

// Logins remembers the account each token acts as (GET user), read once
// per token. Its zero value is ready; it is safe for concurrent use.
type Logins struct{ m sync.Map } // token → login

// Of answers the login cl's token acts as, reading it the first time.
func (l *Logins) Of(ctx context.Context, cl *trackerhttp.Client, token string) (string, error) {
	if v, ok := l.m.Load(token); ok {
		return v.(string), nil
	}
	var u struct {
		Login string `json:"login"`
	}
	if err := get(ctx, cl, "user", &u); err != nil {
		return "", err
	}
	if u.Login == "" {
		return "", trackerhttp.Garbled(cl.Name(), "user", nil)
	}
	l.m.Store(token, u.Login)
	return u.Login, nil
}

func get(ctx context.Context, cl *trackerhttp.Client, path string, v any) error {
	a, err := cl.Do(ctx, trackerhttp.Request{Method: http.MethodGet, Path: path})
	if err != nil {
		return err
	}
	if err := json.Unmarshal(a.Body, v); err != nil {
		return trackerhttp.Garbled(cl.Name(), path, err)
	}
	return nil
}

// Delivery is what relayr reads of a forge's webhook delivery, once its
// signature verified: the action, the issue it is about (its number, and
// whether it is a pull request), and the repository it names.
type Delivery struct {
	Action string
	Issue  int64 // 0 when it is about no issue
	Pull   bool
	Repo   string // "owner/name"
}

// Verify checks a delivery's signature, header after prefix being the hex
// HMAC-SHA256 of the raw body under secret (ErrUnauthorized otherwise, and
// nothing of the body read), and reads it as ParseDelivery does.
func Verify(kind, secret, prefix, header string, body []byte) (Delivery, error) {
	if !trackerhttp.VerifySHA256(secret, prefix, header, body) {
		return Delivery{}, fmt.Errorf("%s: the delivery's signature does not verify: %w", kind, tracker.ErrUnauthorized)
	}
	return ParseDelivery(kind, body)
}

// ParseDelivery reads a signed delivery's body: {action, issue{number,
// pull_request}, is_pull, repository{full_name}}, the shape Gitea and
// GitHub share. A body that isn't one, or names no repository, is
// ErrRefused.
func ParseDelivery(kind string, body []byte) (Delivery, error) {
	var p struct {
		Action string `json:"action"`
		Issue  *struct {
			Number      int64           `json:"number"`
			PullRequest json.RawMessage `json:"pull_request"`
		} `json:"issue"`
		IsPull bool `json:"is_pull"`
		Repo   *struct {
			FullName string `json:"full_name"`
		} `json:"repository"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return Delivery{}, fmt.Errorf("%s: a signed delivery that isn't an event: %w", kind, tracker.ErrRefused)
	}
	if p.Repo == nil || p.Repo.FullName == "" {
		return Delivery{}, fmt.Errorf("%s: the delivery names no repository: %w", kind, tracker.ErrRefused)
	}
	d := Delivery{Action: p.Action, Repo: p.Repo.FullName, Pull: p.IsPull}
	if p.Issue != nil && p.Issue.Number > 0 {
		d.Issue = p.Issue.Number
		d.Pull = d.Pull || (len(p.Issue.PullRequest) > 0 && string(p.Issue.PullRequest) != "null")
	}
	return d, nil
}
