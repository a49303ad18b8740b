package llm

import "encoding/json"

// ChunkType discriminates stream chunks.
type ChunkType string

const (
	ChunkBlockStart     ChunkType = "block-start"
	ChunkTextDelta      ChunkType = "text-delta"
	ChunkReasoningDelta ChunkType = "reasoning-delta"
	ChunkToolCallDelta  ChunkType = "tool-call-delta"
	ChunkBlockEnd       ChunkType = "block-end"
	ChunkUsage          ChunkType = "usage"
	ChunkFinish         ChunkType = "finish"
)

// FinishKind is how a model response ended.
type FinishKind string

const (
	FinishStop      FinishKind = "stop"
	FinishToolCalls FinishKind = "tool-calls"
	FinishMaxTokens FinishKind = "max-tokens"
	FinishAborted   FinishKind = "aborted"
	FinishError     FinishKind = "error"
)

// FinishReason ends a stream; Failure is set for aborted and error.
type FinishReason struct {
	Kind    FinishKind `json:"kind"`
	Failure *Failure   `json:"failure,omitempty"`
}

// Chunk is one element of a provider stream. Contract: blocks are addressed by
// Index; usage precedes finish; nothing follows finish. Only the fields of the
// chunk's type are meaningful and written to JSON:
//   - block-start: Index, BlockType
//   - text-delta, reasoning-delta: Index, Text
//   - tool-call-delta: Index, ID, Name (usually first fragment only), ArgumentsDelta
//   - block-end: Index, Block (authoritative final block)
//   - usage: Usage
//   - finish: Reason
type Chunk struct {
	Type           ChunkType     `json:"type"`
	Index          int           `json:"index"`
	BlockType      BlockType     `json:"blockType,omitempty"`
	Text           string        `json:"text,omitempty"`
	ID             string        `json:"id,omitempty"`
	Name           string        `json:"name,omitempty"`
	ArgumentsDelta string        `json:"argumentsDelta,omitempty"`
	Block          *ContentBlock `json:"block,omitempty"`
	Usage          *Usage        `json:"usage,omitempty"`
	Reason         *FinishReason `json:"reason,omitempty"`
}

// MarshalJSON writes exactly the fields of the chunk's type.
func (c Chunk) MarshalJSON() ([]byte, error) {
	switch c.Type {
	case ChunkBlockStart:
		return json.Marshal(struct {
			Type      ChunkType `json:"type"`
			Index     int       `json:"index"`
			BlockType BlockType `json:"blockType"`
		}{c.Type, c.Index, c.BlockType})
	case ChunkTextDelta, ChunkReasoningDelta:
		return json.Marshal(struct {
			Type  ChunkType `json:"type"`
			Index int       `json:"index"`
			Text  string    `json:"text"`
		}{c.Type, c.Index, c.Text})
	case ChunkToolCallDelta:
		return json.Marshal(struct {
			Type           ChunkType `json:"type"`
			Index          int       `json:"index"`
			ID             string    `json:"id,omitempty"`
			Name           string    `json:"name,omitempty"`
			ArgumentsDelta string    `json:"argumentsDelta"`
		}{c.Type, c.Index, c.ID, c.Name, c.ArgumentsDelta})
	case ChunkBlockEnd:
		return json.Marshal(struct {
			Type  ChunkType     `json:"type"`
			Index int           `json:"index"`
			Block *ContentBlock `json:"block"`
		}{c.Type, c.Index, c.Block})
	case ChunkUsage:
		return json.Marshal(struct {
			Type  ChunkType `json:"type"`
			Usage *Usage    `json:"usage"`
		}{c.Type, c.Usage})
	case ChunkFinish:
		return json.Marshal(struct {
			Type   ChunkType     `json:"type"`
			Reason *FinishReason `json:"reason"`
		}{c.Type, c.Reason})
	default:
		type plain Chunk
		return json.Marshal(plain(c))
	}
}

// Finish builds a finish chunk.
func Finish(kind FinishKind, failure *Failure) Chunk {
	return Chunk{Type: ChunkFinish, Reason: &FinishReason{Kind: kind, Failure: failure}}
}
