package httpapi_test

import (
	"encoding/json"
	"os"
	"sort"
	"strings"
	"testing"
)

// Every route the OpenAPI document describes has its section in the API
// page of the manual, headed by its method and path as the document spells
// them.
func TestTheAPIPageHasASectionForEveryRoute(t *testing.T) {
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile("../../docs/http-api.md")
	if err != nil {
		t.Fatal(err)
	}
	headings := map[string]bool{}
	for _, line := range strings.Split(string(page), "\n") {
		if h, ok := strings.CutPrefix(line, "### "); ok {
			headings[strings.TrimSpace(h)] = true
		}
	}
	var routes []string
	for path, ops := range doc.Paths {
		for method := range ops {
			switch method {
			case "get", "post", "put", "patch", "delete":
				routes = append(routes, strings.ToUpper(method)+" "+path)
			}
		}
	}
	sort.Strings(routes)
	if len(routes) == 0 {
		t.Fatal("the OpenAPI document names no route")
	}
	for _, r := range routes {
		if !headings[r] {
			t.Errorf("docs/http-api.md has no section \"### %s\"", r)
		}
	}
}
