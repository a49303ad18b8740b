package openai_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"harness/internal/llm"
	"harness/internal/llm/fake"
	"harness/internal/llm/openai"
)

func userSrc() llm.Source { return llm.Source{Kind: llm.SourceUser} }
func modelSrc() llm.Source {
	return llm.Source{Kind: llm.SourceModel, Provider: "deepseek", Model: "deepseek-v4-flash"}
}

// Case 58 and the message rules of §5.4, asserted on the JSON the server got.
func TestRequestSerialization(t *testing.T) {
	t.Parallel()
	srv, p := serve(t, []fake.Reply{{Text: "ok"}})
	temp := 0.0
	req := llm.Request{
		CallConfig: llm.CallConfig{Model: "deepseek-v4-pro", Temperature: &temp, Stop: []string{"END"}},
		System:     "You are a test.",
		SessionID:  "sess-1",
		Tools: []llm.ToolSchema{
			{Name: "bash", Description: "Run a command", Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)},
			{Name: "noargs", Description: "No arguments"},
		},
		Messages: []llm.Message{
			llm.UserText("hello", userSrc()),
			{ID: "a1", Role: llm.RoleAssistant, Source: modelSrc(), Content: []llm.ContentBlock{
				{Type: llm.BlockReasoning, Text: "I should list files."},
				llm.ToolCall("c1", "bash", `{"command":"ls"}`),
				llm.ToolCall("c2", "noargs", ""),
			}},
			llm.ToolResultMessage("r1", "c1", []llm.ContentBlock{llm.Text("a.txt\n")}, false),
			llm.ToolResultMessage("r2", "c2", nil, true),
			{ID: "a2", Role: llm.RoleAssistant, Source: modelSrc(), Content: []llm.ContentBlock{{Type: llm.BlockReasoning, Text: "Only thinking."}}},
			{ID: "u2", Role: llm.RoleUser, Source: userSrc(), Content: []llm.ContentBlock{
				llm.Text("see "), llm.Text("results"),
				{Type: llm.BlockToolResult, ToolCallID: "c3", Content: []llm.ContentBlock{llm.Text("three")}},
				{Type: llm.BlockToolResult, ToolCallID: "c4"},
			}},
			{ID: "u3", Role: llm.RoleUser, Source: userSrc(), Content: []llm.ContentBlock{}},
			{ID: "s1", Role: llm.RoleSystem, Source: llm.Source{Kind: llm.SourcePlugin}, Content: []llm.ContentBlock{llm.Text("sys "), llm.Text("note")}},
			{ID: "a3", Role: llm.RoleAssistant, Source: modelSrc(), Content: []llm.ContentBlock{llm.Text("Done"), {Type: "plugin-thing", Text: "skip me"}}},
		},
	}
	if r := stream(t, p, req); r.err != nil {
		t.Fatal(r.err)
	}
	got := srv.WaitRequests(1)[0]
	body := got.Body

	want := []any{
		map[string]any{"role": "system", "content": "You are a test."},
		map[string]any{"role": "user", "content": "hello"},
		map[string]any{"role": "assistant", "content": "", "reasoning_content": "I should list files.", "tool_calls": []any{
			map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "bash", "arguments": `{"command":"ls"}`}},
			map[string]any{"id": "c2", "type": "function", "function": map[string]any{"name": "noargs", "arguments": "{}"}},
		}},
		map[string]any{"role": "tool", "tool_call_id": "c1", "content": "a.txt\n"},
		map[string]any{"role": "tool", "tool_call_id": "c2", "content": "(no output)"},
		map[string]any{"role": "assistant", "content": "", "reasoning_content": "Only thinking."},
		map[string]any{"role": "user", "content": "see results"},
		map[string]any{"role": "tool", "tool_call_id": "c3", "content": "three"},
		map[string]any{"role": "tool", "tool_call_id": "c4", "content": "(no output)"},
		map[string]any{"role": "user", "content": ""},
		map[string]any{"role": "system", "content": "sys note"},
		map[string]any{"role": "assistant", "content": "Done"},
	}
	if !reflect.DeepEqual(body["messages"], want) {
		gotJSON, _ := json.MarshalIndent(body["messages"], "", "  ")
		t.Fatalf("messages:\n%s", gotJSON)
	}
	checks := map[string]any{
		"model":          "deepseek-v4-pro",
		"stream":         true,
		"stream_options": map[string]any{"include_usage": true},
		"thinking":       map[string]any{"type": "enabled"},
		"max_tokens":     float64(256000),
		"temperature":    float64(0),
		"stop":           []any{"END"},
	}
	for k, v := range checks {
		if !reflect.DeepEqual(body[k], v) {
			t.Errorf("%s = %#v, want %#v", k, body[k], v)
		}
	}
	if body["reasoning_effort"] != "high" {
		t.Errorf("reasoning_effort = %v, want the default high", body["reasoning_effort"])
	}
	if _, ok := body["tool_choice"]; ok {
		t.Error("tool_choice sent")
	}
	tools, _ := body["tools"].([]any)
	if len(tools) != 2 {
		t.Fatalf("tools = %v", body["tools"])
	}
	noargs := tools[1].(map[string]any)["function"].(map[string]any)
	if !reflect.DeepEqual(noargs["parameters"], map[string]any{"type": "object", "properties": map[string]any{}}) {
		t.Errorf("empty parameters = %v", noargs["parameters"])
	}
	if h := got.Header.Get(openai.HeaderSessionID); h != "sess-1" {
		t.Errorf("session header = %q", h)
	}
	if h := got.Header.Get("Authorization"); h != "Bearer "+testKey {
		t.Errorf("authorization = %q", h)
	}
	if h := got.Header.Get("Accept"); h != "text/event-stream" {
		t.Errorf("accept = %q", h)
	}
	if got.Path != "/chat/completions" {
		t.Errorf("path = %q", got.Path)
	}
}

