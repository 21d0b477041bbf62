package mcp

import (
	"slices"
	"strings"
	"testing"
)

// Every tool's input schema is built from this package's argument types,
// and each state field takes exactly the five states: a failure here is
// the SDK's inferred schema, without the enum, served to every agent.
func TestInputSchemas(t *testing.T) {
	if errInputSchemas != nil {
		t.Fatal(errInputSchemas)
	}
	for _, tool := range []string{ToolFileItem, ToolUpdateItem, ToolComment, ToolReadEvents} {
		if inputSchemas[tool] == nil || inputSchema(tool) == nil {
			t.Errorf("%s has no input schema of its own", tool)
		}
	}
	for _, tool := range []string{ToolFileItem, ToolUpdateItem} {
		p := inputSchemas[tool].Properties["state"]
		if p == nil || !slices.Equal(p.Enum, []any{"backlog", "todo", "started", "done", "cancelled"}) {
			t.Errorf("%s's state: %+v, want the five states as its enum", tool, p)
		}
	}
	if p := inputSchemas[ToolUpdateItem].Properties["state"]; p == nil || !slices.Contains(p.Enum, any("cancelled")) {
		t.Errorf("update_item's state cannot be cancelled: %+v", p)
	}
}

// A state field the type does not have is an error, never a schema
// silently without the enum.
func TestSchemaForRefusesAStateFieldTheTypeLacks(t *testing.T) {
	if _, err := schemaFor[CommentInput]("state"); err == nil || !strings.Contains(err.Error(), `"state"`) {
		t.Fatalf("schemaFor[CommentInput](\"state\") = %v, want an error naming the field", err)
	}
	if _, err := schemaFor[chan int](); err == nil {
		t.Fatal("a type the inference refuses answered a schema")
	}
}
