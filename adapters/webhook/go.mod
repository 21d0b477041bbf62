module github.com/relayr-go/relayr/adapters/webhook

go 1.26.0

require github.com/relayr-go/relayr/core v0.1.0

require github.com/relayr-go/relayr/fixtures v0.1.0

require github.com/standard-webhooks/standard-webhooks/libraries v1.3.0

require (
	github.com/cloudevents/sdk-go/v2 v2.16.2
	github.com/relayr-go/relayr/adapters/cloudevents v0.1.0
)

require (
	github.com/google/uuid v1.6.0 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.2 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	go.uber.org/zap v1.27.0 // indirect
)
