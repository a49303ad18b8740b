package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"harness/internal/llm"
	"harness/internal/session"
)

// Mode is how the scheduler may run a call.
type Mode string

const (
	// ModeParallel calls may run their bodies alongside other parallel calls.
	ModeParallel Mode = "parallel"
	// ModeExclusive calls run alone, as a barrier between groups.
	ModeExclusive Mode = "exclusive"
)

// Access says what a tool touches; the permission policy is keyed on it.
type Access string

const (
	AccessRead     Access = "read"     // reads the workspace; always allowed
	AccessWrite    Access = "write"    // changes files
	AccessExec     Access = "exec"     // runs programs
	AccessInteract Access = "interact" // talks to the user; always allowed
	// AccessNetwork reaches other hosts from the server process (web_fetch).
	// It is gated like write and exec: a call can carry what the model read
	// out of the workspace to any host, so in ask mode a person sees the URL
	// first, and read-only mode refuses it.
	AccessNetwork Access = "network"
)

// Definition is one tool. Only Name, Description and Parameters reach the
// model.
type Definition struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"` // JSON Schema object, compiled at Register (first use with RegisterLazy)
	Access      Access          `json:"access"`
	// Timeout is a cooperative deadline for the body; 0 means none.
	Timeout time.Duration `json:"-"`
	// ConcurrencySafe classifies a call; nil, a panic or false all mean
	// exclusive (fail closed).
	ConcurrencySafe func(args json.RawMessage) bool `json:"-"`
	// Execute is the body. A returned error becomes an error result
	// ("Error: <message>"); a *CodedError also sets Result.Error.
	Execute func(ctx context.Context, call *Call) (Result, error) `json:"-"`
	// Preview, when set, says what a call would do (a diff, a command) so an
	// approver sees it before deciding. It runs only when the call needs
	// approval, after validation; nil, an error or a panic mean no preview,
	// never a failed call. It must not change anything.
	Preview func(ctx context.Context, call *Call) *session.ApprovalPreview `json:"-"`
}

// Schema returns what the model sees of the tool.
func (d Definition) Schema() llm.ToolSchema {
	params := make(json.RawMessage, len(d.Parameters))
	copy(params, d.Parameters)
	return llm.ToolSchema{Name: d.Name, Description: d.Description, Parameters: params}
}

// Result is the outcome of one call.
type Result struct {
	Content []llm.ContentBlock `json:"content"`
	IsError bool               `json:"isError,omitempty"`
	// Error is set for coded failures only (name, code).
	Error *session.ToolError `json:"error,omitempty"`
	// Meta is presentation data for UIs, never sent to the model.
	Meta json.RawMessage `json:"meta,omitempty"`
	// AdditionalContexts become user messages at the next step, after all of
	// the step's tool results.
	AdditionalContexts []llm.Message `json:"additionalContexts,omitempty"`
	// ConcludesTurn asks the driver not to send another request for this
	// turn; honoured only on success.
	ConcludesTurn bool `json:"concludesTurn,omitempty"`
}

// MetaImages is the part of a result's Meta that lists images a tool
// produced and stored with the session (an MCP server's image content):
// the transcript shows them, the model gets a note in the content.
type MetaImages struct {
	Images []MetaImage `json:"images,omitempty"`
}

// MetaImage is one stored image: a session attachment.
type MetaImage struct {
	Attachment string `json:"attachment"`
	MediaType  string `json:"mediaType"`
	Size       int64  `json:"size"`
	Width      int    `json:"width"`
	Height     int    `json:"height"`
}

// Text returns the concatenation of the result's text blocks.
func (r Result) Text() string {
	return llm.Message{Content: r.Content}.Text()
}

// TextResult is a successful result with one text block.
func TextResult(text string) Result {
	return Result{Content: []llm.ContentBlock{llm.Text(text)}}
}

// ErrorResult is a failed result with content "Error: <message>"; code may be
// nil for uncoded failures (denials, plain errors).
func ErrorResult(message string, code *session.ToolError) Result {
	return Result{
		Content: []llm.ContentBlock{llm.Text("Error: " + message)},
		IsError: true,
		Error:   code,
	}
}

// Error names and codes the pipeline produces. Tools define their own (the
// built-in tools' are in package builtin).
const (
	NameToolNotFound = "ToolNotFoundError"
	NameToolArgs     = "ToolArgsError"
	NameAbort        = "AbortError"
	NameToolTimeout  = "ToolTimeoutError"
	NameToolPanic    = "ToolPanicError"

	CodeUnknownTool = "UNKNOWN_TOOL"
	CodeInvalidArgs = "INVALID_ARGS"
	CodeToolTimeout = "TOOL_TIMEOUT"
	CodeToolPanic   = "TOOL_PANIC"
)

// CodedError is a harness error with a stable name and code. Returned from a
// body (possibly wrapped), it becomes an error result whose Error is
// {Name, Code}.
type CodedError struct {
	Name    string `json:"name"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *CodedError) Error() string { return e.Message }

// ToolError returns the coded part recorded on the result.
func (e *CodedError) ToolError() *session.ToolError {
	return &session.ToolError{Name: e.Name, Code: e.Code}
}

// Errorf builds a CodedError with a formatted message.
func Errorf(name, code, format string, args ...any) *CodedError {
	return &CodedError{Name: name, Code: code, Message: fmt.Sprintf(format, args...)}
}

// errorToResult turns a body or hook error into an error result.
func errorToResult(err error) Result {
	var ce *CodedError
	if errors.As(err, &ce) {
		return ErrorResult(err.Error(), ce.ToolError())
	}
	return ErrorResult(err.Error(), nil)
}
