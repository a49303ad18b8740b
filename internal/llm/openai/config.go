package openai

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"harness/internal/llm"
)

// Kind selects the wire dialect of a route.
type Kind string

const (
	// KindDeepSeek adds the top-level thinking switch and maps efforts to it.
	KindDeepSeek Kind = "deepseek"
	// KindOpenAI is any OpenAI-compatible server (OpenAI, vLLM, Ollama, ...).
	KindOpenAI Kind = "openai"
)

// Defaults of the DeepSeek route (upstream §9).
const (
	DeepSeekBaseURL          = "https://api.deepseek.com"
	DeepSeekFlash            = "deepseek-v4-flash"
	DeepSeekPro              = "deepseek-v4-pro"
	DeepSeekContextWindow    = 1_000_000
	DeepSeekDefaultMaxTokens = 256_000
	DefaultIdleTimeout       = 300 * time.Second
	openAIBaseURL            = "https://api.openai.com/v1"
	openAIDefaultModel       = "gpt-4o-mini"
	openAIContextWindow      = 128_000
)

// Config is one configured route.
type Config struct {
	Name          string          `json:"name"`
	Label         string          `json:"label"`
	Kind          Kind            `json:"kind"`
	BaseURL       string          `json:"baseUrl"`
	APIKey        string          `json:"-"` // never serialized, never in messages
	DefaultModel  string          `json:"defaultModel"`
	Models        []llm.ModelInfo `json:"models"`
	DefaultEffort llm.Effort      `json:"defaultEffort,omitempty"`
	// Thinking enables reasoning on a deepseek route; when false only the
	// "off" effort is accepted.
	Thinking bool `json:"thinking"`
	// Offline marks the embedded demo route.
	Offline bool `json:"offline,omitempty"`
	// ImageInput: the route's models take images (OpenAI-compatible
	// image_url content parts). Without it a request with images fails
	// with UNSUPPORTED_CONTENT before any I/O.
	ImageInput bool         `json:"imageInput,omitempty"`
	HTTPClient *http.Client `json:"-"`
	// IdleTimeout bounds every outstanding read, including the wait for the
	// response headers; 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration `json:"-"`
	// Retry is the route's retry policy; the zero value means
	// llm.DefaultRetryPolicy().
	Retry llm.RetryPolicy `json:"-"`
}

// DeepSeekEfforts are the efforts the DeepSeek route advertises.
func DeepSeekEfforts() []llm.Effort {
	return []llm.Effort{llm.EffortOff, llm.EffortLow, llm.EffortHigh, llm.EffortMax}
}

// DeepSeekModels is the advisory DeepSeek catalog; any other id passes through.
func DeepSeekModels() []llm.ModelInfo {
	mk := func(id, label string) llm.ModelInfo {
		return llm.ModelInfo{
			ID: id, Label: label,
			ContextWindow: DeepSeekContextWindow, DefaultMaxTokens: DeepSeekDefaultMaxTokens,
			Efforts: DeepSeekEfforts(), DefaultEffort: llm.EffortHigh,
		}
	}
	return []llm.ModelInfo{mk(DeepSeekFlash, "DeepSeek-V4-Flash"), mk(DeepSeekPro, "DeepSeek-V4-Pro")}
}

// DeepSeekFromEnv builds the DeepSeek route from DEEPSEEK_API_KEY and
// DEEPSEEK_BASE_URL; ok is false when no key is set.
func DeepSeekFromEnv(getenv func(string) string) (Config, bool) {
	key := strings.TrimSpace(getenv("DEEPSEEK_API_KEY"))
	if key == "" {
		return Config{}, false
	}
	base := strings.TrimSpace(getenv("DEEPSEEK_BASE_URL"))
	if base == "" {
		base = DeepSeekBaseURL
	}
	return Config{
		Name: "deepseek", Label: "DeepSeek", Kind: KindDeepSeek,
		BaseURL: base, APIKey: key,
		DefaultModel: DeepSeekFlash, Models: DeepSeekModels(),
		DefaultEffort: llm.EffortHigh, Thinking: true,
	}, true
}

// OpenAIFromEnv builds a generic OpenAI-compatible route from OPENAI_API_KEY,
// OPENAI_BASE_URL and OPENAI_MODEL; ok is false when neither a key nor a URL
// is set (a local vLLM or Ollama needs no key).
func OpenAIFromEnv(getenv func(string) string) (Config, bool) {
	key := strings.TrimSpace(getenv("OPENAI_API_KEY"))
	base := strings.TrimSpace(getenv("OPENAI_BASE_URL"))
	if key == "" && base == "" {
		return Config{}, false
	}
	if base == "" {
		base = openAIBaseURL
	}
	model := strings.TrimSpace(getenv("OPENAI_MODEL"))
	if model == "" {
		model = openAIDefaultModel
	}
	return Config{
		Name: "openai", Label: "OpenAI-compatible (" + hostOf(base) + ")", Kind: KindOpenAI,
		BaseURL: base, APIKey: key, DefaultModel: model,
		Models:     []llm.ModelInfo{{ID: model, Label: model, ContextWindow: openAIContextWindow}},
		ImageInput: envBool(getenv("OPENAI_IMAGE_INPUT")),
	}, true
}

// envBool reads a yes/no variable: 1, true, yes and on are yes.
func envBool(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// hostOf returns the host of a URL for labels, or the URL itself.
func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		return u.Host
	}
	return raw
}
