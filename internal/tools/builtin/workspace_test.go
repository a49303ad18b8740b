package builtin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every escape is refused by every file tool with PATH_OUTSIDE_WORKSPACE,
// and nothing outside the workspace is read or written.
func TestWorkspaceEscapes(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("TOP SECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	setup := func(t *testing.T) *harness {
		h := newHarness(t, Options{})
		must := func(err error) {
			if err != nil {
				t.Fatal(err)
			}
		}
		must(os.Symlink(outside, filepath.Join(h.ws, "dirlink")))                            // symlinked directory pointing out
		must(os.Symlink(secret, filepath.Join(h.ws, "filelink")))                            // symlinked file pointing out
		must(os.Symlink(filepath.Join(outside, "new.txt"), filepath.Join(h.ws, "dangling"))) // dangling link pointing out
		must(os.MkdirAll(filepath.Join(h.ws, "sub"), 0o755))
		must(os.Symlink("../dirlink", filepath.Join(h.ws, "sub", "chain"))) // relative link chain pointing out
		return h
	}
	paths := []string{"../x", "../../etc/passwd", "sub/../../x", "/etc/passwd", secret, "dirlink/secret.txt", "dirlink/new.txt",
		"filelink", "dangling", "sub/chain/secret.txt", "dirlink"}
	type toolCase struct {
		tool string
		args func(p string) map[string]any
	}
	toolCases := []toolCase{
		{ToolRead, func(p string) map[string]any { return map[string]any{"file_path": p} }},
		{ToolWrite, func(p string) map[string]any { return map[string]any{"file_path": p, "content": "pwned"} }},
		{ToolEdit, func(p string) map[string]any {
			return map[string]any{"file_path": p, "old_string": "TOP", "new_string": "PWNED"}
		}},
		{ToolGlob, func(p string) map[string]any { return map[string]any{"pattern": "*", "path": p} }},
		{ToolGrep, func(p string) map[string]any { return map[string]any{"pattern": "SECRET", "path": p} }},
	}
	for _, tcase := range toolCases {
		t.Run(tcase.tool, func(t *testing.T) {
			t.Parallel()
			h := setup(t)
			for _, p := range paths {
				r := h.run(tcase.tool, tcase.args(p))
				text := mustCode(t, r, CodePathOutsideWorkspace)
				if !strings.Contains(text, "outside the workspace") {
					t.Errorf("%s %q: unclear message %q", tcase.tool, p, text)
				}
			}
			if b, _ := os.ReadFile(secret); string(b) != "TOP SECRET\n" {
				t.Fatal("the outside file was modified")
			}
			if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
				t.Fatal("a file was created outside the workspace")
			}
		})
	}
}

// Searching the workspace never follows links out of it.
func TestSearchSkipsOutsideLinks(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("TOP SECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, backend := range grepBackends(t) {
		h := newHarness(t, Options{Grep: backend})
		h.write("inside.txt", "not secret\n")
		_ = os.Symlink(outside, filepath.Join(h.ws, "dirlink"))
		_ = os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(h.ws, "filelink"))
		if text := mustOK(t, h.run(ToolGrep, map[string]any{"pattern": "SECRET"})); strings.Contains(text, "TOP") {
			t.Fatalf("%s grep read outside: %s", backend, text)
		}
		if text := mustOK(t, h.run(ToolGlob, map[string]any{"pattern": "**/*"})); text != "inside.txt" {
			t.Fatalf("glob listed %q", text)
		}
	}
}

// Paths inside the workspace work relative, absolute, and through links
// that stay inside.
func TestWorkspaceInsidePaths(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	h.write("dir/a.txt", "alpha\n")
	if err := os.Symlink("dir", filepath.Join(h.ws, "inlink")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"dir/a.txt", "./dir/../dir/a.txt", filepath.Join(h.ws, "dir", "a.txt"), "inlink/a.txt"} {
		if text := mustOK(t, h.run(ToolRead, map[string]any{"file_path": p})); text != "     1\talpha" {
			t.Fatalf("%s: %q", p, text)
		}
	}
	wp, err := resolvePath(h.ws, "inlink/new/b.txt")
	if err != nil || wp.Rel != "dir/new/b.txt" {
		t.Fatalf("resolve = %+v, %v", wp, err)
	}
}
