module github.com/relayr-go/relayr/apps/relayr

go 1.26.0

require (
	github.com/relayr-go/relayr/adapters/httpapi v0.0.0
	github.com/relayr-go/relayr/adapters/ledgerpg v0.0.0
	github.com/relayr-go/relayr/adapters/ledgersqlite v0.0.0
	github.com/relayr-go/relayr/adapters/plane v0.0.0
	github.com/relayr-go/relayr/adapters/vikunja v0.0.0
	github.com/relayr-go/relayr/core v0.0.0
	github.com/relayr-go/relayr/fixtures v0.0.0
)

require (
	github.com/pelletier/go-toml/v2 v2.4.3 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
)

replace (
	github.com/relayr-go/relayr/adapters/httpapi => ../../adapters/httpapi
	github.com/relayr-go/relayr/adapters/ledgerpg => ../../adapters/ledgerpg
	github.com/relayr-go/relayr/adapters/ledgersqlite => ../../adapters/ledgersqlite
	github.com/relayr-go/relayr/adapters/plane => ../../adapters/plane
	github.com/relayr-go/relayr/adapters/vikunja => ../../adapters/vikunja
	github.com/relayr-go/relayr/core => ../../core
	github.com/relayr-go/relayr/fixtures => ../../fixtures
)
