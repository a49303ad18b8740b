package builtin

import (
	"testing"

	"harness/internal/tools"
)

// TestSchemasCompile: Register adds the built-in tools with their schemas
// compiled on first use, so this test is where a broken one is caught.
func TestSchemasCompile(t *testing.T) {
	t.Parallel()
	for _, d := range Definitions(Options{}) {
		if err := tools.NewRegistry().Register(d); err != nil {
			t.Errorf("%s: %v", d.Name, err)
		}
	}
}
