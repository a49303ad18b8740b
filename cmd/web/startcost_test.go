package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestServerLinksNoStartCost keeps packages out of the server whose
// package initialisation costs start time and memory for nothing the
// server uses (docs/performance.md, "Start and idle memory"): chroma's
// styles parse every style at init, and chroma.css is a static file;
// chroma's lexers parse every lexer definition at init, and the server
// uses third_party/chromalexers, which does it on first use;
// santhosh-tekuri/jsonschema compiles five drafts' meta-schemas at init,
// and tool arguments are validated with google/jsonschema-go, which the
// MCP SDK links anyway.
func TestServerLinksNoStartCost(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range []string{"github.com/alecthomas/chroma/v2/styles", "github.com/alecthomas/chroma/v2/lexers",
		"github.com/santhosh-tekuri/jsonschema/v6"} {
		for _, dep := range strings.Fields(string(out)) {
			if dep == pkg {
				t.Errorf("the server links %s", pkg)
			}
		}
	}
}
