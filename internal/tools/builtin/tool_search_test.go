package builtin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestGlob(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	base := time.Now().Add(-time.Hour)
	files := []string{"main.go", "cmd/app/app.go", "internal/x/x.go", "internal/x/x_test.go", "web/app.ts", "web/app.tsx", "README.md", ".git/config.go"}
	for i, f := range files {
		p := h.write(f, "x")
		mt := base.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct{ pattern, path, want string }{
		{"*.go", "", "internal/x/x_test.go\ninternal/x/x.go\ncmd/app/app.go\nmain.go"}, // newest first, any depth, not .git
		{"**/*.go", "internal", "internal/x/x_test.go\ninternal/x/x.go"},
		{"x/*_test.go", "internal", "internal/x/x_test.go"},
		{"*.{ts,tsx}", "", "web/app.tsx\nweb/app.ts"},
		{"cmd/**", "", "cmd/app/app.go"},
		{"*.rs", "", `No files match "*.rs" in ..`},
	}
	for _, tt := range tests {
		args := map[string]any{"pattern": tt.pattern}
		if tt.path != "" {
			args["path"] = tt.path
		}
		if got := mustOK(t, h.run(ToolGlob, args)); got != tt.want {
			t.Errorf("glob %q in %q:\n%s\nwant:\n%s", tt.pattern, tt.path, got, tt.want)
		}
	}
	mustCode(t, h.run(ToolGlob, map[string]any{"pattern": "a{b"}), CodeInvalidPattern)
	abs := filepath.Join(h.ws, "web", "*.ts")
	if got := mustOK(t, h.run(ToolGlob, map[string]any{"pattern": abs})); got != "web/app.ts" {
		t.Errorf("absolute pattern: %q", got)
	}
}

func TestGlobCap(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	base := time.Now().Add(-time.Hour)
	for i := range 150 {
		p := h.write(fmt.Sprintf("d/f%03d.txt", i), "x")
		mt := base.Add(time.Duration(i) * time.Second)
		_ = os.Chtimes(p, mt, mt)
	}
	r := h.run(ToolGlob, map[string]any{"pattern": "**/*.txt"})
	lines := strings.Split(mustOK(t, r), "\n")
	if len(lines) != 102 || lines[0] != "d/f149.txt" || lines[99] != "d/f050.txt" || !strings.Contains(lines[101], "100 newest of 150") {
		t.Fatalf("%d lines: first %q, 100th %q, last %q", len(lines), lines[0], lines[99], lines[len(lines)-1])
	}
	if m := decodeMeta[SearchMeta](t, r); !m.Truncated || m.Matches != 150 {
		t.Fatalf("meta %+v", m)
	}
}

// grepBackends lists the backends to test: pure Go always, ripgrep when it
// is installed.
func grepBackends(t *testing.T) []GrepBackend {
	if _, err := exec.LookPath("rg"); err != nil {
		t.Log("LOUD NOTE: ripgrep (rg) is not installed here; grep tests exercise only the pure Go backend")
		return []GrepBackend{GrepGo}
	}
	return []GrepBackend{GrepGo, GrepRipgrep}
}

func TestGrep(t *testing.T) {
	t.Parallel()
	for _, backend := range grepBackends(t) {
		t.Run(string(backend), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, Options{Grep: backend})
			h.write("a.go", "package a\nfunc Alpha() {}\n// TODO: alpha\n")
			h.write("sub/b.go", "package b\nfunc Beta() {}\n")
			h.write("sub/c.txt", "func NotGo() {}\n")
			h.write("bin.dat", "\x00func Binary()\n")
			h.write(".git/HEAD.go", "func Hidden() {}\n")
			tests := []struct {
				args map[string]any
				want string
			}{
				{map[string]any{"pattern": `func \w+\(`}, "a.go\n  2: func Alpha() {}\n\nsub/b.go\n  2: func Beta() {}\n\nsub/c.txt\n  1: func NotGo() {}"},
				{map[string]any{"pattern": `func \w+\(`, "include": "*.go"}, "a.go\n  2: func Alpha() {}\n\nsub/b.go\n  2: func Beta() {}"},
				{map[string]any{"pattern": `(?i)alpha`, "path": "a.go"}, "a.go\n  2: func Alpha() {}\n  3: // TODO: alpha"},
				{map[string]any{"pattern": `package`, "path": "sub"}, "sub/b.go\n  1: package b"},
				{map[string]any{"pattern": `zzz`}, `No matches for "zzz" in ..`},
			}
			for _, tt := range tests {
				if got := mustOK(t, h.run(ToolGrep, tt.args)); got != tt.want {
					t.Errorf("grep %v:\n%s\nwant:\n%s", tt.args, got, tt.want)
				}
			}
			mustCode(t, h.run(ToolGrep, map[string]any{"pattern": "a(b"}), CodeInvalidPattern)
			mustCode(t, h.run(ToolGrep, map[string]any{"pattern": "x", "include": "{"}), CodeInvalidPattern)
			mustCode(t, h.run(ToolGrep, map[string]any{"pattern": "x", "path": "missing"}), CodeFsNotFound)
		})
	}
}

func TestGrepCap(t *testing.T) {
	t.Parallel()
	for _, backend := range grepBackends(t) {
		t.Run(string(backend), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, Options{Grep: backend})
			var sb strings.Builder
			for i := range 300 {
				fmt.Fprintf(&sb, "match %d\n", i)
			}
			h.write("many.txt", sb.String())
			r := h.run(ToolGrep, map[string]any{"pattern": "match"})
			text := mustOK(t, r)
			if strings.Count(text, ": match ") != 250 || !strings.Contains(text, "  250: match 249\n") || !strings.HasSuffix(text, "(Showing the first 250 matches; there are more. Narrow the pattern, path or include.)") {
				t.Fatalf("capped grep wrong: ...%s", text[len(text)-200:])
			}
			if m := decodeMeta[SearchMeta](t, r); !m.Truncated || m.Matches != 250 || m.Files != 1 {
				t.Fatalf("meta %+v", m)
			}
		})
	}
}

func TestParseRipgrepJSON(t *testing.T) {
	t.Parallel()
	out := `{"type":"begin","data":{"path":{"text":"a.go"}}}
{"type":"match","data":{"path":{"text":"a.go"},"lines":{"text":"func A() {}\n"},"line_number":3,"absolute_offset":10,"submatches":[]}}
{"type":"match","data":{"path":{"bytes":"Yi5nbw=="},"lines":{"bytes":"ZnVuYyBCKCkK"},"line_number":7,"submatches":[]}}
{"type":"end","data":{"path":{"text":"a.go"}}}
{"type":"summary","data":{}}
`
	got, more, err := parseRipgrepJSON(strings.NewReader(out), 10)
	if err != nil || more || len(got) != 2 {
		t.Fatalf("%+v %v %v", got, more, err)
	}
	if got[0] != (grepMatch{file: "a.go", line: 3, text: "func A() {}\n"}) || got[1] != (grepMatch{file: "b.go", line: 7, text: "func B()\n"}) {
		t.Fatalf("%+v", got)
	}
	if got, more, _ := parseRipgrepJSON(strings.NewReader(out), 1); len(got) != 1 || !more {
		t.Fatalf("limit: %+v %v", got, more)
	}
	if _, _, err := parseRipgrepJSON(strings.NewReader("not json\n"), 1); err == nil {
		t.Fatal("garbage accepted")
	}
}
