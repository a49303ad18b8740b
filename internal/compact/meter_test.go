package compact_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"

	"harness/internal/compact"
	"harness/internal/llm"
	"harness/internal/session"
)

func TestEstimateBlocks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		block llm.ContentBlock
		want  int64
	}{
		{"empty text", llm.Text(""), 4},
		{"text rounds up", llm.Text("abcde"), 2 + 4},
		{"reasoning", llm.ContentBlock{Type: llm.BlockReasoning, Text: "abcd"}, 1 + 4},
		{"utf-16 units", llm.Text("é😀"), 1 + 4}, // 3 code units
		{"tool call", llm.ToolCall("c1", "read", `{"a":1}`), 1 + 2 + 4},
		{"tool result", llm.ContentBlock{Type: llm.BlockToolResult, ToolCallID: "c1", Content: []llm.ContentBlock{llm.Text("abcdefgh")}}, (2 + 4) + 4},
		{"image", llm.ContentBlock{Type: llm.BlockImage, Attachment: "a1"}, 765 + 4},
		{"unknown block", llm.ContentBlock{Type: "plugin-x", Text: "hi"}, 4 + 8}, // {"type":"plugin-x","text":"hi"} is 31 chars
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := compact.EstimateBlocks([]llm.ContentBlock{tt.block}); got != tt.want {
				t.Fatalf("EstimateBlocks = %d, want %d", got, tt.want)
			}
		})
	}
	for _, m := range []struct {
		text string
		want int64
	}{{"abcd", 1 + 4 + 4}, {"", 0 + 4 + 4}} {
		if got := compact.EstimateMessage(llm.UserText(m.text, llm.Source{Kind: llm.SourceUser})); got != m.want {
			t.Fatalf("EstimateMessage(%q) = %d, want %d", m.text, got, m.want)
		}
	}
	tools := []llm.ToolSchema{{Name: "t", Description: "d", Parameters: json.RawMessage(`{}`)}}
	// [{"name":"t","description":"d","parameters":{}}] is 48 chars.
	if got := compact.EstimateHeader(session.EpochHeader{System: strings.Repeat("x", 40), Tools: tools}); got != (10+4)+(12+4) {
		t.Fatalf("EstimateHeader = %d", got)
	}
	if got := compact.EstimateHeader(session.EpochHeader{}); got != 0 {
		t.Fatalf("empty header priced %d", got)
	}
}

// system40 prices at 14 tokens (10 + 4).
var system40 = strings.Repeat("s", 40)

