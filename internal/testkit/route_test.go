package testkit_test

import (
	"slices"
	"testing"
	"time"

	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/llm/openai"
	"harness/internal/testkit"
)

func TestFakeRoute(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		opts      testkit.RouteOptions
		wantInfo  llm.ProviderInfo
		wantKey   string
		wantModel string // the model the request names
	}{
		{
			name: "defaults",
			wantInfo: llm.ProviderInfo{Name: "fake", Label: "Fake", DefaultModel: "fake-model",
				Models: []llm.ModelInfo{{ID: "fake-model", Label: "Fake", ContextWindow: 100_000}}},
			wantKey: "Bearer sk-test", wantModel: "fake-model",
		},
		{
			name: "every option",
			opts: testkit.RouteOptions{Name: "scripted", Label: "Scripted", Model: "m", ModelLabel: "M", Window: 6_000,
				MaxTokens: 4096, Efforts: true, Kind: openai.KindDeepSeek, APIKey: "sk-other", Thinking: true,
				Retry: llm.RetryPolicy{MaxRetries: 1, InitialDelay: time.Millisecond, MaxDelay: time.Millisecond}},
			wantInfo: llm.ProviderInfo{Name: "scripted", Label: "Scripted", DefaultModel: "m",
				Models: []llm.ModelInfo{{ID: "m", Label: "M", ContextWindow: 6_000, DefaultMaxTokens: 4096,
					Efforts: []llm.Effort{llm.EffortOff, llm.EffortHigh}, DefaultEffort: llm.EffortHigh}}},
			wantKey: "Bearer sk-other", wantModel: "m",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, p := testkit.FakeRoute(t, fake.Script{Replies: []fake.Reply{{Text: "scripted answer"}}}, tt.opts)
			info := p.Info()
			if info.Name != tt.wantInfo.Name || info.Label != tt.wantInfo.Label || info.DefaultModel != tt.wantInfo.DefaultModel ||
				!slices.EqualFunc(info.Models, tt.wantInfo.Models, sameModel) {
				t.Fatalf("info %+v, want %+v", info, tt.wantInfo)
			}
			var text string
			req := llm.Request{
				CallConfig: llm.CallConfig{Provider: info.Name, Model: info.DefaultModel},
				Messages:   []llm.Message{llm.UserText("hi", llm.Source{Kind: llm.SourceUser})},
			}
			err := p.Stream(t.Context(), req, func(c llm.Chunk) error {
				if c.Type == llm.ChunkTextDelta {
					text += c.Text
				}
				return nil
			})
			if err != nil || text != "scripted answer" {
				t.Fatalf("stream: %q, %v", text, err)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 || reqs[0].Header.Get("Authorization") != tt.wantKey || reqs[0].Body["model"] != tt.wantModel {
				t.Fatalf("requests %+v", reqs)
			}
		})
	}
}

func sameModel(a, b llm.ModelInfo) bool {
	return a.ID == b.ID && a.Label == b.Label && a.ContextWindow == b.ContextWindow &&
		a.DefaultMaxTokens == b.DefaultMaxTokens && slices.Equal(a.Efforts, b.Efforts) && a.DefaultEffort == b.DefaultEffort
}
