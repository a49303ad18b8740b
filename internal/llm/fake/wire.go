package fake

// Wire shapes of a chat.completion.chunk, DeepSeek flavour: delta fields are
// null rather than absent, reasoning travels in reasoning_content.
type wireChunk struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	SystemFingerprint string       `json:"system_fingerprint"`
	Choices           []wireChoice `json:"choices"`
	Usage             any          `json:"usage"`
}

type wireChoice struct {
	Index        int       `json:"index"`
	Delta        wireDelta `json:"delta"`
	Logprobs     any       `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type wireDelta struct {
	Role             string          `json:"role,omitempty"`
	Content          *string         `json:"content"`
	ReasoningContent *string         `json:"reasoning_content,omitempty"`
	ToolCalls        []wireToolDelta `json:"tool_calls,omitempty"`
}

type wireToolDelta struct {
	Index    int    `json:"index"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type deepseekUsage struct {
	PromptTokens          int64             `json:"prompt_tokens"`
	CompletionTokens      int64             `json:"completion_tokens"`
	TotalTokens           int64             `json:"total_tokens"`
	PromptCacheHitTokens  int64             `json:"prompt_cache_hit_tokens"`
	PromptCacheMissTokens int64             `json:"prompt_cache_miss_tokens"`
	CompletionDetails     completionDetails `json:"completion_tokens_details"`
}

type openaiUsage struct {
	PromptTokens      int64             `json:"prompt_tokens"`
	CompletionTokens  int64             `json:"completion_tokens"`
	TotalTokens       int64             `json:"total_tokens"`
	PromptDetails     promptDetails     `json:"prompt_tokens_details"`
	CompletionDetails completionDetails `json:"completion_tokens_details"`
}

type promptDetails struct {
	CachedTokens int64 `json:"cached_tokens"`
}

type completionDetails struct {
	ReasoningTokens int64 `json:"reasoning_tokens"`
}

func (u Usage) wire() any {
	cd := completionDetails{ReasoningTokens: u.ReasoningTokens}
	if u.OpenAIStyle {
		return openaiUsage{u.PromptTokens, u.CompletionTokens, u.PromptTokens + u.CompletionTokens,
			promptDetails{u.CacheHitTokens}, cd}
	}
	return deepseekUsage{u.PromptTokens, u.CompletionTokens, u.PromptTokens + u.CompletionTokens,
		u.CacheHitTokens, max(0, u.PromptTokens-u.CacheHitTokens), cd}
}

func strptr(s string) *string { return &s }
