package compact_test

import (
	"fmt"
	"strings"
	"testing"

	"harness/internal/compact"
	"harness/internal/llm"
	"harness/internal/session"
)

// benchLog builds a log of at least n events shaped like real sessions: most
// events are stream chunks, each turn has a tool round trip and usage.
func benchLog(tb testing.TB, n int64) *session.Log {
	tb.Helper()
	b := &logBuilder{t: nil, l: session.New(session.Header{ID: "bench"}, session.Options{})}
	must := func(_ session.Event, err error) {
		if err != nil {
			tb.Fatal(err)
		}
	}
	app := func(t session.Type, d any) int64 {
		ev, err := b.l.Append(t, d)
		if err != nil {
			tb.Fatal(err)
		}
		return ev.Seq
	}
	reply := func(turn, step, chunks int, blocks ...llm.ContentBlock) {
		var seqs []int64
		for i := range chunks {
			seqs = append(seqs, app(session.TypeAssistantChunk, session.AssistantChunk{Turn: turn, Step: step,
				Chunk: llm.Chunk{Type: llm.ChunkTextDelta, Text: fmt.Sprintf("word%d ", i)}}))
		}
		msg := llm.Message{ID: llm.NewID(), Role: llm.RoleAssistant, Content: blocks, Source: llm.Source{Kind: llm.SourceModel, Provider: "p", Model: "m"}}
		must(b.l.AppendSurface(session.TypeAssistantMessage, session.AssistantMessage{Turn: turn, Step: step, Message: msg,
			Usage: &llm.Usage{InputTokens: 1000 * int64(turn), OutputTokens: 50}}, session.Append(), seqs))
	}
	for turn := 1; b.l.Len() < n; turn++ {
		app(session.TypeTurnStart, session.TurnStart{Turn: turn})
		app(session.TypeStepStart, session.StepBoundary{Turn: turn, Step: 1})
		must(b.l.AppendSurface(session.TypeUserMessage, llm.UserText(strings.Repeat("prompt ", 30), llm.Source{Kind: llm.SourceUser}), session.Append(), nil))
		if turn == 1 {
			app(session.TypeRequestHeader, session.RequestHeader{Reason: session.HeaderInitial,
				Header: session.EpochHeader{Config: llm.CallConfig{Provider: "p", Model: "m"}, System: strings.Repeat("system ", 200)}})
		}
		id := fmt.Sprintf("c%d", turn)
		reply(turn, 1, 30, llm.Text(strings.Repeat("word ", 30)), llm.ToolCall(id, "emit", `{"size":100}`))
		app(session.TypeToolCall, session.ToolCall{Turn: turn, Step: 1, CallID: id, Name: "emit", Arguments: `{"size":100}`})
		must(b.l.AppendSurface(session.TypeToolResult, session.ToolResult{Turn: turn, Step: 1,
			Message: llm.ToolResultMessage(llm.NewID(), id, []llm.ContentBlock{llm.Text(strings.Repeat("out ", 200))}, false)}, session.Append(), nil))
		app(session.TypeStepEnd, session.StepBoundary{Turn: turn, Step: 1})
		app(session.TypeStepStart, session.StepBoundary{Turn: turn, Step: 2})
		reply(turn, 2, 30, llm.Text(strings.Repeat("word ", 30)))
		app(session.TypeStepEnd, session.StepBoundary{Turn: turn, Step: 2})
		app(session.TypeTurnEnd, session.TurnEnd{Turn: turn, Reason: session.TurnEndReason{Kind: session.ReasonCompleted}})
	}
	return b.l
}

// BenchmarkMeasure folds a 10,000-event log from scratch.
func BenchmarkMeasure(b *testing.B) {
	l := benchLog(b, 10_000)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		m := compact.NewMeter().Measure(l, 1_000_000)
		if m.Baseline != compact.BaselineUsage {
			b.Fatal(m.Baseline)
		}
	}
}

// BenchmarkMeasureIncremental re-measures a 10,000-event log after one
// append: only the new event is folded, plus the O(surface) copy of the
// node prices. The appended event is log-only so every iteration sees the
// same surface (about 400 nodes).
func BenchmarkMeasureIncremental(b *testing.B) {
	l := benchLog(b, 10_000)
	m := compact.NewMeter()
	m.Measure(l, 1_000_000)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := l.Append(session.TypeSessionTitle, session.SessionTitle{Title: "t", Source: session.TitleModel}); err != nil {
			b.Fatal(err)
		}
		m.Measure(l, 1_000_000)
	}
}

// BenchmarkMeasureIncrementalSurface is the same with a surface append (a
// user message) each time, so the surface grows with the iterations.
func BenchmarkMeasureIncrementalSurface(b *testing.B) {
	l := benchLog(b, 10_000)
	m := compact.NewMeter()
	m.Measure(l, 1_000_000)
	msg := llm.UserText("one more line", llm.Source{Kind: llm.SourceUser})
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		msg.ID = llm.NewID()
		if _, err := l.AppendSurface(session.TypeUserMessage, msg, session.Append(), nil); err != nil {
			b.Fatal(err)
		}
		m.Measure(l, 1_000_000)
	}
}

// TestBenchLogShape keeps the benchmark's log honest.
func TestBenchLogShape(t *testing.T) {
	t.Parallel()
	l := benchLog(t, 10_000)
	if err := session.CheckInvariants(l.Events(0, l.Len())); err != nil {
		t.Fatal(err)
	}
	m := compact.NewMeter().Measure(l, 0)
	if l.Len() < 10_000 || m.Baseline != compact.BaselineUsage || len(m.Nodes) != len(l.Surface()) {
		t.Fatalf("%d events, %+v", l.Len(), m.Baseline)
	}
}