func TestRequestOptionalFieldsOmitted(t *testing.T) {
	t.Parallel()
	srv, p := serve(t, []fake.Reply{{Text: "ok"}}, func(c *openai.Config) { c.Models = nil })
	if r := stream(t, p, prompt("hi")); r.err != nil {
		t.Fatal(r.err)
	}
	got := srv.Requests()[0]
	for _, k := range []string{"tools", "temperature", "stop", "max_tokens"} {
		if v, ok := got.Body[k]; ok {
			t.Errorf("%s sent: %v", k, v)
		}
	}
	if h := got.Header.Get(openai.HeaderSessionID); h != "" {
		t.Errorf("session header without session: %q", h)
	}
	msgs := got.Messages()
	if len(msgs) != 1 || msgs[0].Role != "user" {
		t.Fatalf("messages = %+v (no system prompt expected)", msgs)
	}
}

// Case 60 and the effort table.
func TestEffortMapping(t *testing.T) {
	t.Parallel()
	deepseekRoute := func(c *openai.Config) {}
	openaiRoute := func(c *openai.Config) { c.Kind = openai.KindOpenAI; c.Models = nil; c.DefaultEffort = "" }
	noThinking := func(c *openai.Config) { c.Thinking = false }
	tests := []struct {
		name     string
		mod      func(*openai.Config)
		effort   llm.Effort
		purpose  llm.Purpose
		thinking any // nil: absent
		reason   any // nil: absent
		header   string
	}{
		{"off disables thinking", deepseekRoute, llm.EffortOff, "", map[string]any{"type": "disabled"}, nil, ""},
		{"max", deepseekRoute, llm.EffortMax, "", map[string]any{"type": "enabled"}, "max", ""},
		{"low", deepseekRoute, llm.EffortLow, "", map[string]any{"type": "enabled"}, "low", ""},
		{"default is high", deepseekRoute, "", "", map[string]any{"type": "enabled"}, "high", ""},
		{"title never thinks", deepseekRoute, llm.EffortMax, llm.PurposeTitle, map[string]any{"type": "disabled"}, nil, "session-title"},
		{"compaction keeps effort", deepseekRoute, llm.EffortLow, llm.PurposeCompaction, map[string]any{"type": "enabled"}, "low", "compaction"},
		{"thinking-disabled route", noThinking, "", "", map[string]any{"type": "disabled"}, nil, ""},
		{"thinking-disabled route accepts off", noThinking, llm.EffortOff, "", map[string]any{"type": "disabled"}, nil, ""},
		{"openai route passes effort", openaiRoute, llm.EffortLow, "", nil, "low", ""},
		{"openai route off sends nothing", openaiRoute, llm.EffortOff, "", nil, nil, ""},
		{"openai route default sends nothing", openaiRoute, "", "", nil, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, p := serve(t, []fake.Reply{{Text: "ok"}}, tt.mod)
			req := prompt("hi")
			req.ReasoningEffort, req.Purpose = tt.effort, tt.purpose
			if r := stream(t, p, req); r.err != nil {
				t.Fatal(r.err)
			}
			got := srv.Requests()[0]
			if !reflect.DeepEqual(got.Body["thinking"], tt.thinking) {
				t.Errorf("thinking = %#v, want %#v", got.Body["thinking"], tt.thinking)
			}
			if !reflect.DeepEqual(got.Body["reasoning_effort"], tt.reason) {
				t.Errorf("reasoning_effort = %#v, want %#v", got.Body["reasoning_effort"], tt.reason)
			}
			if h := got.Header.Get(openai.HeaderPurpose); h != tt.header {
				t.Errorf("purpose header = %q, want %q", h, tt.header)
			}
		})
	}
}

