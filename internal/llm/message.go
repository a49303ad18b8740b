package llm

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"
)

// Role is the speaker of a message. Tool results travel as user-role messages,
// as the providers expect.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// SourceKind says who produced a message. The log records it so a transcript
// can show who said what (a person, the model, a tool, a plugin such as
// compaction or the runtime context).
type SourceKind string

const (
	SourceUser   SourceKind = "user"
	SourceModel  SourceKind = "model"
	SourceTool   SourceKind = "tool"
	SourcePlugin SourceKind = "plugin"
	// SourceAgent is a message another agent wrote: the prompt a parent's
	// task call gives its subagent (Session names the parent session).
	SourceAgent SourceKind = "agent"
)

// Plugin names used in plugin sources.
const (
	PluginRuntimeContext = "runtime-context"
	PluginCompact        = "compact"
	PluginToolContext    = "tool-context"
	PluginPermission     = "permission"
)

// SourceForm is an optional presentation hint on plugin sources.
type SourceForm string

const (
	FormSnapshot     SourceForm = "snapshot"
	FormNotice       SourceForm = "notice"
	FormInstructions SourceForm = "instructions"
)

// Source records who produced a message. Only the fields of its kind are set:
//   - user: UserID and Name (the display name); ClientID when a client supplied
//     a request id, so a browser can reconcile its optimistic echo.
//   - model: Provider and Model.
//   - tool: CallID.
//   - plugin: Plugin, optional Form, CompactionID for compaction checkpoints.
//   - agent: Session (the parent session) and CallID (its task call).
type Source struct {
	Kind         SourceKind `json:"kind"`
	UserID       string     `json:"userId,omitempty"`
	Name         string     `json:"name,omitempty"`
	ClientID     string     `json:"clientId,omitempty"`
	Provider     string     `json:"provider,omitempty"`
	Model        string     `json:"model,omitempty"`
	CallID       string     `json:"callId,omitempty"`
	Plugin       string     `json:"plugin,omitempty"`
	Form         SourceForm `json:"form,omitempty"`
	CompactionID string     `json:"compactionId,omitempty"`
	Session      string     `json:"session,omitempty"`
}

// Message is one entry of model-visible history. Messages are values: once
// logged they are never mutated (the log hands out copies of its slices only
// by convention; callers must not modify Content in place).
type Message struct {
	ID      string         `json:"id"`
	Role    Role           `json:"role"`
	Content []ContentBlock `json:"content"`
	Source  Source         `json:"source"`
}

// NewID returns a fresh random message id (a UUID).
func NewID() string { return uuid.NewString() }

// UserText builds a user message with a single text block.
func UserText(text string, src Source) Message {
	return Message{ID: NewID(), Role: RoleUser, Content: []ContentBlock{Text(text)}, Source: src}
}

// ToolResultMessage builds the user-role message that carries one tool result.
func ToolResultMessage(id, callID string, content []ContentBlock, isError bool) Message {
	if content == nil {
		content = []ContentBlock{}
	}
	return Message{
		ID:      id,
		Role:    RoleUser,
		Content: []ContentBlock{{Type: BlockToolResult, ToolCallID: callID, Content: content, IsError: isError}},
		Source:  Source{Kind: SourceTool, CallID: callID},
	}
}

// Validate checks the shape every logged message must have.
func (m Message) Validate() error {
	if m.ID == "" {
		return fmt.Errorf("message: empty id")
	}
	switch m.Role {
	case RoleSystem, RoleUser, RoleAssistant:
	default:
		return fmt.Errorf("message %s: unknown role %q", m.ID, m.Role)
	}
	if m.Source.Kind == "" {
		return fmt.Errorf("message %s: empty source kind", m.ID)
	}
	if m.Content == nil {
		return fmt.Errorf("message %s: content must be an array", m.ID)
	}
	for i, b := range m.Content {
		if err := b.Validate(); err != nil {
			return fmt.Errorf("message %s block %d: %w", m.ID, i, err)
		}
	}
	return nil
}

// Text returns the concatenation of the message's text blocks.
func (m Message) Text() string {
	var sb strings.Builder
	for _, b := range m.Content {
		if b.Type == BlockText {
			sb.WriteString(b.Text)
		}
	}
	return sb.String()
}

// ToolCalls returns the message's tool-call blocks in model order.
func (m Message) ToolCalls() []ContentBlock {
	var calls []ContentBlock
	for _, b := range m.Content {
		if b.Type == BlockToolCall {
			calls = append(calls, b)
		}
	}
	return calls
}

