// Package figures holds relayr's figures (the README's "The figures") as Go
// benchmarks, run by `make bench` beside the ledgers' own: the service wired
// by app.New in-process, a SQLite ledger in a temporary folder, and the
// Plane, Vikunja, Gitea, GitHub, Jira, GitLab and Linear emulations on
// 127.0.0.1, each figure measured for every tracker side by side in one
// run. The
// benchmarks live in bench_test.go; adapters/ledgerpg/tools/benchtable
// turns their output, with the ledgers', into the README's table. Tests on
// the same service check what the figures stand on, and the whole loop on
// Jira (loop_test.go), on GitLab (gitlab_test.go) and on Linear
// (linear_test.go): callers filing at once, a rule's edits and a person's
// hand, held to what the feed and the tracker show.
//
// Nothing here is imported: the package exists for its benchmarks.
package figures
