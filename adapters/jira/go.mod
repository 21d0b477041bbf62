module github.com/relayr-go/relayr/adapters/jira

go 1.26.0

require (
	github.com/relayr-go/relayr/core v0.1.0
	github.com/relayr-go/relayr/fixtures v0.1.0
)

require (
	github.com/getkin/kin-openapi v0.153.0 // indirect
	github.com/go-openapi/jsonpointer v0.22.5 // indirect
	github.com/go-openapi/swag/jsonname v0.25.5 // indirect
	github.com/gorilla/mux v1.8.0 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	go.yaml.in/yaml/v4 v4.0.0 // indirect
	golang.org/x/text v0.40.0 // indirect
)
