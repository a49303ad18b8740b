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

// sessionIO are the packages that reach outside the process: the session
// log is data, so internal/session imports none of them (its bytes reach
// disk through the store, the network through the hub).
var sessionIO = []string{"os", "os/", "net", "net/", "syscall", "io/fs", "io/ioutil", "plugin", "database/", "gorm.io/"}

// databaseAPIs are the SQL layers only internal/models (and what is below
// it) may use: every package above reads and writes through models.Store.
var databaseAPIs = []string{"database/sql", "database/sql/", "gorm.io/"}

// databaseExceptions are packages above models that open the database
// themselves, with the reason.
var databaseExceptions = map[string]string{
	"internal/auth/authtest": "test helper: creates and drops a PostgreSQL schema per test, as the server's administrator",
	"cmd/loadgen":            "measurement tool: watches session_leases from outside the servers it kills",
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

// externalViolations checks a graph (package → its non-test imports from
// outside the module) against sessionIO and databaseAPIs.
func externalViolations(graph map[string][]string) []string {
	var out []string
	models, _ := layerOf("internal/models")
	pkgs := make([]string, 0, len(graph))
	for p := range graph {
		pkgs = append(pkgs, p)
	}
	slices.Sort(pkgs)
	for _, from := range pkgs {
		lf, _ := layerOf(from)
		for _, to := range graph[from] {
			if from == "internal/session" && matchAny(sessionIO, to) {
				out = append(out, fmt.Sprintf("internal/session imports %s: the session log does no I/O (docs/architecture.md)", to))
			}
			if lf > models && matchAny(databaseAPIs, to) && databaseExceptions[from] == "" {
				out = append(out, fmt.Sprintf("%s imports %s: only internal/models speaks SQL; above it go through models.Store (docs/architecture.md)", from, to))
			}
		}
	}
	return out
}

func matchAny(patterns []string, pkg string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return match(p, pkg) })
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

// importGraph lists the module's packages and their non-test imports with
// go list (which needs no successful build): those of module packages
// (paths relative to the module) and the others (standard library and
// dependencies).
func importGraph(t *testing.T) (mod, ext map[string][]string) {
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
	mod, ext = map[string][]string{}, map[string][]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], module) {
			continue
		}
		from := strings.TrimPrefix(f[0], module)
		mod[from], ext[from] = []string{}, []string{}
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, module) {
				mod[from] = append(mod[from], strings.TrimPrefix(imp, module))
			} else {
				ext[from] = append(ext[from], imp)
			}
		}
	}
	if len(mod) < 10 {
		t.Fatalf("go list found %d packages; is the test running inside the module?", len(mod))
	}
	return mod, ext
}

// TestLayers holds docs/architecture.md: every import between the module's
// packages follows the layers and none of the closed edges is open; the
// session log imports no I/O package, and nothing above models speaks SQL.
func TestLayers(t *testing.T) {
	t.Parallel()
	mod, ext := importGraph(t)
	for _, v := range append(violations(mod), externalViolations(ext)...) {
		t.Error(v)
	}
	for pkg := range databaseExceptions {
		if !slices.ContainsFunc(ext[pkg], func(imp string) bool { return matchAny(databaseAPIs, imp) }) {
			t.Errorf("%s no longer imports a SQL package: remove it from databaseExceptions", pkg)
		}
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

// TestLayersCatchExternalImports checks the external-import rules on
// made-up graphs.
func TestLayersCatchExternalImports(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		graph map[string][]string
		want  string // "" = no violation
	}{
		{"session's pure imports", map[string][]string{"internal/session": {"encoding/json", "sync", "time", "crypto/sha256"}}, ""},
		{"session opens files", map[string][]string{"internal/session": {"os"}}, "internal/session imports os:"},
		{"session runs commands", map[string][]string{"internal/session": {"os/exec"}}, "internal/session imports os/exec:"},
		{"session dials", map[string][]string{"internal/session": {"net/http"}}, "internal/session imports net/http:"},
		{"session reads the database", map[string][]string{"internal/session": {"database/sql"}}, "internal/session imports database/sql:"},
		{"models speaks SQL", map[string][]string{"internal/models": {"database/sql", "gorm.io/gorm"}}, ""},
		{"service uses gorm", map[string][]string{"internal/service": {"gorm.io/gorm"}}, "internal/service imports gorm.io/gorm: only internal/models"},
		{"render uses database/sql", map[string][]string{"internal/render": {"database/sql"}}, "internal/render imports database/sql"},
		{"a listed exception", map[string][]string{"cmd/loadgen": {"database/sql"}}, ""},
		{"os above session", map[string][]string{"internal/driver": {"os", "net"}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := externalViolations(c.graph)
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
