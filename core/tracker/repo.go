package tracker

import "strings"

// ParseRepo splits a code forge's repository, "owner/name" (a Gitea or
// GitHub binding's project), refusing what cannot name one.
func ParseRepo(repo string) (owner, name string, err error) {
	owner, name, ok := strings.Cut(repo, "/")
	part := func(s string) bool {
		return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/?#% \t\r\n")
	}
	if !ok || !part(owner) || !part(name) {
		return "", "", &InvalidError{Field: "repo", Reason: Quote(repo) + ` is not "owner/name"`}
	}
	return owner, name, nil
}
