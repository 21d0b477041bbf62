module github.com/relayr-go/relayr/adapters/gitlab

go 1.26.0

require (
	github.com/relayr-go/relayr/core v0.0.0
	github.com/relayr-go/relayr/fixtures v0.0.0
)

replace (
	github.com/relayr-go/relayr/core => ../../core
	github.com/relayr-go/relayr/fixtures => ../../fixtures
)
