package llm

import (
	"strconv"
	"strings"
)

// Assembler folds a chunk stream into an assistant message (upstream §5.2).
// Blocks are keyed by chunk index and kept in first-seen order; a delta
// without a block-start opens its block implicitly; block-end is
// authoritative and freezes the block. The zero value is ready to use. An
// Assembler is not safe for concurrent use.
type Assembler struct {
	blocks []*asmBlock
	byIdx  map[int]*asmBlock
	usage  *Usage
	finish *FinishReason
}

// asmBlock is one block being assembled from deltas, or frozen by block-end.
type asmBlock struct {
	index  int
	typ    BlockType
	text   strings.Builder
	id     string
	name   string
	args   strings.Builder
	final  *ContentBlock // set by block-end; later deltas are ignored
	frozen bool
}

// Add folds one chunk in. Chunks of unknown type are ignored.
func (a *Assembler) Add(c Chunk) {
	switch c.Type {
	case ChunkBlockStart:
		a.block(c.Index, c.BlockType)
	case ChunkTextDelta:
		if b := a.block(c.Index, BlockText); !b.frozen {
			b.text.WriteString(c.Text)
		}
	case ChunkReasoningDelta:
		if b := a.block(c.Index, BlockReasoning); !b.frozen {
			b.text.WriteString(c.Text)
		}
	case ChunkToolCallDelta:
		b := a.block(c.Index, BlockToolCall)
		if b.frozen {
			return
		}
		if c.ID != "" && b.id == "" {
			b.id = c.ID
		}
		if c.Name != "" && b.name == "" {
			b.name = c.Name
		}
		b.args.WriteString(c.ArgumentsDelta)
	case ChunkBlockEnd:
		typ := BlockType("")
		if c.Block != nil {
			typ = c.Block.Type
		}
		b := a.block(c.Index, typ)
		if b.frozen {
			return
		}
		b.frozen = true
		if c.Block != nil {
			final := *c.Block
			b.final = &final
			b.typ = final.Type
		}
	case ChunkUsage:
		if c.Usage != nil {
			u := *c.Usage
			a.usage = &u
		}
	case ChunkFinish:
		if c.Reason != nil {
			r := *c.Reason
			a.finish = &r
		}
	}
}

// block returns the block at index, opening it with typ when unseen.
func (a *Assembler) block(index int, typ BlockType) *asmBlock {
	if b, ok := a.byIdx[index]; ok {
		if b.typ == "" {
			b.typ = typ
		}
		return b
	}
	if a.byIdx == nil {
		a.byIdx = make(map[int]*asmBlock)
	}
	b := &asmBlock{index: index, typ: typ}
	a.byIdx[index] = b
	a.blocks = append(a.blocks, b)
	return b
}

// content returns the assembled block.
func (b *asmBlock) content() ContentBlock {
	if b.final != nil {
		return *b.final
	}
	switch b.typ {
	case BlockToolCall:
		id := b.id
		if id == "" {
			id = "call-" + strconv.Itoa(b.index)
		}
		return ContentBlock{Type: BlockToolCall, ID: id, Name: b.name, Arguments: b.args.String()}
	default:
		return ContentBlock{Type: b.typ, Text: b.text.String()}
	}
}

// Message returns the assembled assistant message: blocks in first-seen
// order; on a max-tokens finish every tool-call block is dropped, since a
// truncated call is unsafe to execute. Content is never nil.
func (a *Assembler) Message(id string, src Source) Message {
	dropCalls := a.Finish().Kind == FinishMaxTokens
	content := make([]ContentBlock, 0, len(a.blocks))
	for _, b := range a.blocks {
		if b.typ == "" {
			continue // a bare block-end without block: nothing to keep
		}
		c := b.content()
		if dropCalls && c.Type == BlockToolCall {
			continue
		}
		content = append(content, c)
	}
	return Message{ID: id, Role: RoleAssistant, Content: content, Source: src}
}

// Finish returns the stream's finish reason; a stream without one is a stop.
func (a *Assembler) Finish() FinishReason {
	if a.finish == nil {
		return FinishReason{Kind: FinishStop}
	}
	return *a.finish
}

// Usage returns the last usage seen, or nil.
func (a *Assembler) Usage() *Usage {
	if a.usage == nil {
		return nil
	}
	u := *a.usage
	return &u
}

// Interrupted returns the visible prefix kept when a stream is cancelled:
// text and reasoning blocks, closed or open, whose text is not blank.
func (a *Assembler) Interrupted() []ContentBlock {
	var out []ContentBlock
	for _, b := range a.blocks {
		if b.typ != BlockText && b.typ != BlockReasoning {
			continue
		}
		c := b.content()
		if strings.TrimSpace(c.Text) != "" {
			out = append(out, c)
		}
	}
	return out
}

// HasVisible reports whether any text or reasoning block has non-blank text.
func (a *Assembler) HasVisible() bool {
	for _, b := range a.blocks {
		if b.typ != BlockText && b.typ != BlockReasoning {
			continue
		}
		if strings.TrimSpace(b.content().Text) != "" {
			return true
		}
	}
	return false
}

// ToolCalls returns the tool calls of Message, in model order.
func (a *Assembler) ToolCalls() []ContentBlock {
	if a.Finish().Kind == FinishMaxTokens {
		return nil
	}
	var calls []ContentBlock
	for _, b := range a.blocks {
		if b.typ == BlockToolCall {
			calls = append(calls, b.content())
		}
	}
	return calls
}