func TestOpenAIRouteSerialization(t *testing.T) {
	t.Parallel()
	srv := fake.NewServer(fake.Script{Replies: []fake.Reply{{Text: "ok"}}}, fake.WithTimeScale(0))
	url := srv.Start(t)
	cfg, ok := openai.OpenAIFromEnv(func(k string) string {
		return map[string]string{"OPENAI_BASE_URL": url + "/v1", "OPENAI_MODEL": "gpt-5-mini"}[k]
	})
	if !ok || cfg.APIKey != "" || cfg.DefaultModel != "gpt-5-mini" {
		t.Fatalf("config = %+v ok=%v", cfg, ok)
	}
	p, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req := llm.Request{CallConfig: llm.CallConfig{MaxTokens: 1000}, Messages: []llm.Message{
		{ID: "a", Role: llm.RoleAssistant, Source: modelSrc(), Content: []llm.ContentBlock{{Type: llm.BlockReasoning, Text: "private"}, llm.Text("hi")}},
		llm.UserText("go", userSrc()),
	}}
	if r := stream(t, p, req); r.err != nil {
		t.Fatal(r.err)
	}
	got := srv.Requests()[0]
	if got.Path != "/v1/chat/completions" {
		t.Errorf("path = %q", got.Path)
	}
	if h := got.Header.Get("Authorization"); h != "" {
		t.Errorf("authorization without key: %q", h)
	}
	if got.Body["max_completion_tokens"] != float64(1000) || got.Body["max_tokens"] != nil {
		t.Errorf("reasoning model token limit: %v / %v", got.Body["max_completion_tokens"], got.Body["max_tokens"])
	}
	if got.Messages()[0].ReasoningContent != "" {
		t.Error("reasoning passback on an openai route")
	}
}

func TestFromEnv(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if _, ok := openai.DeepSeekFromEnv(env(nil)); ok {
		t.Error("DeepSeek route without key")
	}
	cfg, ok := openai.DeepSeekFromEnv(env(map[string]string{"DEEPSEEK_API_KEY": "k"}))
	if !ok || cfg.BaseURL != "https://api.deepseek.com" || cfg.DefaultModel != "deepseek-v4-flash" || !cfg.Thinking || cfg.DefaultEffort != llm.EffortHigh {
		t.Fatalf("deepseek config = %+v", cfg)
	}
	if len(cfg.Models) != 2 || cfg.Models[1].ID != "deepseek-v4-pro" || cfg.Models[0].ContextWindow != 1_000_000 || cfg.Models[0].DefaultMaxTokens != 256_000 {
		t.Fatalf("deepseek models = %+v", cfg.Models)
	}
	if !reflect.DeepEqual(cfg.Models[0].Efforts, []llm.Effort{"off", "low", "high", "max"}) {
		t.Fatalf("efforts = %v", cfg.Models[0].Efforts)
	}
	if _, ok := openai.OpenAIFromEnv(env(nil)); ok {
		t.Error("OpenAI route without key or URL")
	}
	cfg, ok = openai.OpenAIFromEnv(env(map[string]string{"OPENAI_API_KEY": "k"}))
	if !ok || cfg.BaseURL != "https://api.openai.com/v1" || cfg.Kind != openai.KindOpenAI {
		t.Fatalf("openai config = %+v", cfg)
	}
	p, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	info := p.Info()
	if info.Name != "openai" || info.DefaultModel == "" || info.Retry.MaxRetries != 5 || info.Offline || info.ImageInput {
		t.Fatalf("info = %+v", info)
	}
	for v, want := range map[string]bool{"1": true, "true": true, "yes": true, "0": false, "": false, "maybe": false} {
		cfg, _ := openai.OpenAIFromEnv(env(map[string]string{"OPENAI_API_KEY": "k", "OPENAI_IMAGE_INPUT": v}))
		if cfg.ImageInput != want {
			t.Errorf("OPENAI_IMAGE_INPUT=%q: image input %v", v, cfg.ImageInput)
		}
	}
	for _, bad := range []openai.Config{
		{Name: "", BaseURL: "http://x", DefaultModel: "m"},
		{Name: "x", BaseURL: "ftp://x", DefaultModel: "m"},
		{Name: "x", BaseURL: "http://x"},
		{Name: "x", BaseURL: "http://x", DefaultModel: "m", Kind: "grpc"},
	} {
		if _, err := openai.New(bad); err == nil {
			t.Errorf("New(%+v) accepted", bad)
		}
	}
}
