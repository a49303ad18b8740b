package driver_test

import (
	"context"
	"fmt"
	"testing"

	"harness/internal/driver"
	"harness/internal/session"
)

// BenchmarkChunkPipeline measures one session's chunk path: provider chunk →
// assistant/chunk appended to the log (and handed to the batched SQLite
// writer) → delivered to a log subscriber. Reported as chunks/s.
func BenchmarkChunkPipeline(b *testing.B) {
	const chunksPerTurn = 5000
	parts := make([]string, chunksPerTurn)
	for i := range parts {
		parts[i] = fmt.Sprintf("tok%d ", i)
	}
	p := &chunkProvider{name: "instant"}
	h := newHarness(b, script(), withProvider(p), withManager(func(o *driver.Options) { o.VerifyRequests = false }))
	var delivered int64
	done := make(chan struct{}, 1)
	_, cancel := h.agent.Log().Subscribe(func(ev session.Event) {
		if ev.Type == session.TypeAssistantChunk {
			delivered++
		}
		if ev.Type == session.TypeTurnEnd {
			done <- struct{}{}
		}
	})
	defer cancel()
	b.ResetTimer()
	for range b.N {
		p.mu.Lock()
		p.plan = append(p.plan, providerCall{chunks: textChunks(parts...)})
		p.mu.Unlock()
		if err := h.agent.Followup(h.ctx, userMsg("go")); err != nil {
			b.Fatal(err)
		}
		<-done
	}
	b.StopTimer()
	b.ReportMetric(float64(delivered)/b.Elapsed().Seconds(), "chunks/s")
}

// BenchmarkTurnOverhead measures a whole turn with an instant provider: inbox
// splices, claim, pre-step, prompt assembly, header, request derivation,
// a 3-chunk reply, assistant message, turn end and the flushes to SQLite.
func BenchmarkTurnOverhead(b *testing.B) {
	p := &chunkProvider{name: "instant"}
	h := newHarness(b, script(), withProvider(p), withManager(func(o *driver.Options) { o.VerifyRequests = false }))
	b.ResetTimer()
	for range b.N {
		if err := h.agent.Followup(h.ctx, userMsg("hi")); err != nil {
			b.Fatal(err)
		}
		if err := h.agent.Wait(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "turns/s")
}
