module github.com/relayr-go/relayr/adapters/httpapi

go 1.26.0

require github.com/relayr-go/relayr/core v0.1.0
