module github.com/relayr-go/relayr/adapters/httpapi

go 1.26
