package builtin

import (
	"context"
	"strings"
	"testing"

	"harness/internal/session"
	"harness/internal/tools"
)

// askHarness is the built-in harness in ask mode with the permission hook,
// answering every approval with outcome.
func askHarness(t *testing.T, outcome session.ApprovalOutcome) *harness {
	t.Helper()
	h := newHarness(t, Options{})
	h.p.Pre = []tools.PreHook{tools.PermissionHook()}
	h.env.mode = session.ModeAsk
	h.env.approve = func(context.Context, *tools.Call, string) session.ApprovalOutcome { return outcome }
	return h
}

func TestPreviewWriteCreate(t *testing.T) {
	t.Parallel()
	h := askHarness(t, session.ApprovalAllowedOnce)
	mustOK(t, h.run(ToolWrite, map[string]any{"file_path": "dir/notes.txt", "content": "hello\nworld\n"}))
	pv := h.env.lastPreview()
	if pv == nil {
		t.Fatal("no preview for a write")
	}
	if pv.Kind != session.PreviewDiff || pv.Path != "dir/notes.txt" || !pv.Created || pv.Added != 2 || pv.Removed != 0 || pv.Truncated {
		t.Fatalf("preview %+v", pv)
	}
	if !strings.HasPrefix(pv.Diff, "--- /dev/null\n+++ b/dir/notes.txt\n") || !strings.Contains(pv.Diff, "\n+hello\n+world\n") {
		t.Fatalf("diff %q", pv.Diff)
	}
	// The preview wrote nothing itself: the approved body did.
	if h.read("dir/notes.txt") != "hello\nworld\n" {
		t.Fatal("the approved write did not happen")
	}
}

func TestPreviewWriteOverwrite(t *testing.T) {
	t.Parallel()
	h := askHarness(t, session.ApprovalRejected)
	h.write("f.txt", "one\ntwo\nthree\n")
	mustOK(t, h.run(ToolRead, map[string]any{"file_path": "f.txt"}))
	r := h.run(ToolWrite, map[string]any{"file_path": "f.txt", "content": "one\n2\nthree\n"})
	if !r.IsError || !strings.Contains(resultText(r), "rejected") {
		t.Fatalf("rejected write %+v", r)
	}
	pv := h.env.lastPreview()
	if pv == nil || pv.Created || pv.Path != "f.txt" || pv.Added != 1 || pv.Removed != 1 {
		t.Fatalf("preview %+v", pv)
	}
	if !strings.HasPrefix(pv.Diff, "--- a/f.txt\n+++ b/f.txt\n") || !strings.Contains(pv.Diff, "-two\n+2\n") {
		t.Fatalf("diff %q", pv.Diff)
	}
	if h.read("f.txt") != "one\ntwo\nthree\n" {
		t.Fatal("a rejected write (or its preview) changed the file")
	}
	// A binary target is not diffed.
	h.write("b.dat", "a\x00b")
	h.run(ToolWrite, map[string]any{"file_path": "b.dat", "content": "text"})
	if pv := h.env.lastPreview(); pv == nil || pv.Diff != "Binary files differ\n" {
		t.Fatalf("binary preview %+v", pv)
	}
	// A path outside the workspace has no preview (approved, the body
	// would refuse it).
	h.run(ToolWrite, map[string]any{"file_path": "../escape.txt", "content": "x"})
	if pv := h.env.lastPreview(); pv != nil {
		t.Fatalf("preview outside the workspace %+v", pv)
	}
}

func TestPreviewWriteLargeDiffIsCut(t *testing.T) {
	t.Parallel()
	h := askHarness(t, session.ApprovalRejected)
	content := strings.Repeat("a fairly long line of new content for the preview cap\n", 3000) // ~160 KiB
	h.run(ToolWrite, map[string]any{"file_path": "big.txt", "content": content})
	pv := h.env.lastPreview()
	if pv == nil || !pv.Truncated || len(pv.Diff) > maxPreviewDiff+64 || !strings.HasSuffix(pv.Diff, "\\ diff truncated\n") || pv.Added != 3000 {
		t.Fatalf("large preview: truncated=%v len=%d added=%d", pv != nil && pv.Truncated, len(pv.Diff), pv.Added)
	}
}

func TestPreviewEdit(t *testing.T) {
	t.Parallel()
	h := askHarness(t, session.ApprovalAllowedOnce)
	h.write("code.go", "package x\n\nfunc A() int { return 1 }\n")
	mustOK(t, h.run(ToolRead, map[string]any{"file_path": "code.go"}))

	mustOK(t, h.run(ToolEdit, map[string]any{"file_path": "code.go", "old_string": "return 1", "new_string": "return 2"}))
	pv := h.env.lastPreview()
	if pv == nil || pv.Kind != session.PreviewDiff || pv.Path != "code.go" || pv.Created || pv.Added != 1 || pv.Removed != 1 ||
		!strings.Contains(pv.Diff, "-func A() int { return 1 }\n+func A() int { return 2 }\n") {
		t.Fatalf("edit preview %+v", pv)
	}
	if h.read("code.go") != "package x\n\nfunc A() int { return 2 }\n" {
		t.Fatal("the approved edit did not happen")
	}

	// No match: no preview, and the body fails as it always did.
	mustCode(t, h.run(ToolEdit, map[string]any{"file_path": "code.go", "old_string": "return 7", "new_string": "return 8"}), CodeEditNoMatch)
	if pv := h.env.lastPreview(); pv != nil {
		t.Fatalf("a non-matching edit has a preview: %+v", pv)
	}
	// Ambiguous without replace_all: no preview either; with it, all
	// occurrences are previewed.
	h.write("dup.txt", "x\nx\n")
	mustOK(t, h.run(ToolRead, map[string]any{"file_path": "dup.txt"}))
	mustCode(t, h.run(ToolEdit, map[string]any{"file_path": "dup.txt", "old_string": "x", "new_string": "y"}), CodeEditAmbiguous)
	if pv := h.env.lastPreview(); pv != nil {
		t.Fatalf("an ambiguous edit has a preview: %+v", pv)
	}
	mustOK(t, h.run(ToolEdit, map[string]any{"file_path": "dup.txt", "old_string": "x", "new_string": "y", "replace_all": true}))
	if pv := h.env.lastPreview(); pv == nil || pv.Added != 2 || pv.Removed != 2 {
		t.Fatalf("replace_all preview %+v", pv)
	}
}

func TestPreviewBash(t *testing.T) {
	t.Parallel()
	h := askHarness(t, session.ApprovalRejected) // the body never runs
	h.run(ToolBash, map[string]any{"command": "ls -la | wc -l", "description": "count entries"})
	pv := h.env.lastPreview()
	if pv == nil || *pv != (session.ApprovalPreview{Kind: session.PreviewCommand, Command: "ls -la | wc -l", Description: "count entries"}) {
		t.Fatalf("bash preview %+v", pv)
	}
}
