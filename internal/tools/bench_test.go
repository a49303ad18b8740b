package tools

import (
	"context"
	"fmt"
	"testing"

	"harness/internal/llm"
)

// BenchmarkRunParallelStep measures scheduler overhead for a step of ten
// concurrency-safe no-op calls (validation, hooks, ordering, commits).
func BenchmarkRunParallelStep(b *testing.B) {
	r := NewRegistry()
	r.MustRegister(testTool("noop", true, okBody("ok")))
	p := &Pipeline{Scope: r.NewScope(), Pre: []PreHook{PermissionHook()}}
	calls := make([]llm.ContentBlock, 10)
	for i := range calls {
		calls[i] = tc(fmt.Sprintf("c%d", i), "noop", `{"a":1}`)
	}
	env := newFakeEnv(b.TempDir())
	for b.Loop() {
		env.rec = &recorder{}
		if _, err := p.Run(context.Background(), calls, 1, 1, env, newFakeSink(env.rec)); err != nil {
			b.Fatal(err)
		}
	}
}
