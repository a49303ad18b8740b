package tools

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"harness/internal/llm"
	"harness/internal/session"
)

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
