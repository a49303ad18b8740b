package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	goai "github.com/sashabaranov/go-openai"

	"harness/internal/llm"
)

// noOutput replaces an empty tool result: providers reject empty tool content.
const noOutput = "(no output)"

// wirePatch holds what go-openai's request struct does not carry; the
// transport splices it into the encoded body (see transport.go).
type wirePatch struct {
	// thinking is the DeepSeek top-level switch: "enabled", "disabled" or "".
	thinking string
	// zeroTemperature sends an explicit temperature 0, which go-openai's
	// omitempty float drops.
	zeroTemperature bool
	// messages are the encoded wire messages as segments (each one or more
	// JSON objects, comma-separated), in order. go-openai encodes a request
	// without messages; the transport puts these in its place, without
	// copying them. With the session log's wire cache a turn encodes what
	// is new, not the whole history.
	messages [][]byte
	// images are the image parts of the messages' attachments by id
	// (images.go): the messages carry a placeholder part per image, which
	// the body gets in its place, so the log's wire cache never holds
	// image bytes.
	images map[string][]byte
}

// buildRequest maps an llm.Request to the go-openai request plus the patch.
// A failure here is raised before any I/O.
func (p *Provider) buildRequest(req llm.Request) (goai.ChatCompletionRequest, wirePatch, *llm.Failure) {
	model := req.Model
	if model == "" {
		model = p.cfg.DefaultModel
	}
	info := p.info.Model(model)

	var patch wirePatch
	thinking, effort, f := p.resolveEffort(info, req)
	if f != nil {
		return goai.ChatCompletionRequest{}, patch, f
	}
	patch.thinking = thinking

	msgs, f := p.messages(req)
	if f != nil {
		return goai.ChatCompletionRequest{}, patch, f
	}
	patch.messages = msgs

	out := goai.ChatCompletionRequest{
		Model:           model,
		Messages:        nil, // spliced by the transport: see wirePatch
		Stream:          true,
		StreamOptions:   &goai.StreamOptions{IncludeUsage: true},
		ReasoningEffort: string(effort),
		Stop:            req.Stop,
		Tools:           tools(req.Tools),
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = info.DefaultMaxTokens
	}
	if maxTokens > 0 {
		// OpenAI reasoning models refuse max_tokens (go-openai validates it).
		if p.cfg.Kind == KindOpenAI && completionTokensModel(model) {
			out.MaxCompletionTokens = maxTokens
		} else {
			// DeepSeek and most OpenAI-compatible servers take max_tokens.
			//lint:ignore SA1019 max_completion_tokens is OpenAI's newer name only
			out.MaxTokens = maxTokens
		}
	}
	if req.Temperature != nil {
		out.Temperature = float32(*req.Temperature)
		patch.zeroTemperature = *req.Temperature == 0
	}
	return out, patch, nil
}

// resolveEffort maps the requested effort to the DeepSeek thinking switch
// and reasoning_effort (upstream §5.4 effort mapping).
func (p *Provider) resolveEffort(info llm.ModelInfo, req llm.Request) (thinking string, effort llm.Effort, f *llm.Failure) {
	requested := req.ReasoningEffort
	if req.Purpose == llm.PurposeTitle {
		// Titles never think: they must be fast and cheap.
		if p.cfg.Kind == KindDeepSeek {
			return "disabled", "", nil
		}
		return "", "", nil
	}
	effort = requested
	if effort == "" {
		effort = info.DefaultEffort
	}
	if effort == "" {
		effort = p.cfg.DefaultEffort
	}
	if p.cfg.Kind == KindDeepSeek && effort == "" {
		effort = llm.EffortHigh
	}
	if requested != "" && len(info.Efforts) > 0 && !slices.Contains(info.Efforts, requested) {
		return "", "", &llm.Failure{Code: llm.CodeUnsupportedEffort,
			Message: "reasoning effort " + string(requested) + " is not supported by model " + info.ID}
	}

	if p.cfg.Kind != KindDeepSeek {
		if effort == llm.EffortOff {
			return "", "", nil
		}
		return "", effort, nil
	}
	if !p.cfg.Thinking {
		if requested != "" && requested != llm.EffortOff {
			return "", "", &llm.Failure{Code: llm.CodeUnsupportedEffort,
				Message: "thinking is disabled on route " + p.cfg.Name + "; only effort off is allowed"}
		}
		return "disabled", "", nil
	}
	if effort == llm.EffortOff {
		return "disabled", "", nil
	}
	return "enabled", effort, nil
}

// messages encodes the system prompt and history (upstream §5.4 Messages)
// as comma-separated segments: each history message is encoded once in the
// session's life when the request carries the log's wire cache, else each
// time.
func (p *Provider) messages(req llm.Request) ([][]byte, *llm.Failure) {
	out := make([][]byte, 0, 2)
	if req.System != "" {
		b, err := json.Marshal(wireMessage{Role: goai.ChatMessageRoleSystem, Content: req.System})
		if err != nil {
			return nil, llm.Errorf(llm.CodeInvalidRequest, "encode the system prompt: %v", err)
		}
		out = append(out, b)
	}
	var segs [][]byte
	var err error
	if req.Wire != nil {
		segs, err = req.Wire.Encoded(p.variant, p.encodeMessage)
	} else {
		segs, err = p.encodeAll(req.Messages)
	}
	if err != nil {
		var f *llm.Failure
		if errors.As(err, &f) {
			return nil, f
		}
		return nil, llm.Errorf(llm.CodeInvalidRequest, "encode the history: %v", err)
	}
	for _, s := range segs {
		if len(s) > 0 {
			out = append(out, s)
		}
	}
	return out, nil
}

