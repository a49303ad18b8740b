package openai_test

import (
	"reflect"
	"strings"
	"testing"

	"harness/internal/llm"
	"harness/internal/llm/fake"
)

// Case 53: the empty first reasoning delta opens nothing; reasoning then
// content gives blocks 0 and 1; block-ends, usage and finish come after
// [DONE]; the trailing usage-only chunk wins over the finish-attached one.
func TestStreamReasoningThenText(t *testing.T) {
	t.Parallel()
	_, p := serve(t, []fake.Reply{{
		Reasoning:   "Let me think about it.",
		Text:        "The answer is 42.",
		FinishUsage: &fake.Usage{PromptTokens: 1, CompletionTokens: 1},
		Usage:       &fake.Usage{PromptTokens: 100, CacheHitTokens: 60, CompletionTokens: 10, ReasoningTokens: 4},
	}})
	r := stream(t, p, prompt("question"))
	if r.err != nil {
		t.Fatal(r.err)
	}
	// Shape: start(0 reasoning), reasoning deltas, start(1 text), text
	// deltas, end(0), end(1), usage, finish.
	var shape []string
	for _, c := range r.chunks {
		s := string(c.Type)
		if c.Type == llm.ChunkBlockStart {
			s += ":" + string(c.BlockType)
		}
		if len(shape) == 0 || shape[len(shape)-1] != s {
			shape = append(shape, s)
		}
	}
	want := []string{"block-start:reasoning", "reasoning-delta", "block-start:text", "text-delta", "block-end", "usage", "finish"}
	if !reflect.DeepEqual(shape, want) {
		t.Fatalf("shape = %v, want %v", shape, want)
	}
	if r.chunks[0].Index != 0 {
		t.Fatalf("reasoning block index = %d", r.chunks[0].Index)
	}
	msg := r.assembled().Message("m", llm.Source{Kind: llm.SourceModel})
	wantContent := []llm.ContentBlock{{Type: llm.BlockReasoning, Text: "Let me think about it."}, llm.Text("The answer is 42.")}
	if !reflect.DeepEqual(msg.Content, wantContent) {
		t.Fatalf("content = %#v", msg.Content)
	}
	// Case 59 mapping, from the trailing chunk.
	if u := r.assembled().Usage(); u == nil || *u != (llm.Usage{InputTokens: 40, CacheReadTokens: 60, OutputTokens: 10, ReasoningTokens: 4}) {
		t.Fatalf("usage = %+v", u)
	}
	if f := r.finish(); f.Kind != llm.FinishStop {
		t.Fatalf("finish = %+v", f)
	}
}

func TestStreamEmptyFirstReasoningOpensNothing(t *testing.T) {
	t.Parallel()
	// Thinking is enabled, so the fake opens with reasoning_content "" like
	// DeepSeek; the reply itself has no reasoning.
	srv, p := serve(t, []fake.Reply{{Text: "hi", Chunks: 1}})
	r := stream(t, p, prompt("x"))
	if r.err != nil {
		t.Fatal(r.err)
	}
	if got := srv.Requests()[0].Body["thinking"]; !reflect.DeepEqual(got, map[string]any{"type": "enabled"}) {
		t.Fatalf("thinking = %v", got)
	}
	want := []llm.ChunkType{llm.ChunkBlockStart, llm.ChunkTextDelta, llm.ChunkBlockEnd, llm.ChunkUsage, llm.ChunkFinish}
	if !reflect.DeepEqual(r.types(), want) {
		t.Fatalf("chunks = %v", r.types())
	}
	if r.chunks[0].BlockType != llm.BlockText || r.chunks[0].Index != 0 {
		t.Fatalf("first block = %+v", r.chunks[0])
	}
}

// Case 54: fragments of one wire index form one block; two wire indexes
// form two blocks in first-seen order.
func TestStreamToolCallFragments(t *testing.T) {
	t.Parallel()
	_, p := serve(t, []fake.Reply{
		{ToolCalls: []fake.ToolCall{{ID: "c1", Name: "bash", Arguments: `{"command": "ls -la"}`, Fragments: 3}}},
		{Frames: []fake.Frame{
			{Tool: &fake.ToolFragment{Index: 1, ID: "b", Name: "read"}},
			{Tool: &fake.ToolFragment{Index: 0, ID: "a", Name: "write"}},
			{Tool: &fake.ToolFragment{Index: 1, Arguments: `{"file_path":`}},
			{Tool: &fake.ToolFragment{Index: 0, Arguments: `{}`}},
			{Tool: &fake.ToolFragment{Index: 1, Arguments: `"x"}`}},
		}},
	})
	r := stream(t, p, prompt("x"))
	if r.err != nil {
		t.Fatal(r.err)
	}
	var argDeltas int
	for _, c := range r.chunks {
		if c.Type == llm.ChunkToolCallDelta && c.ArgumentsDelta != "" {
			argDeltas++
		}
	}
	if argDeltas != 3 {
		t.Fatalf("argument deltas = %d, want 3", argDeltas)
	}
	a := r.assembled()
	if got := a.ToolCalls(); !reflect.DeepEqual(got, []llm.ContentBlock{llm.ToolCall("c1", "bash", `{"command": "ls -la"}`)}) {
		t.Fatalf("calls = %#v", got)
	}
	if a.Finish().Kind != llm.FinishToolCalls {
		t.Fatalf("finish = %+v", a.Finish())
	}

	r = stream(t, p, prompt("x"))
	if r.err != nil {
		t.Fatal(r.err)
	}
	want := []llm.ContentBlock{llm.ToolCall("b", "read", `{"file_path":"x"}`), llm.ToolCall("a", "write", `{}`)}
	if got := r.assembled().ToolCalls(); !reflect.DeepEqual(got, want) {
		t.Fatalf("calls = %#v", got)
	}
}

