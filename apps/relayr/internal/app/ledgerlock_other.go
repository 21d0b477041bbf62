//go:build !unix

package app

// lockLedger is a no-op where flock is missing: the operator keeps one
// relayr to a SQLite ledger.
func lockLedger(string) (func(), error) { return func() {}, nil }
