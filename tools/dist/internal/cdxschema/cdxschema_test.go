package cdxschema_test

import (
	"context"
	"strings"
	"testing"

	"github.com/relayr-go/relayr/tools/dist/internal/cdxschema"
)

// TestValidate: the schema takes a minimal BOM and refuses what 1.5 does
// not allow.
func TestValidate(t *testing.T) {
	ctx := context.Background()
	const head = `{"bomFormat": "CycloneDX", "specVersion": "1.5", "version": 1`
	if err := cdxschema.Validate(ctx, []byte(head+`, "serialNumber": "urn:uuid:7f28c6f7-4eb7-8994-9b3d-7edd73597481"}`)); err != nil {
		t.Fatalf("a minimal BOM: %v", err)
	}
	for name, doc := range map[string]string{
		"a serial number that is no UUID": head + `, "serialNumber": "relayr-1"}`,
		"a component without a name":      head + `, "components": [{"type": "library"}]}`,
		"a component of no known type":    head + `, "components": [{"type": "gadget", "name": "x"}]}`,
		"a hash of no known algorithm":    head + `, "components": [{"type": "library", "name": "x", "hashes": [{"alg": "h1", "content": "abcd"}]}]}`,
		"a timestamp that is no time":     head + `, "metadata": {"timestamp": "yesterday"}}`,
		"a field 1.5 does not have":       head + `, "relayr": true}`,
		"not JSON":                        head,
	} {
		if err := cdxschema.Validate(ctx, []byte(doc)); err == nil || !strings.Contains(err.Error(), "cdxschema:") {
			t.Errorf("%s: %v, want it refused", name, err)
		}
	}
}
