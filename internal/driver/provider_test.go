package driver_test

import (
	"context"
	"sync"

	"harness/internal/llm"
)

// chunkProvider is an in-process provider for the few cases the HTTP
// adapter cannot produce (a bare finish, usage before the end of a stream)
// and for benchmarks that must not measure HTTP. Each call plays the next
// script entry; block makes a call wait for cancellation after its chunks.
type chunkProvider struct {
	name string
	mu   sync.Mutex
	plan []providerCall
}

type providerCall struct {
	chunks []llm.Chunk
	block  bool
}

func (p *chunkProvider) Info() llm.ProviderInfo {
	return llm.ProviderInfo{Name: p.name, Label: p.name, DefaultModel: "m",
		Models: []llm.ModelInfo{{ID: "m", Label: "m", ContextWindow: 100_000}}, Retry: llm.DefaultRetryPolicy()}
}

func (p *chunkProvider) Stream(ctx context.Context, req llm.Request, emit llm.Emit) error {
	p.mu.Lock()
	var c providerCall
	if len(p.plan) > 0 {
		c, p.plan = p.plan[0], p.plan[1:]
	} else {
		c = providerCall{chunks: textChunks("ok")}
	}
	p.mu.Unlock()
	for _, ch := range c.chunks {
		if err := emit(ch); err != nil {
			return err
		}
	}
	if c.block {
		<-ctx.Done()
		return &llm.Failure{Code: llm.CodeAborted, Message: "aborted"}
	}
	return nil
}

// textChunks is a complete text reply.
func textChunks(parts ...string) []llm.Chunk {
	out := []llm.Chunk{{Type: llm.ChunkBlockStart, Index: 0, BlockType: llm.BlockText}}
	full := ""
	for _, p := range parts {
		out = append(out, llm.Chunk{Type: llm.ChunkTextDelta, Index: 0, Text: p})
		full += p
	}
	b := llm.Text(full)
	return append(out,
		llm.Chunk{Type: llm.ChunkBlockEnd, Index: 0, Block: &b},
		llm.Chunk{Type: llm.ChunkUsage, Usage: &llm.Usage{InputTokens: 10, OutputTokens: 2}},
		llm.Finish(llm.FinishStop, nil))
}
