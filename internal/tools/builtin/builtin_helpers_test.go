package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"harness/internal/llm"
	"harness/internal/tools"
)

// harness runs built-in tools through the real pipeline against a temporary
// workspace, one call per step, sharing the agent's scope.
type harness struct {
	t   testing.TB
	reg *tools.Registry
	p   *tools.Pipeline
	env *fakeEnv
	ws  string
	n   int
}

func newHarness(t testing.TB, opts Options) *harness {
	t.Helper()
	if opts.Grep == "" {
		opts.Grep = GrepGo
	}
	r := tools.NewRegistry()
	if err := Register(r, opts); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	return &harness{t: t, reg: r, p: &tools.Pipeline{Scope: r.NewScope(), Logger: slog.New(slog.DiscardHandler)}, env: newFakeEnv(ws), ws: ws}
}

// run calls a tool; args is a JSON-marshalled value or, as a string, the raw
// argument text.
func (h *harness) run(name string, args any) tools.Result {
	h.t.Helper()
	return h.runCtx(context.Background(), name, args)
}

func (h *harness) runCtx(ctx context.Context, name string, args any) tools.Result {
	h.t.Helper()
	raw, ok := args.(string)
	if !ok {
		b, err := json.Marshal(args)
		if err != nil {
			h.t.Fatal(err)
		}
		raw = string(b)
	}
	h.n++
	id := fmt.Sprintf("call_%d", h.n)
	if _, err := h.p.Run(ctx, []llm.ContentBlock{tc(id, name, raw)}, 1, h.n, h.env, newFakeSink(h.env.rec)); err != nil {
		h.t.Fatal(err)
	}
	r, ok := h.env.rec.commits()[id]
	if !ok {
		h.t.Fatalf("no result for %s", id)
	}
	return r
}

func (h *harness) write(rel, content string) string {
	h.t.Helper()
	p := filepath.Join(h.ws, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
	return p
}

func (h *harness) read(rel string) string {
	h.t.Helper()
	b, err := os.ReadFile(filepath.Join(h.ws, rel))
	if err != nil {
		h.t.Fatal(err)
	}
	return string(b)
}

func mustOK(t *testing.T, r tools.Result) string {
	t.Helper()
	if r.IsError {
		t.Fatalf("unexpected error result: %s (%+v)", resultText(r), r.Error)
	}
	return resultText(r)
}

func mustCode(t *testing.T, r tools.Result, code string) string {
	t.Helper()
	if !r.IsError || errCode(r) != code {
		t.Fatalf("want error %s, got isError=%v error=%+v text=%q", code, r.IsError, r.Error, resultText(r))
	}
	return resultText(r)
}

func decodeMeta[T any](t *testing.T, r tools.Result) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.Meta, &v); err != nil {
		t.Fatalf("meta %s: %v", r.Meta, err)
	}
	return v
}