// encodeAll encodes a history without a cache.
func (p *Provider) encodeAll(msgs []llm.Message) ([][]byte, error) {
	out := make([][]byte, 0, len(msgs))
	for _, m := range msgs {
		b, err := p.encodeMessage(m)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// wireMessage is a chat message as the OpenAI-compatible wire takes it.
// Unlike go-openai's, content is always present: DeepSeek wants "" on
// tool-call-only and reasoning-only assistant turns, never a missing field.
type wireMessage struct {
	Role             string          `json:"role"`
	Content          string          `json:"content"`
	ReasoningContent string          `json:"reasoning_content,omitempty"`
	ToolCalls        []goai.ToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string          `json:"tool_call_id,omitempty"`
}

func toWire(m goai.ChatCompletionMessage) wireMessage {
	return wireMessage{Role: m.Role, Content: m.Content, ReasoningContent: m.ReasoningContent, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID}
}

// encodeMessage encodes one history message as one or more comma-separated
// wire messages (a user message with tool results becomes a message per
// result). Its output depends only on the message and p.variant.
func (p *Provider) encodeMessage(m llm.Message) ([]byte, error) {
	if f := p.checkImages(m); f != nil {
		return nil, f
	}
	var wire []goai.ChatCompletionMessage
	switch m.Role {
	case llm.RoleSystem:
		wire = []goai.ChatCompletionMessage{{Role: goai.ChatMessageRoleSystem, Content: joinText(m.Content, llm.BlockText)}}
	case llm.RoleAssistant:
		wire = []goai.ChatCompletionMessage{p.assistant(m)}
	default:
		wire = user(m)
		if !p.cfg.ImageInput && len(wire) > 0 && wire[0].Role == goai.ChatMessageRoleUser {
			wire[0].Content += imageNotes(m)
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for i, w := range wire {
		if i > 0 {
			buf.WriteByte(',')
		}
		var err error
		if i == 0 && w.Role == goai.ChatMessageRoleUser && p.cfg.ImageInput && len(m.Images()) > 0 {
			err = encodeParts(enc, &buf, m)
		} else {
			err = enc.Encode(toWire(w))
		}
		if err != nil {
			return nil, err
		}
		buf.Truncate(buf.Len() - 1) // Encode's newline
	}
	return buf.Bytes(), nil
}

// assistant serializes an assistant message; content is "" rather than
// absent when there is no text (the transport keeps the empty string).
func (p *Provider) assistant(m llm.Message) goai.ChatCompletionMessage {
	msg := goai.ChatCompletionMessage{Role: goai.ChatMessageRoleAssistant, Content: joinText(m.Content, llm.BlockText)}
	if p.cfg.Kind == KindDeepSeek {
		// Reasoning passback: DeepSeek expects the reasoning of every
		// reasoned turn back, so a tool loop keeps its chain of thought.
		msg.ReasoningContent = joinText(m.Content, llm.BlockReasoning)
	}
	for _, b := range m.Content {
		if b.Type != llm.BlockToolCall {
			continue
		}
		args := b.Arguments
		if strings.TrimSpace(args) == "" {
			args = "{}" // an empty argument string is the empty object
		}
		msg.ToolCalls = append(msg.ToolCalls, goai.ToolCall{
			ID: b.ID, Type: goai.ToolTypeFunction,
			Function: goai.FunctionCall{Name: b.Name, Arguments: args},
		})
	}
	return msg
}

// user serializes a user message: its text (when it has text or carries no
// tool results), then one tool message per tool-result block.
func user(m llm.Message) []goai.ChatCompletionMessage {
	var results []llm.ContentBlock
	for _, b := range m.Content {
		if b.Type == llm.BlockToolResult {
			results = append(results, b)
		}
	}
	text := joinText(m.Content, llm.BlockText)
	out := make([]goai.ChatCompletionMessage, 0, len(results)+1)
	if text != "" || len(results) == 0 || len(m.Images()) > 0 {
		out = append(out, goai.ChatCompletionMessage{Role: goai.ChatMessageRoleUser, Content: text})
	}
	for _, r := range results {
		content := joinText(r.Content, llm.BlockText)
		if content == "" {
			content = noOutput
		}
		out = append(out, goai.ChatCompletionMessage{Role: goai.ChatMessageRoleTool, ToolCallID: r.ToolCallID, Content: content})
	}
	return out
}

// joinText concatenates the text of the blocks of type t.
func joinText(blocks []llm.ContentBlock, t llm.BlockType) string {
	var sb strings.Builder
	for _, b := range blocks {
		if b.Type == t {
			sb.WriteString(b.Text)
		}
	}
	return sb.String()
}

// emptyParameters is the schema of a tool that takes no arguments.
const emptyParameters = `{"type":"object","properties":{}}`

// tools maps tool schemas; nil when there are none, so the field is omitted.
func tools(schemas []llm.ToolSchema) []goai.Tool {
	if len(schemas) == 0 {
		return nil
	}
	out := make([]goai.Tool, 0, len(schemas))
	for _, s := range schemas {
		params := s.Parameters
		if len(params) == 0 || string(params) == "null" {
			params = json.RawMessage(emptyParameters)
		}
		out = append(out, goai.Tool{Type: goai.ToolTypeFunction, Function: &goai.FunctionDefinition{
			Name: s.Name, Description: s.Description, Parameters: params,
		}})
	}
	return out
}

// completionTokensModel reports OpenAI reasoning models, which take
// max_completion_tokens instead of max_tokens.
func completionTokensModel(model string) bool {
	for _, prefix := range []string{"o1", "o3", "o4", "gpt-5", "gpt-6"} {
		if strings.HasPrefix(model, prefix) {
			return true
		}
	}
	return false
}
