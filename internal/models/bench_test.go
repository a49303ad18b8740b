package models

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"harness/internal/llm"
	"harness/internal/session"
)

func openBenchDB(b *testing.B) *DB {
	b.Helper()
	db, err := Open(context.Background(), nil, Config{DSN: filepath.Join(b.TempDir(), "bench.db")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	return db
}

// benchEvent is a realistic event mix: mostly stream chunks, a message
// every 50 events, a tool result every 100.
func benchEvent(seq int64) session.Event {
	switch {
	case seq%100 == 99:
		return ev(seq, session.TypeToolResult, session.ToolResult{Turn: 1, Step: 1,
			Message: llm.ToolResultMessage(fmt.Sprint("r", seq), "call", []llm.ContentBlock{llm.Text(strings.Repeat("output line\n", 80))}, false)})
	case seq%50 == 49:
		return ev(seq, session.TypeAssistantMessage, session.AssistantMessage{Turn: 1, Step: 1,
			Message: llm.Message{ID: fmt.Sprint("a", seq), Role: llm.RoleAssistant,
				Content: []llm.ContentBlock{{Type: llm.BlockReasoning, Text: strings.Repeat("thinking ", 40)}, llm.Text(strings.Repeat("answer ", 60))},
				Source:  llm.Source{Kind: llm.SourceModel, Provider: "deepseek", Model: "deepseek-v4-flash"}},
			Usage: &llm.Usage{InputTokens: 15137, OutputTokens: 128}})
	default:
		return ev(seq, session.TypeAssistantChunk, session.AssistantChunk{Turn: 1, Step: 1,
			Chunk: llm.Chunk{Type: llm.ChunkTextDelta, Text: " token"}})
	}
}

// BenchmarkWriterThroughput measures sustained appends through the batched
// writer: parallel producers on their own sessions, timed until the last
// event is committed.
func BenchmarkWriterThroughput(b *testing.B) {
	db := openBenchDB(b)
	w := NewWriter(nil, db, WriterOptions{})
	s := NewStore(nil, db, w)
	const sessions = 256
	ids := make([]string, sessions)
	for i := range ids {
		sess := &Session{OwnerID: "bench"}
		if err := s.CreateSession(context.Background(), sess); err != nil {
			b.Fatal(err)
		}
		ids[i] = sess.ID
	}
	events := make([]session.Event, 1000)
	for i := range events {
		events[i] = benchEvent(int64(i))
	}
	var next atomic.Int64
	b.SetParallelism(4)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		id := ids[next.Add(1)-1]
		var seq int64
		for pb.Next() {
			e := events[seq%int64(len(events))]
			e.Seq = seq
			w.Enqueue(id, e)
			seq++
		}
	})
	if err := w.FlushAll(context.Background()); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	st := w.Stats()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
	if st.Batches > 0 {
		b.ReportMetric(float64(st.Events)/float64(st.Batches), "events/batch")
	}
	if err := w.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkWriterLatency measures Enqueue-to-commit time at a chat-like
// pace (a burst of a few events, then a pause).
func BenchmarkWriterLatency(b *testing.B) {
	db := openBenchDB(b)
	w := NewWriter(nil, db, WriterOptions{})
	s := NewStore(nil, db, w)
	sess := &Session{OwnerID: "bench"}
	if err := s.CreateSession(context.Background(), sess); err != nil {
		b.Fatal(err)
	}
	var seq int64
	for b.Loop() {
		for range 5 {
			w.Enqueue(sess.ID, benchEvent(seq))
			seq++
		}
		time.Sleep(time.Millisecond) // shapes load: a trickle, so batches wait for their timer
	}
	if err := w.FlushAll(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(w.Stats().MeanLatency.Microseconds())/1000, "ms-mean-latency")
	_ = w.Close(context.Background())
}

// BenchmarkReplay10k reads a 10,000-event session back: raw bodies (what a
// replay sends) and decoded events (what a cold load uses).
func BenchmarkReplay10k(b *testing.B) {
	db := openBenchDB(b)
	w := NewWriter(nil, db, WriterOptions{})
	s := NewStore(nil, db, w)
	sess := &Session{OwnerID: "bench"}
	if err := s.CreateSession(context.Background(), sess); err != nil {
		b.Fatal(err)
	}
	const n = 10_000
	for seq := range int64(n) {
		w.Enqueue(sess.ID, benchEvent(seq))
	}
	if err := w.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.Run("EventsRaw", func(b *testing.B) {
		for b.Loop() {
			evs, err := s.EventsRaw(ctx, sess.ID, -1, 0)
			if err != nil || len(evs) != n {
				b.Fatalf("%d events, %v", len(evs), err)
			}
		}
	})
	b.Run("EventsSince", func(b *testing.B) {
		for b.Loop() {
			evs, err := s.EventsSince(ctx, sess.ID, -1, 0)
			if err != nil || len(evs) != n {
				b.Fatalf("%d events, %v", len(evs), err)
			}
		}
	})
	b.Run("TailPage50", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := s.TailPage(ctx, sess.ID, -1, 50); err != nil {
				b.Fatal(err)
			}
		}
	})
}
