module github.com/relayr-go/relayr/adapters/ledgersqlite

go 1.26