func TestMeasure(t *testing.T) {
	t.Parallel()
	type want struct {
		baseline compact.Baseline
		total    int64
		surface  int64
		delta    int64
		nodes    []int64 // node prices in order
	}
	tests := []struct {
		name  string
		build func(b *logBuilder)
		want  want
	}{
		{"empty log", func(b *logBuilder) {}, want{compact.BaselineNone, 0, 0, 0, nil}},
		{"header only", func(b *logBuilder) { b.turn(1); b.header(system40) }, want{compact.BaselineEstimated, 14, 0, 0, nil}},
		{"heuristic", func(b *logBuilder) {
			b.turn(1)
			b.header(system40)
			b.user("abcd") // 1+4+4
		}, want{compact.BaselineEstimated, 14 + 9, 9, 0, []int64{9}}},
		{"usage anchor", func(b *logBuilder) {
			usageTurn(b, &llm.Usage{InputTokens: 90, CacheReadTokens: 10, OutputTokens: 5})
		}, want{compact.BaselineUsage, 105, 9 + 10, 0, []int64{9, 10}}},
		{"usage anchor plus later nodes", func(b *logBuilder) {
			usageTurn(b, &llm.Usage{InputTokens: 100, OutputTokens: 5})
			b.user("abcdefgh") // 2+4+4
		}, want{compact.BaselineUsage, 105 + 10, 9 + 10 + 10, 10, []int64{9, 10, 10}}},
		{"usage below the heuristic is not trusted", func(b *logBuilder) {
			usageTurn(b, &llm.Usage{InputTokens: 10, OutputTokens: 1})
		}, want{compact.BaselineEstimated, 14 + 9 + 10, 19, 0, []int64{9, 10}}},
		{"header change drops the anchor", func(b *logBuilder) {
			usageTurn(b, &llm.Usage{InputTokens: 100, OutputTokens: 5})
			b.header(strings.Repeat("y", 80)) // 20+4
		}, want{compact.BaselineEstimated, 24 + 19, 19, 0, []int64{9, 10}}},
		{"provider output reassembled from chunks", func(b *logBuilder) {
			// A max-tokens cut drops the tool call from the durable message,
			// but the provider produced (and counted) it.
			b.turn(1)
			b.header(system40)
			b.step(1, 1)
			b.user("abcd")
			seqs := []int64{
				b.chunk(1, 1, llm.Chunk{Type: llm.ChunkTextDelta, Index: 0, Text: "hello"}),
				b.chunk(1, 1, llm.Chunk{Type: llm.ChunkToolCallDelta, Index: 1, ID: "c1", Name: "read", ArgumentsDelta: `{"a":1}`}),
				b.chunk(1, 1, llm.Finish(llm.FinishMaxTokens, nil)),
			}
			b.assistant(1, 1, &llm.Usage{InputTokens: 1000, OutputTokens: 50}, seqs, llm.Text("hello"))
			// provider output: (2+4)+(1+2+4)+4 = 17; durable: 2+4+4 = 10
		}, want{compact.BaselineUsage, 1050 + 10 - 17, 19, 10 - 17, []int64{9, 10}}},
		{"empty assistant message projects to nothing", func(b *logBuilder) {
			b.turn(1)
			b.header(system40)
			b.step(1, 1)
			b.user("abcd")
			b.assistant(1, 1, nil, []int64{})
		}, want{compact.BaselineEstimated, 14 + 9, 9, 0, []int64{9, 0}}},
		{"tool result", func(b *logBuilder) {
			b.turn(1)
			b.header(system40)
			b.step(1, 1)
			b.assistant(1, 1, nil, nil, llm.ToolCall("c1", "emit", "{}")) // (1+1+4)+4
			b.call(1, 1, "c1")
			b.result(1, 1, "c1", llm.Text("abcdefgh")) // ((2+4)+4)+4
		}, want{compact.BaselineEstimated, 14 + 10 + 14, 24, 14, []int64{10, 14}}}, // anchored at the call, the result is the delta
		{"replacement", func(b *logBuilder) {
			b.turn(1)
			b.header(system40)
			u1 := b.user(strings.Repeat("a", 400)) // 100+4+4
			u2 := b.user("abcd")
			b.user("abcd")
			cp := llm.UserText("abcdefgh", llm.Source{Kind: llm.SourcePlugin, Plugin: llm.PluginCompact})
			b.surface(session.TypeUserMessage, cp, session.Replace(u1.Seq, u2.Seq), []int64{u1.Seq, u2.Seq})
		}, want{compact.BaselineEstimated, 14 + 10 + 9, 19, 0, []int64{10, 9}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newLog(t)
			tt.build(b)
			m := compact.NewMeter().Measure(b.l, 200)
			var prices []int64
			for _, n := range m.Nodes {
				prices = append(prices, n.Tokens)
			}
			got := want{m.Baseline, m.TotalTokens, m.SurfaceTokens, m.SurfaceDeltaTokens, prices}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("measure:\n got  %+v\n want %+v", got, tt.want)
			}
			surface := b.l.Surface()
			if len(surface) != len(m.Nodes) {
				t.Fatalf("nodes %v, surface %v", m.Nodes, surface)
			}
			for i, seq := range surface {
				if m.Nodes[i].Seq != seq {
					t.Fatalf("node %d is seq %d, surface has %d", i, m.Nodes[i].Seq, seq)
				}
			}
			if m.ContextWindow != 200 || m.Percent != float64(m.TotalTokens)*100/200 || m.LogRevision != b.l.Len() {
				t.Fatalf("window %d percent %v revision %d", m.ContextWindow, m.Percent, m.LogRevision)
			}
		})
	}
}

