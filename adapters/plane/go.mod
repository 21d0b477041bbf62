module github.com/relayr-go/relayr/adapters/plane

go 1.26.0

require github.com/relayr-go/relayr/core v0.1.0

require github.com/relayr-go/relayr/fixtures v0.1.0

require golang.org/x/net v0.57.0
