package web

import (
	"strings"
	"testing"

	"harness/internal/llm/openai"
	"harness/internal/models"
)

func TestProviderFormConfig(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		form    ProviderForm
		wantErr string
		check   func(t *testing.T, pc models.ProviderConfig)
	}{
		{"deepseek with defaults", ProviderForm{Name: " Work ", Kind: "deepseek", APIKey: "sk-x", Enabled: true}, "",
			func(t *testing.T, pc models.ProviderConfig) {
				cfg, err := openAIConfig(pc)
				if err != nil {
					t.Fatal(err)
				}
				if pc.Name != "work" || cfg.BaseURL != openai.DeepSeekBaseURL || cfg.DefaultModel != openai.DeepSeekFlash || !cfg.Thinking || cfg.APIKey != "sk-x" {
					t.Errorf("config %+v", cfg)
				}
			}},
		{"openai models list", ProviderForm{Name: "local", Kind: "openai", BaseURL: "http://127.0.0.1:1/v1", Models: "a,b\nc", Enabled: true}, "",
			func(t *testing.T, pc models.ProviderConfig) {
				cfg, err := openAIConfig(pc)
				if err != nil {
					t.Fatal(err)
				}
				if cfg.DefaultModel != "a" || len(cfg.Models) != 3 || !strings.Contains(cfg.Label, "OpenAI-compatible") {
					t.Errorf("config %+v", cfg)
				}
			}},
		{"default model outside the list", ProviderForm{Name: "x", Kind: "openai", BaseURL: "https://h", Models: "a", DefaultModel: "z"}, "",
			func(t *testing.T, pc models.ProviderConfig) {
				cfg, _ := openAIConfig(pc)
				if cfg.DefaultModel != "z" || cfg.Models[0].ID != "z" {
					t.Errorf("config %+v", cfg)
				}
			}},
		{"bad name", ProviderForm{Name: "-x", Kind: "openai"}, "route name", nil},
		{"bad kind", ProviderForm{Name: "x", Kind: "anthropic"}, "kind must be", nil},
		{"openai without url", ProviderForm{Name: "x", Kind: "openai", Models: "m"}, "needs a base URL", nil},
		{"openai without models", ProviderForm{Name: "x", Kind: "openai", BaseURL: "https://h"}, "at least one model", nil},
		{"key with a space", ProviderForm{Name: "x", Kind: "deepseek", APIKey: "sk x"}, "one line", nil},
		{"javascript url", ProviderForm{Name: "x", Kind: "openai", BaseURL: "javascript:alert(1)", Models: "m"}, "http or https", nil},
	}
	for _, c := range cases {
		pc, err := c.form.config()
		if c.wantErr != "" {
			if err == nil || !strings.Contains(formMessage(err), c.wantErr) {
				t.Errorf("%s: error %v, want %q", c.name, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		c.check(t, pc)
	}
}