// usageTurn logs header (14), a prompt (9) and a reply "hello" (10) whose
// chunks are cited, with the given usage.
func usageTurn(b *logBuilder, u *llm.Usage) {
	b.turn(1)
	b.header(system40)
	b.step(1, 1)
	b.user("abcd")
	seqs := []int64{
		b.chunk(1, 1, llm.Chunk{Type: llm.ChunkTextDelta, Index: 0, Text: "hel"}),
		b.chunk(1, 1, llm.Chunk{Type: llm.ChunkTextDelta, Index: 0, Text: "lo"}),
		b.chunk(1, 1, llm.Finish(llm.FinishStop, nil)),
	}
	b.assistant(1, 1, u, seqs, llm.Text("hello"))
	b.endStep(1, 1)
}

// TestMeasureIncremental: re-measuring after every append gives exactly what
// a fresh meter computes from scratch, including across replacements.
func TestMeasureIncremental(t *testing.T) {
	t.Parallel()
	b := newLog(t)
	inc := compact.NewMeter()
	steps := []func(){
		func() { b.turn(1) },
		func() { b.header(system40) },
		func() { b.step(1, 1) },
		func() { b.user(strings.Repeat("goal ", 50)) },
		func() {
			s := b.chunk(1, 1, llm.Chunk{Type: llm.ChunkTextDelta, Text: "hi"})
			b.assistant(1, 1, &llm.Usage{InputTokens: 500, OutputTokens: 3}, []int64{s}, llm.Text("hi"))
		},
		func() { b.endStep(1, 1) },
		func() { b.step(1, 2) },
		func() { b.assistant(1, 2, nil, nil, llm.ToolCall("c1", "emit", "{}")) },
		func() { b.call(1, 2, "c1") },
		func() { b.result(1, 2, "c1", llm.Text(strings.Repeat("r", 9000))) },
		func() { b.endStep(1, 2) },
		func() {
			p, err := compact.NewPruner(compact.PrunerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.PruneLog(b.l); err != nil {
				t.Fatal(err)
			}
		},
		func() {
			s := b.l.Surface()
			cp := llm.UserText("summary", llm.Source{Kind: llm.SourcePlugin, Plugin: llm.PluginCompact})
			b.surface(session.TypeUserMessage, cp, session.Replace(s[0], s[1]), []int64{s[0], s[1]})
		},
		func() { b.header(strings.Repeat("z", 12)) },
		func() { b.endTurn(1) },
	}
	for i, step := range steps {
		step()
		got := inc.Measure(b.l, 1000)
		want := compact.NewMeter().Measure(b.l, 1000)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("after step %d:\n incremental %+v\n fresh       %+v", i, got, want)
		}
	}
}

// TestMeasureConcurrent measures while another goroutine appends; the race
// detector checks the locking and the final figures match a fresh fold.
func TestMeasureConcurrent(t *testing.T) {
	t.Parallel()
	b := newLog(t)
	b.turn(1)
	b.header(system40)
	m := compact.NewMeter()
	var wg sync.WaitGroup
	done := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
					if got := m.Measure(b.l, 0); got.TotalTokens < 14 {
						t.Errorf("total %d below the header price", got.TotalTokens)
						return
					}
				}
			}
		})
	}
	for range 200 {
		b.user("abcdefgh")
	}
	close(done)
	wg.Wait()
	got, want := m.Measure(b.l, 0), compact.NewMeter().Measure(b.l, 0)
	if !reflect.DeepEqual(got, want) || got.TotalTokens != 14+200*10 {
		t.Fatalf("final %d, fresh %d, want %d", got.TotalTokens, want.TotalTokens, 14+200*10)
	}
}
