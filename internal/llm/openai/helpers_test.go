package openai_test

import (
	"context"
	"errors"
	"testing"

	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/llm/openai"
)

const testKey = "sk-test-0123456789abcdef"

// deepseek returns a DeepSeek-kind provider pointed at url.
func deepseek(t testing.TB, url string, mods ...func(*openai.Config)) *openai.Provider {
	t.Helper()
	cfg, ok := openai.DeepSeekFromEnv(func(k string) string {
		switch k {
		case "DEEPSEEK_API_KEY":
			return testKey
		case "DEEPSEEK_BASE_URL":
			return url
		}
		return ""
	})
	if !ok {
		t.Fatal("DeepSeekFromEnv refused a key")
	}
	for _, m := range mods {
		m(&cfg)
	}
	p, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// serve starts a fake server with replies and returns it with a provider.
func serve(t testing.TB, replies []fake.Reply, mods ...func(*openai.Config)) (*fake.Server, *openai.Provider) {
	t.Helper()
	srv := fake.NewServer(fake.Script{Replies: replies}, fake.WithTimeScale(0))
	return srv, deepseek(t, srv.Start(t), mods...)
}

// result is one Stream call's outcome.
type result struct {
	chunks []llm.Chunk
	err    error
}

func (r result) types() []llm.ChunkType {
	out := make([]llm.ChunkType, 0, len(r.chunks))
	for _, c := range r.chunks {
		out = append(out, c.Type)
	}
	return out
}

func (r result) assembled() *llm.Assembler {
	var a llm.Assembler
	for _, c := range r.chunks {
		a.Add(c)
	}
	return &a
}

// finish returns the finish chunk's reason, or nil.
func (r result) finish() *llm.FinishReason {
	for _, c := range r.chunks {
		if c.Type == llm.ChunkFinish {
			return c.Reason
		}
	}
	return nil
}

// failure returns the *llm.Failure Stream returned, or nil.
func (r result) failure(t testing.TB) *llm.Failure {
	t.Helper()
	if r.err == nil {
		return nil
	}
	var f *llm.Failure
	if !errors.As(r.err, &f) {
		t.Fatalf("Stream returned a non-Failure error: %v", r.err)
	}
	return f
}

func stream(t testing.TB, p llm.Provider, req llm.Request) result {
	t.Helper()
	var r result
	r.err = p.Stream(context.Background(), req, func(c llm.Chunk) error {
		r.chunks = append(r.chunks, c)
		return nil
	})
	// Provider contract: nil after a finish chunk, or a failure without one.
	switch {
	case r.err == nil && r.finish() == nil:
		t.Fatal("Stream returned nil without a finish chunk")
	case r.err != nil && r.finish() != nil:
		t.Fatalf("Stream returned %v after a finish chunk", r.err)
	}
	return r
}

func prompt(text string) llm.Request {
	return llm.Request{Messages: []llm.Message{llm.UserText(text, llm.Source{Kind: llm.SourceUser})}}
}
