package testkit

import (
	"cmp"
	"testing"
	"time"

	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/llm/openai"
)

// RouteOptions describe a scripted model route; a zero field takes the
// default in brackets.
type RouteOptions struct {
	Name       string // provider name ["fake"]
	Label      string // provider label ["Fake"]
	Model      string // the one model's id ["fake-model"]
	ModelLabel string // [Label]
	Window     int64  // context window [100_000]
	MaxTokens  int    // the model's default max tokens [none]
	// Efforts offers the "off" and "high" efforts, "high" by default.
	Efforts     bool
	Kind        openai.Kind // [deepseek]
	APIKey      string      // ["sk-test"]
	Thinking    bool
	Retry       llm.RetryPolicy // [the adapter's default]
	IdleTimeout time.Duration   // [the adapter's default]
}

// FakeRoute starts a fake model server answering from script on loopback
// (closed in t.Cleanup) and returns it with a provider on the real OpenAI
// adapter pointing at it.
func FakeRoute(t testing.TB, script fake.Script, o RouteOptions, opts ...fake.Option) (*fake.Server, llm.Provider) {
	t.Helper()
	srv := fake.NewServer(script, opts...)
	url := srv.Start(t)
	o.Name = cmp.Or(o.Name, "fake")
	o.Label = cmp.Or(o.Label, "Fake")
	o.Model = cmp.Or(o.Model, "fake-model")
	o.ModelLabel = cmp.Or(o.ModelLabel, o.Label)
	o.Kind = cmp.Or(o.Kind, openai.KindDeepSeek)
	o.APIKey = cmp.Or(o.APIKey, "sk-test")
	o.Window = cmp.Or(o.Window, 100_000)
	model := llm.ModelInfo{ID: o.Model, Label: o.ModelLabel, ContextWindow: o.Window, DefaultMaxTokens: o.MaxTokens}
	if o.Efforts {
		model.Efforts, model.DefaultEffort = []llm.Effort{llm.EffortOff, llm.EffortHigh}, llm.EffortHigh
	}
	p, err := openai.New(openai.Config{
		Name: o.Name, Label: o.Label, Kind: o.Kind, BaseURL: url, APIKey: o.APIKey,
		DefaultModel: o.Model, Models: []llm.ModelInfo{model}, Thinking: o.Thinking,
		Retry: o.Retry, IdleTimeout: o.IdleTimeout,
	})
	if err != nil {
		t.Fatalf("fake route: %v", err)
	}
	return srv, p
}
