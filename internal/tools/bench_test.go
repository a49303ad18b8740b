package tools

import (
	"context"
	"fmt"
	"strings"
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

// BenchmarkGrepGo measures the pure Go grep backend over 200 files of 200
// lines each, through the full pipeline.
func BenchmarkGrepGo(b *testing.B) {
	h := newHarness(b, BuiltinOptions{Grep: GrepGo})
	var content strings.Builder
	for i := range 200 {
		fmt.Fprintf(&content, "line %d: some ordinary text of a source file\n", i)
	}
	for i := range 200 {
		h.write(fmt.Sprintf("pkg%d/file%d.go", i%10, i), content.String())
	}
	for b.Loop() {
		h.env.rec = &recorder{}
		if r := h.run(ToolGrep, map[string]any{"pattern": `line 1[0-9]7:`}); r.IsError {
			b.Fatal(resultText(r))
		}
	}
}
