module github.com/relayr-go/relayr/adapters/vikunja

go 1.26
