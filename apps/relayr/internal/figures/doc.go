// Package figures holds relayr's figures (the README's "The figures") as Go
// benchmarks, run by `make bench` beside the ledgers' own: the service wired
// by app.New in-process, a SQLite ledger in a temporary folder, and the Plane
// and Vikunja emulations on 127.0.0.1, each figure measured for both
// trackers side by side in one run. The benchmarks live in bench_test.go;
// adapters/ledgerpg/tools/benchtable turns their output, with the ledgers',
// into the README's table.
//
// Nothing here is imported: the package exists for its benchmarks.
package figures
