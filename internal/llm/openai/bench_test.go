package openai_test

import (
	"context"
	"testing"

	"harness/internal/llm"
	"harness/internal/llm/fake"
)

// BenchmarkStreamDecode measures chunks/s through the adapter's decode path:
// go-openai's SSE reader, the transport's line filter, payload decoding and
// translation, against a fake server streaming without pauses.
func BenchmarkStreamDecode(b *testing.B) {
	const perReply = 10_000
	frames := make([]fake.Frame, perReply)
	for i := range frames {
		frames[i] = fake.Frame{Text: "token "}
	}
	srv := fake.NewServer(fake.Script{Responder: func(fake.Recorded) fake.Reply {
		return fake.Reply{Frames: frames}
	}}, fake.WithTimeScale(0))
	p := deepseek(b, srv.Start(b))
	req := prompt("go")

	var chunks int
	b.ReportAllocs()
	for b.Loop() {
		err := p.Stream(context.Background(), req, func(c llm.Chunk) error {
			if c.Type == llm.ChunkTextDelta {
				chunks++
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(chunks)/b.Elapsed().Seconds(), "chunks/s")
}
