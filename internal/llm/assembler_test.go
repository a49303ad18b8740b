package llm

import (
	"reflect"
	"testing"
)

func blockStart(i int, t BlockType) Chunk {
	return Chunk{Type: ChunkBlockStart, Index: i, BlockType: t}
}
func textDelta(i int, s string) Chunk   { return Chunk{Type: ChunkTextDelta, Index: i, Text: s} }
func reasonDelta(i int, s string) Chunk { return Chunk{Type: ChunkReasoningDelta, Index: i, Text: s} }
func callDelta(i int, id, name, args string) Chunk {
	return Chunk{Type: ChunkToolCallDelta, Index: i, ID: id, Name: name, ArgumentsDelta: args}
}
func blockEnd(i int, b ContentBlock) Chunk { return Chunk{Type: ChunkBlockEnd, Index: i, Block: &b} }

func TestAssembler(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		chunks      []Chunk
		content     []ContentBlock
		finish      FinishKind
		interrupted []ContentBlock
		visible     bool
		calls       int
	}{
		{
			name:    "no chunks is an empty stop",
			content: []ContentBlock{},
			finish:  FinishStop,
		},
		{
			name: "first-seen order with implicit opens",
			chunks: []Chunk{
				reasonDelta(3, "think"), textDelta(1, "hel"), textDelta(1, "lo"),
				callDelta(0, "c1", "bash", `{"a"`), callDelta(0, "", "", `:1}`),
				Finish(FinishToolCalls, nil),
			},
			content: []ContentBlock{{Type: BlockReasoning, Text: "think"}, Text("hello"), ToolCall("c1", "bash", `{"a":1}`)},
			finish:  FinishToolCalls,
			interrupted: []ContentBlock{
				{Type: BlockReasoning, Text: "think"}, Text("hello"),
			},
			visible: true,
			calls:   1,
		},
		{
			name: "block-end is authoritative and freezes",
			chunks: []Chunk{
				blockStart(0, BlockText), textDelta(0, "draft"),
				blockEnd(0, Text("final")),
				textDelta(0, " ignored"),
				blockEnd(0, Text("second close ignored")),
			},
			content:     []ContentBlock{Text("final")},
			finish:      FinishStop,
			interrupted: []ContentBlock{Text("final")},
			visible:     true,
		},
		{
			name:    "unclosed tool call without id gets call-index",
			chunks:  []Chunk{callDelta(2, "", "", `{}`)},
			content: []ContentBlock{ToolCall("call-2", "", `{}`)},
			finish:  FinishStop,
			calls:   1,
		},
		{
			name: "max-tokens drops tool calls",
			chunks: []Chunk{
				textDelta(0, "partial"), callDelta(1, "c1", "write", `{"x":`),
				Finish(FinishMaxTokens, nil),
			},
			content:     []ContentBlock{Text("partial")},
			finish:      FinishMaxTokens,
			interrupted: []ContentBlock{Text("partial")},
			visible:     true,
		},
		{
			name: "whitespace-only text is not visible",
			chunks: []Chunk{
				blockStart(0, BlockReasoning), reasonDelta(0, " \n"),
				blockStart(1, BlockToolCall), callDelta(1, "c9", "read", `{`),
			},
			content: []ContentBlock{{Type: BlockReasoning, Text: " \n"}, ToolCall("c9", "read", `{`)},
			finish:  FinishStop,
			calls:   1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var a Assembler
			for _, c := range tt.chunks {
				a.Add(c)
			}
			src := Source{Kind: SourceModel, Provider: "p", Model: "m"}
			msg := a.Message("m1", src)
			if msg.ID != "m1" || msg.Role != RoleAssistant || msg.Source != src {
				t.Fatalf("envelope = %+v", msg)
			}
			if !reflect.DeepEqual(msg.Content, tt.content) {
				t.Fatalf("content = %#v, want %#v", msg.Content, tt.content)
			}
			if err := msg.Validate(); err != nil {
				t.Fatalf("assembled message invalid: %v", err)
			}
			if got := a.Finish().Kind; got != tt.finish {
				t.Fatalf("finish = %s, want %s", got, tt.finish)
			}
			if got := a.Interrupted(); !reflect.DeepEqual(got, tt.interrupted) {
				t.Fatalf("interrupted = %#v, want %#v", got, tt.interrupted)
			}
			if got := a.HasVisible(); got != tt.visible {
				t.Fatalf("visible = %v, want %v", got, tt.visible)
			}
			if got := len(a.ToolCalls()); got != tt.calls {
				t.Fatalf("tool calls = %d, want %d", got, tt.calls)
			}
		})
	}
}

func TestAssemblerUsageLastWins(t *testing.T) {
	t.Parallel()
	var a Assembler
	if a.Usage() != nil {
		t.Fatal("usage before any usage chunk")
	}
	a.Add(Chunk{Type: ChunkUsage, Usage: &Usage{InputTokens: 1}})
	a.Add(Chunk{Type: ChunkUsage, Usage: &Usage{InputTokens: 2, OutputTokens: 3}})
	u := a.Usage()
	if u == nil || *u != (Usage{InputTokens: 2, OutputTokens: 3}) {
		t.Fatalf("usage = %+v", u)
	}
	u.InputTokens = 99 // the caller's copy must not alias the assembler
	if a.Usage().InputTokens != 2 {
		t.Fatal("Usage returned an alias")
	}
}

func TestAssemblerErrorFinish(t *testing.T) {
	t.Parallel()
	var a Assembler
	a.Add(Finish(FinishError, Errorf(CodeEmptyResponse, "empty")))
	f := a.Finish()
	if f.Kind != FinishError || f.Failure == nil || f.Failure.Code != CodeEmptyResponse {
		t.Fatalf("finish = %+v", f)
	}
}
