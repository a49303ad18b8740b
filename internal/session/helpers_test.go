package session

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"harness/internal/llm"
)

// counterClock returns 1000, 1001, ... so times are deterministic.
func counterClock() func() int64 {
	var n atomic.Int64
	n.Store(999)
	return func() int64 { return n.Add(1) }
}

func newTestLog() *Log { return New(Header{ID: "s1"}, Options{Clock: counterClock()}) }

func wantCode(t testing.TB, err error, code ErrorCode) {
	t.Helper()
	if err == nil {
		t.Fatalf("want error %s, got nil", code)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want *Error %s, got %T: %v", code, err, err)
	}
	if e.Code != code {
		t.Fatalf("want code %s, got %s: %v", code, e.Code, err)
	}
}

func userMsg(id, text string) llm.Message {
	return llm.Message{ID: id, Role: llm.RoleUser, Content: []llm.ContentBlock{llm.Text(text)},
		Source: llm.Source{Kind: llm.SourceUser, UserID: "u1", Name: "Ann"}}
}

func modelSource() llm.Source {
	return llm.Source{Kind: llm.SourceModel, Provider: "deepseek", Model: "deepseek-v4-flash"}
}

// script appends canonical event sequences and remembers tool/call seqs.
type script struct {
	t     testing.TB
	l     *Log
	turn  int
	step  int
	calls map[string]int64
}

func newScript(t testing.TB, l *Log) *script {
	return &script{t: t, l: l, calls: map[string]int64{}, turn: l.State().LastTurn}
}

func (s *script) append(typ Type, data any) Event {
	s.t.Helper()
	ev, err := s.l.Append(typ, data)
	if err != nil {
		s.t.Fatalf("append %s: %v", typ, err)
	}
	return ev
}

func (s *script) surface(typ Type, data any, op *SurfaceOp, sources []int64) Event {
	s.t.Helper()
	ev, err := s.l.AppendSurface(typ, data, op, sources)
	if err != nil {
		s.t.Fatalf("append %s: %v", typ, err)
	}
	return ev
}

func (s *script) startTurn() Event {
	s.t.Helper()
	s.turn++
	s.step = 0
	return s.append(TypeTurnStart, TurnStart{Turn: s.turn})
}

func (s *script) startStep() Event {
	s.t.Helper()
	s.step++
	return s.append(TypeStepStart, StepBoundary{Turn: s.turn, Step: s.step})
}

func (s *script) endStep() Event {
	s.t.Helper()
	return s.append(TypeStepEnd, StepBoundary{Turn: s.turn, Step: s.step})
}

func (s *script) endTurn() Event {
	s.t.Helper()
	return s.append(TypeTurnEnd, TurnEnd{Turn: s.turn, Reason: TurnEndReason{Kind: ReasonCompleted}})
}

func (s *script) user(id, text string) Event {
	s.t.Helper()
	return s.surface(TypeUserMessage, userMsg(id, text), Append(), nil)
}

func (s *script) chunk(text string) Event {
	s.t.Helper()
	return s.append(TypeAssistantChunk, AssistantChunk{Turn: s.turn, Step: s.step,
		Chunk: llm.Chunk{Type: llm.ChunkTextDelta, Text: text}})
}

// assistant appends an assistant/message citing one fresh chunk.
func (s *script) assistant(id string, blocks ...llm.ContentBlock) Event {
	s.t.Helper()
	c := s.chunk("x")
	if blocks == nil {
		blocks = []llm.ContentBlock{}
	}
	msg := llm.Message{ID: id, Role: llm.RoleAssistant, Content: blocks, Source: modelSource()}
	return s.surface(TypeAssistantMessage, AssistantMessage{Turn: s.turn, Step: s.step, Message: msg,
		Usage: &llm.Usage{InputTokens: 10, OutputTokens: 2}}, Append(), []int64{c.Seq})
}

func (s *script) call(callID string) Event {
	s.t.Helper()
	ev := s.append(TypeToolCall, ToolCall{Turn: s.turn, Step: s.step, CallID: callID, Name: "bash", Arguments: `{"command":"ls"}`})
	s.calls[callID] = ev.Seq
	return ev
}

func (s *script) toolResult(callID, text string) ToolResult {
	return ToolResult{Turn: s.turn, Step: s.step,
		Message: llm.ToolResultMessage("r-"+callID, callID, []llm.ContentBlock{llm.Text(text)}, false)}
}

func (s *script) result(callID, text string) Event {
	s.t.Helper()
	return s.surface(TypeToolResult, s.toolResult(callID, text), Append(), []int64{s.calls[callID]})
}

// toolTurn appends a complete turn with one tool round-trip and a final
// answer: 2 steps, derived [user, assistant(call), result, assistant].
func (s *script) toolTurn(n int) {
	s.t.Helper()
	s.startTurn()
	id := func(k string) string { return fmt.Sprintf("%s-%d-%d", k, s.turn, n) }
	s.startStep()
	s.user(id("u"), "please list")
	s.append(TypeRequestContext, RequestContext{Provider: "deepseek", Model: "deepseek-v4-flash"})
	s.assistant(id("a1"), llm.ContentBlock{Type: llm.BlockReasoning, Text: "think"}, llm.ToolCall(id("c"), "bash", `{"command":"ls"}`))
	s.call(id("c"))
	s.result(id("c"), "file.txt")
	s.endStep()
	s.startStep()
	s.assistant(id("a2"), llm.Text("done"))
	s.endStep()
	s.endTurn()
}

func seqs(events []Event) []int64 {
	out := make([]int64, len(events))
	for i, ev := range events {
		out[i] = ev.Seq
	}
	return out
}

func messageIDs(msgs []llm.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID
	}
	return out
}
