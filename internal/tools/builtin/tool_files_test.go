package builtin

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"harness/internal/tools"
)

func TestRead(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	var lines []string
	for i := 1; i <= 2500; i++ {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	h.write("big.txt", strings.Join(lines, "\n")+"\n")
	h.write("long.txt", strings.Repeat("é", 2500)+"\nshort\n")
	h.write("crlf.txt", "a\r\nb\r\n")
	h.write("empty.txt", "")
	h.write("bin.dat", "abc\x00def")
	if err := os.Mkdir(filepath.Join(h.ws, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}

	r := h.run(ToolRead, map[string]any{"file_path": "big.txt"})
	text := mustOK(t, r)
	if !strings.HasPrefix(text, "     1\tline 1\n     2\tline 2\n") || !strings.Contains(text, "  2000\tline 2000\n") ||
		strings.Contains(text, "line 2001\n") || !strings.HasSuffix(text, "(Showing lines 1-2000 of 2500. Use offset=2001 to read more.)") {
		t.Fatalf("default read wrong: ...%s", text[len(text)-200:])
	}
	if m := decodeMeta[ReadMeta](t, r); m != (ReadMeta{Path: "big.txt", StartLine: 1, EndLine: 2000, TotalLines: 2500, Truncated: true}) {
		t.Fatalf("meta %+v", m)
	}
	if text := mustOK(t, h.run(ToolRead, map[string]any{"file_path": "big.txt", "offset": 2499, "limit": 10})); text != "  2499\tline 2499\n  2500\tline 2500" {
		t.Fatalf("offset read %q", text)
	}
	if text := mustOK(t, h.run(ToolRead, map[string]any{"file_path": "big.txt", "offset": 10, "limit": 2})); text != "    10\tline 10\n    11\tline 11\n\n(Showing lines 10-11 of 2500. Use offset=12 to read more.)" {
		t.Fatalf("limit read %q", text)
	}
	long := mustOK(t, h.run(ToolRead, map[string]any{"file_path": "long.txt"}))
	if want := "     1\t" + strings.Repeat("é", 2000) + " [... line truncated ...]\n     2\tshort"; long != want {
		t.Fatalf("long line not cut at 2000 chars: %d bytes", len(long))
	}
	if text := mustOK(t, h.run(ToolRead, map[string]any{"file_path": "crlf.txt"})); text != "     1\ta\n     2\tb" {
		t.Fatalf("crlf %q", text)
	}
	if text := mustOK(t, h.run(ToolRead, map[string]any{"file_path": "empty.txt"})); !strings.Contains(text, "empty") {
		t.Fatalf("empty %q", text)
	}
	if text := mustCode(t, h.run(ToolRead, map[string]any{"file_path": "bin.dat"}), CodeFsBinary); !strings.Contains(text, "binary file") {
		t.Fatalf("binary %q", text)
	}
	mustCode(t, h.run(ToolRead, map[string]any{"file_path": "missing.txt"}), CodeFsNotFound)
	mustCode(t, h.run(ToolRead, map[string]any{"file_path": "adir"}), CodeFsIsDirectory)
	if r := h.run(ToolRead, map[string]any{"file_path": "big.txt", "offset": 3000}); !r.IsError || !strings.Contains(resultText(r), "2500 lines") {
		t.Fatalf("offset past end: %+v", r)
	}
	mustCode(t, h.run(ToolRead, map[string]any{"file_path": "big.txt", "offset": 0}), tools.CodeInvalidArgs)

	// The read recorded an observation of the whole file.
	p, _ := resolvePath(h.ws, "big.txt")
	if o, ok := h.p.Scope.State().Observation(p.Abs); !ok || o.Size != int64(len(h.read("big.txt"))) || o.ModTime.IsZero() {
		t.Fatalf("observation %+v %v", o, ok)
	}
}

func TestWriteGuards(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})

	// Creating a new file needs no read and creates parents.
	r := h.run(ToolWrite, map[string]any{"file_path": "new/dir/a.txt", "content": "one\ntwo\n"})
	if text := mustOK(t, r); text != "Created new/dir/a.txt (2 lines)." {
		t.Fatalf("create %q", text)
	}
	m := decodeMeta[FileChangeMeta](t, r)
	if !m.Created || m.Path != "new/dir/a.txt" || m.Diff != "--- /dev/null\n+++ b/new/dir/a.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n" {
		t.Fatalf("meta %+v", m)
	}
	if h.read("new/dir/a.txt") != "one\ntwo\n" {
		t.Fatal("content")
	}
	// Written files count as observed: overwrite without re-reading.
	r = h.run(ToolWrite, map[string]any{"file_path": "new/dir/a.txt", "content": "one\nTWO\n"})
	mustOK(t, r)
	if m := decodeMeta[FileChangeMeta](t, r); m.Created || m.Added != 1 || m.Removed != 1 || !strings.Contains(m.Diff, "-two\n+TWO\n") {
		t.Fatalf("meta %+v", m)
	}

	// An existing file the agent never read cannot be overwritten.
	h.write("existing.txt", "original\n")
	text := mustCode(t, h.run(ToolWrite, map[string]any{"file_path": "existing.txt", "content": "x"}), CodeFsNotObserved)
	if !strings.Contains(text, "read the file, then retry") || h.read("existing.txt") != "original\n" {
		t.Fatalf("not observed: %q", text)
	}
	mustOK(t, h.run(ToolRead, map[string]any{"file_path": "existing.txt"}))
	// Changed behind the agent's back since the read: stale.
	h.write("existing.txt", "changed by someone else\n")
	text = mustCode(t, h.run(ToolWrite, map[string]any{"file_path": "existing.txt", "content": "x"}), CodeFsStaleVersion)
	if !strings.Contains(text, "re-read the file, then retry") || h.read("existing.txt") != "changed by someone else\n" {
		t.Fatalf("stale: %q", text)
	}
	mustOK(t, h.run(ToolRead, map[string]any{"file_path": "existing.txt"}))
	mustOK(t, h.run(ToolWrite, map[string]any{"file_path": "existing.txt", "content": "mine\n"}))
	if h.read("existing.txt") != "mine\n" {
		t.Fatal("write after re-read failed")
	}
	mustCode(t, h.run(ToolWrite, map[string]any{"file_path": "new", "content": "x"}), CodeFsIsDirectory)
}

