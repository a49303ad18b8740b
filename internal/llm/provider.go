package llm

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Effort is the requested reasoning effort. EffortOff disables thinking.
type Effort string

const (
	EffortOff  Effort = "off"
	EffortLow  Effort = "low"
	EffortHigh Effort = "high"
	EffortMax  Effort = "max"
)

// Known reports whether e is one of the efforts above ("" is not: it means
// the route's default).
func (e Effort) Known() bool {
	switch e {
	case EffortOff, EffortLow, EffortHigh, EffortMax:
		return true
	}
	return false
}

// Purpose marks requests that are not conversation turns.
type Purpose string

const (
	PurposeTurn       Purpose = ""
	PurposeCompaction Purpose = "compaction"
	PurposeTitle      Purpose = "session-title"
)

// ToolSchema is what the model sees of a tool.
type ToolSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// CallConfig is the part of a request the agent/request hook may change.
type CallConfig struct {
	Provider        string   `json:"provider"`
	Model           string   `json:"model"`
	ReasoningEffort Effort   `json:"reasoningEffort,omitempty"`
	Temperature     *float64 `json:"temperature,omitempty"`
	MaxTokens       int      `json:"maxTokens,omitempty"`
	Stop            []string `json:"stop,omitempty"`
}

// Request is one model call.
type Request struct {
	CallConfig
	System    string
	Tools     []ToolSchema
	Messages  []Message
	SessionID string
	Purpose   Purpose
	// Attachments reads the bytes of the image blocks' attachments (the
	// log holds references only). Nil: images cannot be sent, and a
	// provider that takes images sends a text placeholder instead.
	Attachments AttachmentReader `json:"-"`
	// Wire, when set, keeps the provider's encoding of each of Messages
	// across requests (the session log holds it with its derived
	// history), so a request encodes only the messages it has not sent
	// before. Nil encodes every message.
	Wire WireCache `json:"-"`
}

// WireCache keeps provider encodings of a request's history. Encoded
// returns the encodings of every message of Messages, in order, as a few
// segments, each a comma-separated run of encodings (the provider joins
// segments with commas; an empty message encodes to nothing). encode runs
// once per message and variant (the provider's wire dialect) in the
// history's life, so a request encodes only what is new. It is safe for
// concurrent use.
type WireCache interface {
	Encoded(variant string, encode func(Message) ([]byte, error)) ([][]byte, error)
}

// Attachment is a stored image's bytes and its sniffed media type.
type Attachment struct {
	MediaType string
	Data      []byte
}

// AttachmentReader reads a session's stored attachment by id. A missing
// one is an error wrapping ErrAttachmentNotFound.
type AttachmentReader interface {
	ReadAttachment(ctx context.Context, sessionID, id string) (Attachment, error)
}

// ErrAttachmentNotFound: the session holds no attachment with that id (an
// imported log refers to images whose bytes were not imported).
var ErrAttachmentNotFound = errors.New("attachment not found")

// Emit receives stream chunks in order. Returning an error stops the stream;
// the provider returns that error.
type Emit func(Chunk) error

// Provider is one configured model route (DeepSeek, an OpenAI-compatible
// server, the offline demo). Stream makes exactly one HTTP request, emits the
// response's chunks in order and returns nil after a finish chunk, or a
// *Failure (without emitting finish) when the call failed. Retries live in the
// driver, which applies RetryPolicy.
type Provider interface {
	Info() ProviderInfo
	Stream(ctx context.Context, req Request, emit Emit) error
}

// ProviderInfo describes a route: its name in requests, what to show users,
// its models and the retry policy the driver applies to its failures.
type ProviderInfo struct {
	Name    string `json:"name"`
	Label   string `json:"label"`
	Offline bool   `json:"offline,omitempty"` // the embedded demo model
	// ImageInput says the route takes image content (OpenAI-compatible
	// image_url parts); without it messages with images are refused.
	ImageInput   bool        `json:"imageInput,omitempty"`
	DefaultModel string      `json:"defaultModel"`
	Models       []ModelInfo `json:"models"`
	Retry        RetryPolicy `json:"-"`
}

// Model returns the metadata for id; unknown ids pass through with the
// route's defaults from its first catalog entry.
func (p ProviderInfo) Model(id string) ModelInfo {
	for _, m := range p.Models {
		if m.ID == id {
			return m
		}
	}
	var base ModelInfo
	if len(p.Models) > 0 {
		base = p.Models[0]
	}
	base.ID, base.Label = id, id
	return base
}

// ModelInfo is advisory catalog metadata for one model id.
type ModelInfo struct {
	ID               string   `json:"id"`
	Label            string   `json:"label"`
	ContextWindow    int64    `json:"contextWindow,omitempty"`
	DefaultMaxTokens int      `json:"defaultMaxTokens,omitempty"`
	Efforts          []Effort `json:"efforts,omitempty"`
	DefaultEffort    Effort   `json:"defaultEffort,omitempty"`
	// Price is the route's price list (nil: not priced); the driver
	// records it on each assistant/message, so a turn's cost is a
	// function of the log.
	Price *Price `json:"price,omitempty"`
}

// RetryPolicy is the provider-owned retry rule the driver applies on
// agent/request-error.
type RetryPolicy struct {
	// Mode is RetryNormal ("", the default) or RetryAlways.
	Mode           RetryMode
	MaxRetries     int
	RetryableCodes []Code
	InitialDelay   time.Duration
	MaxDelay       time.Duration
	JitterRatio    float64
	// Key names the policy in llm/retry events (policyKey); the retry
	// budget is counted per (turn, step, provider, key). Empty: the mode.
	Key string
}