// BlockType discriminates content blocks.
type BlockType string

const (
	BlockText       BlockType = "text"
	BlockReasoning  BlockType = "reasoning"
	BlockToolCall   BlockType = "tool-call"
	BlockToolResult BlockType = "tool-result"
	BlockImage      BlockType = "image"
)

// ContentBlock is one piece of message content. It is a flat struct
// discriminated by Type; only the fields of that type are meaningful and only
// those are written to JSON:
//   - text, reasoning: Text
//   - tool-call: ID, Name, Arguments (the raw JSON string the model produced)
//   - tool-result: ToolCallID, Content, IsError
//   - image: Attachment (a reference to the session's stored attachment,
//     never inline bytes), MediaType (sniffed from the bytes at upload),
//     and what a transcript shows without reading the bytes: Size (bytes),
//     Width and Height (pixels), Name (the uploaded file's name, if any)
type ContentBlock struct {
	Type       BlockType      `json:"type"`
	Text       string         `json:"text,omitempty"`
	ID         string         `json:"id,omitempty"`
	Name       string         `json:"name,omitempty"`
	Arguments  string         `json:"arguments,omitempty"`
	ToolCallID string         `json:"toolCallId,omitempty"`
	Content    []ContentBlock `json:"content,omitempty"`
	IsError    bool           `json:"isError,omitempty"`
	Attachment string         `json:"attachment,omitempty"`
	MediaType  string         `json:"mediaType,omitempty"`
	Size       int64          `json:"size,omitempty"`
	Width      int            `json:"width,omitempty"`
	Height     int            `json:"height,omitempty"`
}

// Text builds a text block.
func Text(s string) ContentBlock { return ContentBlock{Type: BlockText, Text: s} }

// Image builds an image block referring to a stored attachment.
func Image(attachment, mediaType string, size int64, width, height int, name string) ContentBlock {
	return ContentBlock{Type: BlockImage, Attachment: attachment, MediaType: mediaType, Size: size, Width: width, Height: height, Name: name}
}

// Images returns the message's image blocks in order.
func (m Message) Images() []ContentBlock {
	var out []ContentBlock
	for _, b := range m.Content {
		if b.Type == BlockImage {
			out = append(out, b)
		}
	}
	return out
}

// ToolCall builds a tool-call block.
func ToolCall(id, name, arguments string) ContentBlock {
	return ContentBlock{Type: BlockToolCall, ID: id, Name: name, Arguments: arguments}
}

// Validate checks the fields a block of its type needs.
func (b ContentBlock) Validate() error {
	switch b.Type {
	case BlockText, BlockReasoning:
	case BlockToolCall:
		if b.ID == "" {
			return fmt.Errorf("tool-call block without id")
		}
	case BlockToolResult:
		if b.ToolCallID == "" {
			return fmt.Errorf("tool-result block without toolCallId")
		}
		for i, c := range b.Content {
			if err := c.Validate(); err != nil {
				return fmt.Errorf("tool-result content %d: %w", i, err)
			}
		}
	case BlockImage:
		if b.Attachment == "" {
			return fmt.Errorf("image block without attachment")
		}
	case "":
		return fmt.Errorf("block without type")
	default:
		// Unknown block types are carried through (plugins may add them) and
		// skipped by serializers that do not know them.
	}
	return nil
}

// MarshalJSON writes exactly the fields of the block's type, so that a text
// block always has "text" (even empty) and a tool-call always has "arguments".
func (b ContentBlock) MarshalJSON() ([]byte, error) {
	switch b.Type {
	case BlockText, BlockReasoning:
		return json.Marshal(struct {
			Type BlockType `json:"type"`
			Text string    `json:"text"`
		}{b.Type, b.Text})
	case BlockToolCall:
		return json.Marshal(struct {
			Type      BlockType `json:"type"`
			ID        string    `json:"id"`
			Name      string    `json:"name"`
			Arguments string    `json:"arguments"`
		}{b.Type, b.ID, b.Name, b.Arguments})
	case BlockToolResult:
		content := b.Content
		if content == nil {
			content = []ContentBlock{}
		}
		return json.Marshal(struct {
			Type       BlockType      `json:"type"`
			ToolCallID string         `json:"toolCallId"`
			Content    []ContentBlock `json:"content"`
			IsError    bool           `json:"isError"`
		}{b.Type, b.ToolCallID, content, b.IsError})
	default:
		type plain ContentBlock
		return json.Marshal(plain(b))
	}
}