// Observations are per agent: another scope has not read the file.
func TestObservationsArePerAgent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	h.write("f.txt", "x\n")
	mustOK(t, h.run(ToolRead, map[string]any{"file_path": "f.txt"}))
	h.p.Scope = h.reg.NewScope()
	mustCode(t, h.run(ToolEdit, map[string]any{"file_path": "f.txt", "old_string": "x", "new_string": "y"}), CodeFsNotObserved)
}

func TestEdit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	h.write("code.go", "package main\n\nfunc a() { x := 1 }\nfunc b() { x := 1 }\n")
	edit := func(old, new string, all bool) tools.Result {
		return h.run(ToolEdit, map[string]any{"file_path": "code.go", "old_string": old, "new_string": new, "replace_all": all})
	}
	mustCode(t, edit("package main", "package lib", false), CodeFsNotObserved)
	mustOK(t, h.run(ToolRead, map[string]any{"file_path": "code.go"}))

	if text := mustCode(t, edit("nothing like this", "y", false), CodeEditNoMatch); !strings.Contains(text, "not found") {
		t.Fatalf("no match %q", text)
	}
	if text := mustCode(t, edit("x := 1", "x := 2", false), CodeEditAmbiguous); !strings.Contains(text, "2 times") || !strings.Contains(text, "replace_all") {
		t.Fatalf("ambiguous %q", text)
	}
	mustCode(t, edit("same", "same", false), tools.CodeInvalidArgs)
	mustCode(t, edit("", "y", false), tools.CodeInvalidArgs)

	r := edit("package main", "package lib", false)
	if text := mustOK(t, r); !strings.Contains(text, "replaced 1 occurrence") {
		t.Fatalf("edit %q", text)
	}
	if m := decodeMeta[FileChangeMeta](t, r); m.Diff != "--- a/code.go\n+++ b/code.go\n@@ -1,4 +1,4 @@\n-package main\n+package lib\n \n func a() { x := 1 }\n func b() { x := 1 }\n" {
		t.Fatalf("diff %q", m.Diff)
	}
	// The edit updated the observation: a second edit needs no re-read.
	if text := mustOK(t, edit("x := 1", "x := 2", true)); !strings.Contains(text, "replaced 2 occurrence") {
		t.Fatalf("replace_all %q", text)
	}
	if got := h.read("code.go"); got != "package lib\n\nfunc a() { x := 2 }\nfunc b() { x := 2 }\n" {
		t.Fatalf("content %q", got)
	}
	// Changed on disk since: stale.
	h.write("code.go", "package other\n")
	mustCode(t, edit("package other", "package x", false), CodeFsStaleVersion)
	mustCode(t, h.run(ToolEdit, map[string]any{"file_path": "nope.go", "old_string": "a", "new_string": "b"}), CodeFsNotFound)
}
