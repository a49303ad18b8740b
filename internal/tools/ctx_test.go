package tools

import (
	"context"
	"strings"
	"testing"
	"time"

	"harness/internal/llm"
	"harness/internal/session"
)

// A cancelled call's output is recorded to the end even when the host's Emit
// refuses a done ctx: progress flushes use the call's ctx and leave what
// they cannot send to the final flush, which outlives the cancel.
func TestCancelledCallFinalOutputIsRecorded(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name          string
		before, after string // written before and after the cancel
	}{
		// "a" leads (flushed at once, live); "b" waits for the final flush.
		{"output before and after the cancel", "a", "b"},
		// "b" is due at once, but the call's ctx is done: the progress
		// flush must leave it to the final one.
		{"output only after the cancel", "", "b"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			started := make(chan struct{})
			p := newPipeline(t, testTool("t", false, func(ctx context.Context, call *Call) (Result, error) {
				call.Output("stdout", c.before)
				close(started)
				<-ctx.Done()
				call.Output("stdout", c.after)
				return TextResult("stopped"), nil
			}))
			p.OutputInterval = time.Hour // no timer flush: only the leading and the final one
			env := newFakeEnv(t.TempDir())
			env.refuseDone = true
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() {
				_, err := p.Run(ctx, []llm.ContentBlock{tc("c1", "t", "")}, 1, 1, env, newFakeSink(env.rec))
				done <- err
			}()
			waitFor(t, started, "body start")
			cancel()
			if err := waitFor(t, done, "Run"); err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			for _, rec := range env.rec.emits(session.TypeToolOutput) {
				out.WriteString(rec.Data.(session.ToolOutput).Text)
			}
			if out.String() != c.before+c.after {
				t.Fatalf("recorded output %q, want %q", out.String(), c.before+c.after)
			}
			if r := env.rec.commits()["c1"]; errCode(r) != session.CodeToolAborted {
				t.Fatalf("result %+v", r)
			}
		})
	}
}
