package session

import (
	"strings"
	"testing"

	"harness/internal/llm"
)

func BenchmarkAppendChunk(b *testing.B) {
	chunk := AssistantChunk{Turn: 1, Step: 1, Chunk: llm.Chunk{Type: llm.ChunkTextDelta, Index: 0, Text: "hello wor"}}
	run := func(b *testing.B, l *Log) {
		s := newScript(b, l)
		s.startTurn()
		s.startStep()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := l.Append(TypeAssistantChunk, chunk); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("bare", func(b *testing.B) { run(b, New(Header{}, Options{})) })
	b.Run("sink+subscriber", func(b *testing.B) {
		n := 0
		l := New(Header{}, Options{Sink: func(Event) { n++ }})
		l.Subscribe(func(Event) { n++ })
		run(b, l)
	})
}

// bigLog builds a log of about 10,000 events: tool turns of 14 events with 4
// derived messages each.
func bigLog(b *testing.B) (*Log, *script) {
	l := New(Header{}, Options{})
	s := newScript(b, l)
	for i := 0; l.Len() < 10_000; i++ {
		s.toolTurn(i)
	}
	return l, s
}

func BenchmarkDeriveMessages(b *testing.B) {
	b.Run("cached", func(b *testing.B) {
		l, _ := bigLog(b)
		b.ReportAllocs()
		for b.Loop() {
			if len(l.DeriveMessages()) == 0 {
				b.Fatal("empty")
			}
		}
	})
	b.Run("after-replacement", func(b *testing.B) {
		l, s := bigLog(b)
		surface := l.Surface()
		node := surface[len(surface)-2] // the last tool/result
		ev, _ := l.Event(node)
		tr, err := Decode[ToolResult](ev)
		if err != nil {
			b.Fatal(err)
		}
		s.startTurn()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			tr.Message.Content[0].Content = []llm.ContentBlock{llm.Text(strings.Repeat("x", i%7))}
			rep, err := l.AppendSurface(TypeToolResult, tr, Replace(node, node), []int64{node})
			if err != nil {
				b.Fatal(err)
			}
			node = rep.Seq
			if len(l.DeriveMessages()) == 0 {
				b.Fatal("empty")
			}
		}
	})
}

func BenchmarkLoad10k(b *testing.B) {
	l, _ := bigLog(b)
	events := l.Events(0, l.Len())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(Header{}, events, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
