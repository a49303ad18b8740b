package compact_test

import (
	"testing"

	"harness/internal/llm"
	"harness/internal/session"
)

// logBuilder appends hand-made events to a bare session.Log.
type logBuilder struct {
	t *testing.T
	l *session.Log
}

func newLog(t *testing.T) *logBuilder {
	return &logBuilder{t: t, l: session.New(session.Header{ID: "t"}, session.Options{Clock: func() int64 { return 1 }})}
}

func (b *logBuilder) add(typ session.Type, data any) session.Event {
	b.t.Helper()
	ev, err := b.l.Append(typ, data)
	if err != nil {
		b.t.Fatalf("append %s: %v", typ, err)
	}
	return ev
}

func (b *logBuilder) surface(typ session.Type, data any, op *session.SurfaceOp, sources []int64) session.Event {
	b.t.Helper()
	ev, err := b.l.AppendSurface(typ, data, op, sources)
	if err != nil {
		b.t.Fatalf("append %s: %v", typ, err)
	}
	return ev
}

func (b *logBuilder) turn(n int) { b.add(session.TypeTurnStart, session.TurnStart{Turn: n}) }
func (b *logBuilder) endTurn(n int) {
	b.add(session.TypeTurnEnd, session.TurnEnd{Turn: n, Reason: session.TurnEndReason{Kind: session.ReasonCompleted}})
}
func (b *logBuilder) step(turn, step int) {
	b.add(session.TypeStepStart, session.StepBoundary{Turn: turn, Step: step})
}
func (b *logBuilder) endStep(turn, step int) {
	b.add(session.TypeStepEnd, session.StepBoundary{Turn: turn, Step: step})
}

func (b *logBuilder) header(system string, tools ...llm.ToolSchema) {
	b.add(session.TypeRequestHeader, session.RequestHeader{
		Header: session.EpochHeader{Config: llm.CallConfig{Provider: "p", Model: "m"}, System: system, Tools: tools},
		Reason: session.HeaderInitial,
	})
}

func (b *logBuilder) user(text string) session.Event {
	return b.surface(session.TypeUserMessage, llm.UserText(text, llm.Source{Kind: llm.SourceUser}), session.Append(), nil)
}

// chunk logs one assistant/chunk and returns its seq.
func (b *logBuilder) chunk(turn, step int, c llm.Chunk) int64 {
	return b.add(session.TypeAssistantChunk, session.AssistantChunk{Turn: turn, Step: step, Chunk: c}).Seq
}

func (b *logBuilder) assistant(turn, step int, usage *llm.Usage, sources []int64, blocks ...llm.ContentBlock) session.Event {
	if blocks == nil {
		blocks = []llm.ContentBlock{}
	}
	msg := llm.Message{ID: llm.NewID(), Role: llm.RoleAssistant, Content: blocks,
		Source: llm.Source{Kind: llm.SourceModel, Provider: "p", Model: "m"}}
	return b.surface(session.TypeAssistantMessage, session.AssistantMessage{Turn: turn, Step: step, Message: msg, Usage: usage}, session.Append(), sources)
}

func (b *logBuilder) call(turn, step int, id string) {
	b.add(session.TypeToolCall, session.ToolCall{Turn: turn, Step: step, CallID: id, Name: "emit", Arguments: "{}"})
}

func (b *logBuilder) result(turn, step int, id string, content ...llm.ContentBlock) session.Event {
	return b.surface(session.TypeToolResult, session.ToolResult{Turn: turn, Step: step,
		Message: llm.ToolResultMessage(llm.NewID(), id, content, false), Meta: []byte(`{"exit":0}`)}, session.Append(), nil)
}

// toolTurn logs a whole turn: prompt, a call of tool id, its result, a reply.
func (b *logBuilder) toolTurn(n int, prompt, id, result, reply string) {
	b.turn(n)
	b.step(n, 1)
	b.user(prompt)
	b.assistant(n, 1, nil, nil, llm.ToolCall(id, "emit", "{}"))
	b.call(n, 1, id)
	b.result(n, 1, id, llm.Text(result))
	b.endStep(n, 1)
	b.step(n, 2)
	b.assistant(n, 2, nil, nil, llm.Text(reply))
	b.endStep(n, 2)
	b.endTurn(n)
}
