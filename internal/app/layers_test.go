package app_test

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// layers are docs/architecture.md's layers, bottom first: a package may
// import packages of lower layers only. Paths are relative to the module;
// one ending in "/" is a prefix.
var layers = [][]string{
	{"internal/llm", "internal/secrets", "internal/sandbox", "internal/egress", "internal/files", "internal/auth", "client",
		"internal/testkit/poll", "internal/testkit/proclocks", "internal/crashpoint", "internal/tools/builtin/globpat", "internal/tools/builtin/textdiff", "web/static", "third_party/"},
	{"internal/session", "internal/llm/openai", "internal/config", "internal/sandbox/sandboxtest"},
	{"internal/tools", "internal/importer", "internal/models", "internal/llm/fake"},
	{"internal/tools/builtin", "internal/workspace", "internal/mcp", "internal/auth/authtest"},
	{"internal/driver"},
	{"internal/compact", "internal/metrics", "internal/driverstore", "internal/routes", "internal/replica"},
	{"internal/service"},
	{"internal/render", "internal/testkit"},
	{"web/templates"},
	{"internal/ws", "internal/web"},
	{"internal/app"},
	{"internal/testkit/apptest"},
	{"cmd/", "e2e", "scripts/"},
}

// closed are imports the layers would allow but that are side doors; a
// "to" ending in "/" is a prefix.
var closed = []struct {
	from string
	to   []string
	why  string
}{
	{"internal/render", []string{"internal/ws", "internal/service", "internal/driver", "internal/models", "internal/driverstore", "internal/routes"},
		"a fragment is a function of the event and the projection: render reads no live state"},
	{"internal/ws", []string{"internal/render"},
		"the socket writes bytes it is given: app passes the projections (ws.Deps)"},
	{"internal/web", []string{"internal/models", "internal/driver", "internal/driverstore"},
		"handlers go through service and routes and declare what they read (UIDeps)"},
	{"web/templates", []string{"internal/driver", "internal/models", "internal/service"},
		"templates take view types that web fills"},
	{"internal/service", []string{"internal/driverstore", "internal/routes"},
		"service declares what it needs (AgentMeta, WorkspaceSettings); app passes the implementations"},
	{"client", []string{"internal/"},
		"the client speaks the wire protocol only"},
}

const module = "harness/"

// match reports whether pkg is pattern (or under it, for a prefix).
func match(pattern, pkg string) bool {
	if strings.HasSuffix(pattern, "/") {
		return strings.HasPrefix(pkg, pattern)
	}
	return pkg == pattern
}

// layerOf is pkg's layer; the most specific pattern wins (a prefix loses
// to an exact name).
func layerOf(pkg string) (int, bool) {
	best, bestLen := -1, -1
	for i, l := range layers {
		for _, p := range l {
			if match(p, pkg) && len(p) > bestLen {
				best, bestLen = i, len(p)
			}
		}
	}
	return best, best >= 0
}

// violations checks a graph (package → its non-test imports, module
// packages only, paths relative to the module) against the rules.
func violations(graph map[string][]string) []string {
	var out []string
	pkgs := make([]string, 0, len(graph))
	for p := range graph {
		pkgs = append(pkgs, p)
	}
	slices.Sort(pkgs)
	for _, from := range pkgs {
		lf, ok := layerOf(from)
		if !ok {
			out = append(out, fmt.Sprintf("%s is in no layer: add it to docs/architecture.md and to layers in internal/app/layers_test.go", from))
			continue
		}
		for _, to := range graph[from] {
			lt, ok := layerOf(to)
			if !ok {
				out = append(out, fmt.Sprintf("%s imports %s, which is in no layer: add it to docs/architecture.md and to layers in internal/app/layers_test.go", from, to))
				continue
			}
			if v := closedEdge(from, to); v != "" {
				out = append(out, v) // the named rule says more than the layers
				continue
			}
			if lt >= lf {
				out = append(out, fmt.Sprintf("%s (layer %d) imports %s (layer %d): a package imports lower layers only (docs/architecture.md, Layers)", from, lf, to, lt))
			}
		}
	}
	return out
}

// closedEdge describes the closed edge from → to, "" when it is not one.
func closedEdge(from, to string) string {
	for _, c := range closed {
		if !match(c.from, from) {
			continue
		}
		for _, t := range c.to {
			if match(t, to) {
				return fmt.Sprintf("%s imports %s: %s must not import %s: %s (docs/architecture.md)", from, to, c.from, t, c.why)
			}
		}
	}
	return ""
}

// importGraph lists the module's packages and their non-test imports of
// module packages with go list (which needs no successful build).
func importGraph(t *testing.T) map[string][]string {
	t.Helper()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	cmd := exec.Command("go", "list", "-e", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	graph := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], module) {
			continue
		}
		from := strings.TrimPrefix(f[0], module)
		graph[from] = []string{}
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, module) {
				graph[from] = append(graph[from], strings.TrimPrefix(imp, module))
			}
		}
	}
	if len(graph) < 10 {
		t.Fatalf("go list found %d packages; is the test running inside the module?", len(graph))
	}
	return graph
}

// TestLayers holds docs/architecture.md: every import between the module's
// packages follows the layers and none of the closed edges is open.
func TestLayers(t *testing.T) {
	t.Parallel()
	for _, v := range violations(importGraph(t)) {
		t.Error(v)
	}
}

// TestLayersCatchSideDoors checks the checker on a made-up graph holding
// each kind of violation.
func TestLayersCatchSideDoors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		graph map[string][]string
		want  string // "" = no violation
	}{
		{"allowed downward import", map[string][]string{"internal/service": {"internal/driver", "internal/models"}}, ""},
		{"prefix layer", map[string][]string{"cmd/web": {"internal/app"}, "internal/render": {"third_party/chromalexers"}}, ""},
		{"upward import", map[string][]string{"internal/models": {"internal/driver"}}, "internal/models (layer 2) imports internal/driver (layer 4)"},
		{"same layer", map[string][]string{"internal/web": {"internal/ws"}}, "imports lower layers only"},
		{"render to ws", map[string][]string{"internal/render": {"internal/ws"}}, "internal/render imports internal/ws"},
		{"ws to render", map[string][]string{"internal/ws": {"internal/render"}}, "internal/ws must not import internal/render"},
		{"web to models", map[string][]string{"internal/web": {"internal/models"}}, "internal/web must not import internal/models"},
		{"templates to driver", map[string][]string{"web/templates": {"internal/driver"}}, "web/templates must not import internal/driver"},
		{"service to driverstore", map[string][]string{"internal/service": {"internal/driverstore"}}, "internal/service must not import internal/driverstore"},
		{"client to internal", map[string][]string{"client": {"internal/llm"}}, "client must not import internal/"},
		{"unknown package", map[string][]string{"internal/newthing": nil}, "internal/newthing is in no layer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := violations(c.graph)
			if c.want == "" {
				if len(got) > 0 {
					t.Errorf("violations %q, want none", got)
				}
				return
			}
			if !slices.ContainsFunc(got, func(v string) bool { return strings.Contains(v, c.want) }) {
				t.Errorf("violations %q, want one containing %q", got, c.want)
			}
		})
	}
}
