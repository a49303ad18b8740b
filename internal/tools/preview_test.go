package tools

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"harness/internal/llm"
	"harness/internal/session"
)

// askHarness is the built-in harness in ask mode with the permission hook,
// answering every approval with outcome.
func askHarness(t *testing.T, outcome session.ApprovalOutcome) *harness {
	t.Helper()
	h := newHarness(t, BuiltinOptions{})
	h.p.Pre = []PreHook{PermissionHook()}
	h.env.mode = session.ModeAsk
	h.env.approve = func(context.Context, *Call, string) session.ApprovalOutcome { return outcome }
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

// A preview that panics (or returns nil) gives an approval without a
// preview; the call is still asked about and runs.
func TestPreviewPanicGivesNoPreview(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"panic", "nil"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var ran atomic.Bool
			d := testTool("t", false, func(context.Context, *Call) (Result, error) {
				ran.Store(true)
				return TextResult("ran"), nil
			})
			d.Access = AccessWrite
			d.Preview = func(context.Context, *Call) *session.ApprovalPreview {
				if name == "panic" {
					panic("preview exploded")
				}
				return nil
			}
			p := newPipeline(t, d)
			p.Pre = []PreHook{PermissionHook()}
			env := newFakeEnv(t.TempDir())
			env.mode = session.ModeAsk
			env.approve = func(context.Context, *Call, string) session.ApprovalOutcome { return session.ApprovalAllowedOnce }
			if _, err := p.Run(context.Background(), []llm.ContentBlock{tc("c1", "t", "")}, 1, 1, env, newFakeSink(env.rec)); err != nil {
				t.Fatal(err)
			}
			if r := env.rec.commits()["c1"]; r.IsError || resultText(r) != "ran" || !ran.Load() {
				t.Fatalf("result %+v ran=%v", r, ran.Load())
			}
			assertTrace(t, env.rec.trace("call", "approve", "commit"), []string{"call:c1", "approve:c1", "commit:c1"})
			if pv := env.lastPreview(); pv != nil {
				t.Fatalf("preview %+v", pv)
			}
		})
	}
}

// Previews run only when a call needs approval: not in auto mode, not for
// read tools, not when the permission hook denies.
func TestPreviewOnlyWhenAsking(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	d := testTool("t", false, okBody("ran"))
	d.Access = AccessWrite
	d.Preview = func(context.Context, *Call) *session.ApprovalPreview {
		calls.Add(1)
		return &session.ApprovalPreview{Kind: session.PreviewCommand, Command: "x"}
	}
	for _, mode := range []session.PermissionMode{session.ModeAuto, session.ModeReadOnly, session.ModeAsk} {
		p := newPipeline(t, d)
		p.Pre = []PreHook{PermissionHook()}
		env := newFakeEnv(t.TempDir())
		env.mode = mode
		env.approve = func(context.Context, *Call, string) session.ApprovalOutcome { return session.ApprovalAllowedSession }
		if _, err := p.Run(context.Background(), []llm.ContentBlock{tc("c1", "t", "")}, 1, 1, env, newFakeSink(env.rec)); err != nil {
			t.Fatal(err)
		}
		r := env.rec.commits()["c1"]
		switch mode {
		case session.ModeReadOnly:
			if !r.IsError || !strings.Contains(resultText(r), "read-only") {
				t.Fatalf("read-only: %+v", r)
			}
		default:
			if r.IsError || resultText(r) != "ran" {
				t.Fatalf("%s: %+v", mode, r)
			}
		}
		if mode == session.ModeAsk {
			if pv := env.lastPreview(); pv == nil || pv.Command != "x" {
				t.Fatalf("ask: preview %+v", pv)
			}
		}
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("preview ran %d times, want once (ask mode only)", n)
	}
}
