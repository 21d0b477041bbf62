module github.com/relayr-go/relayr/adapters/linear

go 1.26.0

require (
	github.com/google/uuid v1.6.0
	github.com/relayr-go/relayr/core v0.1.0
	github.com/relayr-go/relayr/fixtures v0.1.0
)

require (
	github.com/agnivade/levenshtein v1.2.2 // indirect
	github.com/vektah/gqlparser/v2 v2.5.64 // indirect
)
