// Package cdxschema checks a BOM against CycloneDX's own JSON schema of
// specification 1.5, the copy the cyclonedx-go module ships (its schema
// folder, with the SPDX and JSF schemas it refers to), read from the module
// cache: nothing is fetched. The tests of tools/dist use it.
package cdxschema

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Module is the module whose schema folder holds the schemas.
const Module = "github.com/CycloneDX/cyclonedx-go"

// base is where the schemas say they are; their references resolve there.
const base = "http://cyclonedx.org/schema/"

// Validate checks the JSON document doc against bom-1.5.schema.json,
// formats asserted.
func Validate(ctx context.Context, doc []byte) error {
	dir, err := schemaDir(ctx)
	if err != nil {
		return err
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	for file, id := range map[string]string{
		"bom-1.5.schema.json": "bom-1.5.schema.json",
		"spdx.schema.json":    "spdx.schema.json",
		// The module ships the JSF schema as .schemax.json; its $id, which
		// the BOM schema refers to, is jsf-0.82.schema.json.
		"jsf-0.82.schemax.json": "jsf-0.82.schema.json",
	} {
		f, err := os.Open(filepath.Join(dir, file)) //nolint:gosec // G304: a schema of the module cache's cyclonedx-go
		if err != nil {
			return fmt.Errorf("cdxschema: %w", err)
		}
		s, err := jsonschema.UnmarshalJSON(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("cdxschema: %s: %w", file, err)
		}
		if err := c.AddResource(base+id, s); err != nil {
			return fmt.Errorf("cdxschema: %s: %w", file, err)
		}
	}
	sch, err := c.Compile(base + "bom-1.5.schema.json")
	if err != nil {
		return fmt.Errorf("cdxschema: %w", err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("cdxschema: the BOM: %w", err)
	}
	if err := sch.Validate(v); err != nil {
		return fmt.Errorf("cdxschema: the BOM is not valid CycloneDX 1.5: %w", err)
	}
	return nil
}

// schemaDir is the schema folder of the cyclonedx-go module the go command
// selects here.
func schemaDir(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", Module).Output()
	if err != nil {
		return "", fmt.Errorf("cdxschema: go list -m %s: %w", Module, err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("cdxschema: go list -m %s: the module is not in the module cache", Module)
	}
	return filepath.Join(dir, "schema"), nil
}