// Case 55: finish mapping.
func TestStreamFinishMapping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		reply fake.Reply
		kind  llm.FinishKind
		code  llm.Code
		calls int
	}{
		{"stop with no blocks is EMPTY_RESPONSE", fake.Reply{}, llm.FinishError, llm.CodeEmptyResponse, 0},
		{"missing finish with no blocks is EMPTY_RESPONSE", fake.Reply{Finish: "none"}, llm.FinishError, llm.CodeEmptyResponse, 0},
		{"missing finish is stop", fake.Reply{Text: "ok", Finish: "none"}, llm.FinishStop, "", 0},
		{"reasoning-only is a valid stop", fake.Reply{Reasoning: "hmm"}, llm.FinishStop, "", 0},
		{"length is max-tokens and drops calls", fake.Reply{Text: "par", ToolCalls: []fake.ToolCall{{Name: "bash", Arguments: `{"comm`}}, Finish: "length"}, llm.FinishMaxTokens, "", 0},
		{"content_filter", fake.Reply{Text: "no", Finish: "content_filter"}, llm.FinishError, llm.CodeContentFilter, 0},
		{"other reasons are uppercased", fake.Reply{Text: "no", Finish: "insufficient_system_resource"}, llm.FinishError, "INSUFFICIENT_SYSTEM_RESOURCE", 0},
		{"tool_calls", fake.Reply{ToolCalls: []fake.ToolCall{{Name: "read", Arguments: `{}`}}}, llm.FinishToolCalls, "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, p := serve(t, []fake.Reply{tt.reply})
			r := stream(t, p, prompt("x"))
			if r.err != nil {
				t.Fatal(r.err)
			}
			f := r.finish()
			if f.Kind != tt.kind {
				t.Fatalf("finish = %+v, want %s", f, tt.kind)
			}
			if tt.code != "" && (f.Failure == nil || f.Failure.Code != tt.code) {
				t.Fatalf("failure = %+v, want %s", f.Failure, tt.code)
			}
			if got := len(r.assembled().ToolCalls()); got != tt.calls {
				t.Fatalf("tool calls = %d, want %d", got, tt.calls)
			}
		})
	}
	// EMPTY_RESPONSE is retried by the default policy.
	if !llm.DefaultRetryPolicy().Retryable(llm.CodeEmptyResponse) {
		t.Fatal("EMPTY_RESPONSE not retryable")
	}
}

func TestStreamUsageMapping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		usage fake.Usage
		want  llm.Usage
	}{
		{"deepseek cache hits", fake.Usage{PromptTokens: 100, CacheHitTokens: 60, CompletionTokens: 10}, llm.Usage{InputTokens: 40, CacheReadTokens: 60, OutputTokens: 10}},
		{"openai cached_tokens", fake.Usage{PromptTokens: 500, CacheHitTokens: 384, CompletionTokens: 7, ReasoningTokens: 3, OpenAIStyle: true}, llm.Usage{InputTokens: 116, CacheReadTokens: 384, OutputTokens: 7, ReasoningTokens: 3}},
		{"no cache", fake.Usage{PromptTokens: 12, CompletionTokens: 3}, llm.Usage{InputTokens: 12, OutputTokens: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, p := serve(t, []fake.Reply{{Text: "x", Usage: &tt.usage}})
			r := stream(t, p, prompt("x"))
			if r.err != nil {
				t.Fatal(r.err)
			}
			if u := r.assembled().Usage(); u == nil || *u != tt.want {
				t.Fatalf("usage = %+v, want %+v", u, tt.want)
			}
		})
	}
}

func TestStreamWithoutUsage(t *testing.T) {
	t.Parallel()
	_, p := serve(t, []fake.Reply{{Text: "x", NoUsage: true}})
	r := stream(t, p, prompt("x"))
	if r.err != nil {
		t.Fatal(r.err)
	}
	for _, c := range r.chunks {
		if c.Type == llm.ChunkUsage {
			t.Fatal("usage chunk without wire usage")
		}
	}
}

func TestStreamWithRun(t *testing.T) {
	t.Parallel()
	// llm.Run turns a provider failure into the terminal finish chunk.
	_, p := serve(t, []fake.Reply{{Text: "partial", Fault: &fake.Fault{Kind: fake.FaultCut, After: 3}}})
	var chunks []llm.Chunk
	err := llm.Run(t.Context(), p, prompt("x"), func(c llm.Chunk) error {
		chunks = append(chunks, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	last := chunks[len(chunks)-1]
	if last.Type != llm.ChunkFinish || last.Reason.Kind != llm.FinishError || last.Reason.Failure.Code != llm.CodeStreamClosed {
		t.Fatalf("last chunk = %+v", last)
	}
	var a llm.Assembler
	for _, c := range chunks {
		a.Add(c)
	}
	if got := a.Interrupted(); len(got) != 1 || !strings.HasPrefix("partial", got[0].Text) {
		t.Fatalf("visible prefix = %+v", got)
	}
}
