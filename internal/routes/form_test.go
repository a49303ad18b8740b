package routes

import (
	"strings"
	"testing"

	"harness/internal/llm"
	"harness/internal/llm/openai"
	"harness/internal/models"
)

func TestFormConfig(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		form    Form
		wantErr string
		check   func(t *testing.T, pc models.ProviderConfig)
	}{
		{"deepseek with defaults", Form{Name: " Work ", Kind: "deepseek", APIKey: "sk-x", Enabled: true}, "",
			func(t *testing.T, pc models.ProviderConfig) {
				cfg, err := storedConfig(pc)
				if err != nil {
					t.Fatal(err)
				}
				if pc.Name != "work" || cfg.BaseURL != openai.DeepSeekBaseURL || cfg.DefaultModel != openai.DeepSeekFlash || !cfg.Thinking || cfg.APIKey != "sk-x" {
					t.Errorf("config %+v", cfg)
				}
			}},
		{"openai models list", Form{Name: "local", Kind: "openai", BaseURL: "http://127.0.0.1:1/v1", Models: "a,b\nc", Enabled: true}, "",
			func(t *testing.T, pc models.ProviderConfig) {
				cfg, err := storedConfig(pc)
				if err != nil {
					t.Fatal(err)
				}
				if cfg.DefaultModel != "a" || len(cfg.Models) != 3 || !strings.Contains(cfg.Label, "OpenAI-compatible") {
					t.Errorf("config %+v", cfg)
				}
			}},
		{"default model outside the list", Form{Name: "x", Kind: "openai", BaseURL: "https://h", Models: "a", DefaultModel: "z"}, "",
			func(t *testing.T, pc models.ProviderConfig) {
				cfg, _ := storedConfig(pc)
				if cfg.DefaultModel != "z" || cfg.Models[0].ID != "z" {
					t.Errorf("config %+v", cfg)
				}
			}},
		{"bad name", Form{Name: "-x", Kind: "openai"}, "route name", nil},
		{"bad kind", Form{Name: "x", Kind: "anthropic"}, "kind must be", nil},
		{"openai without url", Form{Name: "x", Kind: "openai", Models: "m"}, "needs a base URL", nil},
		{"openai without models", Form{Name: "x", Kind: "openai", BaseURL: "https://h"}, "at least one model", nil},
		{"key with a space", Form{Name: "x", Kind: "deepseek", APIKey: "sk x"}, "one line", nil},
		{"javascript url", Form{Name: "x", Kind: "openai", BaseURL: "javascript:alert(1)", Models: "m"}, "http or https", nil},
		{"long model id", Form{Name: "x", Kind: "openai", BaseURL: "https://h", Models: strings.Repeat("m", 129)}, "at most 128", nil},
		{"prices and window apply to every model", Form{Name: "p", Kind: "openai", BaseURL: "https://h", Models: "a,b", InputPrice: "0.27", OutputPrice: " 1.1 ", ContextWindow: "64000"}, "",
			func(t *testing.T, pc models.ProviderConfig) {
				cfg, err := storedConfig(pc)
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range cfg.Models {
					// An empty cached price charges cache hits as input.
					if m.Price == nil || *m.Price != (llm.Price{Input: 0.27, CachedInput: 0.27, Output: 1.1}) || m.ContextWindow != 64_000 {
						t.Errorf("model %s: price %+v, window %d", m.ID, m.Price, m.ContextWindow)
					}
				}
			}},
		{"deepseek catalog keeps its windows without an override", Form{Name: "d", Kind: "deepseek", InputPrice: "0", CachedInputPrice: "0", OutputPrice: "0"}, "",
			func(t *testing.T, pc models.ProviderConfig) {
				cfg, _ := storedConfig(pc)
				if cfg.Models[0].ContextWindow != openai.DeepSeekModels()[0].ContextWindow || cfg.Models[0].Price == nil {
					t.Errorf("model %+v", cfg.Models[0])
				}
				if openai.DeepSeekModels()[0].Price != nil {
					t.Error("the adapter's catalog was changed in place")
				}
			}},
		{"no prices", Form{Name: "n", Kind: "openai", BaseURL: "https://h", Models: "a"}, "",
			func(t *testing.T, pc models.ProviderConfig) {
				cfg, _ := storedConfig(pc)
				if cfg.Models[0].Price != nil || pc.ContextWindow != 0 {
					t.Errorf("model %+v", cfg.Models[0])
				}
			}},
		{"negative price", Form{Name: "x", Kind: "deepseek", InputPrice: "-1", OutputPrice: "1"}, "input price must be", nil},
		{"price not a number", Form{Name: "x", Kind: "deepseek", InputPrice: "1", OutputPrice: "1e999"}, "output price must be", nil},
		{"NaN price", Form{Name: "x", Kind: "deepseek", InputPrice: "1", CachedInputPrice: "NaN", OutputPrice: "1"}, "cached input price must be", nil},
		{"input without output", Form{Name: "x", Kind: "deepseek", InputPrice: "1"}, "both the input and output", nil},
		{"cached alone", Form{Name: "x", Kind: "deepseek", CachedInputPrice: "1"}, "both the input and output", nil},
		{"zero window", Form{Name: "x", Kind: "deepseek", ContextWindow: "0"}, "context window must be", nil},
		{"fractional window", Form{Name: "x", Kind: "deepseek", ContextWindow: "1.5"}, "context window must be", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pc, err := c.form.config()
			if c.wantErr != "" {
				if err == nil || !strings.Contains(InputMessage(err), c.wantErr) {
					t.Errorf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, pc)
		})
	}
}

func TestStoredConfigRefusesBadRows(t *testing.T) {
	t.Parallel()
	for _, pc := range []models.ProviderConfig{
		{Name: "k", Kind: "anthropic"},
		{Name: "m", Kind: "openai", Models: "not json"},
	} {
		if _, err := storedConfig(pc); err == nil || !strings.Contains(err.Error(), "route "+pc.Name) {
			t.Errorf("%+v: error %v, want one naming the route", pc, err)
		}
	}
}
