package openai

import (
	"strconv"
	"strings"

	"harness/internal/llm"
)

// wireChunk is one `chat.completion.chunk` payload. It is decoded by the
// adapter (from go-openai's RecvRaw) rather than as go-openai's struct,
// because that struct has no `prompt_cache_hit_tokens` and cannot tell a
// null delta field from an empty one.
type wireChunk struct {
	Choices []wireChoice `json:"choices"`
	Usage   *wireUsage   `json:"usage"`
}

type wireChoice struct {
	Delta        wireDelta `json:"delta"`
	FinishReason *string   `json:"finish_reason"`
}

type wireDelta struct {
	Content          *string `json:"content"`
	ReasoningContent *string `json:"reasoning_content"`
	// Reasoning is the field some OpenAI-compatible servers (vLLM, Ollama)
	// use instead of reasoning_content.
	Reasoning *string        `json:"reasoning"`
	ToolCalls []wireToolCall `json:"tool_calls"`
}

type wireToolCall struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type wireUsage struct {
	PromptTokens         int64  `json:"prompt_tokens"`
	CompletionTokens     int64  `json:"completion_tokens"`
	PromptCacheHitTokens *int64 `json:"prompt_cache_hit_tokens"`
	PromptTokensDetails  *struct {
		CachedTokens *int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// usage maps wire usage to disjoint buckets: cached prompt tokens
// (`prompt_tokens_details.cached_tokens`, else DeepSeek's
// `prompt_cache_hit_tokens`) are taken out of the input bucket.
func (u *wireUsage) usage() llm.Usage {
	var cached int64
	switch {
	case u.PromptTokensDetails != nil && u.PromptTokensDetails.CachedTokens != nil:
		cached = *u.PromptTokensDetails.CachedTokens
	case u.PromptCacheHitTokens != nil:
		cached = *u.PromptCacheHitTokens
	}
	out := llm.Usage{
		InputTokens:     max(0, u.PromptTokens-cached),
		OutputTokens:    u.CompletionTokens,
		CacheReadTokens: cached,
	}
	if u.CompletionTokensDetails != nil {
		out.ReasoningTokens = u.CompletionTokensDetails.ReasoningTokens
	}
	return out
}

// tblock is one block being streamed.
type tblock struct {
	typ  llm.BlockType
	text strings.Builder
	id   string
	name string
	args strings.Builder
}

// translator turns wire chunks into llm chunks (upstream §5.4 Response):
// blocks in first-appearance order, one reasoning block, one text block, a
// block per tool-call wire index; finish and usage held until [DONE].
type translator struct {
	emit      llm.Emit
	blocks    []*tblock
	reasoning int // block index, -1 until opened
	text      int
	tools     map[int]int // wire index -> block index
	lastTool  int
	finish    string
	usage     *llm.Usage
}

func newTranslator(emit llm.Emit) *translator {
	return &translator{emit: emit, reasoning: -1, text: -1, lastTool: -1, tools: make(map[int]int)}
}

// add processes one payload; an error is the consumer's.
func (t *translator) add(c *wireChunk) error {
	for i := range c.Choices {
		ch := &c.Choices[i]
		if err := t.delta(&ch.Delta); err != nil {
			return err
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			t.finish = *ch.FinishReason
		}
	}
	if c.Usage != nil {
		u := c.Usage.usage()
		t.usage = &u // the latest usage wins
	}
	return nil
}

func (t *translator) delta(d *wireDelta) error {
	reasoning := d.ReasoningContent
	if reasoning == nil {
		reasoning = d.Reasoning
	}
	if reasoning != nil && *reasoning != "" {
		if err := t.textDelta(&t.reasoning, llm.BlockReasoning, llm.ChunkReasoningDelta, *reasoning); err != nil {
			return err
		}
	}
	if d.Content != nil && *d.Content != "" {
		if err := t.textDelta(&t.text, llm.BlockText, llm.ChunkTextDelta, *d.Content); err != nil {
			return err
		}
	}
	for i := range d.ToolCalls {
		if err := t.toolDelta(&d.ToolCalls[i]); err != nil {
			return err
		}
	}
	return nil
}

func (t *translator) textDelta(idx *int, bt llm.BlockType, ct llm.ChunkType, s string) error {
	if *idx < 0 {
		var err error
		if *idx, err = t.open(bt); err != nil {
			return err
		}
	}
	t.blocks[*idx].text.WriteString(s)
	return t.emit(llm.Chunk{Type: ct, Index: *idx, Text: s})
}

func (t *translator) toolDelta(tc *wireToolCall) error {
	idx, known := t.toolBlock(tc)
	if !known {
		var err error
		if idx, err = t.open(llm.BlockToolCall); err != nil {
			return err
		}
		if tc.Index != nil {
			t.tools[*tc.Index] = idx
		}
	}
	t.lastTool = idx
	b := t.blocks[idx]
	if b.id == "" {
		b.id = tc.ID
	}
	if b.name == "" {
		b.name = tc.Function.Name
	}
	if tc.ID == "" && tc.Function.Name == "" && tc.Function.Arguments == "" {
		return nil
	}
	b.args.WriteString(tc.Function.Arguments)
	return t.emit(llm.Chunk{Type: llm.ChunkToolCallDelta, Index: idx, ID: tc.ID, Name: tc.Function.Name, ArgumentsDelta: tc.Function.Arguments})
}

// toolBlock finds the block a fragment continues. A fragment whose wire
// index is taken by a call with a different id starts a new call (some
// servers reuse index 0); one without index continues the last call unless
// it brings a new id.
func (t *translator) toolBlock(tc *wireToolCall) (int, bool) {
	if tc.Index != nil {
		idx, ok := t.tools[*tc.Index]
		if ok && tc.ID != "" && t.blocks[idx].id != "" && t.blocks[idx].id != tc.ID {
			return 0, false
		}
		return idx, ok
	}
	if t.lastTool >= 0 && (tc.ID == "" || tc.ID == t.blocks[t.lastTool].id) {
		return t.lastTool, true
	}
	return 0, false
}

func (t *translator) open(bt llm.BlockType) (int, error) {
	idx := len(t.blocks)
	t.blocks = append(t.blocks, &tblock{typ: bt})
	return idx, t.emit(llm.Chunk{Type: llm.ChunkBlockStart, Index: idx, BlockType: bt})
}

// done emits what was held back: block-ends in order, usage, finish.
func (t *translator) done() error {
	for i, b := range t.blocks {
		block := b.content(i)
		if err := t.emit(llm.Chunk{Type: llm.ChunkBlockEnd, Index: i, Block: &block}); err != nil {
			return err
		}
	}
	if t.usage != nil {
		if err := t.emit(llm.Chunk{Type: llm.ChunkUsage, Usage: t.usage}); err != nil {
			return err
		}
	}
	return t.emit(t.finishChunk())
}

func (b *tblock) content(index int) llm.ContentBlock {
	if b.typ != llm.BlockToolCall {
		return llm.ContentBlock{Type: b.typ, Text: b.text.String()}
	}
	id := b.id
	if id == "" {
		id = "call-" + strconv.Itoa(index)
	}
	return llm.ToolCall(id, b.name, b.args.String())
}

// finishChunk maps finish_reason; a completed stop without any block is
// EMPTY_RESPONSE (a reasoning-only response is a valid stop).
func (t *translator) finishChunk() llm.Chunk {
	switch t.finish {
	case "", "stop":
		if len(t.blocks) == 0 {
			return llm.Finish(llm.FinishError, llm.Errorf(llm.CodeEmptyResponse, "model returned a completed response with no content"))
		}
		return llm.Finish(llm.FinishStop, nil)
	case "tool_calls", "function_call":
		return llm.Finish(llm.FinishToolCalls, nil)
	case "length":
		return llm.Finish(llm.FinishMaxTokens, nil)
	default:
		code := llm.Code(strings.ToUpper(t.finish))
		return llm.Finish(llm.FinishError, &llm.Failure{Code: code, Message: "model stopped with finish reason " + t.finish})
	}
}
