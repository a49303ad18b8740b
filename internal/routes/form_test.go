package routes

import (
	"strings"
	"testing"

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
