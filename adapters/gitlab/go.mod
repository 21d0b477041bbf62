module github.com/relayr-go/relayr/adapters/gitlab

go 1.26.0

require (
	github.com/relayr-go/relayr/core v0.1.0
	github.com/relayr-go/relayr/fixtures v0.1.0
)
