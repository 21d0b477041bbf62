module github.com/relayr-go/relayr/adapters/webhook

go 1.26.0

require github.com/relayr-go/relayr/core v0.0.0

replace github.com/relayr-go/relayr/core => ../../core

require github.com/relayr-go/relayr/fixtures v0.0.0

require github.com/standard-webhooks/standard-webhooks/libraries v1.3.0

replace github.com/relayr-go/relayr/fixtures => ../../fixtures
